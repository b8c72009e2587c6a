"""The metric registry, by name: `--help`, reports, the signature and the tests enumerate them from here.

A metric scores one answered question at a time (`question`: the dataset's question and the
submission's `Prediction` -> named values, None where a value is not defined for that question) and
then the whole dataset (`aggregate`: the per-question values in dataset order, None for a question the
submission left out -> the named figures). `expmrc` is the leaderboard's own metric; the others add
figures beside it and never change it. A metric that cannot score a prediction (say, an offset that
does not point at its text) raises `BadPrediction`; the scorer names the file and the question.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from collections.abc import Callable, Sequence

from expmrc.data import subsets
from expmrc.errors import ExpmrcError
from expmrc.registry import Registry

Values = dict[str, Any]


class BadPrediction(ValueError):
    """A prediction a metric cannot score; the message says what is wrong, the scorer adds file and id."""


@dataclass(frozen=True)
class Metric:
    """A named metric: what it applies to, what it reports, and how it scores."""

    name: str
    summary: str  # one line, for --help and reports
    tasks: tuple[str, ...]  # the task kinds it applies to: "span", "choice"
    keys: tuple[str, ...]  # the figures `aggregate` returns, in the order reports show them
    question: Callable[[Any, Any], Values]  # (question, prediction) -> values
    aggregate: Callable[[Sequence[Values | None]], Values]  # values in dataset order -> figures
    needs: str = ""  # what the dataset must hold for the metric ("answers", "evidences"), checked by `select`
    notes: Callable[[Sequence[Values | None]], list[str]] | None = None  # same input -> lines on what was left out
    # same input -> each figure as per-question (numerators, denominators), figure = 100 × Σ num / Σ den, so
    # expmrc.scoring.stats can resample it; a metric without it gets no intervals or tests
    parts: Callable[[Sequence[Values | None]], dict[str, tuple[list[float], list[float]]]] | None = None
    signature: Callable[[], str] | None = None  # what its figures depend on beyond its name, for the signature


METRICS: Registry[Metric] = Registry("metric")


def register(metric: Metric) -> Metric:
    """Add a metric to the registry (names are unique)."""
    return METRICS.add(metric.name, metric)


def percent_mean(keys: Sequence[str], out: Sequence[str] | None = None) -> Callable[[Sequence[Values | None]], Values]:
    """An aggregate: 100 × the sum of each key over the answered questions (dataset order) / all questions.

    A question left out of the submission counts 0, as in the official scripts; `out` renames the keys.
    """
    names = tuple(out or keys)

    def aggregate(values: Sequence[Values | None]) -> Values:
        totals = {key: 0 for key in keys}
        for value in values:
            if value is not None:
                for key in keys:
                    totals[key] += value[key]
        return {name: 100.0 * totals[key] / len(values) if values else 0.0 for key, name in zip(keys, names)}

    return aggregate


def percent_parts(keys: Sequence[str], out: Sequence[str] | None = None
                  ) -> Callable[[Sequence[Values | None]], dict[str, tuple[list[float], list[float]]]]:
    """`percent_mean`'s figures as per-question ratios: each key's value (0 when left out) over 1."""
    names = tuple(out or keys)

    def parts(values: Sequence[Values | None]) -> dict[str, tuple[list[float], list[float]]]:
        ones = [1.0] * len(values)
        return {name: ([0.0 if v is None else float(v[key]) for v in values], ones) for key, name in zip(keys, names)}

    return parts


def available(task: str) -> list[Metric]:
    """The registered metrics for a task kind, in registration order."""
    return [m for m in METRICS.values() if task in m.tasks]


def select(names: str | None, dataset: Any) -> list[Metric]:
    """The extra metrics to compute on `dataset`: the ones named (comma-separated), else its subset's defaults
    (`expmrc.data.subsets`). `expmrc` itself is always computed by the scorer and is not returned here.
    """
    if names is None:
        defaults = subsets.subset(dataset.subset).metrics
        return [m for name, m in METRICS.items() if name != "expmrc" and name in defaults
                and dataset.kind in m.tasks and _has(dataset, m.needs)]
    chosen = []
    for name in (n.strip() for n in names.split(",") if n.strip()):
        if name not in METRICS or name == "expmrc":  # the leaderboard's metric is always computed, never chosen
            raise METRICS.unknown(name, choices=[n for n in METRICS if n != "expmrc"])
        metric = METRICS[name]
        if dataset.kind not in metric.tasks:
            raise ExpmrcError(f"{dataset.path}: metric {name} applies to {' and '.join(metric.tasks)} data, "
                              f"this is {dataset.subset} ({dataset.kind})")
        if not _has(dataset, metric.needs):
            raise ExpmrcError(f"{dataset.path}: metric {name} needs gold {metric.needs}, which this dataset lacks")
        chosen.append(metric)
    return chosen


def _has(dataset: Any, needs: str) -> bool:
    if needs == "evidences":
        return any(q.evidences is not None for q in dataset.questions)
    if needs == "answers":
        return all(getattr(q, "answers", None) or getattr(q, "answer", None) for q in dataset.questions)
    return True
