"""A command killed while it writes leaves no half-written output where readers look: SIGKILL leaves only a
hidden, recognisable temporary that the next run of the same command removes; SIGTERM removes it at once."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.common import FIXTURES, ROOT, environment, needs_punkt
from expmrc.data.io import TMP_MARK

pytestmark = [needs_punkt, pytest.mark.slow]


def _start(argv: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "expmrc.cli", *argv], cwd=ROOT, env=environment(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _signal_while_writing(argv: list[str], output: Path, sig: int) -> tuple[subprocess.Popen, Path]:
    """Start the command, send `sig` the moment its temporary output appears; the process and temporary."""
    process = _start(argv)
    temporary = output.with_name(f".{output.name}{TMP_MARK}{process.pid}")
    deadline = time.monotonic() + 300
    while not temporary.exists():
        assert process.poll() is None, f"finished before it was caught writing: {process.communicate()[1][-2000:]}"
        assert time.monotonic() < deadline, "never started writing"
    process.send_signal(sig)
    process.communicate(timeout=120)
    return process, temporary


@pytest.fixture
def big_training_set(tmp_path) -> Path:
    """A small training set carrying a 24 MB field, so its labelled copy takes a while to write."""
    doc = {"version": "cmrc2018-train", "padding": "x" * (24 << 20), "data": [{"title": "T", "paragraphs": [{
        "context": "范廷颂是越南枢机。1963年被任为主教。",
        "qas": [{"id": "Q0", "question": "范廷颂何时被任为主教？", "answers": [{"text": "1963年", "answer_start": 9}]}]}]}]}
    path = tmp_path / "train.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_pseudo_killed_mid_write_leaves_no_output_and_the_next_run_cleans_up(big_training_set, tmp_path):
    output = tmp_path / "out" / "pseudo.json"
    argv = ["pseudo", "--subset", "cmrc2018", str(big_training_set), "--output", str(output)]
    process, temporary = _signal_while_writing(argv, output, signal.SIGKILL)
    assert process.returncode == -signal.SIGKILL
    assert not output.exists() and temporary.exists()
    again = subprocess.run([sys.executable, "-m", "expmrc.cli", *argv], cwd=ROOT, env=environment(),
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in output.parent.iterdir()) == ["pseudo.json"]
    assert json.loads(output.read_text(encoding="utf-8"))["data"][0]["paragraphs"][0]["qas"][0]["evidences"]


def test_pseudo_terminated_mid_write_removes_its_temporary_and_keeps_the_old_output(big_training_set, tmp_path):
    output = tmp_path / "pseudo.json"
    output.write_text('{"previous": true}\n', encoding="utf-8")
    argv = ["pseudo", "--subset", "cmrc2018", str(big_training_set), "--output", str(output)]
    process, temporary = _signal_while_writing(argv, output, signal.SIGTERM)
    assert process.returncode == 143
    assert not temporary.exists()
    assert output.read_text(encoding="utf-8") == '{"previous": true}\n'


def test_convert_checkpoint_killed_mid_write_leaves_no_folder_and_the_next_run_cleans_up(tmp_path):
    output = tmp_path / "converted"
    argv = ["convert-checkpoint", str(FIXTURES / "tiny_tf_bert"), str(output)]
    process, staging = _signal_while_writing(argv, output, signal.SIGKILL)
    assert process.returncode == -signal.SIGKILL
    assert not output.exists() and staging.is_dir()
    again = subprocess.run([sys.executable, "-m", "expmrc.cli", *argv], cwd=ROOT, env=environment(),
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["converted"]
    assert {"config.json", "model.safetensors", "vocab.txt", "conversion.json"} <= {p.name for p in output.iterdir()}
