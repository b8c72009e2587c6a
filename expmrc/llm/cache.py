"""A response cache on disk (SQLite): a rerun, or a run resumed after a kill or Ctrl-C, pays for no request twice.

The key is the SHA-256 of what decides a reply: the backend's identity (the server's normalised URL; or
the weights' fingerprint, dtype and generation settings of a local model) and the request body exactly
as sent (after any `response_format` fallback). Each reply is committed as soon as it arrives, in WAL
mode, so a kill loses at most the requests in flight and leaves the file usable. Only real replies are
stored: a failed or empty one is asked again. Text is stored with JSON escapes, so a lone surrogate in a
reply is kept, not a crash.

Caches written before the key named the server keep those rows in the table `replies`; they are read only
with `--cache-old-keys`. A row that does not read back as a reply is skipped (and its question asked
again); a file that is not SQLite, or is another tool's database, is refused in one line.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

from expmrc.errors import ExpmrcError
from expmrc.llm.completion import Reply
from expmrc.llm.config import LLMConfig

FORMAT, VERSION = "expmrc-llm-cache", 2
TABLE, OLD_TABLE = "responses", "replies"  # replies: version 1, keyed without the server
_SCHEMA = {TABLE: ["key", "reply"], OLD_TABLE: ["key", "reply"], "meta": ["name", "value"]}


def default_cache_path() -> Path:
    """$EXPMRC_CACHE/llm-responses.sqlite, else $XDG_CACHE_HOME/expmrc/..., else ~/.cache/expmrc/..."""
    if os.environ.get("EXPMRC_CACHE"):
        return Path(os.environ["EXPMRC_CACHE"]) / "llm-responses.sqlite"
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "expmrc" / "llm-responses.sqlite"


def cache_path(args: LLMConfig) -> str | None:
    """The response cache a run (or a chat judge) reads and writes, or None (--no-cache, or replies from a Batch
    file)."""
    if args.no_cache or args.import_batch or args.export_batch:
        return None
    return str(args.cache or default_cache_path())


def _digest(value: Any, ascii_only: bool = True) -> str:
    text = json.dumps(value, ensure_ascii=ascii_only, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def request_key(identity: dict[str, Any], body: dict[str, Any]) -> str:
    """The cache key of a request body as sent to the backend `identity` describes."""
    return _digest({"identity": identity, "request": body})


def old_request_key(backend: str, request: dict[str, Any]) -> str:
    """The key version 1 used: backend name and request, no server (read only with --cache-old-keys)."""
    return _digest({"backend": backend, **request}, ascii_only=False)


class ResponseCache:
    """Replies by request key; safe to share between the threads of one run."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self.damaged: list[str] = []  # keys of rows that did not read back as a reply, skipped
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
        except (OSError, sqlite3.Error) as exc:
            raise ExpmrcError(f"{self.path}: cannot open the response cache: {exc}") from None
        try:
            tables = self._check()
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (key TEXT PRIMARY KEY, reply TEXT NOT NULL)")
            self._db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
            self._db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [("format", FORMAT), ("version", str(VERSION))])
            self._db.commit()
        except ExpmrcError:
            self._db.close()
            raise
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise ExpmrcError(f"{self.path}: not a usable response cache ({exc}); give another --cache or "
                              "remove the file") from None
        self.has_old = OLD_TABLE in tables

    def _check(self) -> set[str]:
        """The tables there are; another tool's database, or a newer cache format, is refused."""
        tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        for table in tables & set(_SCHEMA):
            columns = [row[1] for row in self._db.execute(f"PRAGMA table_info({table})")]
            if columns != _SCHEMA[table]:
                tables = tables | {"?"}
        if tables - set(_SCHEMA):
            raise ExpmrcError(f"{self.path}: an SQLite database of another tool (tables: "
                              f"{', '.join(sorted(tables - {'?'}))}), not an expmrc response cache; give another "
                              "--cache")
        if "meta" in tables:
            meta = dict(self._db.execute("SELECT name, value FROM meta").fetchall())
            if meta.get("format") != FORMAT or not str(meta.get("version", "")).isdigit():
                raise ExpmrcError(f"{self.path}: not an expmrc response cache (format {meta.get('format')!r})")
            if int(meta["version"]) > VERSION:
                raise ExpmrcError(f"{self.path}: a response cache of format {meta['version']}, written by a newer "
                                  f"expmrc (this one reads up to {VERSION}); upgrade, or give another --cache")
        return tables

    def _read(self, table: str, key: str) -> Reply | None:
        with self._lock:
            try:
                row = self._db.execute(f"SELECT reply FROM {table} WHERE key = ?", (key,)).fetchone()
            except sqlite3.Error as exc:
                raise ExpmrcError(f"{self.path}: cannot read the response cache: {exc}") from None
        if row is None:
            return None
        try:
            reply = Reply.from_json(json.loads(row[0]))
        except (TypeError, ValueError, RecursionError):
            self.damaged.append(key)
            return None
        return reply if reply.cacheable else None  # an empty reply an older version stored is asked again

    def get(self, key: str) -> Reply | None:
        """The stored reply for a key, or None (also for a damaged row, which is then listed in `damaged`)."""
        return self._read(TABLE, key)

    def get_old(self, key: str) -> Reply | None:
        """A reply stored under a version-1 key (no server in it), or None."""
        return self._read(OLD_TABLE, key) if self.has_old else None

    def count_old(self, keys: list[str]) -> int:
        """How many of `keys` have a row under the version-1 key."""
        if not self.has_old or not keys:
            return 0
        found = 0
        with self._lock:
            for i in range(0, len(keys), 500):
                chunk = keys[i:i + 500]
                query = f"SELECT COUNT(*) FROM {OLD_TABLE} WHERE key IN ({', '.join('?' * len(chunk))})"
                found += int(self._db.execute(query, chunk).fetchone()[0])
        return found

    def put(self, key: str, reply: Reply) -> None:
        """Store a real reply and commit at once (a failed or empty one is not stored)."""
        if not reply.cacheable:
            return
        with self._lock:
            try:
                self._db.execute(f"INSERT OR REPLACE INTO {TABLE} (key, reply) VALUES (?, ?)",
                                 (key, json.dumps(reply.to_json(), ensure_ascii=True, allow_nan=False)))
                self._db.commit()
            except sqlite3.Error as exc:
                raise ExpmrcError(f"{self.path}: cannot write the response cache: {exc}") from None

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute(f"SELECT COUNT(*) FROM {TABLE}").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
