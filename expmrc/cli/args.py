"""Flag types that refuse, while parsing, numbers a command cannot use (argparse prints them in one line)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def number_in(low: float, high: float) -> Callable[[str], float]:
    """A float flag type accepting only finite values in [low, high] (so never nan or inf)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not math.isfinite(value) or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be a finite number from {low:g} to {high:g}, got {text!r}")
        return value
    return parse


def integer_in(low: int, high: int) -> Callable[[str], int]:
    """An int flag type accepting only values in [low, high]."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}, got {value}")
        return value
    return parse


def add_resampling_arguments(parser: argparse.ArgumentParser, resamples_help: str) -> None:
    """--ci-resamples, --seed and --confidence, shared by `evaluate --ci` and `compare`."""
    from expmrc.scoring.stats import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED

    parser.add_argument("--ci-resamples", type=integer_in(1, 1_000_000), default=DEFAULT_RESAMPLES, metavar="B",
                        help=resamples_help + " (default %(default)s, as sacrebleu)")
    parser.add_argument("--seed", type=integer_in(0, 2**63 - 1), default=DEFAULT_SEED,
                        help="seed of the resampling, so the same command gives the same figures "
                             "(default %(default)s, as sacrebleu)")
    parser.add_argument("--confidence", type=open_fraction, default=DEFAULT_CONFIDENCE, metavar="C",
                        help="confidence level of the intervals, between 0 and 1 (default %(default)s)")


def open_fraction(text: str) -> float:
    """A float flag strictly between 0 and 1."""
    value = number_in(0.0, 1.0)(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be a number strictly between 0 and 1, got {text!r}")
    return value
