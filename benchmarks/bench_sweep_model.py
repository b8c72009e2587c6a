"""Modelled GPU-hours of the whole λ sweep (4 subsets × 7 λ × 5 seeds × base and large = 280 runs), at the
old defaults (FP32, random batches padded to their longest) and the new ones (bf16, length-grouped batches
padded to a multiple of 8).

    python benchmarks/bench_sweep_model.py [--fp32-tflops 27] [--bf16-speedup 5] [--padding-json FILE]

Tokens computed per epoch are measured (benchmarks/bench_padding.py, same tokenizer and lengths): directly for
CMRC 2018 and C3 train; for SQuAD and RACE, whose training sets are not on this machine, an epoch of as many
windows as the training set would have (dev windows per question × its question count), each drawn (seeded)
from the dev set's windows, batched in the old and the new order. Compute per token:
6 × non-embedding parameters + 12 × layers × hidden × padded length (attention) for training, a third of
that for predicting the dev set; 2 epochs. Throughput is an assumption (the flags): FP32 on an H100 at
`--fp32-tflops` effective, bf16 `--bf16-speedup` times that. Not modelled (they favour the new defaults):
feature building on every run (now once per sweep), final checkpoint writes (now none), fused AdamW.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import bench_padding
import numpy as np
from transformers import AutoTokenizer

from expmrc.features.windows import WindowDataset
from expmrc.training.loop import BatchStream

TRAIN_QUESTIONS = {"squad": 87599, "race": 87866}  # SQuAD 1.1 train; RACE train (middle + high)
MODELS = {"base": (85e6, 12, 768), "large": (302e6, 24, 1024)}  # non-embedding parameters, layers, hidden
RUNS_PER_SUBSET_AND_SIZE = 7 * 5  # λ values × seeds
EPOCHS = 2


def drawn_cost(table: Any, drawn: np.ndarray, grouped: bool, pad_multiple: int, batch: int = 32) -> dict[str, float]:
    """Computed tokens and rows of one epoch over windows `drawn` from `table` (repeats allowed)."""
    data = WindowDataset(table, True, 0, pad_multiple, 512)
    lengths = data.lengths()[drawn]
    stream = BatchStream(len(drawn), batch, 12345, lengths if grouped else None)
    computed = rows = 0
    for step in range(math.ceil(len(drawn) / batch)):
        size, width, length = data.batch_shape(drawn[stream.indices(step)].tolist())
        computed += size * width * length
        rows += size * width
    return {"windows": len(drawn), "computed_tokens": computed, "computed_rows": rows}


def per_question(row: dict, order: str) -> tuple[float, float]:
    """(computed tokens, computed rows) per question of a measured set, in the old or new order."""
    cost = row[order]
    rows = cost.get("computed_rows", cost["windows"] * row["rows_per_window"])
    return cost["computed_tokens"] / row["questions"], rows / row["questions"]


def flops(tokens: float, rows: float, model: str, training: bool) -> float:
    """Matmul FLOPs of `tokens` computed tokens in `rows` rows (mean padded length tokens/rows)."""
    params, layers, hidden = MODELS[model]
    length = tokens / rows
    per_token = 2 * params + 4 * layers * hidden * length  # forward
    return tokens * per_token * (3 if training else 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fp32-tflops", type=float, default=27.0,
                        help="effective FP32 TFLOP/s of one H100 on BERT fine-tuning (default 27: 40%% of 67)")
    parser.add_argument("--bf16-speedup", type=float, default=5.0, help="bf16 throughput / FP32 (default 5)")
    parser.add_argument("--old-hours", type=float, default=None,
                        help="also scale FP32 throughput so that the old total is this many GPU-hours (e.g. 243)")
    args = parser.parse_args()
    rows = bench_padding.measure(bench_padding.minilm_folder(), 32)
    by_set = {r["set"]: r for r in rows}
    tokenizer = AutoTokenizer.from_pretrained(bench_padding.minilm_folder())
    for subset, questions in TRAIN_QUESTIONS.items():  # a training-sized epoch drawn from the dev windows
        label, _, path = next(d for d in bench_padding.datasets() if d[0] == f"{subset} dev")
        table, _ = bench_padding.table_of(subset, path, tokenizer)
        count = round(len(table) / by_set[label]["questions"] * questions)
        drawn = np.random.default_rng(0).integers(0, len(table), size=count)
        by_set[f"{subset} train"] = {"questions": questions, "rows_per_window": by_set[label]["rows_per_window"],
                                     "old": drawn_cost(table, drawn, False, 1), "new": drawn_cost(table, drawn, True, 8)}
    table = []
    for subset in ("squad", "cmrc2018", "race", "c3"):
        dev = by_set[f"{subset} dev"]
        train = by_set[f"{subset} train"]
        questions = train["questions"]
        for model in MODELS:
            hours = {}
            for order, tflops in (("old", args.fp32_tflops), ("new", args.fp32_tflops * args.bf16_speedup)):
                tokens, n_rows = per_question(train, order)
                dev_tokens, dev_rows = per_question(dev, order)
                work = EPOCHS * flops(tokens * questions, n_rows * questions, model, True) \
                    + flops(dev_tokens * dev["questions"], dev_rows * dev["questions"], model, False)
                hours[order] = work / (tflops * 1e12) / 3600 * RUNS_PER_SUBSET_AND_SIZE
            table.append((subset, model, "drawn from dev" if subset in TRAIN_QUESTIONS else "measured",
                          hours["old"], hours["new"]))
    print(f"assumptions: FP32 {args.fp32_tflops:g} TFLOP/s, bf16 {args.bf16_speedup:g}x that, {EPOCHS} epochs, "
          f"{RUNS_PER_SUBSET_AND_SIZE} runs per subset and size")
    print(f"{'subset':9} {'size':6} {'train epoch':15} {'old GPU-h':>10} {'new GPU-h':>10} {'new/old':>8}")
    for subset, model, source, old, new in table:
        print(f"{subset:9} {model:6} {source:15} {old:10.1f} {new:10.1f} {new / old:8.3f}")
    old_total, new_total = sum(t[3] for t in table), sum(t[4] for t in table)
    print(f"{'total':31} {old_total:10.1f} {new_total:10.1f} {new_total / old_total:8.3f}")
    for name in ("squad train", "race train"):
        cost = by_set[name]
        print(f"{name} (drawn): {cost['old']['computed_tokens'] / 1e6:.1f} -> {cost['new']['computed_tokens'] / 1e6:.1f} "
              "M tokens computed per epoch")
    if args.old_hours:
        scale = old_total / args.old_hours
        print(f"calibrated so the old total is {args.old_hours:g} GPU-hours (FP32 {args.fp32_tflops * scale:.1f} "
              f"TFLOP/s): new total {new_total / scale:.1f} GPU-hours")
        new_total /= scale
    for speedup in (4.0, 6.0):
        print(f"  with bf16 = {speedup:g}x FP32: new total {new_total * args.bf16_speedup / speedup:.1f} GPU-hours")


if __name__ == "__main__":
    main()
