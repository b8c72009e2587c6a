"""`expmrc evaluate ... | head`: a reader that goes away early ends the command quietly, no traceback."""

import json
import subprocess
import sys

import pytest

from helpers.common import ROOT, SPAN_DATA, environment, needs_punkt, without_stdout

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


@pytest.mark.parametrize("where", ["full device", "closed"])
@pytest.mark.parametrize("command", [["lm-eval-path"], ["evaluate", "DATA", "PRED"], ["--version"], ["evaluate", "--help"]],
                         ids=["lm-eval-path", "evaluate", "version", "help"])
def test_stdout_on_a_full_device_or_closed_is_one_line_and_exit_2(tmp_path, where, command):
    dataset, submission = tmp_path / "dev.json", tmp_path / "pred.json"
    dataset.write_text(json.dumps(SPAN_DATA), encoding="utf-8")
    submission.write_text(json.dumps({q: {"answer": "x", "evidence": "x"} for q in ("q1", "q2", "q3")}),
                          encoding="utf-8")
    argv = [sys.executable, "-m", "expmrc.cli", *[{"DATA": str(dataset), "PRED": str(submission)}.get(word, word)
                                                 for word in command]]
    with open("/dev/full", "w") as full:
        if where == "closed":
            argv = without_stdout(argv)  # as `expmrc lm-eval-path >&-` starts
        done = subprocess.run(argv, cwd=ROOT, env=environment(), stderr=subprocess.PIPE, text=True, timeout=120,
                              stdout=full)
    reason = "No space left on device" if where == "full device" else "it is closed"
    assert done.returncode == 2 and done.stderr == f"error: cannot write to standard output: {reason}\n", done.stderr
