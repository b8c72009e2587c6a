"""`expmrc report`: a self-contained HTML page of a submission (or two) on a dataset."""

from __future__ import annotations

import argparse
import sys

from expmrc.data import subsets
from expmrc.data.datasets import resolve_dataset_path
from expmrc.data.io import check_output_path
from expmrc.errors import ExpmrcError
from expmrc.reports.html import ANSWER_THRESHOLD, EVIDENCE_THRESHOLD, build_report
from expmrc.reports.pages import check_output, human_size, write_page
from expmrc.scoring.scorer import coverage_warnings

DESCRIPTION = """\
Write one HTML page that shows a submission, or compares two, on a dataset. It opens offline in any
browser: styles, script, data and figures are inside the file.

Summary: the official figures (ALL_F1, ANS_F1, EVI_F1), answer exact match, the figures of every
extra metric computed (as `expmrc evaluate` computes them), the signature, scores by question type,
the distribution of per-question evidence F1, and the four quadrants answer right/wrong x evidence
good/poor (answer right when its score >= --answer-threshold; evidence good when its F1 >=
--evidence-threshold; both adjustable on the page too).

Questions: each question with its passage, where the gold evidence, the predicted evidence and the
answers are highlighted (shapes as well as colours, with a legend), the options for multiple
choice, the scores; filters by quadrant, question type and score range, search by id or text, and
sorting by any score. With two submissions, both predictions on the same passage and the score
differences B - A, sortable, and in the summary the paired bootstrap test of B against A per score
(as `expmrc compare` gives it) with the questions that decide the difference (the largest gains and
losses of B). With --judge-details (a file of `expmrc judge --details`, once per submission), each
question shows the judge's support label beside the submission's evidence and the summary the
support rate; each file goes to the submission it judged (its lines carry that file's sha256), and
details of another submission are refused. docs/report.md explains the page.

examples:
  expmrc report squad sample_submission/squad.json --output squad-report.html
  expmrc report race runs/race-a/dev_predictions.json runs/race-b/dev_predictions.json \\
      --names baseline,idf-window --output race-compare.html
"""


def _names(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"names are a comma list of non-empty names; got {text!r}")
    return names


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 1:  # also refuses nan; inf is out of range
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 1, got {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dataset", metavar="DATASET", help="dataset file, or a subset name resolved in $EXPMRC_DATA or data/")
    parser.add_argument("submissions", nargs="+", metavar="SUBMISSION",
                        help="the submission to show, and optionally a second one to compare with it (B against A)")
    parser.add_argument("--output", required=True, metavar="REPORT.html", help="where to write the page")
    parser.add_argument("--subset", choices=subsets.names(), help="the subset, when the dataset's `version` does not say")
    parser.add_argument("--metrics", type=str, metavar="NAME[,NAME]",  # type=str: `--metrics ""` means none
                        help="extra metrics to compute and show (as in `expmrc evaluate`; default: the subset's own)")
    parser.add_argument("--names", type=_names, metavar="A[,B]",
                        help="short names for the submissions on the page (default: their paths)")
    parser.add_argument("--answer-threshold", type=_fraction, default=ANSWER_THRESHOLD, metavar="T",
                        help="an answer is right when its score (F1, or 1/0 for multiple choice) is >= T "
                             "(default %(default)s)")
    parser.add_argument("--evidence-threshold", type=_fraction, default=EVIDENCE_THRESHOLD, metavar="T",
                        help="evidence is good when its F1 is >= T (default %(default)s)")
    parser.add_argument("--title", help="the page's title (default: the subset and the submissions' names)")
    parser.add_argument("--judge-details", action="append", default=[], metavar="FILE.jsonl",
                        help="a judge's labels of a submission (`expmrc judge --details`), shown beside its evidence; "
                             "once per submission (each goes to the submission whose sha256 it carries)")


def run(args: argparse.Namespace) -> int:
    if len(args.submissions) > 2:
        raise ExpmrcError(f"a report shows one submission or compares two; got {len(args.submissions)}")
    check_output(args.output)
    check_output_path(args.output, "file", inputs=[resolve_dataset_path(args.dataset), *args.submissions,
                                                   *args.judge_details])
    html, submissions = build_report(args.dataset, args.submissions, subset=args.subset, metric_names=args.metrics,
                                     names=args.names, answer_threshold=args.answer_threshold,
                                     evidence_threshold=args.evidence_threshold, title=args.title,
                                     judge_details=args.judge_details)
    for sub in submissions:
        for line in coverage_warnings(sub.report):
            print(line, file=sys.stderr)
        if sub.support_source is not None and len(submissions) > 1:
            print(f"{sub.support_source}: the judge's labels of {sub.name} ({sub.report.prediction_path})",
                  file=sys.stderr)
    size = write_page(args.output, html)
    print(f"wrote {args.output}: {submissions[0].report.total} questions, {len(submissions)} submission(s), "
          f"{human_size(size)}", file=sys.stderr)
    return 0
