"""The span-extraction baseline (the body of baseline/run_se_mrc.py): its flags, data and model.

The run itself (check, train, save, predict, decode, write, score, run_info.json) is
`expmrc.training.baseline.run_baseline`.
"""

from __future__ import annotations

import argparse

from expmrc.tasks import TASKS
from expmrc.training.baseline import BaselineTask, run_baseline
from expmrc.training.flags import build_parser

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


SPAN_TASK = BaselineTask(spec=TASKS["span"], parser=span_parser)


def run_span(argv: list[str] | None = None) -> int:
    """Parse the flags and run the span-extraction baseline; returns the exit status."""
    return run_baseline(SPAN_TASK, argv)
