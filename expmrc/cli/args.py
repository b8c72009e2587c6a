"""Flag types that refuse, while parsing, numbers a command cannot use (argparse prints them in one line), and
the lists of registered choices that --help pages print."""

from __future__ import annotations

import argparse
import math
import textwrap
from collections.abc import Callable
from typing import Any


def listing(rows: list[tuple[str, str]], width: int = 100) -> str:
    """Help lines for named choices: each name, then its summary two spaces after the longest name, wrapped."""
    column = 2 + max(len(name) for name, _ in rows) + 2
    return "\n".join(textwrap.fill(summary, width, initial_indent=f"  {name:<{column - 2}}",
                                    subsequent_indent=" " * column) for name, summary in rows)


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


def given(text: str) -> str:
    """The type of every `expmrc` flag and argument without a type of its own: any text but an empty one, which is
    mostly an unset shell variable (`--answers "$PREDS"`) and would otherwise fall back to a default unnoticed."""
    if not text:
        raise argparse.ArgumentTypeError("is empty (an unset shell variable?); give a value")
    return text


def add_flag(parser: argparse.ArgumentParser, flag: str, **options: Any) -> argparse.Action:
    """Add `--kebab-case` flag and, hidden from --help, its earlier `--snake_case` spelling as an alias."""
    action = parser.add_argument(flag, **options)
    old = "--" + flag[2:].replace("-", "_")
    if old != flag:
        alias = {k: v for k, v in options.items() if k not in ("help", "default", "required")}
        parser.add_argument(old, **alias, dest=action.dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return action


def add_resampling_arguments(parser: argparse.ArgumentParser, resamples_help: str) -> None:
    """--ci-resamples, --seed and --confidence, shared by `evaluate --ci` and `compare`."""
    from expmrc.scoring.stats import CONFIDENCE_RANGE, DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED

    parser.add_argument("--ci-resamples", type=integer_in(1, 1_000_000), default=DEFAULT_RESAMPLES, metavar="B",
                        help=resamples_help + ", up to 1000000 (about a minute on a dev set; default %(default)s, "
                                              "as sacrebleu)")
    parser.add_argument("--seed", type=integer_in(0, 2**63 - 1), default=DEFAULT_SEED,
                        help="seed of the resampling, so the same command gives the same figures "
                             "(default %(default)s, as sacrebleu)")
    low, high = CONFIDENCE_RANGE
    parser.add_argument("--confidence", type=number_in(low, high), default=DEFAULT_CONFIDENCE, metavar="C",
                        help=f"confidence level of the intervals, from {low:g} to {high:g} (default %(default)s)")
