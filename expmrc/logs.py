"""Logging set-up of the commands that load models: expmrc's own lines as plain messages on stderr, and
transformers' loading tables and progress bars silenced (expmrc's one-line loading report replaces them)."""

from __future__ import annotations

import logging
import sys


def quiet_libraries() -> None:
    """Silence transformers' own loading reports and progress bars (imports transformers: model commands only)."""
    from transformers.utils import logging as transformers_logging

    transformers_logging.set_verbosity_error()
    transformers_logging.disable_progress_bar()


def setup_logging(is_main_process: bool = True) -> None:
    """Log expmrc's lines as plain messages on stderr, from the main process only (others log warnings), with
    the libraries quiet."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    root = logging.getLogger("expmrc")
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO if is_main_process else logging.WARNING)
    root.propagate = False
    quiet_libraries()
