"""Bootstrap intervals over questions: the vectorised resampling of expmrc.scoring.stats against the obvious
loop (one resample at a time, a Python mean per score), both in this run, on the four dev sets × three scores.

    python benchmarks/bench_stats.py [--resamples 1000] [--repeat 3]

Needs $EXPMRC_DATA, NLTK's Punkt data and the sample submissions (sample_submission/). The submissions
are scored once, outside the timing; each timing covers drawing the resamples and computing the intervals
of ALL_F1, ANS_F1 and EVI_F1 on all four sets. The best of --repeat runs is printed for each, then the
ratio, and whether both give the same intervals.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from expmrc.data import subsets  # noqa: E402
from expmrc.data.datasets import load_dataset  # noqa: E402
from expmrc.scoring import stats  # noqa: E402
from expmrc.scoring.scorer import score_files  # noqa: E402

KEYS = {"ALL_F1": "overall", "ANS_F1": "answer", "EVI_F1": "evidence"}


def vectorised(reports: list, resamples: int) -> list[dict]:
    """expmrc's way: one index matrix per set, one matrix product for all scores."""
    results = []
    for report in reports:
        parts = {key: value for key, value in stats.figure_parts(report).items() if key in KEYS}
        counts = stats.index_counts(stats.resample_indices(report.total, resamples, stats.DEFAULT_SEED), report.total)
        figures = stats.resampled(parts, counts)
        results.append({key: stats.order_interval(figures[key], 0.95) for key in KEYS})
    return results


def loop(reports: list, resamples: int) -> list[dict]:
    """The obvious loop over the same draws: for each resample and score, a Python mean of the chosen questions."""
    results = []
    for report in reports:
        rows = stats.resample_indices(report.total, resamples, stats.DEFAULT_SEED).tolist()
        spans = {}
        for key, name in KEYS.items():
            values = [getattr(q, name) if q.answered else 0.0 for q in report.questions]
            figures = sorted(100.0 * sum(values[i] for i in row) / len(row) for row in rows)
            cut = math.floor(len(figures) * 0.025 + 1e-9)
            spans[key] = (figures[cut], figures[len(figures) - 1 - cut])
        results.append(spans)
    return results


def best_time(func, reports: list, resamples: int, repeat: int) -> tuple[float, list[dict]]:
    best, result = math.inf, []
    for _ in range(repeat):
        start = time.perf_counter()
        result = func(reports, resamples)
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    from expmrc.errors import OneLineParser  # usage errors in one line

    parser = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--resamples", type=int, default=stats.DEFAULT_RESAMPLES)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    reports = [score_files(load_dataset(subset), str(ROOT / "sample_submission" / f"{subset}.json"))
               for subset in subsets.names()]
    questions = sum(r.total for r in reports)
    fast, fast_spans = best_time(vectorised, reports, args.resamples, args.repeat)
    slow, slow_spans = best_time(loop, reports, args.resamples, args.repeat)
    same = all(np.allclose(a[k], b[k], atol=1e-9) for a, b in zip(fast_spans, slow_spans) for k in KEYS)
    print(f"{args.resamples} resamples, 4 dev sets ({questions} questions) × 3 scores, best of {args.repeat}")
    print(f"  vectorised (expmrc.scoring.stats)  {fast:8.3f} s")
    print(f"  obvious loop                       {slow:8.3f} s")
    print(f"  ratio loop / vectorised            {slow / fast:8.1f} ×   same intervals: {same}")


if __name__ == "__main__":
    from expmrc.cli import run_guarded  # bad input in one line, exit 2; Ctrl-C 130

    sys.exit(run_guarded(lambda _: main(), None))
