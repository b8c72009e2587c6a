#!/usr/bin/env python3
"""Drop-in replacement for the official ExpMRC scorer.

    python eval_expmrc.py DATASET_FILE PREDICTION_FILE

prints one line of JSON (ALL_F1, ANS_F1, EVI_F1, TOTAL, SKIP, VERSION, FILE) with the leaderboard's
numbers, and `Unanswered question: ID` on stderr for each question the submission lacks. Bad input
ends in one `error:` line and exit status 2. `expmrc evaluate` gives the same numbers with details.
"""

import argparse
import json
import sys

from expmrc.cli import OneLineParser, parse_arguments, run_guarded
from expmrc.data import subsets
from expmrc.data.datasets import load_dataset
from expmrc.scoring.scorer import no_match_problem, score_files, warn_about


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(description="Evaluation script for ExpMRC (the leaderboard's metric).")
    parser.add_argument("dataset_file", help="official dataset file (or a subset name resolved in $EXPMRC_DATA or data/)")
    parser.add_argument("prediction_file", help="your prediction file: {id: {\"answer\": ..., \"evidence\": ...}}")
    parser.add_argument("--subset", choices=subsets.names(), help="the subset, when the dataset's `version` does not say")
    args = parse_arguments(parser, argv)
    if isinstance(args, int):  # --help, or a usage error already printed in one line
        return args

    def body(args: argparse.Namespace) -> int:
        report = score_files(load_dataset(args.dataset_file, args.subset), args.prediction_file)
        warn_about(report)
        print(json.dumps(report.official()))
        if no_match_problem(report):  # the official line above stays; say why everything is unanswered
            print(f"warning: {no_match_problem(report)}", file=sys.stderr)
        return 0

    return run_guarded(body, args)


if __name__ == "__main__":
    sys.exit(main())
