"""The host side of a real training step: what `expmrc.training.loop` does per step, profiled.

    python benchmarks/profile_step.py                      # CPU is fine: 2-layer BERT, 512 tokens, batch 8
    python benchmarks/profile_step.py --shape base --seq 512 --batch 32 --steps 5   # the release's step (a GPU)

Training windows of the first --questions CMRC 2018 training questions ($EXPMRC_TRAIN_DATA/cmrc2018-train.json,
bench_gpu.py's character vocabulary unless --tokenizer), a randomly initialised `SpanModel`, and the loop's own
preparation and steps (`prepare_training`, `run_step`, `LossWindow`), so the step profiled is the one a run takes.
After --warmup steps, --steps steps run under torch.profiler, twice: as the loop runs them, and with the padding
mask handed to the encoder as a 2D mask, for the library to check (what the loop did before). Printed per step:
operators dispatched (each one a kernel launch or more on a GPU), reads of a tensor's value back to the host
(`aten::_local_scalar_dense`: on a GPU each waits for the device), split into those inside
the optimizer (on a CPU its step counters live on the host; fused AdamW on CUDA reads none) and all others, and
the host's milliseconds; then the operators taking most host time. First, how long the host takes to build one
batch.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from bench_gpu import bert_config, character_tokenizer  # noqa: E402

READ = "aten::_local_scalar_dense"  # under .item(), bool(tensor), float(tensor), .tolist() of one value


def parse(argv: list[str] | None) -> argparse.Namespace:
    from expmrc.cli import OneLineParser

    parser = OneLineParser(prog="profile_step.py", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    train = Path(os.environ.get("EXPMRC_TRAIN_DATA") or ".") / "cmrc2018-train.json"
    parser.add_argument("--train", default=str(train), help="CMRC 2018 training file (default $EXPMRC_TRAIN_DATA/...)")
    parser.add_argument("--tokenizer", default=None, help="a tokenizer folder (default: a character vocabulary)")
    parser.add_argument("--questions", type=int, default=300, help="training questions used (default 300)")
    parser.add_argument("--shape", choices=("tiny", "base", "large"), default="tiny", help="BERT shape (default tiny)")
    parser.add_argument("--seq", type=int, default=512, help="--max_seq_length (default 512)")
    parser.add_argument("--batch", type=int, default=8, help="--train_batch_size (default 8)")
    parser.add_argument("--warmup", type=int, default=2, help="steps before profiling (default 2)")
    parser.add_argument("--steps", type=int, default=3, help="steps profiled (default 3)")
    parser.add_argument("--top", type=int, default=12, help="operators listed by host time (default 12)")
    args = parser.parse_args(argv)
    if not Path(args.train).is_file():
        parser.error(f"{args.train}: not found (set EXPMRC_TRAIN_DATA or pass --train)")
    return args


def windows(args: argparse.Namespace) -> tuple[Any, Any]:
    """The training windows of the first --questions questions, and their tokenizer."""
    from transformers import AutoTokenizer

    from expmrc.data.training_sets import load_training_set
    from expmrc.features.span import build_span_features
    from expmrc.features.windows import WindowDataset

    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer) if args.tokenizer else character_tokenizer([args.train])
    questions = load_training_set(args.train, "cmrc2018").questions[:args.questions]
    table, _ = build_span_features(questions, tokenizer, args.seq, min(128, args.seq // 2), min(64, args.seq // 4),
                                   True, True)
    multiple = 8 if torch.cuda.is_available() else 1  # as the baseline pads
    return WindowDataset(table, True, tokenizer.pad_token_id or 0, multiple, args.seq), tokenizer


def in_optimizer(event: Any) -> bool:
    """Whether a profiler event ran inside an optimizer's step."""
    while event is not None:
        if event.name.startswith("Optimizer.step"):
            return True
        event = event.cpu_parent
    return False


def profile(args: argparse.Namespace, library_masks: bool, folder: str) -> None:
    """Warm up, then profile --steps loop steps; print one summary line and, for the loop as it is, the top ops."""
    from expmrc.models.span import SpanModel
    from expmrc.training.loop import LossWindow, TrainConfig, make_accelerator, prepare_training, run_step

    data, tokenizer = windows(args)
    config = TrainConfig(output_dir=folder, train_batch_size=args.batch, max_steps=args.warmup + args.steps,
                         logging_steps=10**6, save_checkpoints_steps=10**6)
    accelerator = make_accelerator(config)
    model_config = bert_config(args.shape, args.seq)
    model_config.vocab_size = max(model_config.vocab_size, len(tokenizer))
    model = SpanModel(model_config)
    model.library_masks = not library_masks  # True: the loop's own ready-made masks
    run = prepare_training(model, data, config, accelerator)
    run.model.train()
    window = LossWindow(torch.zeros((), device=accelerator.device))
    for step in range(args.warmup):
        window.add(run_step(run, step, config, accelerator), step + 1)
    activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA]
                                                          if torch.cuda.is_available() else [])
    began = time.perf_counter()
    with torch.profiler.profile(activities=activities) as profiler:
        for step in range(args.warmup, args.warmup + args.steps):
            window.add(run_step(run, step, config, accelerator), step + 1)
        host = (time.perf_counter() - began) / args.steps
    events = [e for e in profiler.events() if e.device_type == torch.autograd.DeviceType.CPU]
    operators = [e for e in events if e.name.startswith("aten::")
                 and not (e.cpu_parent is not None and e.cpu_parent.name.startswith("aten::"))]  # top-level ones
    reads = [e for e in events if e.name == READ]
    optimizer_reads = sum(in_optimizer(e) for e in reads)
    label = "the library checks a 2D padding mask" if library_masks else "the loop as it is"
    print(f"{label}: {len(operators) / args.steps:.0f} operators dispatched per step, "
          f"{(len(reads) - optimizer_reads) / args.steps:g} value reads per step outside the optimizer "
          f"({optimizer_reads / args.steps:g} inside), host {1000 * host:.1f} ms per step (profiler on)")
    if not library_masks:
        print(profiler.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.top))


def batch_seconds(args: argparse.Namespace, repeats: int = 50) -> float:
    """Mean seconds the host takes to build one padded batch of --batch windows (`WindowDataset.batch`)."""
    data, _ = windows(args)
    generator = torch.Generator().manual_seed(0)
    picks = [torch.randint(0, len(data), (args.batch,), generator=generator).tolist() for _ in range(repeats)]
    began = time.perf_counter()
    for pick in picks:
        data.batch(pick)
    return (time.perf_counter() - began) / repeats


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else f"CPU ({os.cpu_count()} cores)"
    print(f"device {device}; torch {torch.__version__}; {args.shape} shape, {args.seq} tokens, batch {args.batch}; "
          f"{args.steps} steps profiled after {args.warmup}")
    print(f"building one batch of {args.batch} windows on the host: {1000 * batch_seconds(args):.2f} ms")
    with tempfile.TemporaryDirectory() as folder:
        profile(args, False, folder)
        profile(args, True, folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
