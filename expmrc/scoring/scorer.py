"""Scoring a submission against an ExpMRC dataset, exactly as the leaderboard does, with details.

Per question (dataset order): span subsets score answer F1 against the gold answer texts and
evidence F1 against the `evidences` (a span dataset lacking them is refused, as the leaderboard stops,
unless the caller asks for answers only: then a dataset with no `evidences` at all, such as the
original CMRC 2018 dev set, gets answer figures and evidence and overall are absent, None, never 0);
multiple choice scores answer 1/0 by exact label equality and
evidence F1 against that question's evidence list (0 when the dataset has none). Overall is
answer × evidence. A missing question scores 0 everywhere and counts in SKIP, and so does a question
whose dataset id is a JSON number (the leaderboard looks it up among the submission's string keys and
never finds it); every average divides by the number of questions in the dataset and is × 100.
"""

from __future__ import annotations

import collections
import re
import sys
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO
from collections.abc import Sequence

from expmrc import __version__
from expmrc.data import subsets
from expmrc.data.datasets import Dataset
from expmrc.data.submissions import load_submission, parse_prediction
from expmrc.errors import ExpmrcError
from expmrc.metrics.leaderboard import LEADERBOARD, nltk_tokenizer
from expmrc.metrics.registry import BadPrediction, Metric

@dataclass
class QuestionScore:
    """One question's scores, its texts (question, prediction) and the references that matched best."""

    id: str
    type: str
    answered: bool
    answer: float = 0.0
    evidence: float | None = 0.0  # None: the dataset has no gold evidence (answers-only scoring)
    overall: float | None = 0.0
    exact: float = 0.0
    best_answer_reference: str | None = None
    best_evidence_reference: str | None = None
    question: str = ""
    predicted_answer: str | int | float | None = None  # as the submission gives it; None when unanswered
    predicted_evidence: str | int | float | None = None
    extra: dict[str, dict[str, Any]] = field(default_factory=dict)  # extra metric -> its values here


@dataclass
class Report:
    """The scores of one submission on one dataset."""

    dataset_path: str
    prediction_path: str
    version: str
    subset: str
    questions: list[QuestionScore]
    unknown_ids: list[str] = field(default_factory=list)
    metrics: list[Metric] = field(default_factory=list)  # the extra metrics computed beside the leaderboard's
    has_evidence: bool = True  # False: answers-only scoring of a dataset without gold evidence

    @property
    def total(self) -> int:
        return len(self.questions)

    @property
    def skipped(self) -> int:
        return sum(not q.answered for q in self.questions)

    def mean(self, key: str, questions: list[QuestionScore] | None = None) -> float | None:
        """100 × the sum of `key` over questions (in dataset order) / the number of questions; None for
        evidence and overall when the dataset has no gold evidence."""
        if not self.has_evidence and key in ("evidence", "overall"):
            return None
        qs = self.questions if questions is None else questions
        total = 0
        for q in qs:
            if q.answered:
                total += getattr(q, key)
        return 100.0 * total / len(qs)

    def official(self) -> dict[str, Any]:
        """The leaderboard's JSON object, keys in its order, figures as strings with three decimals."""
        overall, answer, evidence = self.mean("overall"), self.mean("answer"), self.mean("evidence")
        if overall is None or answer is None or evidence is None:
            raise ExpmrcError(f"{self.dataset_path}: the leaderboard's figures need gold evidence; this dataset has "
                              "none, so only answers were scored")
        return {
            "ALL_F1": f"{overall:.3f}",
            "ANS_F1": f"{answer:.3f}",
            "EVI_F1": f"{evidence:.3f}",
            "TOTAL": self.total,
            "SKIP": self.skipped,
            "VERSION": self.version,
            "FILE": self.prediction_path,
        }

    def by_type(self) -> dict[str, dict[str, float]]:
        """Count and mean scores per question type (see question_type), most frequent type first."""
        groups: dict[str, list[QuestionScore]] = collections.defaultdict(list)
        for q in self.questions:
            groups[q.type].append(q)
        ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        return {
            name: {
                "count": len(qs),
                "ANS_F1": _rounded(self.mean("answer", qs)),
                "EVI_F1": _rounded(self.mean("evidence", qs)),
                "ALL_F1": _rounded(self.mean("overall", qs)),
                "ANS_EM": _rounded(self.mean("exact", qs)),
            }
            for name, qs in ordered
        }

    def summary(self) -> dict[str, Any]:
        """All figures as numbers (None where absent): the official three, exact match, counts, the extra
        metrics' figures and the type breakdown."""
        return {
            "dataset": self.dataset_path,
            "predictions": self.prediction_path,
            "version": self.version,
            "subset": self.subset,
            "ALL_F1": _rounded(self.mean("overall")),
            "ANS_F1": _rounded(self.mean("answer")),
            "EVI_F1": _rounded(self.mean("evidence")),
            "ANS_EM": _rounded(self.mean("exact")),
            "TOTAL": self.total,
            "SKIP": self.skipped,
            "UNKNOWN": len(self.unknown_ids),
            **{key: _rounded(value) for key, value in self.extra_figures().items()},
            "notes": self.notes(),
            "by_type": self.by_type(),
        }

    def extra_figures(self) -> dict[str, Any]:
        """The figures of the extra metrics, in the order they were chosen."""
        figures: dict[str, Any] = {}
        for metric in self.metrics:
            figures.update(metric.aggregate([q.extra[metric.name] if q.answered else None for q in self.questions]))
        return figures

    def notes(self) -> list[str]:
        """What the extra metrics left out and why (e.g. a split that needs gold answers), one line each."""
        lines: list[str] = []
        for metric in self.metrics:
            if metric.notes is not None:
                values = [q.extra[metric.name] if q.answered else None for q in self.questions]
                lines += [f"{metric.name}: {line}" for line in metric.notes(values)]
        return lines

    def details(self) -> list[dict[str, Any]]:
        """One record per question, in dataset order, for `--details`."""
        return [asdict(q) for q in self.questions]


def score(dataset: Dataset, predictions: dict[str, Any], prediction_path: str = "",
          metrics: list[Metric] | None = None, answers_only: bool = False) -> Report:
    """Score `predictions` (a parsed submission) on `dataset`; see the module docstring for the rules.

    `metrics` are the extra registered metrics to compute beside the leaderboard's (default: none);
    `answers_only` accepts a span dataset without any `evidences` and leaves evidence and overall absent.
    """
    metrics = metrics or []
    has_evidence = True
    if dataset.kind == "span":
        bare = next((q.qid for q in dataset.questions if q.evidences is None), None)
        if bare is not None and answers_only and all(q.evidences is None for q in dataset.questions):
            has_evidence = False
        elif bare is not None and answers_only:
            raise ExpmrcError(f"{dataset.path}: question {bare} has no `evidences` while others have; give every "
                              "question evidences, or none for answer figures only")
        elif bare is not None:
            raise ExpmrcError(f"{dataset.path}: question {bare} has no `evidences`, so no evidence score can be given "
                              "(the leaderboard's script stops there); score on a dataset with evidences")
    known = set()
    results = []
    for question in dataset.questions:
        # An id that is a JSON number is never a key of the submission's object, as on the leaderboard.
        matchable = getattr(question, "id_is_text", True)
        if matchable:
            known.add(question.qid)
        qtype = question_type(question.question, dataset.language)
        if not matchable or question.qid not in predictions:
            results.append(QuestionScore(id=question.qid, type=qtype, answered=False, question=question.question,
                                         evidence=0.0 if has_evidence else None,
                                         overall=0.0 if has_evidence else None))
            continue
        prediction = parse_prediction(prediction_path, question.qid, predictions[question.qid])
        values = LEADERBOARD.question(question, prediction)
        if not has_evidence:
            values["evidence"] = values["overall"] = None
        result = QuestionScore(id=question.qid, type=qtype, answered=True, answer=values["answer"],
                               evidence=values["evidence"], overall=values["overall"], exact=values["exact"],
                               best_answer_reference=values["best_answer_reference"],
                               best_evidence_reference=values["best_evidence_reference"],
                               question=question.question, predicted_answer=prediction.answer,
                               predicted_evidence=prediction.evidence)
        try:
            result.extra = {m.name: m.question(question, prediction) for m in metrics}
        except BadPrediction as exc:
            raise ExpmrcError(f"{prediction_path or 'predictions'}: question {question.qid}: {exc}") from None
        results.append(result)
    unknown = [qid for qid in predictions if qid not in known]
    return Report(dataset.path, prediction_path, dataset.version, dataset.subset, results, unknown, metrics,
                  has_evidence)


def score_files(dataset: Dataset, prediction_path: str, metrics: list[Metric] | None = None,
                answers_only: bool = False) -> Report:
    """Load a submission file and score it on `dataset` (`answers_only` as in `score`)."""
    return score(dataset, load_submission(prediction_path), prediction_path, metrics, answers_only)


def _rounded(value: Any) -> Any:
    return round(value, 3) if isinstance(value, float) else value


def coverage_warnings(report: Report) -> list[str]:
    """`expmrc evaluate`'s and `expmrc report`'s lines on unanswered questions and ids not in the dataset."""
    lines = []
    if report.skipped:
        first = next(q.id for q in report.questions if not q.answered)
        lines.append(f"warning: {report.prediction_path}: {report.skipped} of {report.total} questions unanswered "
                     f"(scored 0), first: {first}")
    if report.unknown_ids:
        lines.append(f"warning: {report.prediction_path}: {len(report.unknown_ids)} prediction id(s) not in the "
                     f"dataset, ignored, first: {report.unknown_ids[0]}")
    return lines


def no_match_problem(report: Report) -> str | None:
    """A line for a submission none of whose ids is a question of the dataset (the wrong file or subset), else
    None: the leaderboard would score it 0 behind one `Unanswered` line per question."""
    if report.total == 0 or report.skipped < report.total:
        return None
    if not report.unknown_ids:
        return f"{report.prediction_path}: holds no predictions for the {report.total} questions of {report.dataset_path}"
    other = subsets.from_ids(report.unknown_ids)
    like = f"its ids look like {other} ids (first: {report.unknown_ids[0]})" if other else \
        f"first id: {report.unknown_ids[0]}"
    return (f"{report.prediction_path}: none of its {len(report.unknown_ids)} prediction ids is a question of "
            f"{report.dataset_path} ({report.subset}); {like}. Wrong dataset or submission?")


def warn_about(report: Report, stream: TextIO | None = None) -> None:
    """The leaderboard's `Unanswered question: ID` lines, then one line for ids not in the dataset (on stderr as it
    is when called, not as it was at import)."""
    stream = stream or sys.stderr
    for q in report.questions:
        if not q.answered:
            stream.write(f"Unanswered question: {q.id}\n")
    if report.unknown_ids:
        shown = ", ".join(report.unknown_ids[:5]) + (", ..." if len(report.unknown_ids) > 5 else "")
        stream.write(f"warning: {report.prediction_path}: {len(report.unknown_ids)} prediction id(s) not in "
                     f"{report.dataset_path}, ignored: {shown}\n")


# Question types. English: the first wh-word of the question (case-insensitive, whole words), with
# "how many"/"how much" apart from "how" and whom/whose counted as "who". Chinese: the interrogative
# that starts earliest in the question (the longest one when two start together). Else "other".
_EN_TYPES = re.compile(r"\b(how\s+(?:many|much)|what|which|who|whom|whose|when|where|why|how)\b", re.IGNORECASE)
_ZH_TYPES = [
    ("when", ("什么时候", "何时", "几时", "哪一年", "哪年", "哪天", "多久")),
    ("where", ("哪里", "哪儿", "何处", "什么地方", "何地", "在哪")),
    ("why", ("为什么", "为何", "何故")),
    ("how", ("怎么", "怎样", "如何", "怎么样")),
    ("how many/much", ("多少", "几", "多长", "多大", "多高", "多远")),
    ("who", ("谁", "哪位", "什么人")),
    ("which", ("哪",)),
    ("what", ("什么", "何", "啥")),
]


def question_type(question: str, language: str) -> str:
    """The question type used by the breakdown: what/which/who/when/where/why/how/how many/much/other."""
    if language == "zh":
        best: tuple[int, int, str] | None = None
        for name, words in _ZH_TYPES:
            for word in words:
                pos = question.find(word)
                if pos >= 0 and (best is None or (pos, -len(word)) < (best[0], -best[1])):
                    best = (pos, len(word), name)
        return best[2] if best else "other"
    match = _EN_TYPES.search(question)
    if not match:
        return "other"
    word = re.sub(r"\s+", " ", match.group(1).lower())
    if word.startswith("how "):
        return "how many/much"
    return "who" if word in ("whom", "whose") else word


def described(metric: Metric) -> str:
    """A metric's part of the signature: what its figures depend on (its `signature`), else its name."""
    return metric.signature() if metric.signature is not None else metric.name


def signature(reports: Sequence[Report] = (), *extra: str) -> str:
    """A sacrebleu-style string naming exactly what computed a number, to quote beside it, built from the metrics
    in use: the leaderboard metric's own parts, the extra metrics the `reports` computed, answers-only scoring
    when a report's dataset has no gold evidence; `extra` parts (e.g. the resampling behind intervals) last."""
    extras = list(dict.fromkeys(described(m) for r in reports for m in r.metrics))
    return "|".join([
        f"expmrc:{__version__}",
        f"nltk:{nltk_tokenizer().version}",
        described(LEADERBOARD),
        *(["metrics:" + "+".join(extras)] if extras else []),
        *(["mode:answers-only"] if any(not r.has_evidence for r in reports) else []),
        *extra,
    ])
