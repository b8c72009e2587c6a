"""The span-extraction baseline (the body of baseline/run_se_mrc.py): what it does its own way.

Its flags, how a file's subset is found, its features, model and decoding; the run itself (train,
save, predict, write, score, run_info.json) is `expmrc.baseline_run.run_baseline`.
"""

from __future__ import annotations

import argparse
from typing import Any

from expmrc.training.baseline import BaselineTask, cached_features, run_baseline
from expmrc.data.datasets import SPAN_SUBSETS, Dataset, load_dataset, subset_from_version
from expmrc.data.io import read_json
from expmrc.errors import ExpmrcError
from expmrc.training.flags import build_parser

DESCRIPTION = """\
Train and run the span-extraction baseline (SQuAD, CMRC 2018): BERT with an answer head and an
evidence head, loss = answer loss + loss_lambda * evidence loss.

example:
  python baseline/run_se_mrc.py --model_name_or_path PLM_DIR --do_train True --train_file train.json \\
      --do_predict True --predict_file expmrc-squad-dev.json --output_dir runs/squad-seed1
"""


def span_parser() -> argparse.ArgumentParser:
    """The shared flags with span-extraction defaults, plus the span-only ones."""
    parser = build_parser("span", prog="run_se_mrc.py", description=DESCRIPTION)
    span = parser.add_argument_group("span extraction")
    span.add_argument("--max_query_length", type=int, default=128, help="question tokens kept (default 128)")
    span.add_argument("--max_evidence_length", type=int, default=128,
                      help="longest evidence in tokens when decoding (default 128)")
    span.add_argument("--n_best_size", type=int, default=20, help="candidates kept per question (default 20)")
    return parser


def span_subset(path: str, task_name: str) -> str:
    """The subset of a span file: from its `version`, else --task_name (SQuAD's own files say only "1.1")."""
    doc = read_json(path, "dataset file")
    version = str(doc.get("version", "")) if isinstance(doc, dict) else ""
    subset = subset_from_version(version) or (task_name if task_name in SPAN_SUBSETS else None)
    if subset is None:
        raise ExpmrcError(f"{path}: version {version!r} names no subset and --task_name {task_name!r} is not "
                          f"a span-extraction subset ({', '.join(SPAN_SUBSETS)})")
    if subset not in SPAN_SUBSETS:
        raise ExpmrcError(f"{path}: is a {subset} (multiple-choice) file; run_se_mrc.py needs span extraction data")
    return subset


def span_features(args: argparse.Namespace, path: str, cache_path: str, tokenizer: Any, is_training: bool,
                  accelerator: Any) -> tuple[Dataset, Any, Any]:
    """The dataset and its windows, from the feature cache when it is still valid."""
    from expmrc.features.span import build_span_features, features_from_payload, features_to_payload

    dataset = load_dataset(path, span_subset(path, args.task_name))
    settings = {"task": "span", "max_seq_length": args.max_seq_length, "doc_stride": args.doc_stride,
                "max_query_length": args.max_query_length, "is_training": is_training}
    features, report = cached_features(
        path, cache_path, settings, tokenizer, accelerator, features_to_payload, features_from_payload,
        lambda: build_span_features(dataset.questions, tokenizer, args.max_seq_length, args.doc_stride,
                                    args.max_query_length, is_training, accelerator.is_local_main_process))
    return dataset, features, report


def run_span(argv: list[str] | None = None) -> int:
    """Parse the flags and run the span-extraction baseline; returns the exit status."""
    from expmrc.data.submissions import write_predictions
    from expmrc.decoding.span import decode_span_predictions
    from expmrc.features.span import SpanDataset, collate_span
    from expmrc.models.span import SpanModel

    def decode(questions: Any, features: Any, outputs: Any, args: argparse.Namespace) -> tuple[dict, dict]:
        return decode_span_predictions(questions, features, outputs, args.n_best_size, args.max_answer_length,
                                       args.max_evidence_length)

    task = BaselineTask(
        kind="span",
        parser=span_parser,
        positive_flags=("max_query_length", "max_evidence_length", "n_best_size"),
        features=span_features,
        dataset=SpanDataset,
        collate=lambda tokenizer: collate_span,  # pads with zeros under a zero attention mask, whatever the vocabulary
        model=SpanModel,
        pooling=False,
        heads="answer",
        decode=decode,
        write_outputs=write_predictions,
    )
    return run_baseline(task, argv)
