"""The multiple-choice baseline (the body of baseline/run_mc_mrc.py): what it does its own way.

Its flags, how a RACE/C3 file is recognised, its window features, model and decoding; the run itself
(train, save, predict, write, score, run_info.json) is `expmrc.baseline_run.run_baseline`.
"""

from __future__ import annotations

import argparse
from functools import partial
from typing import Any

from expmrc.training.baseline import BaselineTask, cached_features, run_baseline
from expmrc.data.datasets import CHOICE_SUBSETS, Dataset, load_dataset, subset_from_version
from expmrc.data.io import read_json
from expmrc.errors import ExpmrcError
from expmrc.training.flags import build_parser

DESCRIPTION = """\
Train and run the multiple-choice baseline (RACE+, C3): BERT with one logit per option from the pooled
[CLS] and an evidence head over the passage, loss = answer loss + loss_lambda * evidence loss.
Passages longer than one window are cut into windows --doc_stride tokens apart; the options'
probabilities are combined over windows (each option keeps its best window).

example:
  python baseline/run_mc_mrc.py --model_name_or_path PLM_DIR --task_name c3 --do_train True \\
      --train_file c3-train-pseudo.json --do_predict True --predict_file expmrc-c3-dev.json \\
      --output_dir runs/c3-seed1
"""


def choice_parser() -> argparse.ArgumentParser:
    """The shared flags with multiple-choice defaults, plus the choice-only ones."""
    parser = build_parser("choice", prog="run_mc_mrc.py", description=DESCRIPTION)
    choice = parser.add_argument_group("multiple choice")
    choice.add_argument("--max_qa_length", type=int, default=128,
                        help="tokens kept of question + option together (default 128)")
    choice.add_argument("--max_evidence_length", type=int, default=128,
                        help="longest evidence in tokens when decoding (default 128)")
    choice.add_argument("--n_best_size", type=int, default=20, help="evidence candidates kept per question (default 20)")
    return parser


def load_choice_dataset(path: str, task_name: str) -> Dataset:
    """A RACE/C3-format file; when its `version` names no subset, --task_name says which it is."""
    doc = read_json(path, "dataset file")
    version = str(doc.get("version", "")) if isinstance(doc, dict) else ""
    subset = None
    if subset_from_version(version) is None and task_name in CHOICE_SUBSETS:
        subset = task_name
    dataset = load_dataset(path, subset)
    if dataset.kind != "choice":
        raise ExpmrcError(f"{path}: is a {dataset.subset} (span extraction) file; run_mc_mrc.py needs RACE or C3 data")
    return dataset


def choice_features(args: argparse.Namespace, path: str, cache_path: str, tokenizer: Any, is_training: bool,
                    accelerator: Any) -> tuple[Dataset, Any, Any]:
    """The dataset and its window features, from the feature cache when it is still valid."""
    from expmrc.features.choice import build_choice_features, features_from_payload, features_to_payload

    dataset = load_choice_dataset(path, args.task_name)
    settings = {"task": "choice", "max_seq_length": args.max_seq_length, "doc_stride": args.doc_stride,
                "max_qa_length": args.max_qa_length, "is_training": is_training}
    features, report = cached_features(
        path, cache_path, settings, tokenizer, accelerator, features_to_payload, features_from_payload,
        lambda: build_choice_features(dataset.questions, tokenizer, args.max_seq_length, args.max_qa_length,
                                      args.doc_stride, is_training, accelerator.is_local_main_process))
    return dataset, features, report


def run_choice(argv: list[str] | None = None) -> int:
    """Parse the flags and run the multiple-choice baseline; returns the exit status."""
    from expmrc.data.submissions import write_predictions
    from expmrc.decoding.choice import decode_choice_predictions
    from expmrc.features.choice import ChoiceDataset, collate_choice
    from expmrc.models.choice import ChoiceModel

    def decode(questions: Any, features: Any, outputs: Any, args: argparse.Namespace) -> tuple[dict, dict]:
        return decode_choice_predictions(questions, features, outputs, args.max_evidence_length, args.n_best_size)

    task = BaselineTask(
        kind="choice",
        parser=choice_parser,
        positive_flags=("max_qa_length", "max_evidence_length", "n_best_size"),
        features=choice_features,
        dataset=ChoiceDataset,
        collate=lambda tokenizer: partial(collate_choice, pad_token_id=tokenizer.pad_token_id),
        model=ChoiceModel,
        pooling=True,
        heads="option",
        decode=decode,
        write_outputs=write_predictions,
    )
    return run_baseline(task, argv)
