"""`expmrc ground`: tie every evidence (and span answer) of a submission to exact passage text."""

from __future__ import annotations

import argparse
import json
import sys

from expmrc.data import subsets
from expmrc.text.grounding import FUZZY_THRESHOLD

DESCRIPTION = f"""\
Find every evidence (and, on span subsets, every answer) of a submission in its passage, as a
model's free-form quotes need, separating differences of form from differences of fact.

Form is repaired: the quote is found verbatim; else with its form folded on both sides (NFKC,
full-/half-width punctuation and digits, traditional and simplified Chinese script (OpenCC), accents,
quote marks and whitespace dropped, n't spelt "not", case folded), mapped back to exact passage
offsets; else by fuzzy alignment over word tokens (rapidfuzz), accepted when at least
{FUZZY_THRESHOLD:g}% of the quote's tokens match in order, in runs of two or more. A quote with an
ellipsis (..., …, ……) covers its pieces found in order; a framing sentence around a quote (The
passage says: "...", 原文写道：“...”) is not part of it; a quote of several sentences, or a list of
quotes, is grounded element by element and takes the weakest status.

Facts are never repaired: a quote located only by fuzzy alignment whose difference from the passage
touches a number (digits or numerals, 一 … 万 included), a negation (not, n't, no, never, without,
...; 不 没 未 无 非 别 勿) or a capitalised name the passage does not hold is "altered".

Each field gets a status: exact, normalized, fuzzy (with its score), altered (with its changes),
unverified (not found) or missing (no text given, or no prediction). GROUNDED.json is the
submission with every exact, normalized or fuzzy field replaced by the exact passage text and its
offset written beside it (answer_start, evidence_start); altered and unverified fields stay as the
model wrote them, or are emptied with --drop-unverified. It prints the count of each status and the
untrustworthy-evidence rate: (unverified + altered) / questions with evidence. docs/grounding.md
has the rules.

examples:
  expmrc ground squad llm/predictions.json --output llm/grounded.json --details llm/grounding.jsonl
  expmrc ground c3 replies.json --output grounded.json --drop-unverified
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dataset", metavar="DATASET", help="dataset file, or a subset name resolved in $EXPMRC_DATA or data/")
    parser.add_argument("submission", metavar="SUBMISSION",
                        help="the submission to ground ({qid: {answer, evidence}}; an evidence may be a list of quotes)")
    parser.add_argument("--output", required=True, metavar="GROUNDED.json",
                        help="where to write the grounded submission")
    parser.add_argument("--details", metavar="D.jsonl",
                        help='one JSON line per question with a prediction: {"id", "evidence": {"status", "start", '
                             '"end", "score", "changes" (altered), "parts" (several sentences or a list)}, "answer": '
                             '{...}} (answer on span subsets; character offsets, end exclusive)')
    parser.add_argument("--drop-unverified", action="store_true",
                        help="empty the fields that could not be located or whose facts were changed (altered)")
    parser.add_argument("--subset", choices=subsets.names(),
                        help="the dataset's subset, when its `version` does not say")


def run(args: argparse.Namespace) -> int:
    from expmrc.data.datasets import load_dataset
    from expmrc.data.io import check_output_path, write_json_atomic, write_text_atomic
    from expmrc.data.submissions import load_submission
    from expmrc.errors import ExpmrcError
    from expmrc.text.grounding import STATUSES, ground_submission, trust_line

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
    print(trust_line(result.summary()))
    print(f"wrote {len(result.submission)} questions to {args.output}", file=sys.stderr)
    return 0
