"""`expmrc download --from`: checksums, atomic writes, zip safety; subset names resolve to files."""

import hashlib
import json
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from expmrc.data import download as dl
from expmrc.data import subsets
from expmrc.data.datasets import resolve_dataset_path
from expmrc.errors import ExpmrcError


@pytest.fixture
def fake_release(tmp_path, monkeypatch):
    """A folder laid out like the release, with the pinned checksums patched to match its files."""
    root = tmp_path / "release" / "data"
    sums = {}
    for subset in subsets.names():
        payload = json.dumps({"version": f"expmrc-{subset}-dev", "data": []}).encode()
        (root / subset).mkdir(parents=True)
        (root / subset / dl.file_name(subset)).write_bytes(payload)
        sums[subset] = hashlib.sha256(payload).hexdigest()
    monkeypatch.setattr(subsets, "TABLE", tuple(replace(s, dev_sha256=sums[s.name]) for s in subsets.TABLE))
    return root


def test_import_from_folder_then_already_present(fake_release, tmp_path):
    dest = tmp_path / "data"
    written = dl.install(dl.read_local(str(fake_release), list(subsets.names())), str(dest), "x")
    assert sorted(p.relative_to(dest).as_posix() for p in written) == sorted(
        f"{s}/expmrc-{s}-dev.json" for s in subsets.names())
    assert all(dl.is_present(str(dest), s) for s in subsets.names())
    assert not list(dest.rglob(".*"))  # no temporary files left


def test_checksum_mismatch_writes_nothing(fake_release, tmp_path):
    (fake_release / "race" / "expmrc-race-dev.json").write_bytes(b"tampered")
    dest = tmp_path / "data"
    with pytest.raises(ExpmrcError, match="expmrc-race-dev.json has sha256 .* nothing written"):
        dl.install(dl.read_local(str(fake_release), list(subsets.names())), str(dest), "x")
    assert not dest.exists() or not any(dest.rglob("*"))


def test_zip_import_and_unsafe_entries(fake_release, tmp_path):
    good = tmp_path / "good.zip"
    with zipfile.ZipFile(good, "w") as z:
        for subset in subsets.names():
            z.write(fake_release / subset / dl.file_name(subset), f"expmrc-main/data/{subset}/{dl.file_name(subset)}")
    assert set(dl.read_local(str(good), ["squad", "c3"])) == {"squad", "c3"}
    for name in ("../../evil.json", "/abs/expmrc-squad-dev.json"):
        bad = tmp_path / "bad.zip"
        with zipfile.ZipFile(bad, "w") as z:
            z.writestr(name, b"{}")
            z.write(fake_release / "squad" / dl.file_name("squad"), f"squad/{dl.file_name('squad')}")
        with pytest.raises(ExpmrcError, match="would land outside the destination"):
            dl.read_local(str(bad), ["squad"])


def test_cli_errors_are_one_line(tmp_path):
    result = subprocess.run([sys.executable, "-m", "expmrc.cli", "download", "--from", str(tmp_path / "none"),
                             "--dest", str(tmp_path / "d")], capture_output=True, text=True)
    assert result.returncode == 2 and result.stderr.strip() == f"error: {tmp_path / 'none'}: no such folder or zip file"
    result = subprocess.run([sys.executable, "-m", "expmrc.cli", "download", "--subsets", "squad2"],
                            capture_output=True, text=True)
    assert result.returncode == 2 and "unknown subset 'squad2'" in result.stderr


@pytest.mark.data
def test_real_dev_sets_import_with_pinned_checksums(tmp_path):
    import os
    root = os.environ.get("EXPMRC_DATA")
    if not root or not Path(root).is_dir():
        pytest.skip("official dev sets not available (set EXPMRC_DATA)")
    written = dl.install(dl.read_local(root, list(subsets.names())), str(tmp_path), root)
    assert len(written) == 4 and all(dl.is_present(str(tmp_path), s) for s in subsets.names())


def test_subset_names_resolve_in_expmrc_data(tmp_path, monkeypatch):
    (tmp_path / "squad").mkdir()
    (tmp_path / "squad" / "expmrc-squad-dev.json").write_text("{}")
    monkeypatch.setenv("EXPMRC_DATA", str(tmp_path))
    assert resolve_dataset_path("squad") == str(tmp_path / "squad" / "expmrc-squad-dev.json")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EXPMRC_DATA", str(tmp_path / "elsewhere"))
    with pytest.raises(ExpmrcError, match="race: no dev set found"):
        resolve_dataset_path("race")


def _zip_of(tmp_path, name: str, method: int = zipfile.ZIP_DEFLATED) -> Path:
    path = tmp_path / name
    with zipfile.ZipFile(path, "w", method) as z:
        z.writestr("expmrc/data/squad/expmrc-squad-dev.json", json.dumps({"data": ["x" * 200] * 50}))
    return path


def _patch(path: Path, offset_of: bytes, delta: int, value: bytes) -> None:
    """Overwrite bytes at a fixed distance after every occurrence of a header signature."""
    data = bytearray(path.read_bytes())
    start = data.find(offset_of)
    while start >= 0:
        data[start + delta:start + delta + len(value)] = value
        start = data.find(offset_of, start + 1)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage, message", [
    ("crc", "zip entry expmrc/data/squad/expmrc-squad-dev.json is damaged (Bad CRC-32"),
    ("deflate", "zip entry expmrc/data/squad/expmrc-squad-dev.json is damaged ("),
    ("method", "uses a compression method this Python cannot read"),
    ("password", "is encrypted; unpack it yourself"),
    ("truncated", "damaged zip archive (truncated?"),
])
def test_damaged_zip_is_one_line_and_writes_nothing(tmp_path, damage, message):
    archive = _zip_of(tmp_path, "release.zip", zipfile.ZIP_STORED if damage == "crc" else zipfile.ZIP_DEFLATED)
    raw = archive.read_bytes()
    if damage == "crc":
        archive.write_bytes(raw.replace(b"xxxx", b"xxyx", 1))
    elif damage == "deflate":
        body = raw.find(b"dev.json", 30) + 8
        archive.write_bytes(raw[:body] + bytes(b ^ 0x5A for b in raw[body:body + 12]) + raw[body + 12:])
    elif damage == "method":
        _patch(archive, b"PK\x03\x04", 8, b"\x63\x00")
        _patch(archive, b"PK\x01\x02", 10, b"\x63\x00")
    elif damage == "password":
        _patch(archive, b"PK\x03\x04", 6, b"\x01\x00")
        _patch(archive, b"PK\x01\x02", 8, b"\x01\x00")
    else:
        archive.write_bytes(raw[:len(raw) // 2])
    dest = tmp_path / "data"
    result = subprocess.run([sys.executable, "-m", "expmrc.cli", "download", "--from", str(archive), "--dest",
                             str(dest), "--subsets", "squad"], capture_output=True, text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(f"error: {archive}: ")
    assert message in result.stderr
    assert not dest.exists()
