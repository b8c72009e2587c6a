"""benchmarks/bench_subset_steps.py at toy sizes on a CPU: per subset, the dev windows drawn to a training set's size,
a sample of the real loop's steps timed and scaled to the 2-epoch run by the tokens the loop computes, prediction and
decoding timed; its JSON feeds bench_sweep_model.py. Without a GPU the real thing is one line."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
from helpers.choice_data import choice_file
from helpers.common import ROOT, load_benchmark
from helpers.span_data import make_span_file

SCRIPT = ROOT / "benchmarks" / "bench_subset_steps.py"


def run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    env.pop("EXPMRC_DATA", None)
    return subprocess.run([sys.executable, str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_tiny_run_times_each_subset_and_its_json_plans_the_sweep(tmp_path):
    squad = make_span_file(tmp_path / "squad.json", 10, seed=1, version="expmrc-squad-dev")
    race = choice_file(tmp_path / "race.json", 12, seed=2)
    done = run("--tiny", "--subsets", "squad,race", "--dev", f"squad={squad}", "--dev", f"race={race}", "--train-questions",
               "race=100", "--sample-steps", "2", "--warmup-steps", "1", "--json", str(tmp_path / "steps.json"))
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads((tmp_path / "steps.json").read_text())
    assert set(figures["subsets"]) == {"squad", "race"} and figures["precision"] == "no"
    for name, questions in (("squad", 30), ("race", 100)):  # --tiny: 3 x the 10 dev questions, unless given
        f = figures["subsets"][name]
        assert f["train_questions"] == questions and f["source"] == f"dev windows drawn to {questions:,} questions"
        assert f["epoch_windows"] == round(f["dev_windows"] / f["dev_questions"] * questions)
        assert f["full_steps"] == math.ceil(2 * f["epoch_windows"] / 8)  # 2 epochs in batches of 8
        row = f["shapes"]["tiny"]
        assert row["sampled_steps"] == 2 and row["predict_windows"] > 0 and row["decode_seconds"] > 0
        # the 2 epochs scaled from the sample by the tokens computed
        assert row["train_seconds"] == pytest.approx(row["sampled_seconds"] * f["computed_tokens"] / row["sampled_tokens"])
        assert f["real_tokens"] <= f["computed_tokens"]
    rows = [line for line in done.stdout.splitlines() if line.startswith(("| squad |", "| race |"))]
    assert len(rows) == 4 and all(line.endswith(f"| {figures['device']} |") for line in rows[:2])
    plan = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_sweep_model.py"), "--steps",
                           str(tmp_path / "steps.json")], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert plan.returncode == 0, plan.stderr
    assert "| squad | base |" in plan.stdout and "| race | large |" in plan.stdout
    assert f"measured: bench_subset_steps.py on {figures['device']}" in plan.stdout
    assert "not projected: cmrc2018 (not in --steps" in plan.stdout


@pytest.mark.parametrize("accumulation", [1, 2])
def test_the_sampled_tokens_are_those_of_the_batches_the_loop_trained(tmp_path, accumulation):
    """The projection divides by the tokens of the sampled steps: they must be the padded batches `train` really ran
    (the run's length-grouped stream over the drawn epoch, each micro-batch padded on its own)."""
    import torch

    from expmrc.features.windows import WindowDataset
    from expmrc.models.span import SpanModel
    from expmrc.training.loop import TrainConfig, make_accelerator

    bench = load_benchmark("bench_subset_steps")
    dev = make_span_file(tmp_path / "dev.json", 12, seed=3, version="expmrc-squad-dev")
    args = bench.parse(["--tiny", "--dev", f"squad={dev}", "--subsets", "squad", "--sample-steps", "3",
                        "--warmup-steps", "0"])
    release = bench.Release.tiny()
    tokenizer = bench.tokenizer_for(args)
    table, _, _ = bench.windows("squad", str(dev), tokenizer, release, True, 0)
    data = WindowDataset(table, True, tokenizer.pad_token_id, 1, release.max_seq_length)
    seen: list[int] = []

    class Recording(bench.Epoch):
        def batch(self, indices):
            batch = super().batch(indices)
            seen.append(batch["input_ids"].numel())
            return batch

    epoch = Recording(data, bench.np.random.default_rng(5).integers(0, len(table), size=50))
    config = bench.bert_config("tiny", release.max_seq_length)
    config.vocab_size = len(tokenizer)
    torch.manual_seed(0)
    accelerator = make_accelerator(TrainConfig(output_dir=str(tmp_path), mixed_precision="no", seed=args.seed))
    bench.timed_steps(SpanModel(config), epoch, args, release, accumulation, accelerator)
    costs = bench.step_costs(epoch, release, accumulation, args.seed)
    assert len(seen) == 3 * accumulation and sum(seen) == costs[:3, 0].sum()
    assert len(costs) == math.ceil(2 * 50 / 8)


def test_a_vocabulary_file_splits_english_into_its_pieces_and_chinese_per_character(tmp_path):
    """--vocab is what the GPU machine has (devcheck's vocab.txt): read as a WordPiece vocabulary, not left unknown."""
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "river", "un", "##bel", "北", "京"]))
    dev = make_span_file(tmp_path / "dev.json", 1, seed=1)
    bench = load_benchmark("bench_subset_steps")
    tokenizer = bench.tokenizer_for(bench.parse(["--vocab", str(vocab), "--subsets", "squad", "--dev", f"squad={dev}"]))
    assert tokenizer.tokenize("The River unbel 北京 x") == ["the", "river", "un", "##bel", "北", "京", "[UNK]"]
    assert (tokenizer.pad_token_id, tokenizer.cls_token_id, len(tokenizer)) == (0, 2, 11)


def test_a_file_of_another_subset_is_one_line(tmp_path, capsys):
    race = choice_file(tmp_path / "race.json", 2, seed=2)
    assert load_benchmark("bench_subset_steps").main(["--tiny", "--subsets", "c3", "--dev", f"c3={race}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {race}: --subset c3 contradicts the file's version") and err.count("\n") == 1


def test_the_real_benchmark_without_a_gpu_is_one_line(tmp_path):
    done = run("--vocab", str(tmp_path / "vocab.txt"), "--subsets", "squad", "--dev",
               f"squad={make_span_file(tmp_path / 'd.json', 2, seed=1)}")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("error: bench_subset_steps.py times a GPU and none is visible here; --tiny runs it at toy "
                           "sizes on the CPU\n")


@pytest.mark.parametrize("argv, message", [
    (["--tiny", "--subsets", "wiki"], "--subsets: 'wiki' is not one of squad, race, cmrc2018, c3"),
    (["--tiny", "--shapes", "huge"], "--shapes: 'huge' is not base or large"),
    (["--tiny", "--dev", "squad"], "--dev takes SUBSET=VALUE"),
    (["--tiny", "--subsets", "squad", "--dev", "squad=/nowhere.json"], "/nowhere.json: not found (the squad dev set"),
    (["--tiny", "--train-questions", "c3=many"], "--train-questions takes SUBSET=VALUE"),
])
def test_bad_arguments_are_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as stopped:
        load_benchmark("bench_subset_steps").parse(argv)
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.count("\n") == 1 and message in err


def test_graphed_steps_are_timed_after_their_captures_and_projected_by_bucket_tokens(tmp_path, monkeypatch):
    """With graphs (the CPU counted among their devices: the same steps uncaptured), the sample's steps first run
    twice untimed, the run's tokens are its forward passes' buckets, and the warm-ups and captures are added."""
    from expmrc.training import graphs

    monkeypatch.setattr(graphs, "GRAPHED_DEVICES", ("cuda", "cpu"))
    bench = load_benchmark("bench_subset_steps")
    dev = make_span_file(tmp_path / "dev.json", 10, seed=3, version="expmrc-squad-dev")
    assert bench.main(["--tiny", "--dev", f"squad={dev}", "--subsets", "squad", "--sample-steps", "2",
                       "--cuda-graphs", "on", "--attention", "unpadded", "--json", str(tmp_path / "s.json")]) == 0
    figures = json.loads((tmp_path / "s.json").read_text())["subsets"]["squad"]
    row = figures["shapes"]["tiny"]
    graphed = row["cuda_graphs"]
    assert graphed["used"] is True and graphed["buckets_met"] >= 1 and row["graph_overhead_seconds"] >= 0
    assert row["train_seconds"] == pytest.approx(row["sampled_seconds"] * row["tokens_ratio"] * figures["full_steps"]
                                                 / row["sampled_steps"] + row["graph_overhead_seconds"])
    assert row["sampled_tokens"] % 64 == 0  # bucket sizes, not padded batches
