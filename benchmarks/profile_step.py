"""A real training step profiled: what `expmrc.training.loop` does per step, on the host and on the GPU.

    python benchmarks/profile_step.py                      # CPU is fine: 2-layer BERT, 512 tokens, batch 8
    python benchmarks/profile_step.py --shape base --seq 512 --batch 32 --steps 5   # the release's step (a GPU)

Training windows of the first --questions CMRC 2018 training questions ($EXPMRC_TRAIN_DATA/cmrc2018-train.json,
bench_gpu.py's character vocabulary unless --tokenizer), a randomly initialised `SpanModel`, and the loop's own
preparation and steps (`prepare_training`, `run_step`, `LossWindow`), so the step profiled is the one a run takes.
After --warmup steps, --steps steps run under torch.profiler for each of the --variants: the encoder on the
padded path (`--attention padded`), on the unpadded path, on the unpadded path with fused kernels
(`--fused_kernels True`, compiled by --compile-backend during the warm-up), and the unpadded step replayed as a
CUDA graph (`--cuda_graphs on`, one token bucket, so the warm-up captures it: at least 3 warm-up steps; on a CPU
the same steps run uncaptured, which checks the script only). Printed per variant and step:
operators dispatched (each one a kernel launch or more on a GPU), reads of a tensor's value back to the host
(`aten::_local_scalar_dense`: on a GPU each waits for the device), split into those inside the optimizer (on a
CPU its step counters live on the host; fused AdamW on CUDA reads none) and all others, and the host's
milliseconds; on a GPU, where the step's time goes: each kernel's device time in one bucket by its name
(`kernel_bucket`: attention, GEMMs, elementwise and normalisation kernels, the optimizer with clipping, copies)
and the host, the step's wall time the GPU spent running no kernel (waiting for the host to launch work),
as shares of the step's wall time (profiler on, which adds host time); then, for the first variant, the
operators taking most host time. First, how long the host takes to build one batch.
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
from _common import task_predictor  # noqa: E402
from bench_gpu import bert_config, character_tokenizer  # noqa: E402

READ = "aten::_local_scalar_dense"  # under .item(), bool(tensor), float(tensor), .tolist() of one value
VARIANTS = ("padded", "unpadded", "fused", "graphs")
ACTIVITIES = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA]
                                                      if torch.cuda.is_available() else [])
# kernel-name pieces (lower case) of each bucket, the first bucket that matches wins; the rest is "elementwise"
BUCKETS = (
    ("optimizer", ("adam", "multi_tensor_apply", "foreach", "lpnorm", "norm_kernel_cuda")),
    ("attention", ("flash", "fmha", "attention", "sdpa")),
    ("gemm", ("gemm", "gemv", "nvjet", "xmma", "cutlass", "cublas", "splitk", "ampere_", "sm90_", "hopper")),
    ("copies", ("memcpy", "memset", "copy_kernel", "cat_", "catarray")),
)


def parse(argv: list[str] | None) -> argparse.Namespace:
    from expmrc.errors import OneLineParser

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
    parser.add_argument("--variants", default="padded,unpadded,graphs", help=f"comma-separated, of {', '.join(VARIANTS)} "
                        "(default padded,unpadded,graphs)")
    parser.add_argument("--compile-backend", default="inductor", help="torch.compile backend of the fused variant")
    args = parser.parse_args(argv)
    args.variants = [v for v in args.variants.split(",") if v in VARIANTS or parser.error(f"unknown variant {v!r}")]
    if not Path(args.train).is_file():
        parser.error(f"{args.train}: not found (set EXPMRC_TRAIN_DATA or pass --train)")
    return args


def windows(args: argparse.Namespace) -> tuple[Any, Any]:
    """The training windows of the first --questions questions, built and padded by the package's task predictor on
    this machine's device (as a run pads there), and their tokenizer."""
    from transformers import AutoTokenizer

    from expmrc.data.training_sets import load_training_set

    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer) if args.tokenizer else character_tokenizer([args.train])
    questions = load_training_set(args.train, "cmrc2018").questions[:args.questions]
    predictor = task_predictor("span", tokenizer, "cuda" if torch.cuda.is_available() else "cpu",
                               max_seq_length=args.seq, doc_stride=min(128, args.seq // 2),
                               max_query_length=min(64, args.seq // 4))
    return predictor.windows(predictor.features(questions, is_training=True)[0], with_labels=True), tokenizer


def in_optimizer(event: Any) -> bool:
    """Whether a profiler event ran inside an optimizer's step."""
    while event is not None:
        if event.name.startswith("Optimizer.step"):
            return True
        event = event.cpu_parent
    return False


def kernel_bucket(name: str, in_optimizer: bool = False) -> str:
    """The bucket of a GPU kernel: "optimizer" inside the optimizer's step, else by its name (`BUCKETS`), else
    "elementwise" (pointwise, normalisation, dropout, reductions, inductor's fused kernels)."""
    if in_optimizer:
        return "optimizer"
    lowered = name.lower()
    return next((bucket for bucket, pieces in BUCKETS if any(p in lowered for p in pieces)), "elementwise")


def device_shares(events: list[Any], wall: float) -> dict[str, float]:
    """Each bucket's share of `wall` seconds (all steps) in kernel time, and the host's: the rest of the wall."""
    seconds: dict[str, float] = {}
    kernels = [(k.name, k.duration, in_optimizer(e)) for e in events for k in getattr(e, "kernels", [])]
    if not kernels:  # kernels not linked to the operators that launched them: by name alone
        kernels = [(e.name, e.self_device_time_total, False) for e in events
                   if e.device_type != torch.autograd.DeviceType.CPU]
    for name, microseconds, optimizer in kernels:
        bucket = kernel_bucket(name, optimizer)
        seconds[bucket] = seconds.get(bucket, 0.0) + microseconds / 1e6
    shares = {bucket: value / wall for bucket, value in seconds.items()}
    shares["host"] = max(0.0, 1 - sum(shares.values()))
    return shares


def profile(args: argparse.Namespace, variant: str, folder: str, top: bool) -> None:
    """Warm up, then profile --steps loop steps of a variant; print its summary lines and, if `top`, the top ops."""
    from expmrc.models.span import SpanModel
    from expmrc.training.loop import LossWindow, TrainConfig, make_accelerator, prepare_training, run_step

    from expmrc.training import graphs

    graphed = variant == "graphs"
    warmup = max(args.warmup, graphs.WARMUP_STEPS + 1) if graphed else args.warmup
    if graphed and not torch.cuda.is_available():  # a CPU runs the graphed steps uncaptured (the script's check)
        graphs.GRAPHED_DEVICES = (*graphs.GRAPHED_DEVICES, "cpu")
    data, tokenizer = windows(args)
    config = TrainConfig(output_dir=f"{folder}/{variant}", train_batch_size=args.batch,
                         max_steps=warmup + args.steps, logging_steps=10**6, save_checkpoints_steps=10**6,
                         cuda_graphs="on" if graphed else "off", graph_buckets=1)
    accelerator = make_accelerator(config)
    model_config = bert_config(args.shape, args.seq)
    model_config.vocab_size = max(model_config.vocab_size, len(tokenizer))
    model = SpanModel(model_config)
    model.use_attention("padded" if variant == "padded" else "unpadded", variant == "fused", args.compile_backend)
    run = prepare_training(model, data, config, accelerator)
    run.model.train()
    window = LossWindow(torch.zeros((), device=accelerator.device))
    for step in range(warmup):
        window.add(run_step(run, step, config, accelerator), step + 1)
    synchronize(accelerator.device)
    with torch.profiler.profile(activities=ACTIVITIES) as profiler:
        began = time.perf_counter()
        for step in range(warmup, warmup + args.steps):
            window.add(run_step(run, step, config, accelerator), step + 1)
        host = (time.perf_counter() - began) / args.steps
        synchronize(accelerator.device)
        wall = time.perf_counter() - began
    events = [e for e in profiler.events() if e.device_type == torch.autograd.DeviceType.CPU]
    operators = [e for e in events if e.name.startswith("aten::")
                 and not (e.cpu_parent is not None and e.cpu_parent.name.startswith("aten::"))]  # top-level ones
    reads = [e for e in events if e.name == READ]
    optimizer_reads = sum(in_optimizer(e) for e in reads)
    print(f"{variant}: {len(operators) / args.steps:.0f} operators dispatched per step, "
          f"{(len(reads) - optimizer_reads) / args.steps:g} value reads per step outside the optimizer "
          f"({optimizer_reads / args.steps:g} inside), host {1000 * host:.1f} ms per step, wall "
          f"{1000 * wall / args.steps:.1f} ms (profiler on)", flush=True)
    if accelerator.device.type == "cuda":
        shares = device_shares(list(profiler.events()), wall)
        order = ("attention", "gemm", "elementwise", "optimizer", "copies", "host")
        print(f"{variant} on the GPU, shares of the step's wall time: " + ", ".join(
            f"{bucket} {100 * shares.get(bucket, 0.0):.1f}%" for bucket in order), flush=True)
    if top:
        print(profiler.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.top))


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


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
    host = batch_seconds(args)  # reads --train: a bad file is its one line before anything is printed
    print(f"device {device}; torch {torch.__version__}; {args.shape} shape, {args.seq} tokens, batch {args.batch}; "
          f"{args.steps} steps profiled after {args.warmup}")
    print(f"building one batch of {args.batch} windows on the host: {1000 * host:.2f} ms")
    with torch.profiler.profile(activities=ACTIVITIES):  # the profiler's own start-up, kept out of the first variant
        torch.zeros(1).add_(1)
    with tempfile.TemporaryDirectory() as folder:
        for k, variant in enumerate(args.variants):
            profile(args, variant, folder, top=k == 0 and args.top > 0)
    return 0


if __name__ == "__main__":
    from expmrc.cli import run_guarded  # bad input in one line, exit 2; Ctrl-C 130

    sys.exit(run_guarded(lambda _: main(), None))
