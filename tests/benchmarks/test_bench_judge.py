"""benchmarks/bench_judge.py runs end to end at a toy size on a CPU (generated pairs, no dev set), so it cannot rot
between the GPU runs it is meant for; asking for a GPU without one is one line."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers.common import ROOT

SCRIPT = ROOT / "benchmarks" / "bench_judge.py"


def run(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "EXPMRC_DATA"}
    env.update(CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=600,
                          cwd=ROOT)


@pytest.mark.slow
def test_a_toy_run_prints_a_row_per_batch_size():
    done = run("--shapes", "tiny", "--pairs", "24", "--batch-sizes", "4,16", "--repeats", "1", "--subset", "nosuch")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| tiny random")]
    assert [row.split("|")[2].strip() for row in rows] == ["4", "16"]
    for row in rows:
        cells = [cell.strip() for cell in row.split("|")[3:7]]
        assert float(cells[0]) > 0 and float(cells[1].replace(",", "")) > 0 and cells[3].endswith("x")
    assert "24 pairs from the generated English passages" in done.stdout


def test_cuda_without_a_gpu_is_one_line():
    done = run("--device", "cuda", "--shapes", "tiny", "--pairs", "4")
    assert done.returncode == 2 and done.stderr.strip().splitlines()[-1] == "error: --device cuda, but no CUDA GPU is visible"
