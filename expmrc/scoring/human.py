"""Estimated human performance: cross-validation over each question's references.

Each reference in turn is the prediction and the others the ground truth (F1 = max over the
others); a question's figure is the mean over its rotations. Questions with a single reference
have nothing to compare against and are left out of that figure. Span subsets get answer and
evidence this way and overall = answer × evidence per question; multiple choice gets evidence
only (its human answer accuracy came from a separate annotation study). CMRC 2018 also gets its own
protocol's EM and F1, the same rotation scored with the official CMRC 2018 metrics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from collections.abc import Callable, Sequence

from expmrc.data import subsets
from expmrc.data.datasets import Dataset, SpanQuestion
from expmrc.metrics.cmrc2018 import cmrc2018_exact_match, cmrc2018_f1
from expmrc.metrics.leaderboard import f1


@dataclass
class HumanPerformance:
    """Percentages (None where not defined) and how many questions each figure averages over."""

    answer: float | None
    evidence: float | None
    overall: float | None
    questions: int
    cmrc2018_em: float | None = None  # CMRC 2018 subset only: its official metrics over the same rotation
    cmrc2018_f1: float | None = None

    def as_json(self) -> dict:
        r = lambda x: None if x is None else round(x, 3)  # noqa: E731
        return {"ANS_F1": r(self.answer), "EVI_F1": r(self.evidence), "ALL_F1": r(self.overall),
                "CMRC2018_EM": r(self.cmrc2018_em), "CMRC2018_F1": r(self.cmrc2018_f1), "TOTAL": self.questions}


def rotation_score(references: Sequence[Any], metric: Callable[[Any, list], float] = f1) -> float | None:
    """Mean over i of metric(reference i, the other references); None with fewer than two references."""
    references = list(references)
    if len(references) < 2:
        return None
    scores = [metric(ref, references[:i] + references[i + 1:]) for i, ref in enumerate(references)]
    return sum(scores) / len(scores)


def rotation_f1(references: list) -> float | None:
    """The leaderboard's F1 over the rotations (see rotation_score)."""
    return rotation_score(references, f1)


def _percent(values: list[float]) -> float | None:
    return 100.0 * sum(values) / len(values) if values else None


def human_performance(dataset: Dataset) -> HumanPerformance:
    """Cross-validated human figures for `dataset` (see the module docstring)."""
    answers: list[float] = []
    evidences: list[float] = []
    overall: list[float] = []
    cmrc_em: list[float] = []
    cmrc_f1: list[float] = []
    for question in dataset.questions:
        evidence = rotation_f1(list(question.evidences)) if question.evidences is not None else None
        if evidence is not None:
            evidences.append(evidence)
        if isinstance(question, SpanQuestion):
            answer = rotation_f1(list(question.answers))
            if answer is not None:
                answers.append(answer)
                if "cmrc2018" in subsets.subset(dataset.subset).metrics:
                    em = rotation_score(question.answers, cmrc2018_exact_match)
                    f1_rotated = rotation_score(question.answers, cmrc2018_f1)
                    if em is not None and f1_rotated is not None:  # as `answer`: two references or more
                        cmrc_em.append(em)
                        cmrc_f1.append(f1_rotated)
            if answer is not None and evidence is not None:
                overall.append(answer * evidence)
    if dataset.kind == "choice":
        return HumanPerformance(None, _percent(evidences), None, len(dataset.questions))
    return HumanPerformance(_percent(answers), _percent(evidences), _percent(overall), len(dataset.questions),
                            _percent(cmrc_em), _percent(cmrc_f1))
