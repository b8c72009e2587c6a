"""Span-extraction baseline (SQuAD, CMRC 2018) with the original release's flags; see expmrc/span_run.py."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's expmrc, even if another is installed

from expmrc.cli import run_guarded  # noqa: E402
from expmrc.span_run import run_span  # noqa: E402

if __name__ == "__main__":
    sys.exit(run_guarded(run_span, sys.argv[1:]))
