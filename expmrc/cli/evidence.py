"""`expmrc evidence`: pick evidence with an unsupervised method and write a scorable submission."""

from __future__ import annotations

import argparse
import sys

from expmrc.cli.args import listing
from expmrc.data import subsets
from expmrc.evidence.extract import METHODS


def method_name(name: str) -> str:
    """A registered method's name with its aliases: `idf-window (= best)`."""
    aliases = [alias for alias in METHODS.aliases if METHODS.canonical(alias) == name]
    return f"{name} (= {', '.join(aliases)})" if aliases else name


DESCRIPTION = f"""\
Pick one evidence span per question with an unsupervised method and write a submission
({{qid: {{"answer", "evidence"}}}}) that `expmrc evaluate` and eval_expmrc.py score. Answers come from
--answers (a submission or {{qid: answer}}; an optional "answer_start" pins a span), or, when it is
not given, from the dataset's gold answers (and the command says so).

methods:
{listing([(method_name(name), method.summary) for name, method in METHODS.items()])}

Baselines split sentences by the `simple` rule, idf-window by the `refined` one (--sentences
overrides). When the dataset has evidences, the evidence F1 of what was written is printed.

examples:
  expmrc evidence --method most-similar-question squad --output sub/squad.json
  expmrc evidence --method best race --answers race-preds.json --output sub/race.json
  expmrc evidence --method best c3 --half second --output /tmp/c3-heldout.json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dataset", metavar="DATASET", help="dataset file, or a subset name resolved in $EXPMRC_DATA or data/")
    parser.add_argument("--method", required=True, metavar="M", help="one of the methods above (best = idf-window)")
    parser.add_argument("--answers", metavar="PRED.json", help="answers to explain (default: the gold answers)")
    parser.add_argument("--output", required=True, metavar="SUBMISSION.json", help="where to write the submission")
    parser.add_argument("--subset", choices=subsets.names(),
                        help="the dataset's subset, when its `version` does not say")
    parser.add_argument("--sentences", choices=("simple", "refined"), help="sentence rule (default: the method's)")
    parser.add_argument("--half", choices=("first", "second"),
                        help="only the questions on the first or second half of the passages (file order)")


def run(args: argparse.Namespace) -> int:
    from expmrc.data.datasets import load_dataset
    from expmrc.data.io import check_output_path, write_json_atomic
    from expmrc.data.submissions import read_answers
    from expmrc.errors import ExpmrcError
    from expmrc.evidence.extract import build_method, extract, split_halves
    from expmrc.scoring.scorer import score

    check_output_path(args.output, "file", inputs=[args.dataset, args.answers or ""])
    dataset = load_dataset(args.dataset, args.subset)
    method = build_method(args.method, dataset, args.sentences)
    questions = dataset.questions
    if args.half:
        questions = split_halves(dataset)[0 if args.half == "first" else 1]
        if not questions:
            raise ExpmrcError(f"{dataset.path}: --half {args.half} holds no question: the file has a single passage, "
                              "which the first half takes; drop --half")
    if args.answers:
        answers = read_answers(args.answers, [q.qid for q in questions])
    else:
        answers = None
        print(f"answers: the gold answers of {dataset.path} (no --answers given)", file=sys.stderr)
    extraction = extract(dataset, method, answers, questions, answers_path=args.answers or "")
    for note in extraction.notes:
        print(f"warning: {note}", file=sys.stderr)
    submission = extraction.submission()
    write_json_atomic(args.output, submission, indent=1)
    print(f"wrote {len(submission)} questions to {args.output} (method {method.name}, {method.rule} sentences)",
          file=sys.stderr)
    if all(q.evidences is not None for q in questions):
        report = score(dataset, submission, args.output)
        written = [q for q in report.questions if q.answered]
        print(f"evidence F1 on these {len(written)} questions: {report.mean('evidence', written):.3f}")
    return 0
