"""Reading JSON inputs and writing outputs atomically: the one place files go in and out."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from expmrc.errors import ExpmrcError


def read_json(path: str, what: str = "file") -> Any:
    """Parse a JSON file (a UTF-8 BOM is accepted), turning every failure into one clear line."""
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise ExpmrcError(f"{path}: {what} not found") from None
    except IsADirectoryError:
        raise ExpmrcError(f"{path}: is a directory, expected a JSON {what}") from None
    except OSError as exc:
        raise ExpmrcError(f"{path}: cannot read {what}: {exc.strerror}") from None
    if not raw.strip():
        raise ExpmrcError(f"{path}: {what} is empty")
    try:
        return json.loads(raw)
    except UnicodeDecodeError:
        raise ExpmrcError(f"{path}: {what} is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        reason = "truncated" if exc.pos >= len(raw.decode("utf-8-sig", "replace").rstrip()) else "not valid JSON"
        raise ExpmrcError(f"{path}: {what} is {reason} (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None


def write_json_atomic(path: str, obj: Any, indent: int | None = None) -> None:
    """Write JSON to a temporary file beside `path`, then rename it over `path`."""
    write_text_atomic(path, json.dumps(obj, ensure_ascii=False, indent=indent) + "\n")


def write_text_atomic(path: str, text: str) -> None:
    """Write text to a temporary file beside `path`, then rename, so no half-written file is left."""
    target = Path(path)
    if target.parent and not target.parent.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
