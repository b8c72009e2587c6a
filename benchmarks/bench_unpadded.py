"""Padded against unpadded attention at a real run's window lengths: agreement first, then training steps.

    python benchmarks/bench_unpadded.py                              # a GPU: BERT-base, bf16, the CMRC 2018 run
    python benchmarks/bench_unpadded.py --shape small --batch 8      # the CPU measurement behind --attention auto
    python benchmarks/bench_unpadded.py --tiny                       # toy sizes, any machine (checks the script)

Windows: --questions CMRC 2018 training questions drawn at random (seeded) from --train, cut as
scripts/run_cmrc2018.sh cuts them (--seq tokens, passage windows 128 tokens apart, questions cut to 64
tokens), tokenized by --tokenizer or bench_gpu.py's character vocabulary (a Chinese BERT's lengths). Batches:
the length-grouped batches the training loop makes of them (`grouped_epoch_order`: megabatches of 50 batches
sorted by length, their order shuffled), padded as the baseline pads (to a multiple of 8 on a GPU).

Agreement (printed first): on the batch with the most padding, the span model's logits on the padded path
against the unpadded path and the unpadded path with fused kernels in eval mode under --precision, and the
unpadded path's in FP32 (TF32 off): the largest absolute difference over the positions a span may take (the
others are masked alike) and the share of rows whose best start and end agree; then, in training mode with
dropout off, the loss difference and the largest gradient difference relative to the largest gradient entry.

Timing: the library's `AutoModelForQuestionAnswering` (its own forward, padded, SDPA) and `SpanModel` on the
padded path, the unpadded path and the unpadded path with fused kernels (`--fused_kernels True`), each with
its own AdamW, all from the same random weights, on the same batches: forward (under bf16 autocast with
--precision bf16), backward, clipping, AdamW (fused on CUDA), the batch moved to the device as the loop moves
it. Each case first takes --warmup steps (the first one's time, compiling included, is printed), then the
cases take turns for --repeats rounds of --steps steps, the order rotated every round. Printed per case: step
ms (median over rounds of the mean step, ± half the range), real tokens/s, TFLOP/s and MFU counted on the real
tokens only — 6 × parameters × tokens + 12 × layers × hidden × Σ length² (the attention products, forward and
backward), the parameters those of the encoder's layers (its embedding tables are lookups) — against the
device's dense bf16 peak (bench_gpu.py's table, or --peak-tflops), and peak memory; then each case's
throughput against the padded path's and the library's, median and range over the rounds.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from _common import textbook_optimizer, textbook_update  # noqa: E402
from bench_gpu import character_tokenizer, peak_tflops  # noqa: E402

SHAPES = {"tiny": (64, 2), "small": (256, 4), "base": (768, 12), "large": (1024, 24)}  # hidden, layers
CASES = ("library", "padded", "unpadded", "unpadded+fused")
STRIDE, QUERY = 128, 64  # scripts/run_cmrc2018.sh's --doc_stride and --max_query_length


def parse(argv: list[str] | None) -> argparse.Namespace:
    from expmrc.errors import OneLineParser

    parser = OneLineParser(prog="bench_unpadded.py", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    train = Path(os.environ.get("EXPMRC_TRAIN_DATA") or ".") / "cmrc2018-train.json"
    parser.add_argument("--train", default=str(train), help="CMRC 2018 training file (default $EXPMRC_TRAIN_DATA/...)")
    parser.add_argument("--tokenizer", default=None, metavar="DIR", help="a tokenizer folder (default: a character "
                        "vocabulary of --train)")
    parser.add_argument("--questions", type=int, default=1200, help="training questions drawn (default 1200)")
    parser.add_argument("--shape", choices=tuple(SHAPES), default="base", help="BERT shape (default base)")
    parser.add_argument("--seq", type=int, default=512, help="--max_seq_length (default 512)")
    parser.add_argument("--batch", type=int, default=32, help="windows per step (default 32)")
    parser.add_argument("--precision", choices=("bf16", "fp32"), default=None,
                        help="bf16 autocast or FP32 (default bf16 on a GPU, fp32 on a CPU)")
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated cases (default {','.join(CASES)})")
    parser.add_argument("--warmup", type=int, default=4, help="untimed steps per case first (default 4)")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per round and case (default 10)")
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds (default 3)")
    parser.add_argument("--compile-backend", default="inductor", help="torch.compile backend of the fused regions")
    parser.add_argument("--peak-tflops", type=float, default=None, help="the device's dense bf16 peak, if not known")
    parser.add_argument("--skip-agreement", action="store_true", help="time only")
    parser.add_argument("--skip-timing", action="store_true", help="check agreement only")
    parser.add_argument("--tiny", action="store_true", help="toy sizes: tiny shape, 128 tokens, 4 windows a step, "
                        "60 questions, 2 steps x 2 rounds")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.tiny:
        args.shape, args.seq, args.batch, args.questions = "tiny", min(args.seq, 128), min(args.batch, 4), 60
        args.steps, args.repeats, args.warmup = min(args.steps, 2), min(args.repeats, 2), min(args.warmup, 1)
    args.cases = [c for c in args.cases.split(",") if c in CASES or parser.error(f"unknown case {c!r}")]
    if not Path(args.train).is_file():
        parser.error(f"{args.train}: not found (set EXPMRC_TRAIN_DATA or pass --train)")
    return args


def real_batches(args: argparse.Namespace, device: torch.device) -> tuple[list[dict[str, torch.Tensor]], Any]:
    """The length-grouped training batches of --questions random CMRC 2018 questions (host tensors), and the
    tokenizer."""
    import numpy as np
    from transformers import AutoTokenizer

    from expmrc.data.training_sets import load_training_set
    from expmrc.features.span import build_span_features
    from expmrc.features.windows import WindowDataset
    from expmrc.training.loop import grouped_epoch_order

    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer) if args.tokenizer else character_tokenizer([args.train])
    questions = load_training_set(args.train, "cmrc2018").questions
    drawn = random.Random(args.seed).sample(list(questions), min(args.questions, len(questions)))
    table, _ = build_span_features(drawn, tokenizer, args.seq, min(STRIDE, args.seq // 2), min(QUERY, args.seq // 4),
                                   True, True)
    multiple = 8 if device.type == "cuda" else 1  # as the baseline pads
    data = WindowDataset(table, True, tokenizer.pad_token_id or 0, multiple, args.seq)
    order = grouped_epoch_order(np.asarray(data.lengths()), args.seed, 0, args.batch)
    full = len(order) // args.batch
    if full == 0:
        from expmrc.errors import ExpmrcError

        raise ExpmrcError(f"{len(order)} windows do not fill one batch of {args.batch}; raise --questions")
    return [data.batch([int(i) for i in order[k * args.batch:(k + 1) * args.batch]]) for k in range(full)], tokenizer


def model_config(args: argparse.Namespace, vocabulary: int, dropout: float = 0.1) -> Any:
    """A BERT config of the --shape: 64-wide heads, 4x feed-forward, the tokenizer's vocabulary."""
    from transformers import BertConfig

    hidden, layers = SHAPES[args.shape]
    return BertConfig(vocab_size=vocabulary, hidden_size=hidden, num_hidden_layers=layers,
                      num_attention_heads=max(1, hidden // 64), intermediate_size=4 * hidden,
                      max_position_embeddings=max(512, args.seq), hidden_dropout_prob=dropout,
                      attention_probs_dropout_prob=dropout)


def make_case(case: str, config: Any, backend: Any) -> torch.nn.Module:
    """One case's model, from the same random weights (seeded alike)."""
    from transformers import AutoModelForQuestionAnswering

    from expmrc.models.heads import LossSettings
    from expmrc.models.span import SpanModel

    torch.manual_seed(0)
    if case == "library":
        return AutoModelForQuestionAnswering.from_config(config)
    model = SpanModel(config, loss=LossSettings(0.1))
    model.use_attention("padded" if case == "padded" else "unpadded", case.endswith("fused"), backend)
    return model


def case_inputs(case: str, batch: dict[str, torch.Tensor], device: torch.device) -> dict[str, Any]:
    """A host batch moved as the loop moves it; the library's model takes its own inputs only."""
    from expmrc.inference.predictor import to_device

    if case == "library":
        batch = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids", "start_positions",
                                       "end_positions")}
        moved = to_device(batch, device)
        moved.pop("row_lengths", None)
        return moved
    return to_device(batch, device)


def autocast(device: torch.device, precision: str) -> Any:
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16")


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# ---- agreement ---------------------------------------------------------------------------------------------------

def no_dropout(model: torch.nn.Module) -> torch.nn.Module:
    """The model with every dropout rate set to 0 (the attention's too: the library reads its module's rate)."""
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    return model


def agreement(args: argparse.Namespace, batches: list[dict[str, torch.Tensor]], vocabulary: int,
              device: torch.device) -> None:
    """Eval logits and training gradients of the unpadded paths against the padded path's (module docstring)."""
    batch = min(batches, key=lambda b: float(b["attention_mask"].float().mean()))
    real = float(batch["attention_mask"].float().mean())
    print(f"agreement on the batch with the most padding ({100 * real:.1f}% of its {batch['input_ids'].numel():,} "
          f"positions real):")
    config = model_config(args, vocabulary, dropout=0.0)
    models = {case: make_case(case, config, args.compile_backend).to(device) for case in CASES[1:]}
    inputs = case_inputs("padded", batch, device)
    allowed = inputs["passage_mask"].bool()
    for precision in dict.fromkeys((args.precision, "fp32")):
        compared = CASES[2:] if precision == args.precision else CASES[2:3]  # FP32: the kernels, not the regions again
        tf32 = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        with torch.no_grad(), autocast(device, precision):
            outputs = {case: {k: v.float() for k, v in model.eval()(**inputs).items()
                                if k not in ("loss", "loss_parts")}
                       for case, model in models.items() if case in ("padded", *compared)}
        torch.backends.cuda.matmul.allow_tf32 = tf32
        for case in compared:
            diff = max(float((outputs[case][k] - outputs["padded"][k])[allowed].abs().max()) for k in outputs[case])
            agree = min(float((outputs[case][k].argmax(-1) == outputs["padded"][k].argmax(-1)).float().mean())
                        for k in outputs[case])
            print(f"- {precision} eval, {case} vs padded: logits max abs diff {diff:.3g}; best start/end agree "
                  f"in {100 * agree:.1f}% of rows (the worst of the four outputs)", flush=True)
    grads = {}
    for case, model in models.items():
        model.train().zero_grad(set_to_none=True)
        with autocast(device, args.precision):
            loss = model(**inputs)["loss"]
        loss.backward()
        grads[case] = (loss.item(), {n: p.grad.float() for n, p in model.named_parameters() if p.grad is not None})
    loss, reference = grads["padded"]
    scale = max(float(g.abs().max()) for g in reference.values())
    for case in CASES[2:]:
        other_loss, other = grads[case]
        worst = max(float((other[n] - g).abs().max()) for n, g in reference.items())
        print(f"- {args.precision} training (dropout off), {case} vs padded: loss {other_loss:.6g} vs {loss:.6g}; "
              f"largest gradient difference {worst / scale:.3g} of the largest gradient entry", flush=True)


# ---- timing ------------------------------------------------------------------------------------------------------

def flops_of(batch: dict[str, torch.Tensor], config: Any) -> float:
    """Training FLOPs of a batch counted on its real tokens (module docstring)."""
    h, inner, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    parameters = layers * (4 * h * h + 2 * h * inner)
    lengths = batch["attention_mask"].sum(-1).double()
    return float(6 * parameters * lengths.sum() + 12 * layers * h * (lengths ** 2).sum())


class Runner:
    """One case: its model, optimizer and timings."""

    def __init__(self, case: str, config: Any, args: argparse.Namespace, device: torch.device,
                 batches: list[dict[str, torch.Tensor]]) -> None:
        self.case, self.device, self.precision, self.batches = case, device, args.precision, batches
        self.model = make_case(case, config, args.compile_backend).to(device).train()
        self.optimizer, self.scheduler = textbook_optimizer(self.model)
        self.first = 0.0
        self.rounds: list[tuple[float, float, int, int]] = []  # (seconds per step, flops, real tokens, steps)
        self.memory = 0.0

    def step(self, k: int) -> None:
        inputs = case_inputs(self.case, self.batches[k % len(self.batches)], self.device)
        with autocast(self.device, self.precision):
            loss = self.model(**inputs)["loss"]
        loss.backward()
        textbook_update(self.model, self.optimizer, self.scheduler)

    def timed(self, first: int, steps: int, flops: list[float], tokens: list[int]) -> None:
        """Steps first .. first + steps - 1, the device waited for at both ends only."""
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)
        synchronize(self.device)
        began = time.perf_counter()
        for k in range(first, first + steps):
            self.step(k)
        synchronize(self.device)
        seconds = time.perf_counter() - began
        picked = [k % len(self.batches) for k in range(first, first + steps)]
        self.rounds.append((seconds / steps, sum(flops[i] for i in picked), sum(tokens[i] for i in picked), steps))
        if self.device.type == "cuda":
            self.memory = max(self.memory, torch.cuda.max_memory_allocated(self.device) / 2**30)


def spread(values: list[float]) -> str:
    middle = statistics.median(values)
    return f"±{50 * (max(values) - min(values)) / middle:.1f}%" if middle else "n/a"


def timing(args: argparse.Namespace, batches: list[dict[str, torch.Tensor]], vocabulary: int, device: torch.device,
           peak: float | None) -> None:
    """Every case's steps on the same batches, alternated (module docstring); a table, then the ratios."""
    config = model_config(args, vocabulary)
    flops = [flops_of(b, config) for b in batches]
    tokens = [int(b["attention_mask"].sum()) for b in batches]
    runners = []
    for case in args.cases:
        runner = Runner(case, config, args, device, batches)
        synchronize(device)
        began = time.perf_counter()
        runner.step(0)
        synchronize(device)
        runner.first = time.perf_counter() - began
        for k in range(1, args.warmup):
            runner.step(k)
        runners.append(runner)
    for r in range(args.repeats):
        first = args.warmup + r * args.steps
        for runner in runners[r % len(runners):] + runners[:r % len(runners)]:
            runner.timed(first, args.steps, flops, tokens)
    kind = "peak GiB" if device.type == "cuda" else "—"
    print(f"| case | step ms | spread | real tokens/s | TFLOP/s (real) | MFU | {kind} | first step s |\n"
          "| --- |" + " ---: |" * 7)
    for runner in runners:
        step = statistics.median(seconds for seconds, *_ in runner.rounds)
        rate = statistics.median(t / (s * n) for s, _, t, n in runner.rounds)
        tflops = statistics.median(f / (s * n) for s, f, _, n in runner.rounds) / 1e12
        mfu = f"{100 * tflops / peak:.1f}%" if peak else "n/a"
        memory = f"{runner.memory:.2f}" if device.type == "cuda" else "—"
        print(f"| {runner.case} | {1000 * step:.1f} | {spread([s for s, *_ in runner.rounds])} | {rate:,.0f} | "
              f"{tflops:.2f} | {mfu} | {memory} | {runner.first:.2f} |", flush=True)
    by_case = {runner.case: runner for runner in runners}
    for base in ("padded", "library"):
        if base not in by_case:
            continue
        for runner in runners:
            if runner.case != base:
                ratios = [b[0] / a[0] for a, b in zip(runner.rounds, by_case[base].rounds)]
                print(f"{runner.case} / {base} throughput: {statistics.median(ratios):.3f} "
                      f"({min(ratios):.3f}-{max(ratios):.3f} over the rounds)")


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    args.precision = args.precision or ("bf16" if device.type == "cuda" else "fp32")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({os.cpu_count()} cores)"
    peak = args.peak_tflops or (peak_tflops(name) if device.type == "cuda" else None)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    began = time.perf_counter()
    batches, tokenizer = real_batches(args, device)
    real = sum(int(b["attention_mask"].sum()) for b in batches)
    padded = sum(b["attention_mask"].numel() for b in batches)
    lengths = torch.cat([b["attention_mask"].sum(-1) for b in batches]).float()
    print(f"device {name}; dense bf16 peak {f'{peak:g} TFLOP/s' if peak else 'unknown (MFU n/a)'}; torch "
          f"{torch.__version__}; {args.shape} BERT, {args.precision}; {len(batches)} length-grouped batches of "
          f"{args.batch} windows ({args.seq} tokens at most) from {args.questions} CMRC 2018 questions, built in "
          f"{time.perf_counter() - began:.1f} s: mean window {float(lengths.mean()):.0f} tokens, {100 * real / padded:.1f}% "
          "of the padded positions real", flush=True)
    if not args.skip_agreement:
        agreement(args, batches, len(tokenizer), device)
    if not args.skip_timing:
        timing(args, batches, len(tokenizer), device, peak)
    return 0


if __name__ == "__main__":
    from expmrc.cli import run_guarded  # bad input in one line, exit 2; Ctrl-C 130

    sys.exit(run_guarded(lambda _: main(), None))
