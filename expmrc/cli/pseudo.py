"""`expmrc pseudo`: label a training set with pseudo evidence, keeping its format."""

from __future__ import annotations

import argparse
import sys

from expmrc.cli.args import integer_in, number_in
from expmrc.data import subsets
from expmrc.evidence.pseudo import DEFAULT_PRESET, PRESETS, SENTENCE_RULES, pseudo_label, resolve

DESCRIPTION = """\
Give every question of a training set one pseudo evidence: the passage text most similar (token
F1) to its question followed by the gold answer (span subsets) or the gold option text (multiple
choice). --preset says how sentences are cut, which tokens count and which runs of sentences
compete; the default, release, is the rule behind the pseudo data released with the paper.
--max-sentences, --sentences and --margin override the preset's own values.

The output is the input JSON with only `evidences` added (in each `qas` entry, or one list per
question in each passage), so the training scripts read it like a dev set. The original C3 files
(a JSON list) and RACE (a folder of passage files, e.g. RACE/train) are accepted too and written
in ExpMRC's multiple-choice format. Counts, the share of multi-sentence labels and the questions
that could not be labelled (they get "") are printed.

presets:
{presets}

examples:
  expmrc pseudo --subset cmrc2018 cmrc2018_train.json --output data/cmrc2018/train-pseudo-cmrc2018.json
  expmrc pseudo --subset race RACE/train --output data/race/train-pseudo-race.json
  expmrc pseudo --subset c3 c3-m-train.json --output data/c3/train-pseudo-c3.json --preset normalized
""".format(presets="\n".join(f"  {name:<11} {preset.summary}" for name, preset in PRESETS.items()))

SHOW_AT_MOST = 100


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("train_file", metavar="TRAIN_FILE",
                        help="a training set: SQuAD-style or ExpMRC-style JSON, the original C3 JSON list, "
                             "or RACE's folder of passage files")
    parser.add_argument("--subset", required=True, choices=subsets.names(),
                        help="which subset's format and language the file has")
    parser.add_argument("--output", required=True, metavar="OUT", help="where to write the labelled file")
    parser.add_argument("--preset", choices=tuple(PRESETS), default=DEFAULT_PRESET,
                        help=f"how evidence is picked, see presets above (default {DEFAULT_PRESET})")
    parser.add_argument("--max-sentences", type=integer_in(1, 100), default=None, metavar="N",
                        help="longest run of consecutive sentences a label may be, 1 to 100 (default: the preset's)")
    parser.add_argument("--margin", type=number_in(0.0, 1.0), default=None,
                        help="F1 a run of 2+ sentences must add over the best single sentence, 0 to 1 "
                             "(--preset normalized only; default 0)")
    parser.add_argument("--sentences", choices=SENTENCE_RULES, default=None,
                        help="sentence rule (default: the preset's; release cuts after every delimiter, "
                             "simple keeps closing quotes, refined also handles abbreviations)")
    parser.add_argument("--indent", type=integer_in(0, 16), default=None, metavar="N",
                        help="indent the JSON by 0 to 16 spaces (default: compact)")


def run(args: argparse.Namespace) -> int:
    from expmrc.data.io import check_output_path, write_json_atomic
    from expmrc.data.training_sets import load_training_set

    resolve(args.preset, "span", args.max_sentences, args.margin, args.sentences)  # bad combinations before any work
    check_output_path(args.output, "file", inputs=[args.train_file])
    dataset = load_training_set(args.train_file, args.subset)
    doc, report = pseudo_label(dataset, args.preset, args.max_sentences, args.margin, args.sentences)
    write_json_atomic(args.output, doc, indent=args.indent)
    lines = report.lines()
    shown = lines[:2 + SHOW_AT_MOST]
    if len(lines) > len(shown):
        shown.append(f"  ... and {len(lines) - len(shown)} more")
    for line in shown:
        print(line, file=sys.stderr)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0
