"""`expmrc ground`: tie every evidence (and span answer) of a submission to exact passage text."""

from __future__ import annotations

import argparse
import json
import sys

from expmrc.cli.judge_flags import add_judge_arguments
from expmrc.data import subsets
from expmrc.text.grounding import FUZZY_THRESHOLD

DESCRIPTION = f"""\
Find every evidence (and, on span subsets, every answer) of a submission in its passage, as a
model's free-form quotes need. One rule: a field is replaced by the passage text only when every
difference from it is form.

Form: whitespace, case, width, quote marks, traditional and simplified Chinese script (OpenCC),
accents, n't spelt "not", digit grouping (1,000 = 1000), punctuation and markup, list markers at line
starts (1. 1) (1) ① 一、 - *), a framing sentence around a quote (The passage says: "...",
原文写道：“...”) and text left out behind an ellipsis (..., …, ……). The quote is found verbatim; else
with its form folded; else by fuzzy alignment over word tokens (rapidfuzz), accepted when at least
{FUZZY_THRESHOLD:g}% of the quote's tokens match in order, in runs of two or more, and then compared
token by token with the passage text it covers. A quote of several sentences, list items or quotes
is grounded element by element and takes the weakest status.

Each field gets a status: exact, normalized (every difference form), reworded (a word or character
added, left out without an ellipsis, or replaced), altered (a changed token is a fact: a number with
its decimal point, unit or currency sign; a negation, also one an ellipsis stands for; a name),
unverified (not found) or missing (no text given, or no prediction). GROUNDED.json is the submission
with every exact or normalized field replaced by the exact passage text and its offset written
beside it (answer_start, evidence_start); reworded, altered and unverified fields stay as the model
wrote them (--drop-unverified empties the altered and unverified ones). It prints the count of each
status and two rates over the questions with evidence: verbatim (exact + normalized) and
untrustworthy (unverified + altered + reworded). docs/grounding.md has the rules.

--judge nli|chat --judge-model NAME splits the reworded and altered evidence by entailment: the
judge (as `expmrc judge`'s) reads each such quote against the passage text it covers, both ways:
paraphrase when each entails the other, contradicted when either way contradicts, else
unsupported (unjudged: no verdict, counted apart). It prints the shares of the quotes judged, by
status, and a check of the judge on the same spans (a span with itself should be a paraphrase, with
its negation or another passage sentence not), with a warning when it does not separate them;
--details gains each such quote's `entailment` (label, both verdicts, the check's labels).

examples:
  expmrc ground squad llm/predictions.json --output llm/grounded.json --details llm/grounding.jsonl
  expmrc ground c3 replies.json --output grounded.json --drop-unverified
  expmrc ground squad llm/predictions.json --output g.json --judge nli --judge-model models/nli
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dataset", metavar="DATASET", help="dataset file, or a subset name resolved in $EXPMRC_DATA or data/")
    parser.add_argument("submission", metavar="SUBMISSION",
                        help="the submission to ground ({qid: {answer, evidence}}; an evidence may be a list of quotes)")
    parser.add_argument("--output", required=True, metavar="GROUNDED.json",
                        help="where to write the grounded submission")
    parser.add_argument("--details", metavar="D.jsonl",
                        help='one JSON line per question with a prediction: {"id", "evidence": {"status", "start", '
                             '"end", "score", "changes" (reworded, altered: [{"quote", "passage", "kind", "start", '
                             '"end"}]), "parts" (several sentences or a list)}, "answer": {...}} (answer on span '
                             'subsets; character offsets, end exclusive)')
    parser.add_argument("--drop-unverified", action="store_true",
                        help="empty the fields that could not be located or whose facts were changed (altered)")
    parser.add_argument("--subset", choices=subsets.names(),
                        help="the dataset's subset, when its `version` does not say")
    add_judge_arguments(parser, without=("statement",))
    parser.add_argument("--quiet", action="store_true", help="no progress bar (the judge's)")


def run(args: argparse.Namespace) -> int:
    from expmrc.data.datasets import load_dataset
    from expmrc.data.io import check_distinct_outputs, check_output_path, json_text, write_texts_atomic
    from expmrc.data.submissions import load_submission
    from expmrc.errors import warn
    from expmrc.llm.fetch import Interrupted
    from expmrc.llm.judges import JudgeConfig, judge_rewordings, stopped_line
    from expmrc.text.grounding import STATUSES, ground_submission, trust_line

    config = JudgeConfig.from_flags(vars(args))
    for path in (args.output, args.details):
        if path:
            check_output_path(path, "file", inputs=[args.dataset, args.submission])
    check_distinct_outputs({"--output": args.output, "--details": args.details})
    dataset = load_dataset(args.dataset, args.subset)
    submission = load_submission(args.submission)
    result = ground_submission(dataset, submission, args.drop_unverified, source=args.submission)
    split = None
    if config is not None:
        try:
            split = judge_rewordings(config, dataset, submission, result.details)
        except Interrupted as stop:
            print(stopped_line(stop.status, stop.cached, stop.total, config), file=sys.stderr)
            return stop.status
    missing = len(dataset.questions) - len(result.submission)
    if missing:
        print(f"warning: {args.submission}: {missing} of {len(dataset.questions)} questions have no prediction",
              file=sys.stderr)
    details = [(args.details, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in result.details))] \
        if args.details else []
    write_texts_atomic([*details, (args.output, json_text(args.output, result.submission, indent=1))])
    fields = [("evidence", result.counts)] + ([("answer", result.answer_counts)] if result.answer_counts else [])
    for name, counts in fields:
        print(f"{name}: " + ", ".join(f"{status} {counts[status]}" for status in STATUSES))
    print(trust_line(result.summary()))
    if split is not None:
        print("\n".join(split.lines() + [f"entailment signature: {split.signature}"]))
        if (line := split.warning()) is not None:
            warn(line)
    print(f"wrote {len(result.submission)} questions to {args.output}", file=sys.stderr)
    return 0
