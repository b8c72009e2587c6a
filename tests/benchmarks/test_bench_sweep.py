"""benchmarks/bench_sweep.py at toy sizes on a CPU: short runs of a release script through lambda_sweep.sh, k
copies side by side, a projected sweep, every figure with its device; without a GPU the real thing is one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers.common import ROOT
from helpers.span_data import make_span_file

SCRIPT = ROOT / "benchmarks" / "bench_sweep.py"


def run(*args: str, **env: str) -> subprocess.CompletedProcess:
    full = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", PYTHON=sys.executable,
                **env)
    return subprocess.run([sys.executable, str(SCRIPT), *args], env=full, capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_tiny_sweep_measures_runs_side_by_side_and_projects_the_sweep(tmp_path):
    train = make_span_file(tmp_path / "train.json", 24, seed=1, version="squad-train")
    dev = make_span_file(tmp_path / "dev.json", 6, seed=2, version="expmrc-squad-dev")
    done = run("--tiny", "--data", f"squad={train},{dev}", "--steps", "3", "--packing", "1,2", "--lambdas", "2",
               "--seeds", "3", "--output-root", str(tmp_path / "runs"), "--json", str(tmp_path / "f.json"),
               EXPMRC_CACHE=str(tmp_path / "cache"))
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads((tmp_path / "f.json").read_text())
    row = figures["subsets"]["squad"]
    assert row["full_steps"] == -(-2 * row["windows"] // 8)  # 2 epochs of its windows in batches of 8
    assert row["full_run"] > row["wall"] - row["train"] > 0 and row["per_step"] > 0
    assert set(figures["packing"]) == {"1", "2"} and figures["packing"]["1"]["gain_train"] == pytest.approx(1.0)
    assert figures["packing_subset"] == "squad" and figures["extra_args"] == ""  # what bench_sweep_model.py reports
    # two copies really ran side by side, each with its own record
    infos = [json.loads(p.read_text()) for p in (tmp_path / "runs" / "squad-k2").glob("lambda_*/seed_*/run_info.json")]
    assert len(infos) == 2 and all(i["status"] == "finished" and i["timing"]["steps_run"] == 3 for i in infos)
    hours = figures["gpu_hours"]["1"]
    assert hours == pytest.approx(2 * 3 * row["full_run"] / 3600, rel=1e-6)
    lines = [line for line in done.stdout.splitlines()
             if line.startswith("| ") and "---" not in line and not line.endswith("| device |")]  # not the headers
    assert lines and all(line.rstrip(" |").endswith(figures["device"]) for line in lines)  # every figure, its device
    assert "not measured (no --data, or the run failed): cmrc2018, race, c3" in done.stdout


def test_without_a_gpu_the_real_benchmark_is_one_line(tmp_path):
    train = make_span_file(tmp_path / "train.json", 2, seed=1)
    done = run("--plm", "models/x", "--data", f"squad={train},{train}")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == ("error: bench_sweep.py measures a GPU and none is visible here; --tiny runs it at "
                                   "toy sizes on the CPU")


@pytest.mark.parametrize("argv, message", [
    (["--tiny"], "give at least one --data SUBSET=DIR"),
    (["--tiny", "--data", "wiki=a,b"], "--data must be SUBSET=DIR or SUBSET=TRAIN,DEV"),
    (["--tiny", "--data", "squad=/nowhere"], "/nowhere/train-pseudo-squad.json: not found"),
    (["--tiny", "--data", "squad=/nowhere", "--packing", "0"], "must be at least 1"),
])
def test_bad_arguments_are_one_line(argv, message):
    done = run(*argv)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and message in done.stderr
