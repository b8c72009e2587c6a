"""Ctrl-C in the tests works however the suite is started: every test that sends one goes through
tests/helpers/interrupt.py (the `press_ctrl_c` fixture, which marks it `ctrl_c`), and all of them pass when the
README's test command runs from a script in the background, where SIGINT is ignored and every child inherits that
(`bash -c 'trap "" INT; .venv/bin/python -m pytest -q'`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest
from helpers.common import ROOT, environment
from helpers.interrupt import HeldFifo, start

TESTS = ROOT / "tests"
HELPER = TESTS / "helpers" / "interrupt.py"


def files_sending_ctrl_c() -> list[str]:
    """The test files that take the `press_ctrl_c` fixture."""
    return sorted(str(path.relative_to(ROOT)) for path in TESTS.rglob("test_*.py")
                  if re.search(r"def test_\w+\([^)]*\bpress_ctrl_c\b", path.read_text(encoding="utf-8")))


def test_only_the_helper_sends_sigint():
    """A test sending SIGINT itself would fail under a parent that ignores it; the helper restores it first."""
    own = [str(path.relative_to(ROOT)) for path in TESTS.rglob("*.py") if path != HELPER
           and re.search(r"(send_signal|kill|killpg|raise_signal)\([^)]*SIGINT", path.read_text(encoding="utf-8"))]
    assert not own, f"send Ctrl-C through the press_ctrl_c fixture (tests/helpers/interrupt.py): {own}"
    assert len(files_sending_ctrl_c()) >= 3


@pytest.mark.slow
def test_every_ctrl_c_test_passes_when_a_script_runs_the_suite_with_sigint_ignored():
    files = " ".join(files_sending_ctrl_c())
    done = subprocess.run(["bash", "-c", f'trap "" INT; exec "{sys.executable}" -m pytest -q -p no:cacheprovider '
                                         f"-m ctrl_c {files}"],
                          cwd=ROOT, env=environment(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    passed = re.search(r"(\d+) passed", done.stdout)
    assert passed and int(passed[1]) >= 4 and "failed" not in done.stdout, done.stdout[-1000:]


def test_the_held_fifo_is_ready_only_once_the_command_waits_in_its_read(tmp_path):
    """Ctrl-C that lands between a command's open of its input and its read is lost (Python notes the signal, then
    the read waits for ever): the contract's held FIFO says ready only once the reader sleeps in that read."""
    fifo = tmp_path / "input.json"
    os.mkfifo(fifo)
    reader = "import sys, time; f = open(sys.argv[1], 'rb'); time.sleep(3); f.read()"
    process = start([sys.executable, "-c", reader, str(fifo)])
    held = HeldFifo(str(fifo), process)
    opened = 0.0
    try:
        deadline = time.monotonic() + 60
        while not held() and time.monotonic() < deadline:
            if held.fd is not None and not opened:
                opened = time.monotonic()
            time.sleep(0.01)
        ready = time.monotonic()
    finally:
        held.close()
        process.kill()
        process.wait()
    assert opened and held.reached
    assert ready - opened >= 1.5, f"ready {ready - opened:.2f} s after the open, while the reader still slept"
