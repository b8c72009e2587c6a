"""`expmrc ground`: tie every evidence (and span answer) of a submission to exact passage text."""

from __future__ import annotations

import argparse
import json
import sys

from expmrc.text.grounding import FUZZY_THRESHOLD

DESCRIPTION = f"""\
Find every evidence (and, on span subsets, every answer) of a submission in its passage, as a
model's free-form quotes need: verbatim; else after normalization (NFKC, full-/half-width
punctuation, quote marks and whitespace dropped, case folded), mapped back to exact passage
offsets; else by fuzzy alignment over word tokens (rapidfuzz), accepted when at least
{FUZZY_THRESHOLD:g}% of the quote's tokens match in order, in runs of two or more. A quote with an ellipsis (..., …, ……) covers its
pieces found in order; a framing sentence around a quote (The passage says: "...", 原文写道：“...”)
is not part of it.

Each field gets a status: exact, normalized, fuzzy (with its score) or unverified. GROUNDED.json is
the submission with every located field replaced by the exact passage substring and its offset
written beside it (answer_start, evidence_start); unverified fields stay as given, or are emptied
with --drop-unverified. It prints the count of each status and the unverified-evidence rate.
docs/grounding.md has the rules.

examples:
  expmrc ground squad llm/predictions.json --output llm/grounded.json --details llm/grounding.jsonl
  expmrc ground c3 replies.json --output grounded.json --drop-unverified
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dataset", metavar="DATASET", help="dataset file, or a subset name resolved in $EXPMRC_DATA or data/")
    parser.add_argument("submission", metavar="SUBMISSION", help="the submission to ground ({qid: {answer, evidence}})")
    parser.add_argument("--output", required=True, metavar="GROUNDED.json",
                        help="where to write the grounded submission")
    parser.add_argument("--details", metavar="D.jsonl",
                        help='one JSON line per question: {"id", "evidence": {"status", "start", "end", "score"}, '
                             '"answer": {...}} (answer on span subsets; character offsets, end exclusive)')
    parser.add_argument("--drop-unverified", action="store_true", help="empty the fields that could not be located")
    parser.add_argument("--subset", choices=("squad", "cmrc2018", "race", "c3"),
                        help="the dataset's subset, when its `version` does not say")


def run(args: argparse.Namespace) -> int:
    from expmrc.data.datasets import load_dataset
    from expmrc.data.io import check_output_path, write_json_atomic, write_text_atomic
    from expmrc.data.submissions import load_submission
    from expmrc.errors import ExpmrcError
    from expmrc.text.grounding import STATUSES, ground_submission

    for path in (args.output, args.details):
        if path:
            check_output_path(path, "file", inputs=[args.dataset, args.submission])
    if args.details and args.details == args.output:
        raise ExpmrcError(f"{args.output}: --output and --details name the same file")
    dataset = load_dataset(args.dataset, args.subset)
    submission = load_submission(args.submission)
    result = ground_submission(dataset, submission, args.drop_unverified, source=args.submission)
    missing = len(dataset.questions) - len(result.submission)
    if missing:
        print(f"warning: {args.submission}: {missing} of {len(dataset.questions)} questions have no prediction",
              file=sys.stderr)
    if args.details:
        write_text_atomic(args.details, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in result.details))
    write_json_atomic(args.output, result.submission, indent=1)
    fields = [("evidence", result.counts)] + ([("answer", result.answer_counts)] if result.answer_counts else [])
    for name, counts in fields:
        print(f"{name}: " + ", ".join(f"{status} {counts[status]}" for status in STATUSES))
    print(f"unverified-evidence rate: {100 * result.unverified_rate:.1f}% "
          f"({result.counts['unverified']} of {sum(result.counts.values())})")
    print(f"wrote {len(result.submission)} questions to {args.output}", file=sys.stderr)
    return 0
