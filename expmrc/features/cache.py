"""Feature caches: built once, shared by every run on the machine, reused while valid.

A cache file holds a `FeatureTable`'s flat arrays (safetensors) with its task, its feature report and
its key: a hash of the tokenizer (its whole serialized pipeline), the feature settings and the
SHA-256 of the data file. Caches live in one folder shared by runs (`default_cache_dir`: $EXPMRC_CACHE,
else $XDG_CACHE_HOME/expmrc/features, else ~/.cache/expmrc/features), named by their key, so the runs
of a sweep tokenize each file once; the original `--train_tfrecord`/`--predict_tfrecord` paths still
name a file of their own. A file whose key no longer matches is rebuilt and replaced atomically. One
process builds under a lock file (`flock`) while every other run or process wanting the same file
waits, then reads what it wrote.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import weakref
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from collections.abc import Callable, Iterator

try:
    import fcntl
except ImportError:  # not POSIX: no cross-run lock (a rare double build, still atomic)
    fcntl = None  # type: ignore[assignment]

from safetensors import SafetensorError, safe_open
from safetensors.numpy import load_file, save

from expmrc.data.io import write_bytes_atomic
from expmrc.errors import ExpmrcError
from expmrc.features.windows import FeatureReport, FeatureTable

if TYPE_CHECKING:
    from accelerate import Accelerator
    from transformers import PreTrainedTokenizerBase

logger = logging.getLogger(__name__)
CACHE_FORMAT = 2


def default_cache_dir() -> Path:
    """The feature cache folder runs share: $EXPMRC_CACHE, else $XDG_CACHE_HOME/expmrc/features, else ~/.cache/..."""
    if os.environ.get("EXPMRC_CACHE"):
        return Path(os.environ["EXPMRC_CACHE"])
    base = Path(os.environ["XDG_CACHE_HOME"]) if os.environ.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "expmrc" / "features"


def shared_cache_path(cache_dir: str | None, key: str, name: str) -> str:
    """The file in the shared cache folder (`cache_dir`, else the default) for features with this key."""
    return str(Path(cache_dir) if cache_dir else default_cache_dir()) + f"/{name}-{key}.safetensors"


@contextmanager
def file_lock(path: str) -> Iterator[None]:
    """Hold an exclusive lock on `.NAME.lock` beside `path` (waiting for any other holder) while inside."""
    target = Path(path)
    lock = target.with_name(f".{target.name}.lock")
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        handle = open(lock, "a")
    except OSError as exc:
        raise ExpmrcError(f"{lock}: cannot create the feature cache lock ({exc.strerror})") from None
    with handle:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(handle, fcntl.LOCK_UN)


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


_FINGERPRINTS: weakref.WeakKeyDictionary[PreTrainedTokenizerBase, tuple[int, str]] = weakref.WeakKeyDictionary()


def tokenizer_fingerprint(tokenizer: PreTrainedTokenizerBase) -> str:
    """A hash of everything in a fast tokenizer that changes its output: its serialized pipeline and class. Worked
    out once per tokenizer object and vocabulary size (a run keys its training and prediction features, and checks
    its signature, with the same tokenizer: serializing a 36k-token pipeline three times cost a run seconds)."""
    try:
        size, known = _FINGERPRINTS[tokenizer]
        if size == len(tokenizer):
            return known
    except (KeyError, TypeError):
        pass
    value = _fingerprint(tokenizer)
    try:
        _FINGERPRINTS[tokenizer] = (len(tokenizer), value)
    except TypeError:  # an object that takes no weak reference: worked out each time
        pass
    return value


def _fingerprint(tokenizer: PreTrainedTokenizerBase) -> str:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:  # truncation and padding are call settings the last encoding left behind
        pipeline = {k: v for k, v in json.loads(backend.to_str()).items() if k not in ("truncation", "padding")}
        serialized = json.dumps(pipeline, sort_keys=True)
    else:
        serialized = json.dumps(sorted(tokenizer.get_vocab().items()))
    return hashlib.sha256(f"{type(tokenizer).__name__}\n{serialized}".encode()).hexdigest()


def cache_key(tokenizer: PreTrainedTokenizerBase, settings: dict[str, Any], data_file: str) -> str:
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
    """Write a cache file atomically under our own temporary name (safetensors' save_file would write its own
    `.tmpXXXX` beside it, which a killed run leaves behind and no later run recognises)."""
    data = save(table.arrays, metadata={"key": key, "task": table.task, "report": json.dumps(report.as_dict())})
    write_bytes_atomic(path, data)


def cached_features(path: str, key: str, build: Callable[[], tuple[FeatureTable, FeatureReport]],
                    accelerator: Accelerator | None = None) -> tuple[FeatureTable, FeatureReport]:
    """`build()`'s features, from `path` when its key matches. Each machine's main process reads or, holding
    the file's lock, builds and writes; its other processes wait for it and read."""
    is_main = accelerator is None or accelerator.is_local_main_process
    found = read_cache(path, key) if is_main else None
    if is_main and found is None:
        with file_lock(path):
            found = read_cache(path, key)  # another run may have written it while this one waited
            if found is None:
                found = build()
                write_cache(path, key, *found)
                logger.info(f"features built and cached in {path}")
            else:
                logger.info(f"features reused from {path}")
    elif is_main:
        logger.info(f"features reused from {path}")
    if accelerator is not None:
        accelerator.wait_for_everyone()
    if not is_main:
        found = read_cache(path, key)
    if found is None:  # only on another process: the main one has read or built its features above
        raise ExpmrcError(f"{path}: feature cache written by the main process cannot be read here")
    return found
