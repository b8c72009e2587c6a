"""The span-extraction baseline (the body of baseline/run_se_mrc.py): its flags, data and model.

The run itself (check, train, save, predict, decode, write, score, run_info.json) is
`expmrc.training.baseline.run_baseline`.
"""

from __future__ import annotations

import argparse

from expmrc.data.datasets import SPAN_SUBSETS, Dataset, load_dataset, resolve_dataset_path, subset_from_version
from expmrc.data.io import read_json
from expmrc.errors import ExpmrcError
from expmrc.training.baseline import BaselineTask, run_baseline
from expmrc.training.flags import build_parser
from expmrc.training.tasks import TASKS

DESCRIPTION = """\
Train and run the span-extraction baseline (SQuAD, CMRC 2018): any encoder with an answer head and an
evidence head, loss = answer loss + loss_lambda * evidence loss.

examples:
  python baseline/run_se_mrc.py --model_name_or_path roberta-base --do_train True --train_file train.json \\
      --do_predict True --predict_file squad --output_dir runs/squad-seed1
  python baseline/run_se_mrc.py --bert_config_file BERT/bert_config.json --vocab_file BERT/vocab.txt \\
      --init_checkpoint BERT/bert_model.ckpt --do_train True --train_file train.json --output_dir runs/x
"""


def span_parser() -> argparse.ArgumentParser:
    """The shared flags with span-extraction defaults."""
    return build_parser("span", prog="run_se_mrc.py", description=DESCRIPTION)


def load_span_dataset(path: str, task_name: str) -> Dataset:
    """A SQuAD-style file (or subset name): its subset from its `version`, else --task_name (SQuAD's own
    files say only "1.1")."""
    path = resolve_dataset_path(path)
    doc = read_json(path, "dataset file")
    version = str(doc.get("version", "")) if isinstance(doc, dict) else ""
    subset = subset_from_version(version) or (task_name if task_name in SPAN_SUBSETS else None)
    if subset is None:
        raise ExpmrcError(f"{path}: version {version!r} names no subset and --task_name {task_name!r} is not "
                          f"a span-extraction subset ({', '.join(SPAN_SUBSETS)})")
    if subset not in SPAN_SUBSETS:
        raise ExpmrcError(f"{path}: is a {subset} (multiple-choice) file; run_se_mrc.py needs span extraction data")
    return load_dataset(path, subset)


SPAN_TASK = BaselineTask(spec=TASKS["span"], parser=span_parser, load=load_span_dataset)


def run_span(argv: list[str] | None = None) -> int:
    """Parse the flags and run the span-extraction baseline; returns the exit status."""
    return run_baseline(SPAN_TASK, argv)
