"""The one exception type the command line turns into a single line and exit status 2, warnings, and the
flag parser whose usage errors are one line too."""

import argparse
import sys
from typing import Any, NoReturn


class ExpmrcError(Exception):
    """A user-facing problem with an input: the message names the file, the question id and what is wrong."""


class Terminated(BaseException):
    """SIGTERM, raised (by the command line's handler) like KeyboardInterrupt, so that writers remove their
    temporary files on the way out and a run can record that it was interrupted."""


def _progress_bars() -> list:
    """The tqdm progress bars now drawn (none when tqdm was never imported)."""
    module = sys.modules.get("tqdm")
    return list(getattr(getattr(module, "tqdm", None), "_instances", None) or ())


def warn(message: str) -> None:
    """Print `warning: message` on stderr: input that is accepted but probably not what the user meant. Mid
    progress bar, the bar is cleared, the line printed on its own and the bar drawn again below it."""
    if _progress_bars():
        sys.modules["tqdm"].tqdm.write(f"warning: {message}", file=sys.stderr)
    else:
        print(f"warning: {message}", file=sys.stderr)


def print_error(line: str) -> None:
    """Print a final `error: ...` line on stderr on a line of its own: progress bars still drawn are closed
    first (a bar leaves its cursor at the end of its line)."""
    for bar in _progress_bars():
        try:
            bar.close()
        except Exception:  # a bar whose stream has gone: nothing to end
            pass
    print(line, file=sys.stderr)


class OneLineParser(argparse.ArgumentParser):
    """argparse whose usage errors are one line, `error: PROG: what is wrong`, with exit status 2, and which
    takes no abbreviation of a flag (`--detail` is not `--details`: a typo must not pass as another flag)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def _print_message(self, message: str, file: Any = None) -> None:
        """Print --help, --version or a usage line. Where stdout cannot take it (closed, a full device) the OSError
        goes on to the caller, which says so in one line; argparse itself would drop it and exit 0."""
        if message:
            (file or sys.stderr).write(message)

    def error(self, message: str) -> NoReturn:
        print(f"error: {self.prog}: {one_line(message)} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


# every character `str.splitlines` breaks a line at, with the escape a message shows instead
LINE_BREAKS = str.maketrans({"\n": "\\n", "\r": "\\r", **{c: f"\\x{ord(c):02x}" for c in "\x0b\x0c\x1c\x1d\x1e\x85"},
                             "\u2028": "\\u2028", "\u2029": "\\u2029"})


def one_line(text: str) -> str:
    """`text` with every line break escaped (those `str.splitlines` sees too: \\x1e, \\u2028, ...), so a message is
    always exactly one line."""
    return text.translate(LINE_BREAKS)
