"""Confidence intervals and paired significance tests for every score, over the questions of a dev set.

Every figure the toolkit reports is a ratio of two sums over questions, 100 × Σ num / Σ den: the
leaderboard's means have den = 1 for every question (a question left out of the submission counts 0),
and LOCA-like shares count only some questions. A resample of the dev set is a count per question, so
all resampled figures come from one matrix product `counts @ num / counts @ den`.

- Interval (`intervals`): bootstrap over questions, B resamples of n question indices drawn with
  replacement from a seeded numpy Generator; the interval is the order statistics sacrebleu's
  `estimate_ci` takes (for 95% and B = 1000, the 26th and the 975th of the sorted resampled figures).
  The draws are made a chunk of rows at a time (`CHUNK_DRAWS` indices), the same draws as one B × n
  matrix, so memory stays bounded at any B.
- Paired bootstrap (Koehn 2004, as sacrebleu): the same resamples for both systems; the statistic is
  |Δ_b| minus the mean of |Δ_b| (centred), p = (#{centred ≥ |Δ|} + 1) / (B + 1).
- Approximate randomization (Riezler & Maxwell 2005, as sacrebleu): each trial swaps the two systems'
  values on a random half of the questions; p = (#{|Δ_t| ≥ |Δ|} + 1) / (T + 1).
Unlike sacrebleu, which counts only statistics strictly above |Δ|, a statistic equal to |Δ| (within
`TIE`) counts, so two identical systems give p = 1. A difference is marked significant when the
interval of Δ shown beside it excludes 0 (`Difference.significant`), whichever test gives p, so the mark
never contradicts the interval. docs/scoring.md explains and works an example.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from expmrc.errors import ExpmrcError
from expmrc.scoring.scorer import Report, no_match_problem

DEFAULT_SEED = 12345  # sacrebleu's default seed
DEFAULT_RESAMPLES = 1000  # sacrebleu's default for the paired bootstrap and for intervals
DEFAULT_TRIALS = 10000  # sacrebleu's default for approximate randomization
DEFAULT_CONFIDENCE = 0.95
CONFIDENCE_RANGE = (0.5, 0.999)  # below 0.5 an interval says little; above 0.999 B = 1000 has no order statistic left
ALPHA = 0.05  # `expmrc collect`: a setting is "not significantly worse" than the best when p >= ALPHA
CHUNK_DRAWS = 1 << 20  # random draws (question indices or swaps) held at once: about 8 MB per array
PROGRESS_DRAWS = 50_000_000  # a resampling with more draws than this shows a progress bar (several seconds)
TIE = 1e-9  # a resampled statistic within this of the observed one counts as equal (float rounding)
TESTS = ("bootstrap", "randomization")
LEADERBOARD_KEYS = {"ALL_F1": "overall", "ANS_F1": "answer", "EVI_F1": "evidence", "ANS_EM": "exact"}

if TYPE_CHECKING:  # numpy is imported where a resampling starts: plain scoring, which imports this module, never needs it
    import numpy as np

    Parts = tuple[np.ndarray, np.ndarray]  # per-question numerator and denominator of a figure


@dataclass(frozen=True)
class Resampling:
    """How intervals and tests are drawn: resamples (or trials), seed, confidence level."""

    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    confidence: float = DEFAULT_CONFIDENCE

    def __post_init__(self) -> None:
        if isinstance(self.resamples, bool) or not isinstance(self.resamples, int) or self.resamples < 1:
            raise ExpmrcError(f"the number of resamples must be a whole number >= 1, got {self.resamples!r}")
        low, high = CONFIDENCE_RANGE
        if not (isinstance(self.confidence, float) and low <= self.confidence <= high):
            raise ExpmrcError(f"the confidence level must be a number from {low:g} to {high:g}, got {self.confidence!r}")

    def describe(self) -> str:
        """The signature part, e.g. `ci:bs-1000+seed-12345+conf-0.95`."""
        return f"ci:bs-{self.resamples}+seed-{self.seed}+conf-{self.confidence:g}"

    def as_dict(self) -> dict[str, Any]:
        return {"method": "bootstrap over questions", "resamples": self.resamples, "seed": self.seed,
                "confidence": self.confidence}


# ---------------------------------------------------------------- per-question figures

def figure_parts(report: Report) -> dict[str, Parts]:
    """Each figure of `report` as per-question (numerator, denominator) vectors, dataset order.

    The leaderboard's four come from the question scores (unanswered: 0); an extra metric gives its own
    through `Metric.parts`. A figure the report leaves absent (None) has no parts.
    """
    import numpy as np

    n = report.total
    ones = np.ones(n)
    parts: dict[str, Parts] = {}
    for key, name in LEADERBOARD_KEYS.items():
        if report.mean(name) is None:
            continue
        parts[key] = (np.array([getattr(q, name) if q.answered else 0.0 for q in report.questions], float), ones)
    figures = report.extra_figures()
    for metric in report.metrics:
        values = [q.extra[metric.name] if q.answered else None for q in report.questions]
        given = metric.parts(values) if metric.parts else {}
        for key in metric.keys:  # in the order reports show them
            if key in given and figures.get(key) is not None:
                parts[key] = (np.asarray(given[key][0], float), np.asarray(given[key][1], float))
    return parts


def point(parts: Parts) -> float:
    """The figure itself, 100 × Σ num / Σ den (nan when no question counts), summed in dataset order as the
    scorer sums, so it is the reported figure to the last bit."""
    total = sum(parts[1].tolist())
    return 100.0 * sum(parts[0].tolist()) / total if total else math.nan


# ---------------------------------------------------------------- resampling

def resample_indices(n: int, resamples: int, seed: int) -> np.ndarray:
    """A (resamples, n) matrix of question indices drawn with replacement, all at once, from `seed`: the draws
    `resample_counts` makes a chunk at a time (for tests and benchmarks; the figures never need it whole)."""
    import numpy as np

    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def index_counts(indices: np.ndarray, n: int) -> np.ndarray:
    """How often each question occurs in each resample: (resamples, n) counts, one bincount for all rows."""
    import numpy as np

    rows = indices.shape[0]
    offsets = (indices + n * np.arange(rows)[:, None]).ravel()
    return np.bincount(offsets, minlength=rows * n).reshape(rows, n).astype(float)


def chunked_draws(n: int, rows: int, seed: int, high: int, what: str) -> Iterator[np.ndarray]:
    """`rows` rows of n integers in [0, high) from one Generator seeded `seed`, yielded a few rows at a time
    (`CHUNK_DRAWS` values): numpy draws them in the same order, so the rows are those of one (rows, n) call.
    A progress bar named `what` shows when there are more than `PROGRESS_DRAWS` values."""
    import numpy as np
    from tqdm import tqdm

    generator = np.random.default_rng(seed)
    step = max(1, CHUNK_DRAWS // max(n, 1))
    with tqdm(total=rows, desc=what, unit=what.split()[-1], disable=rows * n <= PROGRESS_DRAWS, leave=False,
              dynamic_ncols=True) as bar:
        for done in range(0, rows, step):
            size = min(step, rows - done)
            yield generator.integers(0, high, size=(size, n))
            bar.update(size)


def resample_counts(n: int, resamples: int, seed: int) -> Iterator[np.ndarray]:
    """The bootstrap's resamples of n questions as count matrices, a chunk of rows at a time."""
    for indices in chunked_draws(n, resamples, seed, n, "bootstrap resamples"):
        yield index_counts(indices, n)


def resampled(parts: dict[str, Parts], weights: np.ndarray) -> dict[str, np.ndarray]:
    """Each figure under each row of per-question weights (counts, or 0/1 selections), from one matrix
    product over all figures at once; nan where a row's Σ den = 0."""
    import numpy as np

    if not parts:
        return {}
    stacked = np.column_stack([vector for pair in parts.values() for vector in pair])
    sums = weights @ stacked
    top, bottom = sums[:, 0::2], sums[:, 1::2]
    with np.errstate(divide="ignore", invalid="ignore"):
        figures = np.where(bottom > 0, 100.0 * top / np.where(bottom > 0, bottom, 1.0), np.nan)
    return {key: figures[:, k] for k, key in enumerate(parts)}


def resampled_figures(parts: dict[str, Parts], n: int, settings: Resampling) -> dict[str, np.ndarray]:
    """Each figure on every bootstrap resample of `settings` (one value per resample), built a chunk at a time."""
    import numpy as np

    chunks = [resampled(parts, counts) for counts in resample_counts(n, settings.resamples, settings.seed)]
    return {key: np.concatenate([chunk[key] for chunk in chunks]) for key in parts}


def order_interval(samples: np.ndarray, confidence: float) -> tuple[float, float] | None:
    """The interval between the order statistics leaving (1 − confidence)/2 out on each side, as sacrebleu's
    `estimate_ci` does at 95% (index B // 40 and B − 1 − B // 40); resamples where the figure is undefined
    are dropped, and None when none is left."""
    import numpy as np

    kept = np.sort(samples[~np.isnan(samples)])
    if kept.size == 0:
        return None
    lower = min(math.floor(kept.size * (1.0 - confidence) / 2.0 + 1e-9), (kept.size - 1) // 2)
    return float(kept[lower]), float(kept[kept.size - 1 - lower])


def intervals(report: Report, settings: Resampling = Resampling()) -> dict[str, tuple[float, float] | None]:
    """A bootstrap interval over questions for every figure of `report` (None where it is absent)."""
    parts = figure_parts(report)
    figures = resampled_figures(parts, report.total, settings)
    keys = list(LEADERBOARD_KEYS) + list(report.extra_figures())
    return {key: order_interval(figures[key], settings.confidence) if key in parts else None for key in keys}


# ---------------------------------------------------------------- paired tests

@dataclass(frozen=True)
class Difference:
    """One score of a system against the baseline: both figures, Δ, the interval of Δ and the p-value."""

    baseline: float
    system: float
    ci: tuple[float, float] | None
    p: float

    @property
    def delta(self) -> float:
        return self.system - self.baseline

    @property
    def significant(self) -> bool:
        """Whether the interval of Δ excludes 0: the mark follows the interval shown beside it, never p alone."""
        return self.ci is not None and (self.ci[0] > 0 or self.ci[1] < 0)

    def as_dict(self) -> dict[str, Any]:
        return {"baseline": round(self.baseline, 3), "system": round(self.system, 3), "delta": round(self.delta, 3),
                "ci": None if self.ci is None else [round(self.ci[0], 3), round(self.ci[1], 3)],
                "p": self.p}


def p_value(statistics: np.ndarray, observed: float) -> float:
    """(#{statistic ≥ observed} + 1) / (count + 1); ties (within TIE) count, undefined statistics do not."""
    import numpy as np

    hits = int(np.sum(statistics >= abs(observed) - TIE))
    return (hits + 1) / (statistics.size + 1)


def bootstrap_difference(deltas: np.ndarray, observed: float, confidence: float) -> tuple[tuple[float, float] | None,
                                                                                       float]:
    """The interval of Δ and Koehn's p-value with sacrebleu's centred statistic, from Δ on each resample."""
    import numpy as np

    deltas = deltas[~np.isnan(deltas)]
    spread = np.abs(deltas)
    p = p_value(spread - spread.mean(), observed) if deltas.size else 1.0
    return order_interval(deltas, confidence), p


def paired_bootstrap(base: dict[str, Parts], system: dict[str, Parts], n: int,
                     settings: Resampling) -> dict[str, Difference]:
    """Koehn's paired bootstrap over the resamples of `settings`, which both systems share."""
    import numpy as np

    deltas: dict[str, list[np.ndarray]] = {key: [] for key in base}
    for counts in resample_counts(n, settings.resamples, settings.seed):
        before, after = resampled(base, counts), resampled(system, counts)
        for key in base:
            deltas[key].append(after[key] - before[key])
    results = {}
    for key, chunks in deltas.items():
        a, b = point(base[key]), point(system[key])
        ci, p = bootstrap_difference(np.concatenate(chunks), b - a, settings.confidence)
        results[key] = Difference(a, b, ci, p)
    return results


def randomization(base: dict[str, Parts], system: dict[str, Parts], n: int, trials: int,
                  seed: int) -> dict[str, float]:
    """Approximate randomization's p-values: |Δ| between each trial's two pseudo-systems against the observed
    |Δ|. A trial's pseudo-baseline sums are Σ base + swaps @ (system − base), the other's the reverse; the
    trials are drawn and counted a chunk at a time."""
    import numpy as np

    own = np.column_stack([vector for pair in base.values() for vector in pair])
    other = np.column_stack([vector for key in base for vector in system[key]])
    observed = {key: point(system[key]) - point(base[key]) for key in base}
    hits, counted = dict.fromkeys(base, 0), dict.fromkeys(base, 0)
    for swaps in chunked_draws(n, trials, seed, 2, "randomization trials"):
        moved = swaps.astype(float) @ (other - own)
        for k, key in enumerate(base):
            figures = []
            for sums, sign in ((own.sum(axis=0), 1.0), (other.sum(axis=0), -1.0)):
                top, bottom = sums[2 * k] + sign * moved[:, 2 * k], sums[2 * k + 1] + sign * moved[:, 2 * k + 1]
                with np.errstate(divide="ignore", invalid="ignore"):
                    figures.append(np.where(bottom > 0, 100.0 * top / np.where(bottom > 0, bottom, 1.0), np.nan))
            statistics = np.abs(figures[1] - figures[0])
            statistics = statistics[~np.isnan(statistics)]
            hits[key] += int(np.sum(statistics >= abs(observed[key]) - TIE))
            counted[key] += statistics.size
    return {key: (hits[key] + 1) / (counted[key] + 1) for key in base}


def compare(baseline: Report, system: Report, test: str = "bootstrap", settings: Resampling = Resampling(),
            trials: int = DEFAULT_TRIALS) -> dict[str, Difference]:
    """Every figure both reports have, system against baseline on the same questions.

    The interval of Δ is always the paired bootstrap's (`settings.resamples`), and with it the significance
    mark; the p-value is the paired bootstrap's, or approximate randomization's over `trials` swaps with
    `test="randomization"`.
    """
    if test not in TESTS:
        raise ExpmrcError(f"unknown test {test!r}; choose from {', '.join(TESTS)}")
    if [q.id for q in baseline.questions] != [q.id for q in system.questions]:
        raise ExpmrcError(f"{baseline.prediction_path} and {system.prediction_path} were scored on different "
                          "questions; a paired test needs the same dataset")
    base_parts, sys_parts = figure_parts(baseline), figure_parts(system)
    n = baseline.total
    base_parts = {key: value for key, value in base_parts.items() if key in sys_parts}
    results = paired_bootstrap(base_parts, sys_parts, n, settings)
    if test == "randomization":
        p_values = randomization(base_parts, sys_parts, n, trials, settings.seed)
        results = {key: Difference(r.baseline, r.system, r.ci, p_values[key]) for key, r in results.items()}
    return results


def check_same_dataset(reports: Sequence[Report]) -> None:
    """Refuse a submission none of whose ids is a question of the dataset: it was made for another one."""
    for report in reports:
        if report.unknown_ids and (problem := no_match_problem(report)):
            raise ExpmrcError(problem)
        if report.skipped == report.total:
            raise ExpmrcError(f"{report.prediction_path}: answers none of the questions of {report.dataset_path}")

