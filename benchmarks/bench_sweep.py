"""GPU-hours of the full λ sweep, measured on the GPU at hand: short runs of each subset's release script.

    python benchmarks/bench_sweep.py --plm models/chinese_macbert_base \
        --data cmrc2018=data/cmrc2018 --data c3=data/c3 [--steps 200] [--packing 1,2,3]
    python benchmarks/bench_sweep.py --tiny --data squad=TRAIN.json,DEV.json   # toy sizes, CPU is fine

For every subset given with --data (a folder holding train-pseudo-<subset>.json and expmrc-<subset>-dev.json,
or the two files separated by a comma), `scripts/lambda_sweep.sh` runs one run of `scripts/run_<subset>.sh` with
the release's settings cut to --steps optimizer steps (one λ, one seed; the whole dev set is still predicted),
on this machine's GPU (the first of CUDA_VISIBLE_DEVICES). The run's own record gives its training seconds and
compiling seconds (`timing` in run_info.json) and its training windows, so a full run (2 epochs) is projected as
  start-up, features and prediction (the short run's wall time less its training)
  + compiling + seconds per step × the full run's steps.
Then k = 1, 2, 3 (--packing) copies of the --packing-subset run go side by side on the one GPU
(`RUNS_PER_GPU=k`); the packing gain of k is the throughput of k runs against one: the sum of their training
steps per second over one run's alone (and, beside it, k × one run's wall time / k runs' wall time). The
sweep's GPU-hours per subset are runs (--lambdas × --seeds) × the projected full run ÷ the gain.
The feature caches are filled first by an untimed one-step run per subset (--no-warm skips it when a run
with the same settings already filled them), so the figures are those of a sweep's runs, which share them.
Every figure is printed with the device that measured it.

Without a CUDA GPU only --tiny runs (a random tiny BERT over the data's characters unless --plm is given, 64
tokens, batches of 8, the runs on the CPU); anything else is one line and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SUBSETS = ("squad", "cmrc2018", "race", "c3")
TINY_ARGS = ("--max_seq_length 64 --doc_stride 32 --max_query_length 16 --train_batch_size 8 "
             "--predict_batch_size 64 --allow_unknown_tokens True")


def parse(argv: list[str] | None) -> argparse.Namespace:
    from expmrc.errors import OneLineParser  # usage errors in one line

    parser = OneLineParser(prog="bench_sweep.py", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plm", help="the pre-trained model folder the release scripts get as PLM_PATH "
                                      "(required unless --tiny)")
    parser.add_argument("--data", action="append", default=[], metavar="SUBSET=DIR|SUBSET=TRAIN,DEV",
                        help="a subset to measure and its data (repeatable)")
    parser.add_argument("--steps", type=int, default=200, help="optimizer steps of each short run (default 200)")
    parser.add_argument("--packing", default="1,2,3", help="runs side by side on the GPU to measure (default 1,2,3)")
    parser.add_argument("--packing-subset", default=None, help="the subset run side by side (default: the first)")
    parser.add_argument("--lambdas", type=int, default=7, help="λ values of the full sweep (default 7)")
    parser.add_argument("--seeds", type=int, default=5, help="seeds of the full sweep (default 5)")
    parser.add_argument("--extra-args", default="", help="more flags for every run (EXTRA_ARGS), e.g. --torch_compile True")
    parser.add_argument("--timeout", type=float, default=900, help="seconds one sweep call may take (default 900)")
    parser.add_argument("--no-warm", action="store_true", help="skip the untimed runs that fill the feature caches")
    parser.add_argument("--output-root", default=None, help="where the runs go (default: a temporary folder, removed)")
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file")
    parser.add_argument("--tiny", action="store_true", help="toy sizes on any machine, CPU included")
    args = parser.parse_args(argv)
    try:
        args.packing = sorted({int(k) for k in args.packing.split(",")})
    except ValueError:
        parser.error(f"--packing must be whole numbers separated by commas, got {args.packing!r}")
    if not args.packing or args.packing[0] < 1 or args.steps < 1 or args.lambdas < 1 or args.seeds < 1:
        parser.error("--packing, --steps, --lambdas and --seeds must be at least 1")
    args.data = dict(data_argument(parser, text) for text in args.data)
    if not args.data:
        parser.error("give at least one --data SUBSET=DIR")
    args.packing_subset = args.packing_subset or next(iter(args.data))
    if args.packing_subset not in args.data:
        parser.error(f"--packing-subset {args.packing_subset} is not among the --data subsets")
    if not args.plm and not args.tiny:
        parser.error("--plm is required (the model the release scripts train)")
    return args


def data_argument(parser: argparse.ArgumentParser, text: str) -> tuple[str, tuple[str, str]]:
    """SUBSET=DIR or SUBSET=TRAIN,DEV as (subset, (train file, dev file)), both files checked."""
    subset, _, where = text.partition("=")
    if subset not in SUBSETS or not where:
        parser.error(f"--data must be SUBSET=DIR or SUBSET=TRAIN,DEV with SUBSET one of {', '.join(SUBSETS)}; got {text!r}")
    if "," in where:
        train, dev = where.split(",", 1)
    else:
        train, dev = f"{where}/train-pseudo-{subset}.json", f"{where}/expmrc-{subset}-dev.json"
    for path in (train, dev):
        if not Path(path).is_file():
            parser.error(f"{path}: not found (--data {text})")
    return subset, (train, dev)


def device_name() -> tuple[str, str | None]:
    """The device the runs will use and the GPU id to give them (None: no GPU, the runs use the CPU)."""
    import torch

    if not torch.cuda.is_available():
        return f"CPU ({os.cpu_count()} cores)", None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").replace(",", " ").split()
    return torch.cuda.get_device_name(0), visible[0] if visible else "0"


def tiny_model(folder: Path, data: dict[str, tuple[str, str]]) -> str:
    """A random 2-layer BERT over every character of the data (bench_gpu's character vocabulary), as a Hugging
    Face folder."""
    from bench_gpu import character_tokenizer
    from transformers import BertConfig, BertModel
    from transformers.utils import logging

    logging.disable_progress_bar()

    tokenizer = character_tokenizer([path for files in data.values() for path in files])
    tokenizer.save_pretrained(str(folder))
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)
    BertModel(config).save_pretrained(str(folder))
    return str(folder)


@dataclass
class SweepCall:
    """One call of lambda_sweep.sh: its wall time, exit status, and the records of its runs."""

    wall: float
    status: int
    runs: list[dict[str, Any]]


def sweep(args: argparse.Namespace, subset: str, root: Path, seeds: int, gpu: str | None, extra: str) -> SweepCall:
    """`seeds` runs of one subset through lambda_sweep.sh, side by side on the GPU (RUNS_PER_GPU=seeds)."""
    train, dev = args.data[subset]
    env = dict(os.environ, SUBSET=subset, PLM_PATH=args.plm, DATA_PATH=str(Path(dev).parent), TRAIN_FILE=train,
               PREDICT_FILE=dev, OUTPUT_ROOT=str(root), LAMBDAS="0.1", SEEDS=" ".join(map(str, range(1, seeds + 1))),
               RUNS_PER_GPU=str(seeds), COLLECT="0", GPUS=gpu or "", EXTRA_ARGS=extra, PYTHONUNBUFFERED="1")
    env.pop("DRY_RUN", None)
    env.setdefault("PYTHON", sys.executable)  # the scripts' own default is the checkout's .venv, else python3
    began = time.perf_counter()
    with open(root.parent / f"{root.name}.log", "w", encoding="utf-8") as log:
        process = subprocess.Popen(["bash", str(ROOT / "scripts" / "lambda_sweep.sh")], env=env, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        try:
            status = process.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait()
            status = 124
    wall = time.perf_counter() - began
    runs = []
    for info in sorted(root.glob("lambda_*/seed_*/run_info.json")):
        runs.append(json.loads(info.read_text(encoding="utf-8")))
    return SweepCall(wall, status, runs)


def full_steps(info: dict[str, Any]) -> int:
    """Optimizer steps of the run the short one stands for: its epochs over its training windows."""
    flags = info["flags"]
    return max(1, math.ceil(float(flags["num_train_epochs"]) * info["train_features"]["windows"] /
                            int(flags["train_batch_size"])))


def projected_run(call: SweepCall) -> dict[str, float]:
    """The short run's figures and the projected seconds of a full run."""
    info = call.runs[0]
    timing = info["timing"]
    train, compiling, steps = timing["train_seconds"], timing["compile_seconds"], timing["steps_run"]
    per_step = (train - compiling) / steps
    overhead = call.wall - train
    full = full_steps(info)
    return {"windows": info["train_features"]["windows"], "full_steps": full, "wall": call.wall, "train": train,
            "compile": compiling, "per_step": per_step, "overhead": overhead,
            "full_run": overhead + compiling + per_step * full}


def measure(args: argparse.Namespace, work: Path, device: str, gpu: str | None) -> dict[str, Any]:
    """Warm the caches, run each subset once and the packing subset k times side by side; print as it goes."""
    extra = f"--max_steps {args.steps} " + (TINY_ARGS + " " if args.tiny else "") + args.extra_args
    if not args.no_warm:
        for subset in args.data:
            began = time.perf_counter()
            sweep(args, subset, work / f"warm-{subset}", 1, gpu, extra + " --max_steps 1 --do_predict False")
            print(f"{subset}: feature caches filled in {time.perf_counter() - began:.1f} s (untimed run) [{device}]")
    figures: dict[str, Any] = {"device": device, "steps": args.steps, "extra_args": args.extra_args,
                               "packing_subset": args.packing_subset, "subsets": {}, "packing": {}}
    print(f"| subset | windows | full-run steps | short run s | its training s | compiling s | ms/step | "
          f"projected full run s | device |\n| --- |{' ---: |' * 7} --- |")
    calls: dict[int, SweepCall] = {}
    for subset in args.data:
        call = sweep(args, subset, work / f"{subset}-k1", 1, gpu, extra)
        if call.status or len(call.runs) != 1 or call.runs[0].get("status") != "finished":
            print(f"| {subset} | run failed (exit {call.status}; {work / f'{subset}-k1.log'}) |  |  |  |  |  |  | {device} |")
            continue
        if subset == args.packing_subset:
            calls[1] = call
        row = figures["subsets"][subset] = projected_run(call)
        print(f"| {subset} | {row['windows']:,} | {row['full_steps']:,} | {row['wall']:.1f} | {row['train']:.1f} | "
              f"{row['compile']:.1f} | {1000 * row['per_step']:.1f} | {row['full_run']:.1f} | {device} |", flush=True)
    figures["packing"] = packing(args, work, device, gpu, extra, calls)
    return figures


def packing(args: argparse.Namespace, work: Path, device: str, gpu: str | None, extra: str,
            calls: dict[int, SweepCall]) -> dict[int, dict[str, float]]:
    """k copies of the packing subset's short run side by side: wall time, training seconds, the two gains."""
    subset, result = args.packing_subset, {}
    print(f"\n{subset}, k runs side by side on one {'GPU' if gpu is not None else 'device'} (RUNS_PER_GPU=k):\n"
          f"| k | wall s | training s per run | gain (training throughput) | gain (wall) | device |\n"
          f"| ---: | ---: | ---: | ---: | ---: | --- |")
    for k in args.packing:
        call = calls.get(k) or sweep(args, subset, work / f"{subset}-k{k}", k, gpu, extra)
        done = [r for r in call.runs if r.get("status") == "finished"]
        if len(done) != k or (k != 1 and 1 not in result):
            print(f"| {k} | {call.wall:.1f} | {len(done)} of {k} runs finished (exit {call.status}) |  |  | {device} |")
            continue
        seconds = [r["timing"]["train_seconds"] - r["timing"]["compile_seconds"] for r in done]
        one = result[1] if k != 1 else {"wall": call.wall, "train": seconds[0]}
        result[k] = {"wall": call.wall, "train": sum(seconds) / k,
                     "gain_train": one["train"] * sum(1 / s for s in seconds), "gain_wall": k * one["wall"] / call.wall}
        print(f"| {k} | {call.wall:.1f} | {' / '.join(f'{s:.1f}' for s in seconds)} | {result[k]['gain_train']:.2f} | "
              f"{result[k]['gain_wall']:.2f} | {device} |", flush=True)
    return result


def projection(args: argparse.Namespace, figures: dict[str, Any]) -> None:
    """The sweep's GPU-hours per measured subset, run one at a time and at each measured packing."""
    runs, device = args.lambdas * args.seeds, figures["device"]
    gains = {k: row["gain_train"] for k, row in figures["packing"].items()}
    print(f"\nfull sweep: {args.lambdas} λ × {args.seeds} seeds = {runs} runs per subset, each projected above, "
          f"divided by the packing gain of k runs side by side ({args.packing_subset}'s, for every subset)")
    print("| subset | " + " | ".join(f"GPU-hours, k={k}" for k in gains) + " | device |\n| --- |" +
          " ---: |" * len(gains) + " --- |")
    totals = dict.fromkeys(gains, 0.0)
    for subset, row in figures["subsets"].items():
        hours = {k: runs * row["full_run"] / gain / 3600 for k, gain in gains.items()}
        for k in hours:
            totals[k] += hours[k]
        print(f"| {subset} | " + " | ".join(f"{h:.2f}" for h in hours.values()) + f" | {device} |")
    print("| measured subsets | " + " | ".join(f"{h:.2f}" for h in totals.values()) + f" | {device} |")
    missing = [s for s in SUBSETS if s not in figures["subsets"]]
    if missing:
        print(f"not measured (no --data, or the run failed): {', '.join(missing)}")
    figures["gpu_hours"] = totals


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    device, gpu = device_name()
    if gpu is None and not args.tiny:
        print("error: bench_sweep.py measures a GPU and none is visible here; --tiny runs it at toy sizes on the CPU",
              file=sys.stderr)
        return 2
    import torch

    from expmrc.data.io import check_output_path, write_json_atomic

    if args.json:  # before any work
        check_output_path(args.json, "file", inputs=[args.plm or "", *(p for pair in args.data.values() for p in pair)])
    work = Path(args.output_root or tempfile.mkdtemp(prefix="bench-sweep-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        if args.tiny and not args.plm:
            args.plm = tiny_model(work / "tiny-bert", args.data)
        print(f"device {device}; torch {torch.__version__}; short runs of {args.steps} steps of scripts/run_<subset>.sh "
              f"through scripts/lambda_sweep.sh; runs in {work}")
        figures = measure(args, work, device, gpu)
        projection(args, figures)
        if args.json:
            write_json_atomic(args.json, figures, indent=2)
    finally:
        if not args.output_root:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    from expmrc.cli import run_guarded  # bad input in one line, exit 2; Ctrl-C 130

    sys.exit(run_guarded(lambda _: main(), None))
