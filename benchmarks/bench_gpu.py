"""Training steps of our task models against the library's heads on a GPU, then one real CMRC 2018 epoch.

    python benchmarks/bench_gpu.py                                # the paper's shapes on the GPU
    python benchmarks/bench_gpu.py --shapes base --tasks span --compile off --steps 10
    python benchmarks/bench_gpu.py --tiny --steps 2 --repeats 2 --epoch-questions 16   # toy sizes, CPU is fine

Part 1, training steps. For BERT-base and BERT-large shapes (random weights from a config: speed does
not depend on them), 512 tokens, 32 sequences a step (span: 32 windows; multiple choice: 8 questions
x 4 options), each of `SpanModel` against `AutoModelForQuestionAnswering` and `ChoiceModel` against
`AutoModelForMultipleChoice`, under bf16 autocast and under FP32 with TF32 matmuls (and strict FP32
with --precisions fp32), each without and with `torch.compile`. All run under one plain loop: one fixed
batch already on the device, forward (under autocast for bf16), backward, global-norm clipping,
AdamW (fused on CUDA), linear schedule, zero_grad; the steps `expmrc.training.loop.train_step` takes,
without data loading (a batch without padding goes without a mask, as the loop sends it). A plain loop
rather than the HF `Trainer`, so that both models meet exactly the same optimizer, clipping and precision
handling and the difference measured is the models'; the loop's own overhead (batches, logging) is what
part 2 measures. The two models of a case live side by side and take turns (ABAB...): single warm-up
steps until each one's step time settles (--settle), then --repeats rounds of --steps steps each, the
device waited for only at the ends of a round, so drift and load on the host hit both alike. Printed per
case: the median over rounds of the mean step time and the rounds' spread, tokens/s, achieved TFLOP/s
(the model FLOPs of a training step, 3x the forward's matmuls and attention products, heads and
embeddings left out), MFU against the device's dense bf16 peak (table below, or --peak-tflops), peak
memory (less what the other model keeps resident), the first step's time (compilation included) and the
warm-up steps taken; then ours / library in throughput, median and range over the rounds.

Part 2, one real epoch. The CMRC 2018 training set ($EXPMRC_TRAIN_DATA/cmrc2018-train.json) through
`expmrc.training.loop.train` with features from the shared feature cache (built first when absent:
that time is printed apart), then `predict` and decoding on the CMRC 2018 dev set, with `SpanModel`
of the first --shapes shape (random weights, BERT's 30,522-entry embedding). Tokens come from --tokenizer,
or from a character vocabulary built from the two files (Chinese split per character, as a Chinese BERT
splits it), so no model package is needed.

Without a CUDA GPU only --tiny runs (hidden 64, 2 layers, 64 tokens, 4 sequences); anything else is one
line and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from _common import task_predictor, textbook_optimizer, textbook_update  # noqa: E402

OPTIONS = 4
SHAPES = {"base": (768, 12), "large": (1024, 24), "tiny": (64, 2)}  # hidden, layers; 64-wide heads, 4x FFN
# dense (no sparsity) bf16 tensor-core peaks in TFLOP/s, from NVIDIA's data sheets; first match wins
PEAKS = (("H100 PCIe", 756.0), ("H100 NVL", 835.5), ("H100", 989.4), ("H200", 989.4), ("GH200", 989.4),
         ("A100", 312.0), ("L40S", 362.1), ("L4", 121.0))


def peak_tflops(device_name: str) -> float | None:
    """The dense bf16 peak of a device by its name (None when it is not in the table)."""
    return next((peak for key, peak in PEAKS if key.lower() in device_name.lower()), None)


def bert_config(shape: str, seq: int) -> Any:
    """A BERT config of a named shape: BERT's vocabulary, 64-wide attention heads, 4x feed-forward."""
    from transformers import BertConfig

    hidden, layers = SHAPES[shape]
    return BertConfig(vocab_size=30522, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=hidden // 64,
                      intermediate_size=4 * hidden, max_position_embeddings=max(512, seq))


def train_flops_per_token(config: Any, seq: int) -> float:
    """Model FLOPs of one training token: 3x the forward's per-layer matmuls (QKV, output, FFN) and attention."""
    h, inner = config.hidden_size, config.intermediate_size
    return 3 * config.num_hidden_layers * (2 * (4 * h * h + 2 * h * inner) + 4 * seq * h)


def make_model(task: str, ours: bool, config: Any) -> torch.nn.Module:
    """Our task model or the library's head on the same randomly initialised encoder (seeded alike)."""
    from transformers import AutoModelForMultipleChoice, AutoModelForQuestionAnswering

    from expmrc.models.choice import ChoiceModel
    from expmrc.models.heads import LossSettings
    from expmrc.models.span import SpanModel

    torch.manual_seed(0)
    if ours:
        return (SpanModel if task == "span" else ChoiceModel)(config, loss=LossSettings(0.1))
    return (AutoModelForQuestionAnswering if task == "span" else AutoModelForMultipleChoice).from_config(config)


def fixed_batch(task: str, ours: bool, rows: int, seq: int) -> dict[str, torch.Tensor]:
    """`rows` sequences of `seq` random tokens (rows / 4 questions of 4 options for choice) with labels, on the CPU."""
    g = torch.Generator().manual_seed(1)
    questions = rows if task == "span" else max(1, rows // OPTIONS)
    shape = (questions, seq) if task == "span" else (questions, OPTIONS, seq)
    ids = torch.randint(1000, 30000, shape, generator=g)
    starts = torch.randint(1, seq // 2, (questions,), generator=g)
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids)}
    if task == "span":
        batch.update(start_positions=starts, end_positions=starts + 3)
    else:
        batch["labels"] = torch.randint(0, OPTIONS, (questions,), generator=g)
    if ours:
        batch.update(passage_mask=torch.ones(questions, seq, dtype=torch.long), evidence_start=starts,
                     evidence_end=starts + min(10, seq // 2 - 1))
        if task == "choice":
            batch["option_mask"] = torch.ones(questions, OPTIONS, dtype=torch.long)
    return batch


def plain_step(model: torch.nn.Module, batch: dict[str, Any], precision: str,
               device: torch.device) -> tuple[Callable[[], None], torch.optim.Optimizer]:
    """The plain loop's step for one model (see the module docstring), and its optimizer."""
    optimizer, scheduler = textbook_optimizer(model)

    def step() -> None:
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = model(**batch)["loss"]
        loss.backward()
        textbook_update(model, optimizer, scheduler)
    return step, optimizer


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def resident_bytes(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> int:
    """What a model keeps on the device between steps: its parameters and its optimizer's state."""
    state = [t for s in optimizer.state.values() for t in s.values() if isinstance(t, torch.Tensor)]
    return sum(t.numel() * t.element_size() for t in [*model.parameters(), *state])


class Case:
    """One model of a pair in one setting: its step, its timings and its memory."""

    def __init__(self, task: str, ours: bool, config: Any, args: argparse.Namespace, precision: str, compiled: bool,
                 device: torch.device) -> None:
        from expmrc.inference.predictor import to_device

        model = make_model(task, ours, config).to(device).train()
        self.model = torch.compile(model, backend=args.compile_backend) if compiled else model
        batch = to_device(fixed_batch(task, ours, args.batch, args.seq), device)  # moved as the loop moves batches
        self.step, self.optimizer = plain_step(self.model, batch, precision, device)
        self.warmup: list[float] = []  # seconds of each warm-up step, the first one's compilation included
        self.rounds: list[float] = []  # mean step seconds of each timed block
        self.memory = 0.0

    def timed(self, steps: int, device: torch.device, other: Case | None) -> float:
        """Mean seconds of `steps` steps (the device waited for at both ends only); notes peak memory."""
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        synchronize(device)
        began = time.perf_counter()
        for _ in range(steps):
            self.step()
        synchronize(device)
        seconds = (time.perf_counter() - began) / steps
        if device.type == "cuda":  # the peak while this model stepped, less what the other one keeps resident
            rest = resident_bytes(other.model, other.optimizer) if other else 0
            self.memory = max(self.memory, (torch.cuda.max_memory_allocated(device) - rest) / 2**30)
        else:
            self.memory = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 2**30
        return seconds

    def settled(self, args: argparse.Namespace) -> bool:
        """Whether the last --settle-steps warm-up steps lie within --settle of each other (after --warmup)."""
        last = self.warmup[-args.settle_steps:]
        return (len(self.warmup) >= max(args.warmup, args.settle_steps)
                and max(last) <= (1 + args.settle) * min(last))


def time_pair(task: str, config: Any, args: argparse.Namespace, precision: str, compiled: bool,
              device: torch.device) -> tuple[Case, Case]:
    """Ours and the library's model, alternated ABAB...: warm-up steps until each one's step time settles
    (or --max-warmup), then --repeats rounds of --steps steps of each."""
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = precision != "fp32"
        torch.cuda.empty_cache()
    pair = (Case(task, True, config, args, precision, compiled, device),
            Case(task, False, config, args, precision, compiled, device))
    while not all(case.settled(args) for case in pair) and len(pair[0].warmup) < args.max_warmup:
        for case, other in (pair, pair[::-1]):
            case.warmup.append(case.timed(1, device, other))
    for _ in range(args.repeats):
        for case, other in (pair, pair[::-1]):
            case.rounds.append(case.timed(args.steps, device, other))
    return pair


def spread(values: list[float]) -> str:
    """The range of values around their median, in percent of it."""
    middle = statistics.median(values)
    return f"±{50 * (max(values) - min(values)) / middle:.1f}%" if middle else "n/a"


def case_row(label: str, case: Case, args: argparse.Namespace, flops: float, peak: float | None) -> str:
    """One table row: the case's median step over the rounds and what follows from it."""
    step = statistics.median(case.rounds)
    tokens = args.batch * args.seq / step
    tflops = tokens * flops / 1e12
    mfu = f"{100 * tflops / peak:.1f}%" if peak else "n/a"
    warm = f"{len(case.warmup)}" + ("" if case.settled(args) else " (unsettled)")
    return (f"| {label} | {1000 * step:.1f} | {spread(case.rounds)} | {tokens:,.0f} | {tflops:.2f} | {mfu} | "
            f"{case.memory:.2f} | {case.warmup[0]:.2f} | {warm} |")


def steps_table(args: argparse.Namespace, device: torch.device, peak: float | None) -> list[dict[str, Any]]:
    """Part 1: every shape x task x precision x compile case, ours and the library's alternated, one line each;
    returns each model's median step and MFU (what --json writes)."""
    cases: list[dict[str, Any]] = []
    memory_kind = "peak GiB" if device.type == "cuda" else "max RSS GiB"
    print(f"steps alternated ours/library (ABAB); warm-up until {args.settle_steps} steps lie within "
          f"{100 * args.settle:g}% (at least {args.warmup}, at most {args.max_warmup}); {args.repeats} rounds of "
          f"{args.steps} steps each; step ms = median of the rounds' means, ± half their range")
    print(f"| shape | task | precision | compile | model | step ms | spread | tokens/s | TFLOP/s | MFU | {memory_kind} | "
          "first step s | warm-up steps |\n" + "| --- " * 5 + "|" + " ---: |" * 8)
    for shape in args.shapes:
        config = bert_config(shape, args.seq)
        flops = train_flops_per_token(config, args.seq)
        for task in args.tasks:
            for precision in args.precisions:
                for compiled in args.compile:
                    ours, library = time_pair(task, config, args, precision, compiled, device)
                    setting = f"{shape} | {task} | {precision} | {'on' if compiled else 'off'}"
                    print(case_row(f"{setting} | ours", ours, args, flops, peak), flush=True)
                    print(case_row(f"{setting} | library", library, args, flops, peak), flush=True)
                    for model, case in (("ours", ours), ("library", library)):
                        step = statistics.median(case.rounds)
                        cases.append({"shape": shape, "task": task, "precision": precision, "compile": compiled,
                                      "model": model, "step_ms": 1000 * step, "tokens": args.batch * args.seq,
                                      "mfu": args.batch * args.seq / step * flops / 1e12 / peak if peak else None})
                    ratios = [b / a for a, b in zip(ours.rounds, library.rounds)]  # ours' throughput / the library's
                    print(f"| {setting} | ours / library | {statistics.median(ratios):.3f} | "
                          f"{min(ratios):.3f}-{max(ratios):.3f} |  |  |  |  |  |  |", flush=True)
                    del ours, library
    return cases


def epoch_predictor(tokenizer: Any, where: Any, args: argparse.Namespace) -> Any:
    """Part 2's task predictor: the package's own (its windows' padding on the run's device, its decoding), with
    --seq tokens, stride and question lengths cut to fit them, and the default decoding settings."""
    return task_predictor("span", tokenizer, where, args.predict_batch, max_seq_length=args.seq,
                          doc_stride=min(128, args.seq // 2), max_query_length=min(128, args.seq // 4))


def epoch_features(predictor: Any, path: str, subset: str, training: bool,
                   args: argparse.Namespace) -> tuple[Any, Any, float, bool]:
    """A CMRC 2018 file's span windows from the shared feature cache (built by `predictor` when absent): the table,
    the questions, the seconds it took and whether it came from the cache."""
    from expmrc.data.datasets import load_dataset
    from expmrc.data.training_sets import load_training_set
    from expmrc.features.cache import cache_key, cached_features, read_cache, shared_cache_path

    questions = (load_training_set(path, subset) if training else load_dataset(path, subset)).questions
    if args.epoch_questions:
        questions = questions[:args.epoch_questions]
    settings = {"task": "span", "is_training": training, "token_types": True, **predictor.settings.feature_dict(),
                "questions": len(questions)}
    key = cache_key(predictor.tokenizer, settings, path)
    cache = shared_cache_path(None, key, "bench-train" if training else "bench-predict")
    hit = read_cache(cache, key) is not None
    began = time.perf_counter()
    table, _ = cached_features(cache, key, lambda: predictor.features(questions, is_training=training))
    return table, questions, time.perf_counter() - began, hit


def epoch_tokenizer(args: argparse.Namespace) -> Any:
    """--tokenizer's fast tokenizer, else a character vocabulary over the two files (`character_tokenizer`)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(args.tokenizer) if args.tokenizer else character_tokenizer([args.train, args.dev])


def character_tokenizer(paths: list[str]) -> Any:
    """A WordPiece tokenizer over every character of the JSON files' strings (each character a token, and its `##`
    form for letters inside words): Chinese text is split per character, as a Chinese BERT splits it, so windows
    have a Chinese BERT's lengths."""
    from transformers import BertTokenizerFast

    def strings(value: Any) -> Iterator[str]:
        if isinstance(value, str):
            yield value
        elif isinstance(value, (list, dict)):
            for item in value.values() if isinstance(value, dict) else value:
                yield from strings(item)

    from expmrc.data.io import read_json

    texts = []
    for path in paths:
        texts.extend(strings(read_json(path, "training or dev file")))  # a damaged one: one line naming it
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocabulary = {token: i for i, token in enumerate(specials)}
    normalize = BertTokenizerFast(vocab=dict(vocabulary), do_lower_case=True).backend_tokenizer.normalizer
    characters = sorted({c for c in normalize.normalize_str("".join(texts)) if not c.isspace()})
    inside = [f"##{c}" for c in characters if c.isalnum() and ord(c) < 0x2E80]  # not CJK: words of letters
    for token in characters + inside:
        vocabulary.setdefault(token, len(vocabulary))
    return BertTokenizerFast(vocab=vocabulary, do_lower_case=True)


def epoch_run(args: argparse.Namespace, device: torch.device) -> None:
    """Part 2: one epoch of CMRC 2018 training through our loop, then prediction and decoding on its dev set, its
    windows padded and decoded by the package's task predictor."""
    from expmrc.models.heads import LossSettings
    from expmrc.models.span import SpanModel
    from expmrc.training.loop import TrainConfig, make_accelerator, train

    tokenizer = epoch_tokenizer(args)
    torch.manual_seed(0)
    config = bert_config(args.shapes[0], args.seq)
    config.vocab_size = max(config.vocab_size, len(tokenizer))
    model = SpanModel(config, loss=LossSettings(0.1))
    with tempfile.TemporaryDirectory() as folder:
        config = TrainConfig(output_dir=folder, num_train_epochs=1, train_batch_size=args.batch,
                             predict_batch_size=args.predict_batch, mixed_precision=args.epoch_precision,
                             torch_compile=args.epoch_compile, save_checkpoints_steps=10**9, logging_steps=10**9)
        accelerator = make_accelerator(config)
        predictor = epoch_predictor(tokenizer, accelerator, args)
        train_table, _, train_s, train_hit = epoch_features(predictor, args.train, "cmrc2018", True, args)
        dev_table, dev_questions, dev_s, dev_hit = epoch_features(predictor, args.dev, "cmrc2018", False, args)
        print(f"features: train {len(train_table)} windows in {train_s:.2f} s ({'cache' if train_hit else 'built'}), "
              f"dev {len(dev_table)} windows in {dev_s:.2f} s ({'cache' if dev_hit else 'built'})")
        result = train(model, predictor.windows(train_table, with_labels=True), config, accelerator)
        synchronize(device)
        began = time.perf_counter()
        outputs = predictor.outputs(model, dev_table)
        predicted = time.perf_counter()
        predictor.spec.decode(dev_questions, dev_table, outputs, predictor.settings)
        decoded = time.perf_counter()
    print(f"one epoch, {args.shapes[0]} shape, {args.seq} tokens, batch {args.batch}, {accelerator.mixed_precision} "
          f"precision, compile {'on' if args.epoch_compile else 'off'}: {result.global_step} steps in "
          f"{result.seconds:.1f} s ({result.examples_per_second:.1f} windows/s)")
    print(f"dev prediction: {len(dev_table)} windows in {predicted - began:.1f} s "
          f"({len(dev_table) / (predicted - began):.1f} windows/s), decoding {decoded - predicted:.1f} s")


def parse(argv: list[str] | None) -> argparse.Namespace:
    from expmrc.errors import OneLineParser  # usage errors in one line

    parser = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    def listed(choices):
        return lambda text: [x for x in text.split(",") if x in choices or parser.error(
            f"{x!r} is not one of {', '.join(choices)}")]
    parser.add_argument("--tiny", action="store_true", help="toy sizes (hidden 64, 2 layers, 64 tokens, 4 sequences): "
                        "checks the script on any machine, CPU included")
    parser.add_argument("--shapes", type=listed(("base", "large")), default=["base", "large"],
                        help="comma-separated BERT shapes (default base,large)")
    parser.add_argument("--tasks", type=listed(("span", "choice")), default=["span", "choice"])
    parser.add_argument("--precisions", type=listed(("bf16", "tf32", "fp32")), default=["bf16", "tf32"],
                        help="bf16 autocast, FP32 with TF32 matmuls, strict FP32 (default bf16,tf32)")
    parser.add_argument("--compile", type=listed(("off", "on")), default=["off", "on"],
                        help="without and/or with torch.compile (default off,on)")
    parser.add_argument("--compile-backend", default="inductor", help="torch.compile backend (default inductor)")
    parser.add_argument("--seq", type=int, default=512, help="tokens per sequence (default 512)")
    parser.add_argument("--batch", type=int, default=32, help="sequences per step (default 32, the paper's)")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per round and model (default 20)")
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds per case, models alternated (default 3)")
    parser.add_argument("--warmup", type=int, default=3, help="least untimed warm-up steps per model (default 3)")
    parser.add_argument("--max-warmup", type=int, default=40,
                        help="most warm-up steps per model while its step time has not settled (default 40)")
    parser.add_argument("--settle", type=float, default=0.05,
                        help="settled: the last --settle-steps warm-up steps within this fraction (default 0.05)")
    parser.add_argument("--settle-steps", type=int, default=3, help="see --settle (default 3)")
    parser.add_argument("--tokenizer", default=None, metavar="DIR",
                        help="part 2's tokenizer folder (default: a character vocabulary built from the two files)")
    parser.add_argument("--peak-tflops", type=float, default=None, help="the device's dense bf16 peak, if not in the table")
    train = Path(os.environ.get("EXPMRC_TRAIN_DATA") or ".") / "cmrc2018-train.json"
    dev = Path(os.environ.get("EXPMRC_DATA") or ".") / "cmrc2018" / "expmrc-cmrc2018-dev.json"
    parser.add_argument("--train", default=str(train), help="CMRC 2018 training file (default $EXPMRC_TRAIN_DATA/...)")
    parser.add_argument("--dev", default=str(dev), help="CMRC 2018 dev file (default $EXPMRC_DATA/cmrc2018/...)")
    parser.add_argument("--epoch-questions", type=int, default=0, help="use only the first N questions of each (0: all)")
    parser.add_argument("--epoch-precision", default="auto", help="--mixed_precision of the epoch run (default auto)")
    parser.add_argument("--epoch-compile", action="store_true", help="the epoch run with --torch_compile")
    parser.add_argument("--predict-batch", type=int, default=64, help="dev prediction batch (default 64)")
    parser.add_argument("--skip-steps", action="store_true", help="skip part 1")
    parser.add_argument("--skip-epoch", action="store_true", help="skip part 2")
    parser.add_argument("--json", default=None, help="also write part 1's step times to this file "
                        "(what benchmarks/bench_sweep_model.py reads)")
    args = parser.parse_args(argv)
    args.compile = [mode == "on" for mode in args.compile]
    if args.tiny:
        args.shapes, args.seq, args.batch, args.predict_batch = ["tiny"], min(args.seq, 64), min(args.batch, 4), 8
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if not torch.cuda.is_available() and not args.tiny:
        print("error: bench_gpu.py needs a CUDA GPU and none is visible here; --tiny runs it at toy sizes on the CPU",
              file=sys.stderr)
        return 2
    if not args.skip_epoch and not (Path(args.train).is_file() and Path(args.dev).is_file()):
        print(f"error: {args.train if not Path(args.train).is_file() else args.dev}: not found (set EXPMRC_TRAIN_DATA "
              "and EXPMRC_DATA, pass --train/--dev, or --skip-epoch)", file=sys.stderr)
        return 2
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({os.cpu_count()} cores)"
    peak = args.peak_tflops or (peak_tflops(name) if device.type == "cuda" else None)
    print(f"device {name}; dense bf16 peak {f'{peak:g} TFLOP/s' if peak else 'unknown (MFU n/a; --peak-tflops)'}; "
          f"torch {torch.__version__}; {args.seq} tokens, {args.batch} sequences a step")
    if not args.skip_steps:
        cases = steps_table(args, device, peak)
        if args.json:
            Path(args.json).write_text(json.dumps({"device": name, "peak_tflops": peak, "seq": args.seq,
                                                   "batch": args.batch, "cases": cases}, indent=2), encoding="utf-8")
    if not args.skip_epoch:
        epoch_run(args, device)
    return 0


if __name__ == "__main__":
    from expmrc.cli import run_guarded  # bad input in one line, exit 2; Ctrl-C 130

    sys.exit(run_guarded(lambda _: main(), None))
