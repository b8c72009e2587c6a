"""`expmrc lm-eval-path`: where the lm-evaluation-harness task files are, for --include_path."""

from __future__ import annotations

import argparse

DESCRIPTION = """\
Print the folder holding the lm-evaluation-harness task files shipped with expmrc: one task per
subset (expmrc_squad, expmrc_cmrc2018, expmrc_race, expmrc_c3) and the group expmrc. They read the dev
sets from $EXPMRC_DATA (else data/), prompt with the templates `expmrc llm` uses and score every reply
with the leaderboard's scorer (docs/llm.md, "From lm-evaluation-harness").

example:
  lm-eval run --model hf --model_args pretrained=Qwen/Qwen2.5-0.5B-Instruct --apply_chat_template \\
    --include_path "$(expmrc lm-eval-path)" --tasks expmrc --log_samples --output_path results/
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No arguments: the command only prints the folder."""


def run(args: argparse.Namespace) -> int:
    from expmrc.llm.harness import tasks_path

    print(tasks_path())
    return 0
