"""The multiple-choice baseline (the body of baseline/run_mc_mrc.py): its flags, data and model.

The run itself (check, train, save, predict, decode, write, score, run_info.json) is
`expmrc.training.baseline.run_baseline`.
"""

from __future__ import annotations

import argparse
from typing import Any

from expmrc.data.datasets import CHOICE_SUBSETS, Dataset, load_dataset, resolve_dataset_path, subset_from_version
from expmrc.data.io import read_json
from expmrc.errors import ExpmrcError
from expmrc.features.choice import build_choice_features
from expmrc.models.choice import ChoiceModel
from expmrc.training.baseline import BaselineTask, run_baseline
from expmrc.training.flags import build_parser

DESCRIPTION = """\
Train and run the multiple-choice baseline (RACE+, C3): any encoder with one logit per option from a
first-token pooling head and an evidence head over the passage, loss = answer loss + loss_lambda *
evidence loss. Passages longer than one window are cut into windows --doc_stride tokens apart; each
option keeps its most probable window.

examples:
  python baseline/run_mc_mrc.py --model_name_or_path hfl/chinese-macbert-base --task_name c3 --do_train True \\
      --train_file c3-train-pseudo.json --do_predict True --predict_file c3 --output_dir runs/c3-seed1
"""


def choice_parser() -> argparse.ArgumentParser:
    """The shared flags with multiple-choice defaults, plus the choice-only ones."""
    parser = build_parser("choice", prog="run_mc_mrc.py", description=DESCRIPTION)
    choice = parser.add_argument_group("multiple choice")
    choice.add_argument("--max_qa_length", type=int, default=128,
                        help="tokens kept of question and option together (default 128)")
    choice.add_argument("--max_evidence_length", type=int, default=128,
                        help="longest evidence in tokens when decoding (default 128)")
    choice.add_argument("--n_best_size", type=int, default=20, help="evidence candidates kept per question (default 20)")
    return parser


def load_choice_dataset(path: str, task_name: str) -> Dataset:
    """A RACE/C3-format file (or subset name); when its `version` names no subset, --task_name says which."""
    path = resolve_dataset_path(path)
    doc = read_json(path, "dataset file")
    version = str(doc.get("version", "")) if isinstance(doc, dict) else ""
    subset = task_name if subset_from_version(version) is None and task_name in CHOICE_SUBSETS else None
    dataset = load_dataset(path, subset)
    if dataset.kind != "choice":
        raise ExpmrcError(f"{path}: is a {dataset.subset} (span extraction) file; run_mc_mrc.py needs RACE or C3 data")
    return dataset


def choice_features(questions: Any, tokenizer: Any, args: argparse.Namespace, is_training: bool, token_types: bool,
                    progress: bool) -> Any:
    """The windows of multiple-choice questions under the flags' lengths."""
    return build_choice_features(questions, tokenizer, args.max_seq_length, args.max_qa_length, args.doc_stride,
                                 is_training, token_types, progress, max_query_length=args.max_query_length)


CHOICE_TASK = BaselineTask(
    kind="choice",
    parser=choice_parser,
    positive_flags=("max_qa_length", "max_evidence_length", "n_best_size"),
    load=load_choice_dataset,
    settings=lambda args: {"max_seq_length": args.max_seq_length, "doc_stride": args.doc_stride,
                           "max_qa_length": args.max_qa_length, "max_query_length": args.max_query_length},
    features=choice_features,
    model_class=ChoiceModel,
)


def run_choice(argv: list[str] | None = None) -> int:
    """Parse the flags and run the multiple-choice baseline; returns the exit status."""
    return run_baseline(CHOICE_TASK, argv)
