"""Span-extraction baseline (SQuAD, CMRC 2018) with the original release's flags; see expmrc/training/span_task.py."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's expmrc, even if another is installed

from expmrc.cli import run_guarded  # noqa: E402


def run(argv: list[str]) -> int:
    """The baseline, imported here so that a core install (no torch) gets the missing extra's one line."""
    from expmrc.training.span_task import run_span

    return run_span(argv)


def main() -> None:
    """Run with the flags in sys.argv, exiting non-zero on failure; `accelerate launch --tpu` calls it in each process."""
    status = run_guarded(run, sys.argv[1:])
    if status:
        sys.exit(status)


if __name__ == "__main__":
    main()
