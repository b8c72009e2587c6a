"""Span-extraction baseline (SQuAD, CMRC 2018) with the original release's flags; see expmrc/training/span_task.py."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's expmrc, even if another is installed

from expmrc.cli import run_guarded  # noqa: E402
from expmrc.training.span_task import run_span  # noqa: E402


def main() -> None:
    """Run with the flags in sys.argv, exiting non-zero on failure; `accelerate launch --tpu` calls it in each process."""
    status = run_guarded(run_span, sys.argv[1:])
    if status:
        sys.exit(status)


if __name__ == "__main__":
    main()
