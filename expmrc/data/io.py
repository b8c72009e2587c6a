"""Reading JSON inputs and writing outputs atomically: the one place files go in and out.

Inputs: `read_json` turns every way a file can be unreadable (missing, a folder, not UTF-8, not JSON,
truncated, nested too deeply, an integer too long to convert, NaN/Infinity or a number that overflows
to infinity, a lone UTF-16 surrogate) into one `ExpmrcError` line naming the file.

Outputs: `check_output_path` refuses a destination that cannot be written, or that is or holds an input, before
any work is done (`check_output_folder` adds the rules of a folder replaced whole);
`write_text_atomic`, `write_json_atomic`, `atomic_file` and `atomic_directory` build the output under
a hidden temporary name beside it (`.NAME.expmrc-tmp-PID`) and rename it into place, so a reader sees
the old output or the new one, never half of one. The temporary is removed when writing fails or is
interrupted; one left by a killed process is removed the next time the same output is written.
Only regular files (or new names) are replaced so: stdout (`-`), a FIFO, a character device or a path that
leads into /proc (/dev/stdout) is written directly, and a symbolic link to a file keeps its link.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import stat
import sys
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from collections.abc import Iterator

from expmrc.errors import ExpmrcError

TMP_MARK = ".expmrc-tmp-"
OLD_MARK = ".expmrc-old-"
MAX_DEPTH = 100  # ExpMRC files nest 8 levels; far deeper would overflow the recursion of later steps
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF][0-9a-fA-F]{2}")


class _NotFinite(ValueError):
    """Raised from the JSON number hooks for NaN, Infinity and numbers that overflow a float."""


def _constant(name: str) -> float:
    raise _NotFinite(name)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(text if len(text) <= 24 else text[:21] + "...")
    return value


def _where(keys: list[Any]) -> str:
    """A JSON path such as `data[0].paragraphs[3].context` for error messages."""
    out = ""
    for key in keys:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out or "the top level"


def _check_structure(doc: Any, path: str, what: str, surrogates: bool) -> None:
    """Refuse nesting deeper than MAX_DEPTH and (when the raw text escapes one) lone surrogates, iteratively."""
    stack: list[tuple[Any, list[Any]]] = [(doc, [])]
    while stack:
        value, keys = stack.pop()
        if isinstance(value, str):
            if surrogates and any("\ud800" <= ch <= "\udfff" for ch in value):
                raise ExpmrcError(f"{path}: {what} has a lone UTF-16 surrogate (\\ud800-\\udfff, not a character) "
                                  f"in a string at {_where(keys)}")
            continue
        if isinstance(value, dict):
            items: Any = value.items()
        elif isinstance(value, list):
            items = enumerate(value)
        else:
            continue
        if len(keys) >= MAX_DEPTH:
            raise ExpmrcError(f"{path}: {what} nests more than {MAX_DEPTH} levels deep at {_where(keys[:3])}...")
        for key, child in items:
            if surrogates and isinstance(key, str) and any("\ud800" <= ch <= "\udfff" for ch in key):
                raise ExpmrcError(f"{path}: {what} has a lone UTF-16 surrogate (\\ud800-\\udfff, not a character) "
                                  f"in a key at {_where(keys)}")
            stack.append((child, keys + [key]))


def json_kind(value: Any) -> str:
    """How a JSON value is called in messages: null, a boolean, a number, a string, an array, an object."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def read_json(path: str, what: str = "file") -> Any:
    """Parse a JSON file (UTF-8, a BOM accepted), turning every failure into one line naming the file."""
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise ExpmrcError(f"{path}: {what} not found") from None
    except IsADirectoryError:
        raise ExpmrcError(f"{path}: is a directory, expected a JSON {what}") from None
    except (OSError, ValueError) as exc:  # ValueError: a path with a NUL byte
        raise ExpmrcError(f"{path}: cannot read {what}: {getattr(exc, 'strerror', None) or exc}") from None
    if not raw.strip():
        raise ExpmrcError(f"{path}: {what} is empty")
    try:
        doc = json.loads(raw, parse_constant=_constant, parse_float=_float)
    except UnicodeDecodeError:
        raise ExpmrcError(f"{path}: {what} is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        at_end = exc.pos >= len(raw.decode("utf-8-sig", "replace").rstrip())
        reason = "truncated" if at_end or exc.msg.startswith("Unterminated string") else "not valid JSON"
        raise ExpmrcError(f"{path}: {what} is {reason} (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except _NotFinite as exc:
        raise ExpmrcError(f"{path}: {what} holds the number {exc}, which is not finite (JSON has no NaN or "
                          "Infinity)") from None
    except RecursionError:
        raise ExpmrcError(f"{path}: {what} nests arrays or objects too deeply to read") from None
    except ValueError:  # the only one left: an integer beyond int()'s digit limit
        raise ExpmrcError(f"{path}: {what} holds an integer of more than {sys.get_int_max_str_digits()} digits, "
                          "too long to be a number anything here reads") from None
    _check_structure(doc, path, what, surrogates=bool(_SURROGATE_ESCAPE.search(raw)))
    return doc


# ---------------------------------------------------------------- outputs

def _os_reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


STDOUT = "-"


def is_special_output(path: str) -> bool:
    """True for stdout (`-`) and for a path that is, or leads by symbolic links to, something a rename must
    not replace: a FIFO, a character or block device, a socket, or anything under /proc (/dev/stdout)."""
    if path == STDOUT:
        return True
    current = path
    for _ in range(40):  # the kernel's own limit on a chain of links
        if os.path.abspath(current).startswith("/proc/") and os.path.exists(current):
            return True
        if not os.path.islink(current):
            break
        current = os.path.join(os.path.dirname(current), os.readlink(current))
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def write_failure(path: str, exc: BaseException) -> ExpmrcError | None:
    """One line naming `path` for an OS error (a full disk included) or safetensors' own writer error."""
    if isinstance(exc, OSError):
        return ExpmrcError(f"{path}: cannot write: {_os_reason(exc)}")
    if type(exc).__module__.startswith("safetensors") or type(exc).__name__ == "SafetensorError":
        reason = "No space left on device" if "StorageFull" in str(exc) or "os error 28" in str(exc) else str(exc)
        return ExpmrcError(f"{path}: cannot write: {one_line_text(reason)}")
    return None


def one_line_text(text: str) -> str:
    """`text` on one line (a library's multi-line message inside one `error:` line)."""
    return " ".join(text.split())


def _same_file(a: Path, b: str) -> bool:
    try:
        return a.resolve() == Path(b).resolve() or (a.exists() and os.path.samefile(a, b))
    except (OSError, ValueError):
        return False


def _holds(folder: Path, source: str) -> bool:
    """Whether `source` is `folder` or lies inside it, by real paths (neither need exist yet)."""
    try:
        inner, outer = Path(source).resolve(), folder.resolve()
    except (OSError, ValueError, RuntimeError):
        return False
    return inner == outer or outer in inner.parents


def check_output_path(path: str, kind: str = "file", inputs: tuple[str, ...] | list[str] = ()) -> Path:
    """Refuse, in one line naming it, an output `path` ("file" or "dir") that could not be written.

    Checked before any work: a file output that is a folder, a folder output that is a file, a path
    below a file, a folder that cannot be written (probed by creating and removing a hidden file, which
    also catches read-only file systems and /proc), a file output that is also one of `inputs`, and a
    folder output that is or holds one of `inputs` (every writer's rule: no output replaces an input).
    """
    if kind not in ("file", "dir"):
        raise ValueError("kind must be 'file' or 'dir'")
    if not path or "\0" in path:
        raise ExpmrcError(f"{path!r}: not a usable output path")
    target = Path(path)
    if kind == "file" and is_special_output(path):  # written directly: no folder to probe
        if path != STDOUT and any(source and _same_file(target, source) for source in inputs):
            raise ExpmrcError(f"{path}: is also an input of this command; write the output elsewhere")
        return target
    if kind == "file" and (path.endswith(("/", os.sep)) or target.name in ("", ".", "..")):
        raise ExpmrcError(f"{path}: names a folder; give a file name for this output")
    try:
        if target.is_symlink() and not target.exists():
            raise ExpmrcError(f"{path}: is a broken symbolic link (to {os.readlink(target)}); remove it or give "
                              "another path")
        if kind == "file" and target.is_dir():
            raise ExpmrcError(f"{path}: is a directory; give a file name for this output")
        if kind == "dir" and target.exists() and not target.is_dir():
            raise ExpmrcError(f"{path}: is a file; give a folder for this output")
        if kind == "file":
            for source in inputs:
                if source and Path(source).exists() and _same_file(target, source):
                    raise ExpmrcError(f"{path}: is also an input of this command; write the output elsewhere")
        for source in inputs if kind == "dir" else ():
            if source and _holds(target, source):
                what = "is" if Path(source).resolve() == target.resolve() else "holds"
                raise ExpmrcError(f"{path}: {what} {source}, an input of this command, which writing this folder "
                                  "would replace or delete; write the output elsewhere")
        folder = target if kind == "dir" and target.is_dir() else target.parent
        existing = folder
        while not existing.exists():
            if existing.is_symlink():
                raise ExpmrcError(f"{path}: {existing} is a broken symbolic link")
            existing = existing.parent
        if not existing.is_dir():
            raise ExpmrcError(f"{path}: cannot be created, {existing} is a file, not a folder")
    except OSError as exc:
        raise ExpmrcError(f"{path}: cannot use as output: {_os_reason(exc)}") from None
    probe = existing / f"{TMP_MARK}probe-{os.getpid()}"
    try:
        probe.touch(exist_ok=False)
        probe.unlink()
    except FileExistsError:
        probe.unlink(missing_ok=True)
    except OSError as exc:
        raise ExpmrcError(f"{path}: cannot write into {existing or '.'}: {_os_reason(exc)}") from None
    return target


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return pid > 0  # exists under another user, or not a usable number
    return True


def temporary_name(target: Path) -> Path:
    """The hidden name `target` is built under by this process: `.NAME.expmrc-tmp-PID` beside it."""
    return target.with_name(f".{target.name}{TMP_MARK}{os.getpid()}")


def remove_stale_temporaries(target: Path) -> list[Path]:
    """Remove what killed processes left while writing `target` (their PID no longer runs); return them."""
    removed: list[Path] = []
    folder = target.parent
    pattern = re.compile(re.escape(f".{target.name}") + "(?:" + re.escape(TMP_MARK) + "|" + re.escape(OLD_MARK)
                         + r")(\d+)$")
    try:
        entries = list(os.scandir(folder)) if folder.is_dir() else []
    except OSError:
        return removed
    for entry in entries:
        match = pattern.match(entry.name)
        if not match or _pid_alive(int(match.group(1))):
            continue
        path = Path(entry.path)
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(path)
            else:
                path.unlink()
            removed.append(path)
        except OSError:
            continue
    return removed


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except OSError:
            pass


def _make_parent(target: Path) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExpmrcError(f"{target}: cannot create folder {target.parent}: {_os_reason(exc)}") from None


@contextmanager
def atomic_file(path: str) -> Iterator[Path]:
    """Yield a temporary path beside `path` for a library to write to; rename it over `path` on success.

    On any failure or interrupt the temporary is removed and `path` is left as it was.
    """
    target = check_output_path(path, "file")
    if is_special_output(path):
        yield Path("/dev/stdout") if path == STDOUT else target
        return
    if target.is_symlink():  # replace the file the link names, and keep the link
        target = Path(os.path.realpath(target))
    _make_parent(target)
    remove_stale_temporaries(target)
    tmp = temporary_name(target)
    _remove(tmp)
    try:
        yield tmp
        os.replace(tmp, target)
    except Exception as exc:
        failure = write_failure(path, exc)
        if failure is None:
            raise
        raise failure from None
    finally:
        if tmp.exists() or tmp.is_symlink():
            _remove(tmp)


def _is_stdout(path: str) -> bool:
    """Whether `path` names the very file, pipe or terminal this process's stdout writes to."""
    try:
        return os.path.samefile(path, f"/proc/self/fd/{sys.stdout.fileno()}")
    except (OSError, ValueError, AttributeError):
        return False


def _write_directly(path: str, data: bytes) -> None:
    """Write to stdout, a FIFO or a device as it is (no temporary: a rename would replace the special file)."""
    if path == STDOUT or _is_stdout(path):  # /dev/stdout: reopening would truncate a redirected stdout
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    try:
        with open(path, "wb") as handle:
            handle.write(data)
    except OSError as exc:
        raise ExpmrcError(f"{path}: cannot write: {_os_reason(exc)}") from None


def write_bytes_atomic(path: str, data: bytes) -> None:
    """Write bytes to a temporary file beside `path`, flush them to disk, then rename over `path` (stdout,
    FIFOs and devices are written directly)."""
    if is_special_output(path):
        check_output_path(path, "file")
        _write_directly(path, data)
        return
    with atomic_file(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())


def _utf8(path: str, text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ExpmrcError(f"{path}: cannot write text holding {text[exc.start:exc.end]!r}, a lone surrogate that "
                          "is not a character (from a file name or input that is not UTF-8?)") from None


def write_text_atomic(path: str, text: str) -> None:
    """Write UTF-8 text atomically (see write_bytes_atomic); text that cannot be encoded is one line."""
    write_bytes_atomic(path, _utf8(path, text))


def json_text(path: str, obj: Any, indent: int | None = None, sort_keys: bool = False) -> str:
    """`obj` as the JSON text written to `path`; NaN and Infinity, which JSON lacks, are refused in one line."""
    try:
        text = json.dumps(obj, ensure_ascii=False, indent=indent, sort_keys=sort_keys, allow_nan=False)
    except ValueError as exc:
        reason = "a NaN or infinite number, which JSON cannot hold" if "Out of range float" in str(exc) else str(exc)
        raise ExpmrcError(f"{path}: cannot write JSON holding {reason}") from None
    return text + "\n"


def write_json_atomic(path: str, obj: Any, indent: int | None = None, sort_keys: bool = False) -> None:
    """Write JSON atomically; NaN and Infinity, which JSON lacks, are refused in one line."""
    write_text_atomic(path, json_text(path, obj, indent, sort_keys))


def check_distinct_outputs(outputs: dict[str, str | None]) -> None:
    """Refuse, in one line, one file given for two outputs (`{flag: path}`; the same resolved path or a hard link,
    however it is named): the second would replace the first."""
    given = [(flag, path) for flag, path in outputs.items() if path]
    for i, (flag, path) in enumerate(given):
        for other_flag, other in given[:i]:
            if path == other or _same_file(Path(path), other):
                raise ExpmrcError(f"{path}: given for both {other_flag} and {flag}; give each output a file of its own")


def write_texts_atomic(outputs: list[tuple[str, str]]) -> None:
    """Write several outputs, `(path, text)`, all or none: every file is built under its temporary name first and
    renamed into place only once all are written (stdout, FIFOs and devices last, directly), so a failure leaves
    every output as it was."""
    data = [(path, _utf8(path, text)) for path, text in outputs]
    with ExitStack() as stack:
        for path, raw in data:
            if not is_special_output(path):
                with open(stack.enter_context(atomic_file(path)), "wb") as handle:
                    handle.write(raw)
                    handle.flush()
                    os.fsync(handle.fileno())
        for path, raw in data:
            if is_special_output(path):
                check_output_path(path, "file")
                _write_directly(path, raw)


def check_output_folder(path: str, inputs: tuple[str, ...] | list[str] = (), overwrite: bool = False) -> Path:
    """Refuse, in one line before any work, a folder output that is replaced whole (`atomic_directory`): what
    check_output_path refuses (one that is or holds an input included), the current folder or one above it,
    and, without `overwrite`, one that exists and is not empty."""
    here = Path.cwd().resolve()
    if path and "\0" not in path and Path(path).resolve() in (here, *here.parents):
        raise ExpmrcError(f"{path}: is the current folder or one above it; this output folder is replaced whole, so "
                          "give a folder of its own (e.g. runs/NAME)")
    target = check_output_path(path, "dir", inputs)
    if target.is_dir() and any(target.iterdir()) and not overwrite:
        raise ExpmrcError(f"{path}: already exists and is not empty (pass --overwrite to replace it)")
    return target


@contextmanager
def atomic_directory(path: str, overwrite: bool = False, inputs: tuple[str, ...] | list[str] = ()) -> Iterator[Path]:
    """Yield an empty hidden folder beside `path` to fill; on success it replaces `path` in one rename.

    `path` is checked first (check_output_folder: not the current folder, not holding one of `inputs`, not an
    existing non-empty folder without `overwrite`). On failure or interrupt the staging folder is removed and
    `path` is left as it was.
    """
    target = check_output_folder(path, inputs, overwrite)
    _make_parent(target)
    remove_stale_temporaries(target)
    staging = temporary_name(target)
    old = target.with_name(f".{target.name}{OLD_MARK}{os.getpid()}")
    _remove(staging)
    try:
        staging.mkdir()
        yield staging
        if target.exists():
            os.replace(target, old)
        os.replace(staging, target)
    except Exception as exc:
        failure = write_failure(path, exc)
        if failure is None:
            raise
        raise ExpmrcError(str(failure).replace(": cannot write:", ": cannot write folder:", 1)) from None
    finally:
        if old.exists() and not target.exists():  # interrupted between the two renames: put the old one back
            try:
                os.replace(old, target)
            except OSError:
                pass
        _remove(staging)
        _remove(old)
