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

Graphs (printed next, for the "graphs" case): with dropout on, --graph-agreement-steps steps of the unpadded step at
static layouts in one token bucket (`expmrc.training.graphs.GraphedSteps`), replayed from CUDA graphs, against the
same steps run eagerly at the same layouts, from the same weights and random state: the largest difference of the
steps' losses and of the final weights. A replay draws dropout as the eager step does, so they agree to the
kernels' own nondeterminism; a replay that repeated its draws, or read stale inputs, would not.

Timing: the library's `AutoModelForQuestionAnswering` (its own forward, padded, SDPA) and `SpanModel` on the
padded path, the unpadded path, the unpadded path with fused kernels (`--fused_kernels True`) and the unpadded
path replayed as CUDA graphs at --graph-buckets token buckets planned from these batches (`--cuda_graphs on`; on
a CPU the same steps uncaptured), each with its own AdamW, all from the same random weights, on the same batches:
forward (under bf16 autocast with --precision bf16), backward, clipping, AdamW (fused on CUDA), the batch moved
to the device as the loop moves it (the graphs case builds it at its bucket's layout, as a graphed run does).
Each case first takes --warmup steps (the first one's time, compiling included, is printed; the graphs case
first steps through every batch twice, so that each bucket is warmed up and captured before any timed step),
then the cases take turns for --repeats rounds of --steps steps, the order rotated every round. Printed per case: step
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from _common import task_predictor, textbook_optimizer, textbook_update, under_autocast  # noqa: E402
from bench_gpu import character_tokenizer, peak_tflops  # noqa: E402

SHAPES = {"tiny": (64, 2), "small": (256, 4), "base": (768, 12), "large": (1024, 24)}  # hidden, layers
CASES = ("library", "padded", "unpadded", "unpadded+fused", "graphs")
AGREED = ("padded", "unpadded", "unpadded+fused")  # the eager paths whose logits and gradients are compared
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
    parser.add_argument("--graph-buckets", type=int, default=8, help="token buckets of the graphs case (default 8, "
                        "the runs' own)")
    parser.add_argument("--graph-agreement-steps", type=int, default=12, help="steps of the graphs' agreement "
                        "(default 12; 0 skips it)")
    parser.add_argument("--peak-tflops", type=float, default=None, help="the device's dense bf16 peak, if not known")
    parser.add_argument("--skip-agreement", action="store_true", help="time only")
    parser.add_argument("--skip-timing", action="store_true", help="check agreement only")
    parser.add_argument("--tiny", action="store_true", help="toy sizes: tiny shape, 128 tokens, 4 windows a step, "
                        "at most 60 questions, 2 steps x 2 rounds")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.tiny:
        args.shape, args.seq, args.batch, args.questions = "tiny", min(args.seq, 128), min(args.batch, 4), min(args.questions, 60)
        args.steps, args.repeats, args.warmup = min(args.steps, 2), min(args.repeats, 2), min(args.warmup, 1)
    args.cases = [c for c in args.cases.split(",") if c in CASES or parser.error(f"unknown case {c!r}")]
    if not Path(args.train).is_file():
        parser.error(f"{args.train}: not found (set EXPMRC_TRAIN_DATA or pass --train)")
    return args


@dataclass
class Windows:
    """The benchmark's windows: the padded host batches, the dataset they come from and each batch's windows."""

    batches: list[dict[str, torch.Tensor]]
    data: Any
    picks: list[list[int]]
    tokenizer: Any


def real_batches(args: argparse.Namespace, device: torch.device) -> Windows:
    """The length-grouped training batches of --questions random CMRC 2018 questions (host tensors), built and
    padded by the package's task predictor on `device` (as the baseline pads there)."""
    import numpy as np
    from transformers import AutoTokenizer

    from expmrc.data.training_sets import load_training_set
    from expmrc.training.loop import grouped_epoch_order

    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer) if args.tokenizer else character_tokenizer([args.train])
    questions = load_training_set(args.train, "cmrc2018").questions
    drawn = random.Random(args.seed).sample(list(questions), min(args.questions, len(questions)))
    predictor = task_predictor("span", tokenizer, device, max_seq_length=args.seq, doc_stride=min(STRIDE, args.seq // 2),
                               max_query_length=min(QUERY, args.seq // 4))
    data = predictor.windows(predictor.features(drawn, is_training=True)[0], with_labels=True)
    order = grouped_epoch_order(np.asarray(data.lengths()), args.seed, 0, args.batch)
    full = len(order) // args.batch
    if full == 0:
        from expmrc.errors import ExpmrcError

        raise ExpmrcError(f"{len(order)} windows do not fill one batch of {args.batch}; raise --questions")
    picks = [[int(i) for i in order[k * args.batch:(k + 1) * args.batch]] for k in range(full)]
    return Windows([data.batch(pick) for pick in picks], data, picks, tokenizer)


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


def graphed_steps(model: torch.nn.Module, windows: Windows, buckets: int, seq: int, runner: Any = None) -> Any:
    """The package's graphed steps (`expmrc.training.graphs.GraphedSteps`) of `model` over the benchmark's batches:
    token buckets planned from them, the textbook AdamW and schedule, clipping at 1; `runner` (default: CUDA graphs
    on a GPU, the same steps uncaptured elsewhere)."""
    from expmrc.inference.buckets import BucketedWindows, choose_buckets
    from expmrc.training.graphs import GraphedSteps

    tokens = windows.data.fixed().real_tokens()
    plan = choose_buckets([int(tokens[pick].sum()) for pick in windows.picks], buckets, seq)
    optimizer, scheduler = textbook_optimizer(model)
    return GraphedSteps(model, optimizer, scheduler, BucketedWindows(windows.data, plan), len(windows.picks[0]), 1,
                        1.0, runner=runner)


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
    agreed = [case for case in AGREED if case == "padded" or case in args.cases]  # the padded path: the reference
    models = {case: make_case(case, config, args.compile_backend).to(device) for case in agreed}
    inputs = case_inputs("padded", batch, device)
    allowed = inputs["passage_mask"].bool()
    for precision in dict.fromkeys((args.precision, "fp32")):
        compared = agreed[1:] if precision == args.precision else agreed[1:2]  # FP32: the kernels, not the regions again
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
    for case in agreed[1:]:
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
    """One case: its model, optimizer and timings (the graphs case: the package's graphed steps)."""

    def __init__(self, case: str, config: Any, args: argparse.Namespace, device: torch.device,
                 windows: Windows) -> None:
        self.case, self.device, self.precision, self.batches = case, device, args.precision, windows.batches
        self.picks = windows.picks
        self.model = make_case("unpadded" if case == "graphs" else case, config, args.compile_backend).to(device).train()
        self.optimizer, self.scheduler = textbook_optimizer(self.model)
        self.graphed = graphed_steps(under_autocast(self.model, self.precision, device), windows, args.graph_buckets,
                                     args.seq) if case == "graphs" else None
        self.first = 0.0
        self.rounds: list[tuple[float, float, int, int]] = []  # (seconds per step, flops, real tokens, steps)
        self.memory = 0.0

    def step(self, k: int) -> None:
        if self.graphed is not None:
            self.graphed.step([self.picks[k % len(self.picks)]])
            return
        inputs = case_inputs(self.case, self.batches[k % len(self.batches)], self.device)
        with autocast(self.device, self.precision):
            loss = self.model(**inputs)["loss"]
        loss.backward()
        textbook_update(self.model, self.optimizer, self.scheduler)

    def prime(self) -> None:
        """The graphs case: every batch stepped through twice, so each bucket is warmed up and captured untimed."""
        if self.graphed is not None:
            for k in range(2 * len(self.picks)):
                self.step(k)

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


def timing(args: argparse.Namespace, windows: Windows, device: torch.device, peak: float | None) -> None:
    """Every case's steps on the same batches, alternated (module docstring); a table, then the ratios."""
    batches = windows.batches
    config = model_config(args, len(windows.tokenizer))
    flops = [flops_of(b, config) for b in batches]
    tokens = [int(b["attention_mask"].sum()) for b in batches]
    runners = []
    for case in args.cases:
        runner = Runner(case, config, args, device, windows)
        synchronize(device)
        began = time.perf_counter()
        runner.step(0)
        synchronize(device)
        runner.first = time.perf_counter() - began
        for k in range(1, args.warmup):
            runner.step(k)
        runner.prime()
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
    for runner in runners:
        if runner.graphed is not None:
            record = runner.graphed.record()
            print(f"graphs: token buckets {', '.join(map(str, record['buckets']['buckets']))} planned from these "
                  f"{len(windows.picks)} batches ({100 * share_padded(runner.graphed, windows):.1f}% of their tokens "
                  f"padding); {record['graphs']} graphs captured in {record['capture_seconds']:.2f} s, "
                  f"{record['eager_steps']} steps eager; {device_name(device)}")
    by_case = {runner.case: runner for runner in runners}
    for base in ("unpadded", "padded", "library"):
        if base not in by_case:
            continue
        for runner in runners:
            if runner.case != base:
                ratios = [b[0] / a[0] for a, b in zip(runner.rounds, by_case[base].rounds)]
                print(f"{runner.case} / {base} throughput: {statistics.median(ratios):.3f} "
                      f"({min(ratios):.3f}-{max(ratios):.3f} over the rounds)")


def share_padded(graphed: Any, windows: Windows) -> float:
    """The share of the graphs case's computed tokens that are dummy rows' padding."""
    tokens = graphed.data.tokens
    real = [int(tokens[pick].sum()) for pick in windows.picks]
    return 1 - sum(real) / sum(graphed.data.plan.place(n)[0] for n in real)


def device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({os.cpu_count()} cores)"


def graph_agreement(args: argparse.Namespace, windows: Windows, device: torch.device) -> None:
    """Dropout on: steps replayed from CUDA graphs against the same steps run eagerly at the same layouts (module
    docstring)."""
    from expmrc.training.graphs import Uncaptured

    losses, weights, runs = {}, {}, {}
    config = model_config(args, len(windows.tokenizer))
    for name in ("eager", "graphed"):
        model = under_autocast(make_case("unpadded", config, args.compile_backend).to(device).train(), args.precision,
                               device)
        runs[name] = graphed_steps(model, windows, 1, args.seq, Uncaptured() if name == "eager" else None)
        torch.manual_seed(2)  # the same dropout draws for both
        losses[name] = [runs[name].step([windows.picks[k % len(windows.picks)]])
                        for k in range(args.graph_agreement_steps)]
        weights[name] = {n: p.detach().float() for n, p in model.named_parameters()}
    eager, graphed = ([float(x.reshape(-1)[0]) for x in losses[name]] for name in ("eager", "graphed"))
    scale = max(float(w.abs().max()) for w in weights["eager"].values())
    worst = max(float((weights["graphed"][n] - w).abs().max()) for n, w in weights["eager"].items())
    replayed = args.graph_agreement_steps - runs["graphed"].eager_steps
    how = "replayed from" if device.type == "cuda" else "run uncaptured (a CPU) in the place of"
    print(f"- graphs ({args.precision}, dropout on, one bucket): {replayed} of {args.graph_agreement_steps} steps "
          f"{how} {runs['graphed'].record()['graphs']} graph(s) against the same steps eager at the same "
          f"layout: losses {eager[-1]:.5f} vs {graphed[-1]:.5f} at the last step, largest loss difference "
          f"{max(abs(a - b) for a, b in zip(eager, graphed)):.3g}; largest weight difference {worst / scale:.3g} of "
          f"the largest weight; {device_name(device)}", flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    args.precision = args.precision or ("bf16" if device.type == "cuda" else "fp32")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({os.cpu_count()} cores)"
    peak = args.peak_tflops or (peak_tflops(name) if device.type == "cuda" else None)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    began = time.perf_counter()
    windows = real_batches(args, device)
    batches, tokenizer = windows.batches, windows.tokenizer
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
        if "graphs" in args.cases and args.graph_agreement_steps:
            graph_agreement(args, windows, device)
    if not args.skip_timing:
        timing(args, windows, device, peak)
    return 0


if __name__ == "__main__":
    from expmrc.cli import run_guarded  # bad input in one line, exit 2; Ctrl-C 130

    sys.exit(run_guarded(lambda _: main(), None))
