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
    base.update({"PYTHON": sys.executable, "DRY_RUN": "1", "GPUS": "0", "SUBSET": "c3", "PLM_PATH": "p",
                 "DATA_PATH": "d", "OUTPUT_ROOT": str(tmp_path / "sweep"), **env})
    return subprocess.run(["bash", str(ROOT / "scripts" / "lambda_sweep.sh")], env=base, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize(("env", "says"), [
    ({"NUM_SEEDS": "abc"}, "NUM_SEEDS must be a whole number from 1 to 1000, got 'abc'"),
    ({"NUM_SEEDS": "0"}, "NUM_SEEDS must be a whole number from 1 to 1000, got '0'"),
    ({"NUM_SEEDS": "99999999999999999999"}, "NUM_SEEDS must be a whole number from 1 to 1000, got '99999999999999999999'"),
    ({"LAMBDAS": "a b"}, "LAMBDAS must be numbers from 0 to 1000000 separated by spaces, got 'a' in 'a b'"),
    ({"LAMBDAS": "0.1 -1"}, "LAMBDAS must be numbers from 0 to 1000000 separated by spaces, got '-1' in '0.1 -1'"),
    ({"LAMBDAS": "0.1 1e999"}, "LAMBDAS must be numbers from 0 to 1000000 separated by spaces, got '1e999' in '0.1 1e999'"),
    ({"LAMBDAS": "*"}, "LAMBDAS must be numbers from 0 to 1000000 separated by spaces, got '*' in '*'"),
    ({"LAMBDAS": "0.1 0.5 0.10"}, "LAMBDAS names 0.10 twice (as a number): two runs would train it with the same seed"),
    ({"SEEDS": "1 two"}, "SEEDS must be whole numbers from 0 to 4294967295 separated by spaces, got 'two' in '1 two'"),
    ({"SEEDS": "4294967296"}, "SEEDS must be whole numbers from 0 to 4294967295 separated by spaces, got '4294967296' in "
                              "'4294967296'"),
    ({"SEEDS": "1 2 01"}, "SEEDS names 1 twice: two runs would train the same seed"),
    ({"SEEDS": " "}, "LAMBDAS and SEEDS must each name at least one value"),
    ({"RUNS_PER_GPU": "1e3"}, "RUNS_PER_GPU must be a whole number from 1 to 64, got '1e3'"),
    ({"RUNS_PER_GPU": "65"}, "RUNS_PER_GPU must be a whole number from 1 to 64, got '65'"),
    ({"SWEEP_RUNS": "0.1:1 0.5:99999999999"}, "SWEEP_RUNS takes LAMBDA:SEED items separated by spaces, such as "
                                              "'0.1:1 0.5:3'; got '0.5:99999999999'"),
    ({"SWEEP_RUNS": "0.1:1 .1:01"}, "SWEEP_RUNS names the run '.1:1' twice (as numbers): two runs would write one folder"),
    ({"SWEEP_RUNS": "  "}, "SWEEP_RUNS names no run (LAMBDA:SEED items separated by spaces, such as '0.1:1 0.5:3')"),
    ({"GPUS": "0 x"}, "GPUS must be GPU indices (or GPU-/MIG- UUIDs) separated by spaces or commas, got 'x' in '0 x'"),
    ({"TRAIN_BATCH_SIZE": "abc"}, "TRAIN_BATCH_SIZE must be a whole number from 1 to 1048576, got 'abc'"),
    ({"MAX_SEQ_LENGTH": "99999999999999999999"},
     "MAX_SEQ_LENGTH must be a whole number from 1 to 1048576, got '99999999999999999999'"),
    ({"SAVE_CHECKPOINTS_STEPS": "0"}, "SAVE_CHECKPOINTS_STEPS must be a whole number from 1 to 1000000000, got '0'"),
    ({"LEARNING_RATE": "0"}, "LEARNING_RATE must be a number above 0 and at most 1, got '0'"),
    ({"LEARNING_RATE": "nan"}, "LEARNING_RATE must be a number above 0 and at most 1, got 'nan'"),
    ({"NUM_TRAIN_EPOCHS": "inf"}, "NUM_TRAIN_EPOCHS must be a number above 0 and at most 1000, got 'inf'"),
    ({"SIZE": "huge"}, "SIZE must be base or large, got 'huge'"),
    ({"MIXED_PRECISION": "fp8"}, "MIXED_PRECISION must be auto, no, fp16 or bf16, got 'fp8'"),
    ({"DO_LOWER_CASE": "maybe"}, "DO_LOWER_CASE must be True or False, got 'maybe'"),
    ({"DRY_RUN": "true"}, "DRY_RUN must be 0 or 1, got 'true'"),
    ({"COLLECT": "yes"}, "COLLECT must be 0 or 1, got 'yes'"),
    ({"PYTHON": "/nowhere/python"}, "PYTHON=/nowhere/python: no such program"),
    ({"LAUNCH": "nowhere-launcher --flag"}, "LAUNCH='nowhere-launcher --flag': no such program"),
])
def test_a_bad_number_is_one_line_and_exit_2_before_any_run(tmp_path, env, says):
    done = sweep(tmp_path, **env)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr == f"error: {says}\n"


def test_an_output_root_that_is_a_file_is_one_line(tmp_path):
    (tmp_path / "sweep").write_text("not a folder")
    done = sweep(tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"error: OUTPUT_ROOT={tmp_path / 'sweep'}: is a file, "
                                                                  "not a folder\n")


def test_gpus_may_be_separated_by_commas_as_cuda_visible_devices_is(tmp_path):
    done = sweep(tmp_path, GPUS="0,1", LAMBDAS="0", SEEDS="1 2", COLLECT="0")
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stderr.splitlines() if line.startswith("run ")] == [
        f"run {tmp_path}/sweep/lambda_0/seed_1 on GPU 0", f"run {tmp_path}/sweep/lambda_0/seed_2 on GPU 1"]


def test_whole_numbers_with_leading_zeros_are_decimal(tmp_path):
    done = sweep(tmp_path, RUNS_PER_GPU="08", NUM_SEEDS="09", LAMBDAS="0.1 1e-2 .5", COLLECT="0")
    assert done.returncode == 0, done.stderr
    commands = done.stdout.splitlines()
    assert len(commands) == 27  # three λ times nine seeds
    assert all(f"run {k} of 8 sharing" in done.stderr for k in range(1, 9)) and "run 9 of 8" not in done.stderr
    assert any("--loss_lambda=1e-2" in c for c in commands) and any("--rand_seed=9" in c for c in commands)


@pytest.mark.parametrize("scheduler", ["local", "slurm"])
def test_a_dry_run_whose_stdout_is_full_or_closed_is_one_line(tmp_path, scheduler):
    base = {k: v for k, v in os.environ.items() if k not in ("LAUNCH", "EXTRA_ARGS", "SEEDS", "LAMBDAS", "NUM_SEEDS")}
    command = f"bash {ROOT / 'scripts' / 'lambda_sweep.sh'}"
    for redirect in ("> /dev/full", ">&-"):
        done = subprocess.run(f"{command} {redirect}", shell=True, capture_output=True, text=True, timeout=120,
                              env={**base, "PYTHON": sys.executable, "DRY_RUN": "1", "GPUS": "", "SUBSET": "c3",
                                   "SCHEDULER": scheduler, "PLM_PATH": "p", "DATA_PATH": "d", "LAMBDAS": "0",
                                   "SEEDS": "1", "OUTPUT_ROOT": str(tmp_path / "sweep")})
        assert done.returncode == 2, done.stderr
        assert done.stderr.splitlines()[-1].startswith("error: cannot write to standard output (DRY_RUN=1 prints")
        assert not any(line.startswith(("bash:", "awk:")) or "write error" in line for line in done.stderr.splitlines())
