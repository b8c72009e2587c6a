"""Outputs: special files are written as they are (never replaced by a rename), an output that is an input is
refused, a full disk or a library's writer error is one line naming the path, and nothing is left behind."""

import errno
import json
import os
import stat
import subprocess
import sys
import threading

import numpy as np
import pytest
from helpers.common import ROOT, SPAN_DATA, environment, needs_punkt
from helpers.hostile import assert_refused, files_under, run_cli

from expmrc.data import io
from expmrc.errors import ExpmrcError

pytestmark = needs_punkt
PREDS = {"q1": {"answer": "Melbourne", "evidence": "Melbourne is the sporting capital of Australia."}}


@pytest.fixture
def pair(tmp_path):
    dataset, preds = tmp_path / "dev.json", tmp_path / "preds.json"
    dataset.write_text(json.dumps(SPAN_DATA), encoding="utf-8")
    preds.write_text(json.dumps(PREDS), encoding="utf-8")
    return str(dataset), str(preds)


def test_a_fifo_with_a_reader_gets_the_output_and_stays_a_fifo(pair, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    status, _, err = run_cli(["evaluate", *pair, "--details", str(fifo)])
    reader.join(timeout=30)
    assert status == 0, err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert b'"q1"' in received[0]
    assert files_under(tmp_path) == {"dev.json", "preds.json", "fifo"}


def test_a_character_device_is_written_not_replaced(pair, tmp_path):
    device = tmp_path / "null"
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # what /dev/null is
    except PermissionError:
        pytest.skip("creating a device node needs root")
    status, _, err = run_cli(["evaluate", *pair, "--details", str(device)])
    assert status == 0, err
    assert stat.S_ISCHR(os.lstat(device).st_mode)


@pytest.mark.parametrize("name", ["-", "link"])
def test_stdout_and_a_link_to_proc_self_fd_1_go_to_stdout(pair, tmp_path, name):
    link = tmp_path / "link"
    os.symlink("/proc/self/fd/1", link)
    target = "-" if name == "-" else str(link)
    out = subprocess.run([sys.executable, "-m", "expmrc.cli", "evaluate", *pair, "--json", "--details", target],
                         check=False, capture_output=True, text=True, env=environment(), cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert '"id": "q1"' in out.stdout or '"q1"' in out.stdout
    assert os.readlink(link) == "/proc/self/fd/1"


def test_a_link_to_a_regular_file_keeps_its_link(pair, tmp_path):
    real, link = tmp_path / "real.jsonl", tmp_path / "link.jsonl"
    real.write_text("old\n")
    os.symlink(real, link)
    status, _, err = run_cli(["evaluate", *pair, "--details", str(link)])
    assert status == 0, err
    assert link.is_symlink() and '"q1"' in real.read_text()


@pytest.mark.parametrize("which", [0, 1])
def test_report_refuses_to_overwrite_its_own_inputs(pair, tmp_path, which):
    before = open(pair[which], "rb").read()
    status, _, err = run_cli(["report", *pair, "--output", pair[which]])
    assert_refused(status, err, pair[which])
    assert "input" in err and open(pair[which], "rb").read() == before


def test_an_input_reached_by_a_hard_link_is_refused(pair, tmp_path):
    alias = tmp_path / "alias.json"
    os.link(pair[1], alias)
    status, _, err = run_cli(["report", *pair, "--output", str(alias)])
    assert_refused(status, err, str(alias))


def test_a_full_disk_is_one_line_naming_the_path(pair, tmp_path, monkeypatch):
    real_replace = os.replace

    def full(src, dst):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "replace", full)
    out = tmp_path / "details.jsonl"
    status, _, err = run_cli(["evaluate", *pair, "--details", str(out)])
    monkeypatch.setattr(os, "replace", real_replace)
    assert_refused(status, err, str(out))
    assert "No space left on device" in err
    assert files_under(tmp_path) == {"dev.json", "preds.json"}


@pytest.fixture
def tiny_disk(tmp_path):
    """A 1 MiB tmpfs (root only), unmounted afterwards."""
    folder = tmp_path / "disk"
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)], check=False,
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    yield folder
    subprocess.run(["umount", str(folder)], check=False)


def test_the_feature_cache_on_a_full_disk_is_one_line_and_leaves_nothing(tiny_disk):
    from expmrc.features.cache import write_cache
    from expmrc.features.windows import FeatureReport, FeatureTable

    path = str(tiny_disk / "cache.safetensors")
    table = FeatureTable("span", {"input_ids": np.zeros((1024, 512), dtype=np.int32)})  # 2 MiB
    with pytest.raises(ExpmrcError, match="cache.safetensors: cannot write: No space left on device"):
        write_cache(path, "k", table, FeatureReport())
    assert os.listdir(tiny_disk) == []


def test_a_safetensors_writer_error_inside_an_output_folder_is_one_line(tmp_path):
    from safetensors import SafetensorError

    with pytest.raises(ExpmrcError) as caught:
        with io.atomic_directory(str(tmp_path / "model")):
            raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")
    assert str(caught.value).startswith(f"{tmp_path / 'model'}: cannot write folder:")
    assert "\n" not in str(caught.value) and os.listdir(tmp_path) == []


def test_the_feature_cache_is_written_under_our_own_temporary_name(tmp_path, monkeypatch):
    """safetensors' save_file writes a `.tmpXXXX` of its own, which a kill would leave: it is not used."""
    from expmrc.features import cache
    from expmrc.features.windows import FeatureReport, FeatureTable

    seen = []
    real = io.write_bytes_atomic
    monkeypatch.setattr(cache, "write_bytes_atomic", lambda path, data: (seen.append(path), real(path, data)))
    path = str(tmp_path / "c.safetensors")
    table = FeatureTable("span", {"input_ids": np.arange(12, dtype=np.int32).reshape(3, 4)})
    cache.write_cache(path, "key", table, FeatureReport())
    assert seen == [path] and os.listdir(tmp_path) == ["c.safetensors"]
    found = cache.read_cache(path, "key")
    assert found is not None and found[0].arrays["input_ids"].tolist() == table.arrays["input_ids"].tolist()


def test_collect_checks_every_destination_before_writing(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "reports").write_text("a file where the report pages go")
    status, _, err = run_cli(["collect", str(tmp_path / "runs"), "--output-dir", str(out), "--html", "--quiet"])
    assert_refused(status, err, str(out / "reports"))
    assert sorted(os.listdir(out)) == ["reports"]


def test_dev_stdout_redirected_to_a_file_keeps_everything_written(pair, tmp_path):
    """Reopening /dev/stdout would truncate a redirected stdout; the details go through stdout itself."""
    captured = tmp_path / "captured.txt"
    with open(captured, "wb") as handle:
        out = subprocess.run([sys.executable, "-m", "expmrc.cli", "evaluate", *pair, "--json", "--details",
                              "/dev/stdout"], check=False, stdout=handle, stderr=subprocess.PIPE, text=True,
                             env=environment(), cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    text = captured.read_text()
    assert '"id": "q1"' in text and '"signature"' in text


def test_several_outputs_are_written_all_or_none(tmp_path):
    first, second = tmp_path / "a.json", tmp_path / "b.jsonl"
    first.write_text("old a\n", encoding="utf-8")
    with pytest.raises(ExpmrcError, match="/dev/full: cannot write: No space left on device"):
        io.write_texts_atomic([(str(first), "new a\n"), ("/dev/full", "x\n")])
    assert first.read_text(encoding="utf-8") == "old a\n" and files_under(tmp_path) == {"a.json"}
    io.write_texts_atomic([(str(first), "new a\n"), (str(second), "new b\n")])
    assert first.read_text(encoding="utf-8") == "new a\n" and second.read_text(encoding="utf-8") == "new b\n"
    assert files_under(tmp_path) == {"a.json", "b.jsonl"}


def test_one_file_for_two_outputs_is_refused_however_named(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.json").write_text("{}", encoding="utf-8")
    os.link(tmp_path / "f.json", tmp_path / "hard.json")
    for other in ("f.json", "./f.json", str(tmp_path / "f.json"), "hard.json"):
        with pytest.raises(ExpmrcError, match=f"{other}: given for both --output and --details"):
            io.check_distinct_outputs({"--output": "f.json", "--details": other})
    io.check_distinct_outputs({"--output": "f.json", "--details": "g.json", "--json": None})
