"""Wall time to score all four dev sets: one `expmrc evaluate` call against one process per set.

    python benchmarks/bench_scoring.py [--official PATH/TO/official/eval_expmrc.py] [--repeat 3]

Needs $EXPMRC_DATA and NLTK's Punkt data. The submissions are made on the fly from the dev sets
(gold answers, the passage's first 300 characters as evidence). The reference is one process per
set: our drop-in `eval_expmrc.py`, and the official script too when --official points at a copy.
The one call is also timed with `--metrics ""` (the leaderboard's figures alone), which shows what
the default extra figures (the coupling ones) cost. Prints the best of --repeat runs for each and
the ratios, all measured in this run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from expmrc.data import subsets  # noqa: E402
from expmrc.data.datasets import SpanQuestion, load_dataset  # noqa: E402


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


def best_time(commands: list[list[str]], repeat: int) -> float:
    """Best over `repeat` runs of the wall time to run `commands` one after another."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for command in commands:
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    from expmrc.errors import ExpmrcError, OneLineParser  # usage errors in one line

    parser = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--official", help="path to a copy of the official eval_expmrc.py, timed as the reference")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not os.environ.get("EXPMRC_DATA"):
        raise ExpmrcError("set EXPMRC_DATA to the folder holding the four dev sets")
    if args.official and not Path(args.official).is_file():  # before minutes of timing
        raise ExpmrcError(f"{args.official}: no such file (--official takes a copy of the official eval_expmrc.py)")
    with tempfile.TemporaryDirectory() as tmp:
        pairs = make_submissions(Path(tmp))
        py = sys.executable
        one_call = [[py, "-m", "expmrc.cli", "evaluate", *[p for pair in pairs for p in pair]]]
        ours_per_set = [[py, "eval_expmrc.py", d, p] for d, p in pairs]
        t_one = best_time(one_call, args.repeat)
        t_bare = best_time([one_call[0] + ["--metrics", ""]], args.repeat)
        t_ours = best_time(ours_per_set, args.repeat)
        print(f"expmrc evaluate, 4 sets in one call:     {t_one:6.2f} s   (default figures, coupling included)")
        print(f"  the same with --metrics '':            {t_bare:6.2f} s   (the leaderboard's figures alone)")
        print(f"eval_expmrc.py (ours), 4 processes:      {t_ours:6.2f} s   ratio one-call/this = {t_one / t_ours:.2f}")
        if args.official:
            t_off = best_time([[py, args.official, d, p] for d, p in pairs], args.repeat)
            print(f"official eval_expmrc.py, 4 processes:    {t_off:6.2f} s   ratio one-call/this = {t_one / t_off:.2f}")


if __name__ == "__main__":
    from expmrc.cli import run_guarded  # bad input in one line, exit 2; Ctrl-C 130

    sys.exit(run_guarded(lambda _: main(), None))
