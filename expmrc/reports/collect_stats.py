"""Aggregating runs for `expmrc collect`: settings over seeds, and the statistics over questions.

Runs are grouped by (subset, task, model, λ, dev file) over seeds: mean, sample standard deviation and
maximum. Runs are grouped together only when they were scored on the same dev file (by the sha256 of
its bytes) and trained from the same model; two runs of one group with the same seed are refused.
Over questions, each setting gets a bootstrap interval of the seeds' mean per question (whose mean is
the mean over seeds), and a paired bootstrap test against the best setting of its subset and dev file
(expmrc.scoring.stats).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from expmrc.data import subsets
from expmrc.errors import ExpmrcError
from expmrc.reports.collect_runs import FARM, FIGURES, SCORES, SUPPORT, ScoredRun
from expmrc.scoring import stats


@dataclass
class Group:
    """The runs of one setting (subset, task, model, λ, dev file) over seeds."""

    subset: str
    task: str
    model: str
    loss_lambda: float
    dev_sha256: str
    runs: list[ScoredRun] = field(default_factory=list)
    dev_label: str = ""  # set when a subset's runs were scored on more than one dev file
    intervals: dict[str, tuple[float, float] | None] = field(default_factory=dict)  # SCORES, over questions
    p_best: dict[str, float | None] = field(default_factory=dict)  # paired test against the best; None: is the best

    @property
    def dev_file(self) -> str:
        return self.runs[0].dev_file if self.runs else ""

    @property
    def seeds(self) -> list[int]:
        return sorted(r.rand_seed for r in self.runs if r.rand_seed is not None)

    def values(self, metric: str) -> list[float]:
        """The runs' values of a metric, leaving out runs that have none (FARM(4) without faithfulness.json)."""
        found = [r.scores.get(metric) if r.scores is not None else None for r in self.runs]
        return [value for value in found if value is not None]

    def mean(self, metric: str) -> float | None:
        values = self.values(metric)
        return statistics.fmean(values) if values else None

    def std(self, metric: str) -> float | None:
        """Sample standard deviation over seeds (n - 1); None for a single run."""
        values = self.values(metric)
        return statistics.stdev(values) if len(values) > 1 else None

    def question_mean(self, metric: str) -> np.ndarray:
        """The seeds' mean score per question (dataset order)."""
        return np.mean(np.stack([r.vectors[metric] for r in self.runs]), axis=0)

    def marker(self, metric: str) -> str:
        """★ the best setting of its subset, ≈ one that does not differ significantly from it, else ""."""
        if metric not in self.p_best:
            return ""
        p = self.p_best[metric]
        return "★" if p is None else "≈" if p >= stats.ALPHA else ""

    def max(self, metric: str) -> float | None:
        values = self.values(metric)
        return max(values) if values else None


def shown_metrics(groups: list[Group]) -> tuple[str, ...]:
    """The metrics the tables show: the leaderboard's and LOCA, then FARM(4) when it was asked for and the support
    rate when a run has a support.json."""
    extra = tuple(m for m in (FARM, SUPPORT) if any(r.scores is not None and m in r.scores for g in groups for r in g.runs))
    return FIGURES + extra


def group_runs(runs: list[ScoredRun]) -> list[Group]:
    """Finished runs grouped by setting, ordered by subset (paper order), model and λ; a seed that repeats
    within a group is refused in one line naming both runs."""
    groups: dict[tuple, Group] = {}
    for run in runs:
        if run.status != "finished":
            continue
        assert run.loss_lambda is not None  # a finished run's settings were read (collect_runs.read_run)
        key = (run.subset, run.task, run.model, run.loss_lambda, run.dev_sha256)
        group = groups.setdefault(key, Group(*key))
        twin = next((r for r in group.runs if r.rand_seed == run.rand_seed), None)
        if twin is not None:
            raise ExpmrcError(f"{twin.run_dir} and {run.run_dir}: the same setting ({run.subset}, model {run.model}, "
                              f"lambda {run.loss_lambda:g}) and the same seed {run.rand_seed}; a seed must count "
                              "once, so collect one of them")
        group.runs.append(run)
    label_dev_files(list(groups.values()))
    return sorted(groups.values(), key=lambda g: (subsets.names().index(g.subset), g.model, g.task, g.loss_lambda,
                                                  g.dev_label))


def label_dev_files(groups: list[Group]) -> None:
    """Name the dev file of each group of a subset whose runs used several: the file most runs used keeps
    no label, the others are labelled `name sha256[:8]` so their rows stand apart."""
    for subset in subsets.names():
        mine = [g for g in groups if g.subset == subset]
        counts: dict[str, int] = {}
        for g in mine:
            counts[g.dev_sha256] = counts.get(g.dev_sha256, 0) + len(g.runs)
        if len(counts) < 2:
            continue
        usual = max(sorted(counts), key=lambda digest: counts[digest])
        for g in mine:
            if g.dev_sha256 != usual:
                g.dev_label = f"{Path(g.dev_file).name} {g.dev_sha256[:8]}"


def compare_settings(groups: list[Group], settings: stats.Resampling = stats.Resampling()) -> None:
    """Fill each group's interval over questions and its p-value against the best setting, per score.

    The best is the setting with the highest mean over seeds among those of its subset scored on the same
    dev file; all of them share one set of resamples, so the comparisons are paired.
    """
    families: dict[tuple[str, str], list[Group]] = {}
    for group in groups:
        families.setdefault((group.subset, group.dev_sha256), []).append(group)
    for family in families.values():
        n = len(family[0].runs[0].vectors[SCORES[0]])
        ones = np.ones(n)
        parts = {(metric, k): (g.question_mean(metric), ones) for metric in SCORES for k, g in enumerate(family)}
        figures = stats.resampled_figures({f"{m} {k}": v for (m, k), v in parts.items()}, n, settings)
        for metric in SCORES:
            best = max(range(len(family)), key=lambda k: (family[k].mean(metric) or 0.0, -family[k].loss_lambda))
            for k, group in enumerate(family):
                group.intervals[metric] = stats.order_interval(figures[f"{metric} {k}"], settings.confidence)
                if k == best:
                    group.p_best[metric] = None
                    continue
                observed = stats.point(parts[(metric, k)]) - stats.point(parts[(metric, best)])
                deltas = figures[f"{metric} {k}"] - figures[f"{metric} {best}"]
                group.p_best[metric] = stats.bootstrap_difference(deltas, observed, settings.confidence)[1]
