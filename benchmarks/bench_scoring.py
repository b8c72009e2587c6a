"""CPU time to score all four dev sets: one `expmrc evaluate` call against the official script run once per set.

    python benchmarks/bench_scoring.py --official PATH/TO/official/eval_expmrc.py [--repeat 3]

Needs $EXPMRC_DATA. The submissions are made on the fly from the dev sets (gold answers, the passage's first 300
characters as evidence). Timed, each as whole processes (imports included), their CPU time (user + system of the child
processes) and wall time:
- one `expmrc evaluate` call over the four sets, with its default figures (the coupling, grounding and original
  metrics beside the leaderboard's) and with `--metrics ""` (the leaderboard's figures alone);
- our drop-in `eval_expmrc.py`, one process per set;
- the official script (a copy of github.com/ymcui/expmrc's eval_expmrc.py, given by --official), one process per set.
The runs take turns, --repeat rounds of each, and the best of each is printed with its ratio to the official script's
CPU time, all measured in this run. Each process's scores are checked against the official script's: ALL_F1, ANS_F1,
EVI_F1, TOTAL and SKIP on every set, as the official script prints them; a difference is printed and ends the run with
exit status 1.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from expmrc.data import subsets  # noqa: E402
from expmrc.data.datasets import SpanQuestion, load_dataset  # noqa: E402

FIGURES = ("ALL_F1", "ANS_F1", "EVI_F1", "TOTAL", "SKIP")


def make_submissions(folder: Path) -> list[tuple[str, str]]:
    pairs = []
    for subset in subsets.names():
        dataset = load_dataset(subset)
        preds = {}
        for q in dataset.questions:
            if isinstance(q, SpanQuestion):
                preds[q.qid] = {"answer": q.answers[0], "evidence": q.context[:300]}
            else:
                preds[q.qid] = {"answer": q.answer, "evidence": q.passage[:300]}
        path = folder / f"{subset}.json"
        path.write_text(json.dumps(preds, ensure_ascii=False), encoding="utf-8")
        pairs.append((dataset.path, str(path)))
    return pairs


@dataclass
class Timed:
    """One way of scoring the four sets: its commands, the best CPU and wall times seen, and what it printed."""

    label: str
    commands: list[list[str]]
    cpu: float = float("inf")
    wall: float = float("inf")
    outputs: list[str] | None = None

    def run(self) -> None:
        before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        outputs = [subprocess.run(command, check=True, capture_output=True, text=True, cwd=ROOT).stdout
                   for command in self.commands]
        wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpu = min(self.cpu, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        self.wall = min(self.wall, wall)
        self.outputs = outputs


def per_set_figures(timed: Timed) -> list[dict[str, object]]:
    """The official figures of each set, as strings with three decimals (counts as numbers), from what `timed`
    printed: one JSON line per process (eval_expmrc.py), or one `evaluate --json` object with a result per set."""
    assert timed.outputs is not None
    if len(timed.commands) > 1:
        return [{key: json.loads(out)[key] for key in FIGURES} for out in timed.outputs]
    results = json.loads(timed.outputs[0])["results"]
    return [{key: f"{r[key]:.3f}" if isinstance(r[key], float) else r[key] for key in FIGURES} for r in results]


def differences(timed: Timed, official: Timed, names: list[str]) -> list[str]:
    return [f"{timed.label}: {name}: {key} {ours[key]} where the official script gives {theirs[key]}"
            for name, ours, theirs in zip(names, per_set_figures(timed), per_set_figures(official))
            for key in FIGURES if ours[key] != theirs[key]]


def main() -> None:
    from expmrc.errors import ExpmrcError, OneLineParser  # usage errors in one line

    parser = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--official", required=True, help="path to a copy of the official eval_expmrc.py")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of each way of scoring (the best is printed)")
    args = parser.parse_args()
    if not os.environ.get("EXPMRC_DATA"):
        raise ExpmrcError("set EXPMRC_DATA to the folder holding the four dev sets")
    if not 1 <= args.repeat <= 100:
        parser.error(f"--repeat takes 1 to 100 rounds, not {args.repeat}")
    if not Path(args.official).is_file():  # before minutes of timing
        raise ExpmrcError(f"{args.official}: no such file (--official takes a copy of the official eval_expmrc.py)")
    with tempfile.TemporaryDirectory() as tmp:
        pairs = make_submissions(Path(tmp))
        py = sys.executable
        one_call = [py, "-m", "expmrc.cli", "evaluate", *[p for pair in pairs for p in pair], "--json"]
        ways = [Timed("expmrc evaluate, one call (default figures)", [one_call]),
                Timed("expmrc evaluate, one call, --metrics ''", [one_call + ["--metrics", ""]]),
                Timed("eval_expmrc.py (ours), a process per set", [[py, "eval_expmrc.py", d, p] for d, p in pairs]),
                Timed("official eval_expmrc.py, a process per set", [[py, args.official, d, p] for d, p in pairs])]
        for _ in range(args.repeat):
            for way in ways:
                way.run()
    official = ways[-1]
    print(f"four dev sets, best of {args.repeat} (CPU: user + system of the processes; ratio: CPU time to the "
          "official script's, in this run)")
    for way in ways:
        print(f"  {way.label:<46} CPU {way.cpu:6.2f} s  wall {way.wall:6.2f} s  ratio {way.cpu / official.cpu:.2f}")
    names = [name for name in subsets.names()]
    wrong = [line for way in ways[:-1] for line in differences(way, official, names)]
    if wrong:
        print("\n".join(["scores differ from the official script's:", *wrong]))
        sys.exit(1)
    print(f"scores: {', '.join(FIGURES)} identical to the official script's on {', '.join(names)}, in every process")


if __name__ == "__main__":
    from expmrc.cli import run_guarded  # bad input in one line, exit 2; Ctrl-C 130

    sys.exit(run_guarded(lambda _: main(), None))
