"""Feature caches (the original `--train_tfrecord`/`--predict_tfrecord` paths): build once, reuse while valid.

A cache is keyed by a hash of the tokenizer (its vocabulary and normalization settings), the feature
settings (lengths, strides, task) and the SHA-256 of the data file. When any of them changes the
key no longer matches and the features are rebuilt and the file replaced atomically. The main
process builds; the others wait for it and read the file.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

import torch

from expmrc.errors import ExpmrcError

CACHE_FORMAT = 1


def file_sha256(path: str) -> str:
    """SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise ExpmrcError(f"{path}: cannot read ({exc.strerror})") from None
    return digest.hexdigest()


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """A hash of everything in a tokenizer that changes its output: vocabulary, class and normalization."""
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])
    backend = getattr(tokenizer, "backend_tokenizer", None)
    normalizer = backend.normalizer.__getstate__() if backend is not None and backend.normalizer else b""
    parts = {
        "class": type(tokenizer).__name__,
        "vocab": hashlib.sha256(json.dumps(vocab, ensure_ascii=False).encode("utf-8")).hexdigest(),
        "normalizer": normalizer.decode("utf-8", "replace") if isinstance(normalizer, bytes) else str(normalizer),
        "do_lower_case": getattr(tokenizer, "do_lower_case", None),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode("utf-8")).hexdigest()


def cache_key(tokenizer: Any, settings: dict[str, Any], data_file: str) -> str:
    """The key a cache must carry to be reused for these tokenizer, settings and data."""
    parts = {"format": CACHE_FORMAT, "tokenizer": tokenizer_fingerprint(tokenizer), "settings": settings,
             "data": file_sha256(data_file)}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode("utf-8")).hexdigest()


def read_cache(path: str, key: str) -> Any | None:
    """The cached payload if `path` holds one with this key, else None (missing, stale or unreadable)."""
    if not os.path.isfile(path):
        return None
    try:
        stored = torch.load(path, map_location="cpu", weights_only=True)
    except Exception:  # a truncated or foreign file is simply rebuilt
        return None
    if not isinstance(stored, dict) or stored.get("key") != key:
        return None
    return stored["payload"]


def write_cache(path: str, key: str, payload: Any) -> None:
    """Write a cache file atomically (temporary file, then rename)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
    try:
        torch.save({"key": key, "payload": payload}, tmp)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()


def cached(path: str, key: str, build: Callable[[], Any], accelerator: Any = None,
           encode: Callable[[Any], Any] = lambda x: x, decode: Callable[[Any], Any] = lambda x: x) -> tuple[Any, str]:
    """`build()`'s result, from `path` when its key matches; returns (value, "reused" | "built").

    `encode`/`decode` turn the value into plain containers and tensors (what a safe load reads) and back.
    """
    is_main = accelerator is None or accelerator.is_main_process
    if is_main:
        payload = read_cache(path, key)
        if payload is None:
            value = build()
            write_cache(path, key, encode(value))
            status = "built"
        else:
            value, status = decode(payload), "reused"
    if accelerator is not None:
        accelerator.wait_for_everyone()
    if not is_main:
        payload = read_cache(path, key)
        if payload is None:
            raise ExpmrcError(f"{path}: feature cache written by the main process cannot be read here")
        value, status = decode(payload), "reused"
    if is_main:
        print(f"features {'reused from' if status == 'reused' else 'built and cached in'} {path}", file=sys.stderr)
    return value, status
