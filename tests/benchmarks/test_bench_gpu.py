"""benchmarks/bench_gpu.py runs end to end at toy sizes on a CPU, so it cannot rot between GPU runs: the two
models of a case take turns, warm up until their step times settle and are timed in repeated rounds; part 2
needs no model package; asking for the real benchmark without a GPU is one line, not a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers.common import ROOT, load_benchmark
from helpers.span_data import make_span_file

SCRIPT = ROOT / "benchmarks" / "bench_gpu.py"


def run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_tiny_run_prints_every_case_and_the_epoch(tmp_path):
    train = make_span_file(tmp_path / "train.json", 6, seed=1, version="cmrc2018-train")
    dev = make_span_file(tmp_path / "dev.json", 4, seed=2, version="expmrc-cmrc2018-dev")
    done = run("--tiny", "--steps", "1", "--repeats", "2", "--warmup", "1", "--max-warmup", "2", "--precisions",
               "bf16,fp32", "--compile", "off,on", "--compile-backend", "eager", "--train", str(train), "--dev", str(dev))
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| tiny |")]
    cases = {tuple(cell.strip() for cell in row.split("|")[1:6]) for row in rows}
    assert cases == {("tiny", task, precision, compiled, model) for task in ("span", "choice")
                     for precision in ("bf16", "fp32") for compiled in ("off", "on")
                     for model in ("ours", "library", "ours / library")}
    for row in (r for r in rows if "ours / library" not in r):  # step ms, spread, tokens/s, memory; no peak on a CPU
        cells = [cell.strip() for cell in row.split("|")[6:15]]
        assert float(cells[0]) > 0 and cells[1].startswith("±") and float(cells[2].replace(",", "")) > 0
        assert cells[4] == "n/a" and float(cells[5]) > 0 and cells[7].split()[0] == "2"  # warm-up capped at 2
    assert "one epoch, tiny shape" in done.stdout and "dev prediction: " in done.stdout
    assert "features: train " in done.stdout


def test_the_two_models_take_turns_warm_up_until_settled_and_repeat(monkeypatch, capsys):
    bench = load_benchmark("bench_gpu")
    order: list[tuple[bool, int]] = []
    timed = bench.Case.timed
    times = iter([5.0, 5.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0] + [0.5] * 100)  # a slow first step each, then steady

    def recording(self, steps, device, other):
        order.append((self is self_cases[0], steps))
        timed(self, steps, device, other)
        return next(times)

    self_cases: list = []
    build = bench.Case.__init__

    def remember(self, *args, **kwargs):
        build(self, *args, **kwargs)
        self_cases.append(self)

    monkeypatch.setattr(bench.Case, "timed", recording)
    monkeypatch.setattr(bench.Case, "__init__", remember)
    args = bench.parse(["--tiny", "--tasks", "span", "--precisions", "fp32", "--compile", "off", "--steps", "2",
                        "--repeats", "3", "--warmup", "1", "--skip-epoch"])
    pair = bench.time_pair("span", bench.bert_config("tiny", args.seq), args, "fp32", False, bench.torch.device("cpu"))
    # warm-up: single steps, ours then the library's, until both have 3 steps within 5% (5, 1, 1, 1: four each)
    assert order[:8] == [(True, 1), (False, 1)] * 4
    assert order[8:] == [(True, 2), (False, 2)] * 3  # then 3 rounds of 2 steps, alternating
    assert [len(case.warmup) for case in pair] == [4, 4] and [len(case.rounds) for case in pair] == [3, 3]
    assert all(case.settled(args) for case in pair)


def test_part_two_builds_a_character_vocabulary_when_no_tokenizer_is_given(tmp_path):
    bench = load_benchmark("bench_gpu")
    train = make_span_file(tmp_path / "train.json", 3, seed=1, version="cmrc2018-train")
    train.write_text(train.read_text(encoding="utf-8").replace("the", "北京 the"), encoding="utf-8")
    args = bench.parse(["--tiny", "--train", str(train), "--dev", str(train)])
    tokenizer = bench.epoch_tokenizer(args)
    pieces = tokenizer.tokenize("北京 The river")
    assert pieces[:2] == ["北", "京"] and "[UNK]" not in pieces and pieces[2:5] == ["t", "##h", "##e"]


def test_the_real_benchmark_without_a_gpu_is_one_line():
    done = run("--shapes", "base")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: ") and len(done.stderr.strip().splitlines()) == 1 and "--tiny" in done.stderr
