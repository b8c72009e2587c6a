"""Multiple-choice baseline (RACE+, C3) with the original release's flags; see expmrc/training/choice_task.py."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's expmrc, even if another is installed

from expmrc.cli import run_guarded  # noqa: E402


def run(argv: list[str]) -> int:
    """The baseline, imported here so that a core install (no torch) gets the missing extra's one line."""
    from expmrc.training.choice_task import run_choice

    return run_choice(argv)


def main() -> None:
    """Run with the flags in sys.argv, exiting non-zero on failure; `accelerate launch --tpu` calls it in each process."""
    status = run_guarded(run, sys.argv[1:])
    if status:
        sys.exit(status)


if __name__ == "__main__":
    main()
