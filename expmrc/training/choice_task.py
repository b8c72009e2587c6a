"""The multiple-choice baseline (the body of baseline/run_mc_mrc.py): its flags, data and model.

The run itself (check, train, save, predict, decode, write, score, run_info.json) is
`expmrc.training.baseline.run_baseline`.
"""

from __future__ import annotations

import argparse

from expmrc.tasks import TASKS
from expmrc.training.baseline import BaselineTask, run_baseline
from expmrc.training.flags import build_parser, str2bool

DESCRIPTION = """\
Train and run the multiple-choice baseline (RACE+, C3): any encoder with one logit per option from a
pooled first token (the checkpoint's own pooler where it has one) and an evidence head over the
passage, loss = answer loss + loss_lambda * evidence loss. As in the original, question and option are
joined and their last --max_query_length tokens kept, and the passage is cut from its end to fit one
window (--sliding_windows True slides over long passages instead).

examples:
  python baseline/run_mc_mrc.py --model_name_or_path hfl/chinese-macbert-base --task_name c3 --do_train True \\
      --train_file c3-train-pseudo.json --do_predict True --predict_file c3 --output_dir runs/c3-seed1
"""


def choice_parser() -> argparse.ArgumentParser:
    """The shared flags with multiple-choice defaults, plus the choice-only ones."""
    parser = build_parser("choice", prog="run_mc_mrc.py", description=DESCRIPTION)
    choice = parser.add_argument_group("multiple choice")
    choice.add_argument("--sliding_windows", type=str2bool, nargs="?", const=True, default=False, metavar="True|False",
                        help="cut a long passage into windows --doc_stride tokens apart, each option keeping its most "
                             "probable window (default False: the original's one window, the passage cut from its end)")
    # an earlier name: it now means what the original's --max_query_length does (the last tokens of question+option)
    choice.add_argument("--max_qa_length", type=int, dest="max_query_length", default=argparse.SUPPRESS,
                        help=argparse.SUPPRESS)
    return parser


CHOICE_TASK = BaselineTask(spec=TASKS["choice"], parser=choice_parser)


def run_choice(argv: list[str] | None = None) -> int:
    """Parse the flags and run the multiple-choice baseline; returns the exit status."""
    return run_baseline(CHOICE_TASK, argv)
