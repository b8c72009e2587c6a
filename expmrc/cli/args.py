"""Flag types that refuse, while parsing, numbers a command cannot use (argparse prints them in one line)."""

from __future__ import annotations

import argparse
import math
from typing import Callable


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
