"""`expmrc human`: estimated human performance on a dataset by cross-validation over its references."""

from __future__ import annotations

import argparse
import json

from expmrc.data import subsets

DESCRIPTION = """\
Estimate human performance by cross-validation over the references: each reference in turn is
the prediction and the others the ground truth (F1 = max over the others), averaged over the
rotations and then over questions (questions with a single reference are left out). Span subsets:
answer and evidence this way, overall = their product per question. Multiple choice: evidence only
(the published answer accuracy came from a separate annotation study), so answer and overall are null.
CMRC 2018 adds its own protocol: the same rotation scored with the official CMRC 2018 EM and F1.
A dataset without evidences (the original CMRC 2018 development set, with --subset cmrc2018) gets
the answer figures only.

examples:
  expmrc human squad
  expmrc human data/c3/expmrc-c3-dev.json --json
  expmrc human cmrc2018_dev.json --subset cmrc2018
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dataset", help="dataset file, or a subset name resolved in $EXPMRC_DATA or data/")
    parser.add_argument("--subset", choices=subsets.names(),
                        help="the subset, when the dataset's `version` does not say")
    parser.add_argument("--json", action="store_true", help="print one JSON object: ANS_F1, EVI_F1, ALL_F1, CMRC2018_EM, CMRC2018_F1, TOTAL")


def run(args: argparse.Namespace) -> int:
    from expmrc.data.datasets import load_dataset
    from expmrc.scoring.human import human_performance

    dataset = load_dataset(args.dataset, args.subset)
    result = human_performance(dataset).as_json()
    if args.json:
        print(json.dumps(result))
        return 0
    fmt = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
    print(f"{dataset.subset} ({dataset.path}), {result['TOTAL']} questions, estimated human performance:")
    print(f"  answer F1   {fmt(result['ANS_F1'])}")
    print(f"  evidence F1 {fmt(result['EVI_F1'])}")
    print(f"  overall     {fmt(result['ALL_F1'])}")
    if "cmrc2018" in subsets.subset(dataset.subset).metrics:
        print(f"  CMRC 2018 EM {fmt(result['CMRC2018_EM'])}, F1 {fmt(result['CMRC2018_F1'])} (its official metrics)")
    return 0
