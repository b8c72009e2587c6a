"""The one kind of registry every pluggable thing sits in: metrics, prompt templates, text-location policies,
task kinds, commands, pseudo-label presets, LLM backends, evidence forms, evidence methods, support judges, statement
templates and judge prompts.

Names are unique (registering one twice is a programming error, raised at import); looking up a name that is
not there is one line naming what was asked for and listing the choices (`expmrc.errors.ExpmrcError`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from expmrc.errors import ExpmrcError

T = TypeVar("T")


class Registry(Generic[T]):
    """Named entries of one kind, in registration order."""

    def __init__(self, kind: str, aliases: dict[str, str] | None = None) -> None:
        self.kind = kind  # how messages call an entry: "metric", "prompt template", ...
        self.aliases = dict(aliases or {})  # other names an entry answers to (`best` for `idf-window`)
        self._entries: dict[str, T] = {}

    @classmethod
    def of(cls, kind: str, entries: dict[str, T], aliases: dict[str, str] | None = None) -> Registry[T]:
        """A registry holding `entries`, in their order."""
        registry: Registry[T] = cls(kind, aliases)
        for name, entry in entries.items():
            registry.add(name, entry)
        return registry

    def add(self, name: str, entry: T) -> T:
        """Register `entry` under `name`; a name registered twice is refused."""
        if name in self._entries or name in self.aliases:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = entry
        return entry

    def register(self, name: str) -> Callable[[T], T]:
        """A decorator registering what it decorates under `name`."""
        return lambda entry: self.add(name, entry)

    def lookup(self, name: object, where: str = "") -> T:
        """The entry called `name` (or an alias of it); one line, starting with `where`, listing the choices when
        there is none (`name` may come from a file, so it need not be a string)."""
        entry = self._entries.get(self.aliases.get(name, name)) if isinstance(name, str) else None
        if entry is None:
            raise self.unknown(name, where)
        return entry

    def unknown(self, name: object, where: str = "", choices: list[str] | None = None) -> ExpmrcError:
        """The one-line error for a name that is not registered (or not among `choices`)."""
        listed = ", ".join(self.choices() if choices is None else choices)
        return ExpmrcError(f"{where}unknown {self.kind} {name!r}; choose one of {listed}")

    def canonical(self, name: str) -> str:
        """The registered name `name` stands for (itself, or what its alias names)."""
        return self.aliases.get(name, name)

    def choices(self) -> list[str]:
        """Every name a user may give: the registered names, then the aliases."""
        return [*self._entries, *self.aliases]

    def names(self) -> list[str]:
        """The registered names, in registration order."""
        return list(self._entries)

    def items(self) -> list[tuple[str, T]]:
        return list(self._entries.items())

    def values(self) -> list[T]:
        return list(self._entries.values())

    def __contains__(self, name: object) -> bool:
        return name in self._entries or name in self.aliases

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, name: str) -> T:
        return self.lookup(name)

    def get(self, name: str, default: T | None = None) -> T | None:
        """The entry called `name`, or `default`, as a dict's `get` (what `monkeypatch.setitem` relies on)."""
        return self._entries.get(self.aliases.get(name, name), default)

    def __setitem__(self, name: str, entry: T) -> None:  # `monkeypatch.setitem` in tests registers its own entry
        self.add(name, entry)

    def __delitem__(self, name: str) -> None:
        del self._entries[name]
