"""Getting the four ExpMRC dev sets: from the official repository at a pinned commit, or from a
local folder or zip, always checked against pinned sha256 sums and written atomically."""

from __future__ import annotations

import hashlib
import os
import urllib.error
import urllib.request
import zipfile
from pathlib import Path, PurePosixPath

from expmrc.data.datasets import SUBSETS
from expmrc.errors import ExpmrcError

COMMIT = "9827fed6466f295252f9054c56ec7b233d46e636"
URL = "https://raw.githubusercontent.com/ymcui/expmrc/{commit}/data/{subset}/expmrc-{subset}-dev.json"
SHA256 = {
    "squad": "2a97b681de208927c886b0a60fd83599a304157b011fcb7b43031ca48104e6d7",
    "cmrc2018": "189f494d86ca585990873fbb1fdc4626ec7ef3a86cfab38bc38fdedacdad896b",
    "race": "43819fee2096d40f8a209bd5bce82a47b663cb79804119c036de4655bd01f021",
    "c3": "b43356147cdd8228efdcd70f5953cf76b157d2c66724f2be308c7e5b965dfa8d",
}


def file_name(subset: str) -> str:
    return f"expmrc-{subset}-dev.json"


def destination(dest: str, subset: str) -> Path:
    """Where a subset's dev set lives: `<dest>/<subset>/expmrc-<subset>-dev.json`, as in the release."""
    return Path(dest) / subset / file_name(subset)


def is_present(dest: str, subset: str) -> bool:
    path = destination(dest, subset)
    return path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == SHA256[subset]


def fetch(subset: str, timeout: float = 60.0) -> bytes:
    """The dev set's bytes from the official repository at the pinned commit."""
    url = URL.format(commit=COMMIT, subset=subset)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.read()
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ExpmrcError(f"{url}: download failed ({reason}); "
                          "offline, import a copy with `expmrc download --from FOLDER_OR_ZIP`") from None


def read_local(source: str, subsets: list[str]) -> dict[str, bytes]:
    """The dev sets' bytes from a folder (searched recursively by file name) or a zip archive."""
    path = Path(source)
    if not path.exists():
        raise ExpmrcError(f"{source}: no such folder or zip file")
    if path.is_dir():
        found = {}
        for subset in subsets:
            matches = sorted(path.rglob(file_name(subset)))
            if not matches:
                raise ExpmrcError(f"{source}: no {file_name(subset)} in this folder")
            found[subset] = matches[0].read_bytes()
        return found
    if not zipfile.is_zipfile(path):
        raise ExpmrcError(f"{source}: neither a folder nor a zip archive")
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        for name in names:
            parts = PurePosixPath(name.replace("\\", "/")).parts
            if name.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
                raise ExpmrcError(f"{source}: zip entry {name!r} would land outside the destination; archive refused")
        found = {}
        for subset in subsets:
            matches = sorted(n for n in names if PurePosixPath(n).name == file_name(subset))
            if not matches:
                raise ExpmrcError(f"{source}: no {file_name(subset)} in this zip archive")
            found[subset] = archive.read(matches[0])
        return found


def install(payloads: dict[str, bytes], dest: str, origin: str) -> list[Path]:
    """Verify every payload's sha256 first, then write each atomically; a mismatch writes nothing."""
    for subset, payload in payloads.items():
        digest = hashlib.sha256(payload).hexdigest()
        if digest != SHA256[subset]:
            raise ExpmrcError(f"{origin}: {file_name(subset)} has sha256 {digest[:16]}..., expected "
                              f"{SHA256[subset][:16]}... (corrupt or not the official release); nothing written")
    written = []
    for subset, payload in payloads.items():
        target = destination(dest, subset)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.part{os.getpid()}")
        try:
            tmp.write_bytes(payload)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        written.append(target)
    return written


def check_subsets(subsets: list[str]) -> list[str]:
    unknown = [s for s in subsets if s not in SUBSETS]
    if unknown:
        raise ExpmrcError(f"unknown subset {unknown[0]!r}; choose from {', '.join(SUBSETS)}")
    return subsets
