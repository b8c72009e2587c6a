"""scripts/lambda_sweep.sh checks every number it counts with or passes to the runs before anything runs: a bad
one is one line and exit 2 (not a bash arithmetic error, a `seq` error, or a sweep over a λ of "a"); whole
numbers are read as decimal, so RUNS_PER_GPU=08 is eight runs per GPU, not an octal error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.common import ROOT


def sweep(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("LAUNCH", "EXTRA_ARGS", "SEEDS", "LAMBDAS", "NUM_SEEDS")}
    base.update(PYTHON=sys.executable, DRY_RUN="1", GPUS="0", SUBSET="c3", PLM_PATH="p", DATA_PATH="d",
                OUTPUT_ROOT=str(tmp_path / "sweep"), **env)
    return subprocess.run(["bash", str(ROOT / "scripts" / "lambda_sweep.sh")], env=base, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize(("env", "says"), [
    ({"NUM_SEEDS": "abc"}, "NUM_SEEDS must be a whole number of at least 1, got 'abc'"),
    ({"NUM_SEEDS": "0"}, "NUM_SEEDS must be a whole number of at least 1, got '0'"),
    ({"LAMBDAS": "a b"}, "LAMBDAS must be numbers of at least 0 separated by spaces, got 'a' in 'a b'"),
    ({"LAMBDAS": "0.1 -1"}, "LAMBDAS must be numbers of at least 0 separated by spaces, got '-1' in '0.1 -1'"),
    ({"SEEDS": "1 two"}, "SEEDS must be whole numbers separated by spaces, got 'two' in '1 two'"),
    ({"RUNS_PER_GPU": "1e3"}, "RUNS_PER_GPU must be a whole number of at least 1, got '1e3'"),
])
def test_a_bad_number_is_one_line_and_exit_2_before_any_run(tmp_path, env, says):
    done = sweep(tmp_path, **env)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr == f"error: {says}\n"


def test_whole_numbers_with_leading_zeros_are_decimal(tmp_path):
    done = sweep(tmp_path, RUNS_PER_GPU="08", NUM_SEEDS="09", LAMBDAS="0.1 1e-2 .5", COLLECT="0")
    assert done.returncode == 0, done.stderr
    commands = done.stdout.splitlines()
    assert len(commands) == 27  # three λ times nine seeds
    assert all(f"run {k} of 8 sharing" in done.stderr for k in range(1, 9)) and "run 9 of 8" not in done.stderr
    assert any("--loss_lambda=1e-2" in c for c in commands) and any("--rand_seed=9" in c for c in commands)
