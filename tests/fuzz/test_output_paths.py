"""Every command that writes refuses an output it cannot write, before any work, in one line naming the
path, and leaves nothing behind; the writers remove their temporaries on failure and after kills."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers.common import FIXTURES, SPAN_DATA, needs_punkt
from helpers.hostile import assert_refused, files_under, run_cli
from expmrc.data import io as eio
from expmrc.errors import ExpmrcError

pytestmark = needs_punkt

# command -> (argv before the output, the option naming it or None for a positional, "file" or "dir")
WRITERS = {
    "evaluate --details": (["evaluate", "{data}", "{pred}"], "--details", "file"),
    "evidence --output": (["evidence", "--method", "most-similar", "{data}"], "--output", "file"),
    "pseudo --output": (["pseudo", "--subset", "squad", "{data}"], "--output", "file"),
    "collect --output-dir": (["collect", "{runs}"], "--output-dir", "dir"),
    "download --dest": (["download", "--from", "{release}", "--subsets", "squad"], "--dest", "dir"),
    "convert-checkpoint OUT_DIR": (["convert-checkpoint", str(FIXTURES / "tiny_tf_bert")], None, "dir"),
}
# bad destination -> how to spell it inside the work folder (a file "plain.txt" and a folder "folder/" exist)
BAD = {
    "a folder for a file": ("folder", "file", "is a directory"),
    "a file for a folder": ("plain.txt", "dir", "is a file"),
    "below a file": ("plain.txt/below/out", None, "plain.txt is a file, not a folder"),
    "not writable": ("/proc/expmrc-test/out", None, "cannot write into /proc"),
    "a trailing slash for a file": ("newfolder/", "file", "names a folder"),
    "the input itself": ("{data}", "file", "is also an input"),
}


@pytest.fixture
def workspace(tmp_path):
    data = tmp_path / "dev.json"
    data.write_text(json.dumps(SPAN_DATA), encoding="utf-8")
    (tmp_path / "pred.json").write_text(json.dumps({"q1": {"answer": "Melbourne", "evidence": "x"}}), encoding="utf-8")
    (tmp_path / "plain.txt").write_text("not a folder", encoding="utf-8")
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "keep.txt").write_text("x", encoding="utf-8")
    run = tmp_path / "runs" / "a"
    run.mkdir(parents=True)
    (run / "run_info.json").write_text(json.dumps({"status": "finished", "loss_lambda": 0.1, "rand_seed": 1,
                                                   "model": "m", "task": "span", "predict_file": str(data)}),
                                       encoding="utf-8")
    (run / "dev_predictions.json").write_text(json.dumps({"q1": {"answer": "Melbourne", "evidence": "x"}}),
                                              encoding="utf-8")
    release = tmp_path / "release" / "squad"
    release.mkdir(parents=True)
    (release / "expmrc-squad-dev.json").write_text("{}", encoding="utf-8")
    return {"data": str(data), "pred": str(tmp_path / "pred.json"), "runs": str(tmp_path / "runs"),
            "release": str(tmp_path / "release"), "root": tmp_path}


CASES = [(writer, bad) for writer, (_, _, kind) in WRITERS.items() for bad, (_, only_for, _) in BAD.items()
         if only_for in (None, kind) and not (bad == "the input itself" and writer.split()[0] in ("collect", "download",
                                                                                              "convert-checkpoint"))]


@pytest.mark.parametrize("writer, bad", CASES)
def test_a_bad_output_is_one_line_before_any_work_and_nothing_is_left(workspace, writer, bad, monkeypatch):
    argv, option, kind = WRITERS[writer]
    spelled, _, expected = BAD[bad]
    monkeypatch.chdir(workspace["root"])
    target = spelled.format(**workspace)
    argv = [part.format(**workspace) for part in argv] + ([option, target] if option else [target])
    before = files_under(workspace["root"])
    status, _, err = run_cli(argv)
    assert_refused(status, err, names=expected)
    assert target.rstrip("/") in err
    assert files_under(workspace["root"]) == before


def test_writers_leave_nothing_when_writing_fails_or_is_interrupted(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old", encoding="utf-8")
    with pytest.raises(ExpmrcError, match="NaN or infinite number"):
        eio.write_json_atomic(str(target), {"x": float("nan")})
    with pytest.raises(ExpmrcError, match="lone surrogate"):
        eio.write_text_atomic(str(target), "bad \udc80 name")
    with pytest.raises(KeyboardInterrupt):
        with eio.atomic_file(str(target)) as tmp:
            tmp.write_text("half", encoding="utf-8")
            raise KeyboardInterrupt
    folder = tmp_path / "model"
    with pytest.raises(KeyboardInterrupt):
        with eio.atomic_directory(str(folder)) as staging:
            (staging / "weights").write_bytes(b"half")
            raise KeyboardInterrupt
    assert target.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_a_folder_is_replaced_whole_and_only_with_overwrite(tmp_path):
    folder = tmp_path / "model"
    with eio.atomic_directory(str(folder)) as staging:
        (staging / "a").write_text("1", encoding="utf-8")
    with pytest.raises(ExpmrcError, match="already exists and is not empty"):
        with eio.atomic_directory(str(folder)):
            pass
    with eio.atomic_directory(str(folder), overwrite=True) as staging:
        (staging / "b").write_text("2", encoding="utf-8")
    assert sorted(p.name for p in folder.iterdir()) == ["b"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_temporaries_of_dead_processes_are_removed_and_live_ones_kept(tmp_path):
    target = tmp_path / "out.json"
    stale = tmp_path / f".out.json{eio.TMP_MARK}{_dead_pid()}"
    stale.write_text("half", encoding="utf-8")
    stale_dir = tmp_path / f".out.json{eio.TMP_MARK}{_dead_pid()}"
    stale_dir.mkdir()
    (stale_dir / "weights").write_bytes(b"half")
    live = tmp_path / f".out.json{eio.TMP_MARK}{os.getppid()}"
    live.write_text("someone else is writing", encoding="utf-8")
    other = tmp_path / f".other.json{eio.TMP_MARK}{_dead_pid()}"
    other.write_text("another output's", encoding="utf-8")
    eio.write_json_atomic(str(target), {"ok": True})
    assert json.loads(target.read_text(encoding="utf-8")) == {"ok": True}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name, "out.json"])


def _dead_pid() -> int:
    """A process id that no process has now: that of a child that has exited."""
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(child.stdout)
