"""A response cache on disk (SQLite): a rerun, or a run resumed after a kill, pays for no request twice.

The key is the SHA-256 of the request that decides the reply: backend, model, messages and sampling
parameters (and the response format asked for). Each reply is committed as soon as it arrives, in
WAL mode, so a kill loses at most the requests in flight and leaves the file usable.
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


def default_cache_path() -> Path:
    """$EXPMRC_CACHE/llm-responses.sqlite, else $XDG_CACHE_HOME/expmrc/..., else ~/.cache/expmrc/..."""
    if os.environ.get("EXPMRC_CACHE"):
        return Path(os.environ["EXPMRC_CACHE"]) / "llm-responses.sqlite"
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "expmrc" / "llm-responses.sqlite"


def request_key(request: dict[str, Any]) -> str:
    """The cache key of a request: a hash of its canonical JSON (sorted keys)."""
    text = json.dumps(request, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ResponseCache:
    """Replies by request key; safe to share between the threads of one run."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, reply TEXT NOT NULL)")
            self._db.commit()
        except (OSError, sqlite3.Error) as exc:
            raise ExpmrcError(f"{self.path}: cannot open the response cache: {exc}") from None

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored reply for a key, or None."""
        with self._lock:
            try:
                row = self._db.execute("SELECT reply FROM replies WHERE key = ?", (key,)).fetchone()
            except sqlite3.Error as exc:
                raise ExpmrcError(f"{self.path}: cannot read the response cache: {exc}") from None
        return json.loads(row[0]) if row else None

    def put(self, key: str, reply: dict[str, Any]) -> None:
        """Store a reply and commit at once."""
        with self._lock:
            try:
                self._db.execute("INSERT OR REPLACE INTO replies (key, reply) VALUES (?, ?)",
                                 (key, json.dumps(reply, ensure_ascii=False)))
                self._db.commit()
            except sqlite3.Error as exc:
                raise ExpmrcError(f"{self.path}: cannot write the response cache: {exc}") from None

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
