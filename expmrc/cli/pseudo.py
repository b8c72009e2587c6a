"""`expmrc pseudo`: label a training set with pseudo evidence, keeping its format."""

from __future__ import annotations

import argparse
import sys

from expmrc.cli.args import integer_in, number_in

DESCRIPTION = """\
Give every question of a training set one pseudo evidence: the passage text most similar (the
scorer's token F1) to question + gold answer (span subsets) or question + gold option text
(multiple choice). Candidates are runs of 1..--max-sentences consecutive sentences; a longer run
wins only when it beats the best single sentence by more than --margin. The defaults give about
7% multi-sentence labels, as in the pseudo data released with the paper.

The output is the input JSON with only `evidences` added (in each `qas` entry, or one list per
question in each passage), so the training scripts read it like a dev set. The original C3 files
(a JSON list) and RACE (a folder of passage files, e.g. RACE/train) are accepted too and written
in ExpMRC's multiple-choice format. Counts and the questions that could not be labelled (they get
"") are printed.

examples:
  expmrc pseudo --subset cmrc2018 cmrc2018_train.json --output data/cmrc2018/train-pseudo-cmrc2018.json
  expmrc pseudo --subset race RACE/train --output data/race/train-pseudo-race.json
  expmrc pseudo --subset c3 c3-m-train.json --output data/c3/train-pseudo-c3.json
"""

SHOW_AT_MOST = 100


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("train_file", metavar="TRAIN_FILE",
                        help="a training set: SQuAD-style or ExpMRC-style JSON, the original C3 JSON list, "
                             "or RACE's folder of passage files")
    parser.add_argument("--subset", required=True, choices=("squad", "cmrc2018", "race", "c3"),
                        help="which subset's format and language the file has")
    parser.add_argument("--output", required=True, metavar="OUT", help="where to write the labelled file")
    parser.add_argument("--max-sentences", type=integer_in(1, 100), default=3, metavar="N",
                        help="longest run of consecutive sentences a label may be, 1 to 100 (default 3)")
    parser.add_argument("--margin", type=number_in(0.0, 1.0), default=0.0,
                        help="F1 a run of 2+ sentences must add over the best single sentence, 0 to 1 (default 0)")
    parser.add_argument("--sentences", choices=("simple", "refined"), default="simple",
                        help="sentence rule (default simple, the paper's)")
    parser.add_argument("--indent", type=integer_in(0, 16), default=None, metavar="N",
                        help="indent the JSON by 0 to 16 spaces (default: compact)")


def run(args: argparse.Namespace) -> int:
    from expmrc.data.io import check_output_path, write_json_atomic
    from expmrc.data.training_sets import load_training_set
    from expmrc.evidence.pseudo import pseudo_label

    check_output_path(args.output, "file", inputs=[args.train_file])
    dataset = load_training_set(args.train_file, args.subset)
    doc, report = pseudo_label(dataset, args.max_sentences, args.margin, args.sentences)
    write_json_atomic(args.output, doc, indent=args.indent)
    lines = report.lines()
    shown = lines[:2 + SHOW_AT_MOST]
    if len(lines) > len(shown):
        shown.append(f"  ... and {len(lines) - len(shown)} more")
    for line in shown:
        print(line, file=sys.stderr)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0
