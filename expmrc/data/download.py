"""Getting the four ExpMRC dev sets: from the official repository at a pinned commit, or from a
local folder or zip, always checked against pinned sha256 sums and written atomically."""

from __future__ import annotations

import hashlib
import urllib.error
import urllib.request
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from expmrc.data import subsets as subset_table
from expmrc.data.io import write_bytes_atomic
from expmrc.errors import ExpmrcError

COMMIT = "9827fed6466f295252f9054c56ec7b233d46e636"
URL = "https://raw.githubusercontent.com/ymcui/expmrc/{commit}/data/{subset}/expmrc-{subset}-dev.json"
MAX_ENTRY_BYTES = 64 << 20  # the largest dev set is a few MB; refuse zip bombs before unpacking them


def file_name(subset: str) -> str:
    """The dev set's file name in the release."""
    return subset_table.subset(subset).dev_file


def sha256_of(subset: str) -> str:
    """The pinned checksum of a subset's official dev set."""
    digest = subset_table.subset(subset).dev_sha256
    if digest is None:
        raise ExpmrcError(f"{subset}: has no official dev set to download; put its file in $EXPMRC_DATA/{subset}/")
    return digest


def destination(dest: str, subset: str) -> Path:
    """Where a subset's dev set lives: `<dest>/<subset>/expmrc-<subset>-dev.json`, as in the release."""
    return Path(dest) / subset / file_name(subset)


def is_present(dest: str, subset: str) -> bool:
    path = destination(dest, subset)
    return path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == sha256_of(subset)


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
            matches = sorted(p for p in path.rglob(file_name(subset)) if p.is_file())
            if not matches:
                raise ExpmrcError(f"{source}: no {file_name(subset)} in this folder")
            try:
                found[subset] = matches[0].read_bytes()
            except OSError as exc:
                raise ExpmrcError(f"{matches[0]}: cannot read: {exc.strerror}") from None
        return found
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError as exc:
        raise ExpmrcError(f"{source}: cannot read: {exc.strerror}") from None
    if not zipfile.is_zipfile(path):
        if magic.startswith(b"PK"):
            raise ExpmrcError(f"{source}: damaged zip archive (truncated? its table of contents is missing); "
                              "nothing written")
        raise ExpmrcError(f"{source}: neither a folder nor a zip archive")
    try:
        with zipfile.ZipFile(path) as archive:
            return _read_zip(source, archive, subsets)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError) as exc:
        raise ExpmrcError(f"{source}: damaged zip archive ({exc}); nothing written") from None


def _climbs_out(parts: tuple[str, ...]) -> bool:
    """Whether a relative entry path goes above where it is unpacked (`a/../../x`), not merely through `..`."""
    depth = 0
    for part in parts:
        depth += -1 if part == ".." else 0 if part == "." else 1
        if depth < 0:
            return True
    return False


def _read_zip(source: str, archive: zipfile.ZipFile, subsets: list[str]) -> dict[str, bytes]:
    """The dev sets' bytes from an open archive; every entry that cannot be read is one line naming it."""
    names = archive.namelist()
    for name in names:
        parts = PurePosixPath(name.replace("\\", "/")).parts
        if name.startswith(("/", "\\")) or _climbs_out(parts) or (parts and ":" in parts[0]):
            raise ExpmrcError(f"{source}: zip entry {name!r} would land outside the destination; archive refused")
    found = {}
    for subset in subsets:
        matches = sorted(n for n in names if PurePosixPath(n).name == file_name(subset))
        if not matches:
            raise ExpmrcError(f"{source}: no {file_name(subset)} in this zip archive")
        info = archive.getinfo(matches[0])
        if info.flag_bits & 0x1:
            raise ExpmrcError(f"{source}: zip entry {info.filename} is encrypted; unpack it yourself and pass the "
                              "folder to --from")
        if info.file_size > MAX_ENTRY_BYTES:
            raise ExpmrcError(f"{source}: zip entry {info.filename} unpacks to {info.file_size} bytes, far more "
                              f"than a dev set ({MAX_ENTRY_BYTES} at most); archive refused")
        try:
            found[subset] = archive.read(info)
        except NotImplementedError as exc:
            raise ExpmrcError(f"{source}: zip entry {info.filename} uses a compression method this Python cannot "
                              f"read ({exc}); unpack it yourself and pass the folder to --from") from None
        except (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError) as exc:
            raise ExpmrcError(f"{source}: zip entry {info.filename} is damaged ({exc}); nothing written") from None
    return found


def install(payloads: dict[str, bytes], dest: str, origin: str) -> list[Path]:
    """Verify every payload's sha256 first, then write each atomically; a mismatch writes nothing."""
    for subset, payload in payloads.items():
        digest = hashlib.sha256(payload).hexdigest()
        if digest != sha256_of(subset):
            raise ExpmrcError(f"{origin}: {file_name(subset)} has sha256 {digest[:16]}..., expected "
                              f"{sha256_of(subset)[:16]}... (corrupt or not the official release); nothing written")
    written = []
    for subset, payload in payloads.items():
        target = destination(dest, subset)
        write_bytes_atomic(str(target), payload)
        written.append(target)
    return written


def check_subsets(subsets: list[str]) -> list[str]:
    """`subsets`, once each is known and has an official dev set to download (one line otherwise)."""
    for subset in subsets:
        sha256_of(subset)
    return subsets
