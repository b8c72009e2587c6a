"""Feature caches (the original `--train_tfrecord`/`--predict_tfrecord` paths): built once, reused while valid.

A cache file holds a `FeatureTable`'s flat arrays (safetensors) with its task, its feature report and
its key: a hash of the tokenizer (its whole serialized pipeline), the feature settings and the
SHA-256 of the data file. When any of them changes the key no longer matches, and the features are
rebuilt and the file replaced atomically. The main process builds; the others wait for it and read.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from typing import Any, Callable

from safetensors import SafetensorError, safe_open
from safetensors.numpy import load_file, save_file

from expmrc.data.io import atomic_file
from expmrc.errors import ExpmrcError
from expmrc.features.windows import FeatureReport, FeatureTable

logger = logging.getLogger(__name__)
CACHE_FORMAT = 2


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
    """A hash of everything in a fast tokenizer that changes its output: its serialized pipeline and class."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:  # truncation and padding are call settings the last encoding left behind
        pipeline = {k: v for k, v in json.loads(backend.to_str()).items() if k not in ("truncation", "padding")}
        serialized = json.dumps(pipeline, sort_keys=True)
    else:
        serialized = json.dumps(sorted(tokenizer.get_vocab().items()))
    return hashlib.sha256(f"{type(tokenizer).__name__}\n{serialized}".encode("utf-8")).hexdigest()


def cache_key(tokenizer: Any, settings: dict[str, Any], data_file: str) -> str:
    """The key a cache must carry to be reused for these tokenizer, settings and data."""
    parts = {"format": CACHE_FORMAT, "tokenizer": tokenizer_fingerprint(tokenizer), "settings": settings,
             "data": file_sha256(data_file)}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode("utf-8")).hexdigest()


def read_cache(path: str, key: str) -> tuple[FeatureTable, FeatureReport] | None:
    """The cached features if `path` holds them under this key, else None (missing, stale or unreadable)."""
    if not os.path.isfile(path):
        return None
    try:
        with safe_open(path, framework="numpy") as handle:
            meta = handle.metadata() or {}
        if meta.get("key") != key:
            return None
        arrays = load_file(path)
        return FeatureTable(meta["task"], arrays), FeatureReport.from_dict(json.loads(meta["report"]))
    except (SafetensorError, OSError, ValueError, KeyError):  # a truncated or foreign file is simply rebuilt
        return None


def write_cache(path: str, key: str, table: FeatureTable, report: FeatureReport) -> None:
    """Write a cache file atomically (a temporary file beside it, then a rename)."""
    with atomic_file(path) as tmp:
        save_file(table.arrays, str(tmp), metadata={"key": key, "task": table.task,
                                                    "report": json.dumps(report.as_dict())})


def cached_features(path: str, key: str, build: Callable[[], tuple[FeatureTable, FeatureReport]],
                    accelerator: Any = None) -> tuple[FeatureTable, FeatureReport]:
    """`build()`'s features, from `path` when its key matches; the main process builds and writes."""
    is_main = accelerator is None or accelerator.is_main_process
    found = read_cache(path, key) if is_main else None
    if is_main and found is None:
        found = build()
        write_cache(path, key, *found)
        logger.info(f"features built and cached in {path}")
    elif is_main:
        logger.info(f"features reused from {path}")
    if accelerator is not None:
        accelerator.wait_for_everyone()
    if not is_main:
        found = read_cache(path, key)
        if found is None:
            raise ExpmrcError(f"{path}: feature cache written by the main process cannot be read here")
    return found
