"""`expmrc evaluate ... | head`: a reader that goes away early ends the command quietly, no traceback."""

import json
import subprocess
import sys

import pytest

from helpers.common import ROOT, SPAN_DATA, environment, needs_punkt

pytestmark = [needs_punkt, pytest.mark.slow]


def test_closed_stdout_is_not_a_traceback(tmp_path):
    dataset, submission = tmp_path / "dev.json", tmp_path / "pred.json"
    dataset.write_text(json.dumps(SPAN_DATA), encoding="utf-8")
    submission.write_text(json.dumps({"q1": {"answer": "Melbourne", "evidence": "x"}}), encoding="utf-8")
    pairs = [str(dataset), str(submission)] * 400  # far more output than a pipe holds
    process = subprocess.Popen([sys.executable, "-m", "expmrc.cli", "evaluate", *pairs], cwd=ROOT, env=environment(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout.readline().startswith(b"subset")
    process.stdout.close()  # as `head -1` does
    stderr = process.stderr.read().decode()
    process.wait(timeout=120)
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr
    assert process.returncode == 141
