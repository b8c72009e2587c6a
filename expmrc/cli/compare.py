"""`expmrc compare`: paired significance tests of one or more submissions against a baseline, on the same questions."""

from __future__ import annotations

import argparse
import json
import os
import sys

from expmrc.cli.args import add_resampling_arguments, integer_in
from expmrc.cli.judge_flags import add_judge_arguments
from expmrc.data import subsets
from expmrc.data.datasets import load_dataset
from expmrc.errors import ExpmrcError, warn
from expmrc.metrics.registry import select
from expmrc.scoring.scorer import Report, score_files, signature
from expmrc.scoring.stats import (
    DEFAULT_TRIALS,
    TESTS,
    Difference,
    Resampling,
    check_same_dataset,
    compare,
)
from expmrc.scoring.support import KEY, Support, compare_support

DESCRIPTION = """\
Compare each SYSTEM submission with the BASELINE submission on the same questions of DATASET, and say
whether each score differs by more than the sampling of questions explains. For every score (ALL_F1,
ANS_F1, EVI_F1, ANS_EM and the extra metrics' figures) it prints the baseline's and the system's
figure, the difference Δ = system − baseline, the interval of Δ (paired bootstrap) and a p-value;
* marks a difference whose interval excludes 0, so the mark never contradicts the interval (at 95%,
the bootstrap's p is then about 0.05 or less; a p near 0.05 can fall on either side). Questions
missing from a submission count as 0, as the leaderboard scores them.

Tests (--test), following sacrebleu's --paired-bs and --paired-ar:
  bootstrap      paired bootstrap resampling (Koehn 2004), --ci-resamples resamples (default 1000):
                 p = (#{|Δ_b| − mean |Δ_b| ≥ |Δ|} + 1) / (B + 1)
  randomization  approximate randomization (Riezler & Maxwell 2005), --trials trials (default 10000),
                 each swapping the two systems' values on a random half of the questions:
                 p = (#{|Δ_t| ≥ |Δ|} + 1) / (T + 1)
Unlike sacrebleu, a resampled statistic equal to the observed one counts (≥, not >), so two
identical submissions give p = 1. docs/scoring.md, "Confidence intervals and significance", says
what the figures mean and which test to use.

--judge nli|chat --judge-model NAME adds SUPPORT, the share of questions whose evidence the judge
finds to support the answer (`expmrc judge`), tested the same way: one judge judges every submission
(and the check of the judge, printed once), so the test is paired. See docs/coupling.md.

examples:
  expmrc compare squad sample_submission/squad.json idf-window.json
  expmrc compare race base.json a.json b.json --test randomization --json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dataset", metavar="DATASET", help="dataset file, or a subset name resolved in $EXPMRC_DATA or data/")
    parser.add_argument("baseline", metavar="BASELINE.json", help="the submission the others are compared with")
    parser.add_argument("systems", nargs="*", metavar="SYSTEM.json", help="one or more submissions to compare with it")
    parser.add_argument("--test", choices=TESTS, default="bootstrap",
                        help="the paired test giving the p-value (default %(default)s)")
    parser.add_argument("--trials", type=integer_in(1, 1_000_000), default=DEFAULT_TRIALS, metavar="T",
                        help="with --test randomization: how many random swaps, up to 1000000 (about a minute on "
                             "a dev set; default %(default)s, as sacrebleu)")
    add_resampling_arguments(parser, "how many paired resamples of the questions (the bootstrap's p-value and "
                                     "every interval of Δ)")
    parser.add_argument("--subset", choices=subsets.names(), help="the subset, when the dataset's `version` does not say")
    parser.add_argument("--metrics", type=str, metavar="NAME[,NAME]",  # type=str: `--metrics ""` means none
                        help="extra metrics to compare (as in `expmrc evaluate`; default: the subset's own)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    add_judge_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from expmrc.llm.fetch import Interrupted
    from expmrc.llm.judges import JudgeConfig, judge_each, stopped_line

    if not args.systems:
        raise ExpmrcError("compare needs a baseline and at least one system submission; got only "
                          f"{args.baseline}")
    for path in args.systems:
        if os.path.realpath(path) == os.path.realpath(args.baseline):
            raise ExpmrcError(f"{path}: the baseline is also listed as a system; a submission compared with itself "
                              "tells nothing")
    if args.test != "randomization" and args.trials != DEFAULT_TRIALS:
        raise ExpmrcError("--trials sets the approximate randomization test; add --test randomization")
    settings = Resampling(args.ci_resamples, args.seed, args.confidence)
    config = JudgeConfig.from_flags(vars(args))
    dataset = load_dataset(args.dataset, args.subset)
    metrics = select(args.metrics, dataset)
    baseline = score_files(dataset, args.baseline, metrics)
    systems = [score_files(dataset, path, metrics) for path in args.systems]
    check_same_dataset([baseline, *systems])
    results = [compare(baseline, system, args.test, settings, args.trials) for system in systems]
    supports: list[Support] = []
    if config is not None:
        try:
            supports = judge_each(config, settings, [(dataset, path) for path in [args.baseline, *args.systems]])
        except Interrupted as stop:
            print(stopped_line(stop.status, stop.cached, stop.total, config), file=sys.stderr)
            return stop.status
        for result, support in zip(results, supports[1:]):
            result[KEY] = compare_support(supports[0], support, args.test, settings, args.trials)
    if supports and (line := supports[0].check.warning()) is not None:
        warn(line)
    if args.json:
        extra = {"support_check": supports[0].check.summary(), "support_signature": supports[0].signature} \
            if supports else {}
        print(json.dumps({"baseline": args.baseline, "test": args.test,
                          "systems": [{"path": path, "scores": {key: d.as_dict() for key, d in result.items()}}
                                      for path, result in zip(args.systems, results)], **extra},
                         ensure_ascii=False, indent=1))
        return 0
    print(_heading(args, baseline, settings))
    for path, result in zip(args.systems, results):
        print(f"\nsystem: {path}")
        print(_table(result))
    interval = f"{settings.confidence * 100:g}% paired bootstrap"
    if any(d.significant for result in results for d in result.values()):
        print(f"\n* the interval of Δ = system − baseline ({interval}) excludes 0: the difference is larger than the "
              "sampling of questions explains. p is the test's, beside it.")
    else:
        print(f"\nNo interval of Δ = system − baseline ({interval}) excludes 0: no difference here is larger than the "
              "sampling of questions explains.")
    trials = f"+trials-{args.trials}" if args.test == "randomization" else ""
    print(f"signature: {signature([baseline, *systems], settings.describe(), f'test:{args.test}{trials}')}")
    if supports:
        print(f"{supports[0].check.line()}\nsupport signature: {supports[0].signature}")
    return 0


def _heading(args: argparse.Namespace, baseline: Report, settings: Resampling) -> str:
    test = (f"paired bootstrap resampling, {settings.resamples} resamples" if args.test == "bootstrap" else
            f"approximate randomization, {args.trials} trials")
    return (f"{test}, seed {settings.seed}; {baseline.total} questions of {baseline.subset} ({baseline.dataset_path})\n"
            f"baseline: {args.baseline}")


def _table(result: dict[str, Difference]) -> str:
    header = ["score", "baseline", "system", "Δ", "interval of Δ", "p"]
    rows = [[key, f"{d.baseline:.3f}", f"{d.system:.3f}", f"{d.delta:+.3f}",
             "n/a" if d.ci is None else f"[{d.ci[0]:+.3f}, {d.ci[1]:+.3f}]", f"{d.p:.4f}{' *' if d.significant else '  '}"]
            for key, d in result.items()]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
                     for row in [header, *rows])
