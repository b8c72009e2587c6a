"""`expmrc export`: ExpMRC datasets as a Hugging Face dataset folder (Parquet or JSON Lines) with its card."""

from __future__ import annotations

import argparse
import sys

from expmrc.data.datasets import SUBSETS

DESCRIPTION = """\
Write ExpMRC datasets (subset names, resolved in $EXPMRC_DATA then data/, or dataset files) as a
Hugging Face dataset folder: one row per question (id, subset, language, task, context, question,
options, answers, evidences, and what it takes to rebuild the original file), one config per subset,
and a dataset card (README.md) with the YAML `configs:` block, the column types, the licence
(CC BY-SA 4.0) and the citation of the ExpMRC paper. Needs the `export` extra (datasets, pyarrow).

    datasets.load_dataset("DIR", "squad", split="dev")  reads it back;
    expmrc.data.rows.document(rows)                      rebuilds the ExpMRC JSON.

Each subset is read back once written and rebuilt into ExpMRC JSON: the command says whether that
gives the source document exactly (key order aside), and names the first difference where not (a key
the rows do not carry, an article given as a list of lines, a number where text is expected).
The folder appears in one rename; one that exists and is not empty is refused without --overwrite.

examples:
  expmrc export squad cmrc2018 race c3 --output hf/expmrc
  expmrc export race --format jsonl --output hf/race
  expmrc export data/squad/train-pseudo-squad.json --split train --output hf/squad-train
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("datasets", nargs="+", metavar="SUBSET|DATASET",
                        help=f"{', '.join(SUBSETS)} (the dev set) or an ExpMRC dataset file; one per subset")
    parser.add_argument("--format", choices=("parquet", "jsonl"), default="parquet",
                        help="file format of the rows (default %(default)s)")
    parser.add_argument("--output", required=True, metavar="DIR", help="the dataset folder to write")
    parser.add_argument("--split", default="dev", type=split_name,
                        help="the split the rows form (default %(default)s; e.g. train for a training file)")
    parser.add_argument("--subset", choices=SUBSETS, help="the subset of every file given, when its `version` does not say")
    parser.add_argument("--overwrite", action="store_true", help="replace a DIR that exists")


def split_name(text: str) -> str:
    """A split name as the Hub accepts it: letters, digits and underscores."""
    if not text or not all(c.isalnum() or c == "_" for c in text) or not text.isascii():
        raise argparse.ArgumentTypeError(f"expected letters, digits and underscores, got {text!r}")
    return text


def run(args: argparse.Namespace) -> int:
    from expmrc.data.datasets import load_dataset
    from expmrc.data.export import export, libraries

    libraries()  # the missing extra is said before any dataset is read
    loaded = [load_dataset(name, args.subset) for name in args.datasets]
    for item, dataset in zip(export(loaded, args.format, args.output, args.split, args.overwrite), loaded):
        print(f"{item.subset}: {item.rows} questions -> {args.output}/{item.file}"
              + (" (round trip exact)" if item.difference is None else ""), file=sys.stderr)
        if item.difference is not None:
            print(f"warning: {dataset.path}: rebuilding it from the export differs at {item.difference}",
                  file=sys.stderr)
    print(f"wrote {args.output} (dataset card: {args.output}/README.md)", file=sys.stderr)
    return 0
