"""GPU-hours of the paper's λ sweep (4 subsets × 7 λ × 5 seeds, BERT-base and -large) planned from measured steps.

    python benchmarks/bench_sweep_model.py --steps steps.json --packing base=sweep.json --gpu gpu.json
    python benchmarks/bench_sweep_model.py --steps windows.json --tflops 213   # nothing timed: every run modelled

Its inputs are what three benchmarks wrote with --json:
  --steps FILE       benchmarks/bench_subset_steps.py: per subset, the full run's training epoch (windows, steps,
                     tokens) and, per shape it timed, the 2-epoch training projected from its sampled steps of the
                     real loop, and the dev set's prediction and decoding;
  --packing SIZE=FILE  benchmarks/bench_sweep.py: the gain of k runs side by side on one GPU (RUNS_PER_GPU=k,
                     training throughput over one run's), and for the subsets it ran, a short release run's wall time
                     less its training: start-up (process, model, features from the shared cache), prediction,
                     decoding, scoring, saving the model;
  --gpu FILE         benchmarks/bench_gpu.py: our models' step times at 512 tokens × 32 per shape and task, whose
                     large / base ratio stands in for large where bench_subset_steps.py timed base only;
  --run-record SUBSET=FILE  the run_info.json of a finished release run of that subset (scripts/run_<subset>.sh):
                     its measured start-up, everything the run did outside training and prediction (process start
                     and imports, features, model load, saving, scoring: timing.phases' wall less its training and
                     prediction), which takes the place of the other start-up figures (base; large: modelled).
A run = start-up (the short run's, less its prediction and decoding) + 2-epoch training + prediction + decoding.
RUNS_PER_GPU is chosen per size as the k whose measured gain is highest (1 where packing was not measured for that
size, or gains nothing); the sweep's GPU-hours per subset and size = 35 runs × a run ÷ that gain. Every figure is
printed as measured (device and command) or modelled, with what it was modelled from; a total counts as measured only
when every input of it was. Not in the model: building each training set's features, once per sweep (shared cache).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SUBSETS = ("squad", "cmrc2018", "race", "c3")
SIZES = ("base", "large")
RUNS = 7 * 5  # λ values × seeds of the paper's sweep
SHAPES = {"base": (768, 12), "large": (1024, 24)}  # hidden, layers (bench_gpu.py's shapes)
MAX_RUNS_PER_GPU = 64  # as scripts/lambda_sweep.sh bounds RUNS_PER_GPU


class Invalid(Exception):
    """What is wrong with an input, where: `KEY.KEY: is ..., not ...`."""


@dataclass(frozen=True)
class Number:
    """A finite JSON number (true and false are not numbers) from `least` (above it: `above`) to `most`."""

    least: float = 0.0
    most: float = 1e15
    above: bool = False
    whole: bool = False

    def check(self, value: Any, where: str) -> None:
        number = isinstance(value, int | float) and not isinstance(value, bool) and not (
            isinstance(value, float) and not math.isfinite(value))  # a JSON integer is finite, however long
        if not (number and (value > self.least if self.above else value >= self.least) and value <= self.most
                and (not self.whole or value == int(value))):
            bound = "above" if self.above else "of at least"
            raise Invalid(f"{where} is {shown(value)}, not a {'whole ' if self.whole else ''}number {bound} "
                          f"{self.least:g} and at most {self.most:g}")


@dataclass(frozen=True)
class Text:
    """A string, or one of `values` where they are given."""

    values: tuple[str, ...] = ()

    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, str) or (self.values and value not in self.values):
            raise Invalid(f"{where} is {shown(value)}, not {'one of ' + ', '.join(self.values) if self.values else 'text'}")


@dataclass(frozen=True)
class Flag:
    """true or false."""

    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, bool):
            raise Invalid(f"{where} is {shown(value)}, not true or false")


@dataclass(frozen=True)
class Record:
    """An object with these keys (`optional` ones may be missing); keys it does not name are not read."""

    required: dict[str, Any]
    optional: dict[str, Any] = field(default_factory=dict)

    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise Invalid(f"{where or 'the file'} is {shown(value)}, not an object")
        for key, spec in self.required.items():
            if key not in value:
                raise Invalid(f"{where or 'the file'} has no {key!r}")
            spec.check(value[key], joined(where, key))
        for key, spec in self.optional.items():
            if key in value:
                spec.check(value[key], joined(where, key))


@dataclass(frozen=True)
class Table:
    """An object whose keys are among `names` (or, with `counts`, whole numbers of runs from 1 to
    MAX_RUNS_PER_GPU written as JSON keys are), each value `value`."""

    value: Any
    names: tuple[str, ...] = ()
    counts: bool = False

    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise Invalid(f"{where} is {shown(value)}, not an object")
        for key, item in value.items():
            if self.counts and not (key.isascii() and key.isdigit() and key[0] != "0"
                                    and int(key) <= MAX_RUNS_PER_GPU):
                raise Invalid(f"{where} has the key {key!r}, not a number of runs side by side (1 to "
                              f"{MAX_RUNS_PER_GPU})")
            if self.names and key not in self.names:
                raise Invalid(f"{where} has {key!r}, which this model does not know (it knows {', '.join(self.names)})")
            self.value.check(item, joined(where, key))


@dataclass(frozen=True)
class ListOf:
    """A list, each item `item`."""

    item: Any

    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, list):
            raise Invalid(f"{where} is {shown(value)}, not a list")
        for i, item in enumerate(value):
            self.item.check(item, f"{where}[{i}]")


def shown(value: Any) -> str:
    """A value as a message shows it: its JSON, cut short (an object or a list by its kind)."""
    if isinstance(value, dict | list):
        return "an object" if isinstance(value, dict) else "a list"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def joined(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


TFLOPS = Number(least=1e-3, most=1e6)  # a GFLOP/s to an exaFLOP/s
SECONDS = Number(most=1e8)  # 3 years: a larger time is a broken file, and would overflow the sums
COUNT = Number(least=0, above=True, whole=True)
# What each input must hold, by the benchmark that wrote it; keys not named here are not read.
STEPS_FILE = Record({"device": Text(), "subsets": Table(Record(
    {"kind": Text(("span", "choice")), "computed_tokens": Number(above=True), "computed_token_length": Number(),
     "dev_windows": COUNT, "epoch_windows": COUNT},
    {"shapes": Table(Record({"train_seconds": Number(above=True, most=1e8), "predict_seconds": SECONDS,
                             "decode_seconds": SECONDS}), names=(*SIZES, "tiny"))}), names=SUBSETS)},
    {"command": Text(), "settings": Record({}, {"tiny": Flag()})})
PACKING_FILE = Record({"device": Text()}, {
    "subsets": Table(Record({"overhead": SECONDS}), names=SUBSETS),
    "packing": Table(Record({"gain_train": Number(above=True, most=1000.0)}), counts=True),
    "extra_args": Text(), "packing_subset": Text(SUBSETS)})
RUN_RECORD = Record({"status": Text(("finished",)), "timing": Record(
    {"phases": Record({"wall": SECONDS}, {"training": SECONDS, "prediction": SECONDS})}, {"device": Text()})})
GPU_FILE = Record({"device": Text(), "cases": ListOf(Record(
    {"shape": Text(), "task": Text(), "precision": Text(), "compile": Flag(), "model": Text(),
     "step_ms": Number(above=True, most=1e9)}))}, {"seq": COUNT, "batch": COUNT})


@dataclass
class Figure:
    """A number and where it comes from: measured (the device and command) or modelled (from what)."""

    value: float
    measured: bool
    source: str

    def __add__(self, other: Figure) -> Figure:
        return Figure(self.value + other.value, self.measured and other.measured, "")


class Notes:
    """The footnotes of the modelled figures: each distinct explanation once, lettered in order."""

    def __init__(self) -> None:
        self.letters: dict[str, str] = {}

    def mark(self, figure: Figure) -> str:
        if figure.measured:
            return ""
        letter = self.letters.setdefault(figure.source, chr(ord("a") + len(self.letters)))
        return f" ({letter})"

    def lines(self) -> list[str]:
        return [f"({letter}) modelled: {text}" for text, letter in self.letters.items()]


def parse(argv: list[str] | None) -> argparse.Namespace:
    from expmrc.errors import OneLineParser

    parser = OneLineParser(prog="bench_sweep_model.py", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", required=True, help="bench_subset_steps.py --json's file")
    parser.add_argument("--packing", action="append", default=[], metavar="SIZE=FILE",
                        help="bench_sweep.py --json's file for that model size (repeatable)")
    parser.add_argument("--gpu", help="bench_gpu.py --json's file")
    parser.add_argument("--startup", type=float, default=30.0, help="a run's start-up in seconds where no bench_sweep.py "
                        "figure gives it (default 30, modelled)")
    parser.add_argument("--run-record", action="append", default=[], metavar="SUBSET=FILE",
                        help="a finished release run's run_info.json: its measured start-up (repeatable)")
    parser.add_argument("--tflops", type=float, default=None, help="for runs bench_subset_steps.py did not time: "
                        "training at this many TFLOP/s on computed tokens (modelled; default: such runs are left out)")
    args = parser.parse_args(argv)
    for flag, value, spec in (("--startup", args.startup, SECONDS), ("--tflops", args.tflops, TFLOPS)):
        if value is not None:
            try:
                spec.check(value, flag)
            except Invalid as exc:
                parser.error(str(exc))
    args.steps = read(parser, args.steps, "--steps", STEPS_FILE)
    for subset in args.steps.get("subsets", {}).values():  # a --tiny measurement's toy model stands in for base
        if "tiny" in subset.get("shapes", {}):
            subset["shapes"] = {"base": subset["shapes"]["tiny"]}
    packing: dict[str, list[dict[str, Any]]] = {size: [] for size in SIZES}
    for text in args.packing:
        size, _, path = text.partition("=")
        if size not in SIZES or not path:
            parser.error(f"--packing takes SIZE=FILE with SIZE base or large; got {text!r}")
        packing[size].append(read(parser, path, "--packing", PACKING_FILE))
    args.packing = packing
    args.gpu = read(parser, args.gpu, "--gpu", GPU_FILE) if args.gpu else None
    args.run_record = dict(run_startup(parser, text) for text in args.run_record)
    return args


def run_startup(parser: argparse.ArgumentParser, text: str) -> tuple[str, tuple[float, str, str]]:
    """SUBSET=FILE as (subset, (start-up seconds, device, file)): a finished release run's wall less its training
    and prediction (its record's timing.phases); one line naming the file and the key otherwise."""
    name, _, path = text.partition("=")
    if name not in SUBSETS or not path:
        parser.error(f"--run-record takes SUBSET=FILE with SUBSET one of {', '.join(SUBSETS)}; got {text!r}")
    if not Path(path).is_file():
        parser.error(f"{path}: cannot read --run-record's JSON (not a regular file)")
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"), object_pairs_hook=unique_keys)
        RUN_RECORD.check(record, "")
    except (OSError, ValueError, RecursionError) as exc:
        parser.error(f"{path}: cannot read --run-record's JSON ({exc or type(exc).__name__})")
    except Invalid as exc:
        parser.error(f"{path} (--run-record): {exc}; a finished run's record with its time per phase (expmrc "
                     "records timing.phases since issue 40)")
    phases = record["timing"]["phases"]
    seconds = phases["wall"] - phases.get("training", 0.0) - phases.get("prediction", 0.0)
    return name, (max(0.0, seconds), str(record["timing"].get("device") or "an unnamed device"), path)


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refused where it names a key twice (json keeps the last one silently)."""
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise Invalid(f"the key {key!r} is given twice in one object")
        seen.add(key)
    return dict(pairs)


def read(parser: argparse.ArgumentParser, path: str, flag: str, spec: Record) -> dict[str, Any]:
    """The JSON `path` holds, once it has every key this model reads, each of its type and in range (`spec`);
    one line naming the file and the key otherwise."""
    if not Path(path).is_file():  # a FIFO would block the read
        what = "a folder" if Path(path).is_dir() else "not a regular file" if Path(path).exists() else "no such file"
        parser.error(f"{path}: cannot read {flag}'s JSON ({what})")
    try:
        value = json.loads(Path(path).read_text(encoding="utf-8"), object_pairs_hook=unique_keys)
    except (OSError, ValueError, RecursionError) as exc:
        parser.error(f"{path}: cannot read {flag}'s JSON ({exc or type(exc).__name__})")
    except Invalid as exc:
        parser.error(f"{path}: {exc}")
    if not isinstance(value, dict) or "device" not in value:
        parser.error(f"{path}: not a benchmark's --json output (no device)")
    try:
        spec.check(value, "")
    except Invalid as exc:
        parser.error(f"{path} ({flag}): {exc}")
    return value


def train_flops(subset: dict[str, Any], size: str) -> float:
    """FLOPs of a run's 2-epoch training on computed tokens (bench_gpu.py's count: 3 × the forward's matmuls, 24 ×
    hidden² a token and layer, and attention, 4 × hidden × the row's padded length)."""
    hidden, layers = SHAPES[size]
    return 3 * layers * (24 * hidden * hidden * subset["computed_tokens"] + 4 * hidden * subset["computed_token_length"])


def gpu_ratio(gpu: dict[str, Any] | None, kind: str) -> tuple[float, str] | None:
    """bench_gpu.py's large / base step time of our `kind` model (bf16, eager first), and how it was measured."""
    if not gpu:
        return None
    for compiled in (False, True):
        ms = {c["shape"]: c["step_ms"] for c in gpu.get("cases", []) if c["model"] == "ours" and c["task"] == kind
              and c["precision"] == "bf16" and c["compile"] == compiled}
        if "base" in ms and "large" in ms:
            return ms["large"] / ms["base"], (f"bench_gpu.py's large / base step at {gpu.get('seq', 512)} tokens × "
                                              f"{gpu.get('batch', 32)}, {kind}, on {gpu['device']}")
    return None


def training(args: argparse.Namespace, name: str, size: str) -> tuple[Figure, Figure] | None:
    """A run's 2-epoch training and its prediction + decoding, measured or modelled; None when neither can be."""
    steps = args.steps
    subset = steps["subsets"][name]
    shapes = subset.get("shapes", {})
    where = f"bench_subset_steps.py on {steps['device']}"
    if size in shapes:
        row = shapes[size]
        return (Figure(row["train_seconds"], True, where),
                Figure(row["predict_seconds"] + row["decode_seconds"], True, where))
    other = next((s for s in SIZES if s in shapes), None)
    if other:
        row = shapes[other]
        ratio = gpu_ratio(args.gpu, subset["kind"])
        if ratio:
            factor, how = ratio if size == "large" else (1 / ratio[0], ratio[1])
        else:
            factor = train_flops(subset, size) / train_flops(subset, other)
            how = "the FLOP ratio of the two shapes on the subset's epoch"
        text = f"{size}: {other}'s measured training and prediction × {factor if ratio else 0:.2f} ({how})"
        text = text.replace(" × 0.00 (", " × (")
        return (Figure(row["train_seconds"] * factor, False, text),
                Figure(row["predict_seconds"] * factor + row["decode_seconds"], False, text))
    if args.tflops:
        text = (f"the epoch's computed tokens (counted on {steps['device']}) at an assumed {args.tflops:g} TFLOP/s; "
                "prediction a third of that a token, over the dev windows")
        seconds = train_flops(subset, size) / (args.tflops * 1e12)
        share = subset["dev_windows"] / subset["epoch_windows"] / 2  # the dev set against one of the 2 epochs
        return Figure(seconds, False, text), Figure(seconds * share / 3, False, text)
    return None


def startup(args: argparse.Namespace, name: str, size: str) -> Figure:
    """A run's start-up other than prediction and decoding: bench_sweep.py's short run of the subset less its training,
    less the prediction and decoding bench_subset_steps.py measured (a subset no bench_sweep.py file ran takes the
    first one that was run, modelled); a --run-record's measured start-up comes first."""
    if args.run_record:
        ran = name if name in args.run_record else next(iter(args.run_record))
        seconds, device, path = args.run_record[ran]
        where = f"{ran}'s release run ({path}) outside training and prediction, on {device}"
        exact = ran == name and size == "base" and device == args.steps["device"]
        return Figure(seconds, exact, where if exact else f"start-up: {where}, for a subset, size or device it did not run")
    sweeps = [s for s in args.packing[size] or args.packing["base"] if s.get("subsets")]
    if not sweeps:
        return Figure(args.startup, False, f"an assumed start-up of {args.startup:g} s (no bench_sweep.py figure)")
    sweep = next((s for s in sweeps if name in s["subsets"]), sweeps[0])
    ran = name if name in sweep["subsets"] else next(iter(sweep["subsets"]))
    measured = args.steps["subsets"].get(ran, {}).get("shapes", {}).get("base")
    overhead = sweep["subsets"][ran]["overhead"]
    if measured:
        overhead -= measured["predict_seconds"] + measured["decode_seconds"]
    exact = (ran == name and bool(args.packing[size]) and measured is not None
             and sweep["device"] == args.steps["device"])
    where = f"bench_sweep.py's {ran} run less its prediction, on {sweep['device']}"
    return Figure(max(0.0, overhead), exact, where if exact else f"start-up: {where}, for a subset or size it did not run")


def runs_per_gpu(args: argparse.Namespace, size: str) -> tuple[int, float, str, str | None]:
    """RUNS_PER_GPU for a size: the k of the highest measured gain (1 if none gains), that gain, how it was measured,
    and the subset it was measured on (None: not measured)."""
    sweep = next((s for s in args.packing[size] if len(s.get("packing", {})) > 1), None)
    if not sweep:
        return 1, 1.0, f"packing not measured for {size}: one run per GPU", None
    gains = {int(k): row["gain_train"] for k, row in sweep["packing"].items()}
    k = max(gains, key=lambda j: gains[j])
    extra = sweep.get("extra_args", "").strip()
    how = (f"bench_sweep.py on {sweep['device']}, {sweep.get('packing_subset', '?')} runs "
           f"{'with ' + extra if extra else 'as released'}, gains {', '.join(f'k={j}: {g:.2f}' for j, g in sorted(gains.items()))}")
    if gains[k] <= 1.0:
        return 1, 1.0, how, sweep.get("packing_subset")
    return k, gains[k], how, sweep.get("packing_subset")


def packing(args: argparse.Namespace, name: str, size: str) -> tuple[int, Figure]:
    """RUNS_PER_GPU for this size and its gain for this subset: measured on the subset bench_sweep.py packed, modelled
    (that gain) for the others; one run per GPU gains exactly 1."""
    k, gain, how, where = runs_per_gpu(args, size)
    if k == 1:
        return 1, Figure(1.0, True, how)
    return k, Figure(gain, where == name, how if where == name else f"gain: {how}; {where}'s, for the other subsets")


def plan(args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[str]]:
    """Every subset and size: its run's parts, RUNS_PER_GPU, the gain and the GPU-hours (None: not projected)."""
    rows, left_out = [], []
    for name in SUBSETS:
        if name not in args.steps["subsets"]:
            left_out.append(f"{name} (not in --steps: run bench_subset_steps.py --subsets {name})")
            continue
        for size in SIZES:
            parts = training(args, name, size)
            if parts is None:
                left_out.append(f"{name} {size} (neither it nor the other size was timed; --tflops models it)")
                continue
            train, predict = parts
            start = startup(args, name, size)
            run = start + train + predict
            k, gain = packing(args, name, size)
            rows.append({"subset": name, "size": size, "train": train, "predict": predict, "startup": start, "run": run,
                         "k": k, "gain": gain, "hours_one": Figure(RUNS * run.value / 3600, run.measured, ""),
                         "hours": Figure(RUNS * run.value / gain.value / 3600, run.measured and gain.measured, "")})
    return rows, left_out


def report(args: argparse.Namespace) -> None:
    rows, left_out = plan(args)
    notes = Notes()
    print(f"the λ sweep: {RUNS} runs per subset and size (7 λ × 5 seeds), each 2 epochs and the dev set's prediction; "
          f"steps from {args.steps.get('command', 'bench_subset_steps.py')} on {args.steps['device']}")
    if args.steps.get("settings", {}).get("tiny"):
        print("--tiny steps: a toy model at toy sizes stands in for base (a check of the machinery, not a projection)")
    print("| subset | size | training s | prediction s | start-up s | run s | RUNS_PER_GPU | gain | GPU-h, one run a "
          "GPU | GPU-h | figures |\n| --- | --- |" + " ---: |" * 8 + " --- |")
    for r in rows:
        marks = [notes.mark(r[key]).strip() for key in ("train", "predict", "startup", "gain")]
        basis = "measured" if r["hours"].measured else "modelled " + " ".join(dict.fromkeys(m for m in marks if m))
        print(f"| {r['subset']} | {r['size']} | {r['train'].value:.1f}{notes.mark(r['train'])} | "
              f"{r['predict'].value:.1f}{notes.mark(r['predict'])} | {r['startup'].value:.1f}{notes.mark(r['startup'])} | "
              f"{r['run'].value:.1f} | {r['k']} | {r['gain'].value:.2f}{notes.mark(r['gain'])} | "
              f"{r['hours_one'].value:.2f} | {r['hours'].value:.2f} | {basis} |")
    for size in SIZES:
        mine = [r for r in rows if r["size"] == size]
        if not mine:
            continue
        one, packed = sum(r["hours_one"].value for r in mine), sum(r["hours"].value for r in mine)
        complete = len(mine) == len(SUBSETS)
        measured = complete and all(r["hours"].measured for r in mine)
        measured_one = complete and all(r["hours_one"].measured for r in mine)
        print(f"{size} sweep{'' if complete else ' (' + str(len(mine)) + ' of 4 subsets)'}: {one:.2f} GPU-hours one run a "
              f"GPU ({'measured' if measured_one else 'modelled'}), {packed:.2f} with RUNS_PER_GPU={mine[0]['k']} "
              f"({'measured' if measured else 'modelled'})")
    for size in SIZES:
        k, gain, how, _ = runs_per_gpu(args, size)
        print(f"RUNS_PER_GPU for {size}: {k} ({f'gain {gain:.2f}; ' if k > 1 else ''}{how})")
    measured_sources = sorted({f.source for r in rows for f in (r["train"], r["startup"]) if f.measured}
                              | {r["gain"].source for r in rows if r["gain"].measured and r["k"] > 1})
    for source in measured_sources:
        print(f"measured: {source}")
    for line in notes.lines():
        print(line)
    for item in left_out:
        print(f"not projected: {item}")


def main(argv: list[str] | None = None) -> int:
    report(parse(argv))
    return 0


if __name__ == "__main__":
    from expmrc.cli import run_guarded

    sys.exit(run_guarded(main, None))  # stdout closed or on a full device: one line, exit 2
