"""Estimated human performance: cross-validation over each question's references.

Each reference in turn is the prediction and the others the ground truth (F1 = max over the
others); a question's figure is the mean over its rotations. Questions with a single reference
have nothing to compare against and are left out of that figure. Span subsets get answer and
evidence this way and overall = answer × evidence per question; multiple choice gets evidence
only (its human answer accuracy came from a separate annotation study).
"""

from __future__ import annotations

from dataclasses import dataclass

from expmrc.data.datasets import Dataset, SpanQuestion
from expmrc.metrics.leaderboard import f1


@dataclass
class HumanPerformance:
    """Percentages (None where not defined) and how many questions each figure averages over."""

    answer: float | None
    evidence: float | None
    overall: float | None
    questions: int

    def as_json(self) -> dict:
        r = lambda x: None if x is None else round(x, 3)  # noqa: E731
        return {"ANS_F1": r(self.answer), "EVI_F1": r(self.evidence), "ALL_F1": r(self.overall),
                "TOTAL": self.questions}


def rotation_f1(references: list) -> float | None:
    """Mean over i of F1(reference i, the other references); None with fewer than two references."""
    if len(references) < 2:
        return None
    scores = [f1(ref, references[:i] + references[i + 1:]) for i, ref in enumerate(references)]
    return sum(scores) / len(scores)


def human_performance(dataset: Dataset) -> HumanPerformance:
    """Cross-validated human figures for `dataset` (see the module docstring)."""
    answers, evidences, overall = [], [], []
    for question in dataset.questions:
        evidence = rotation_f1(list(question.evidences)) if question.evidences is not None else None
        if evidence is not None:
            evidences.append(evidence)
        if isinstance(question, SpanQuestion):
            answer = rotation_f1(list(question.answers))
            if answer is not None:
                answers.append(answer)
            if answer is not None and evidence is not None:
                overall.append(answer * evidence)
    pct = lambda xs: 100.0 * sum(xs) / len(xs) if xs else None  # noqa: E731
    if dataset.kind == "choice":
        return HumanPerformance(None, pct(evidences), None, len(dataset.questions))
    return HumanPerformance(pct(answers), pct(evidences), pct(overall), len(dataset.questions))
