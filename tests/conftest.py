"""Shared fixtures: the scorer's NLTK data, and single-threaded torch so timings on a shared CPU stay sane."""

from __future__ import annotations

import pytest
import torch

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def scorer_ready() -> None:
    """Skip when NLTK's Punkt data (needed by the scorer's tokenizer) is not installed."""
    from expmrc.errors import ExpmrcError
    from expmrc.metric import tokenize

    try:
        tokenize("ready")
    except ExpmrcError as exc:
        pytest.skip(str(exc))
