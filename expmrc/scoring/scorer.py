"""Scoring a submission against an ExpMRC dataset, exactly as the leaderboard does, with details.

Per question (dataset order): span subsets score answer F1 against the gold answer texts and
evidence F1 against the `evidences`; multiple choice scores answer 1/0 by exact label equality and
evidence F1 against that question's evidence list (0 when the dataset has none). Overall is
answer × evidence. A missing question scores 0 everywhere and counts in SKIP; every average divides
by the number of questions in the dataset and is × 100.
"""

from __future__ import annotations

import collections
import hashlib
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from expmrc import __version__
from expmrc.data.datasets import ChoiceQuestion, Dataset, SpanQuestion
from expmrc.data.io import read_json
from expmrc.errors import ExpmrcError
from expmrc.metrics.leaderboard import PUNKT_RESOURCE, best_f1, exact_match

SCALAR_TYPES = (str, int, float)  # bool is an int: scored as str(True) == "True", as the leaderboard does


@dataclass
class QuestionScore:
    """One question's scores and the references that matched best."""

    id: str
    type: str
    answered: bool
    answer: float = 0.0
    evidence: float = 0.0
    overall: float = 0.0
    exact: float = 0.0
    best_answer_reference: str | None = None
    best_evidence_reference: str | None = None


@dataclass
class Report:
    """The scores of one submission on one dataset."""

    dataset_path: str
    prediction_path: str
    version: str
    subset: str
    questions: list[QuestionScore]
    unknown_ids: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.questions)

    @property
    def skipped(self) -> int:
        return sum(not q.answered for q in self.questions)

    def mean(self, key: str, questions: list[QuestionScore] | None = None) -> float:
        """100 × the sum of `key` over questions (in dataset order) / the number of questions."""
        qs = self.questions if questions is None else questions
        total = 0
        for q in qs:
            if q.answered:
                total += getattr(q, key)
        return 100.0 * total / len(qs)

    def official(self) -> dict[str, Any]:
        """The leaderboard's JSON object, keys in its order, figures as strings with three decimals."""
        return {
            "ALL_F1": "%.3f" % self.mean("overall"),
            "ANS_F1": "%.3f" % self.mean("answer"),
            "EVI_F1": "%.3f" % self.mean("evidence"),
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
                "ANS_F1": round(self.mean("answer", qs), 3),
                "EVI_F1": round(self.mean("evidence", qs), 3),
                "ALL_F1": round(self.mean("overall", qs), 3),
                "ANS_EM": round(self.mean("exact", qs), 3),
            }
            for name, qs in ordered
        }

    def summary(self) -> dict[str, Any]:
        """All figures as numbers: the official three, exact match, counts and the type breakdown."""
        return {
            "dataset": self.dataset_path,
            "predictions": self.prediction_path,
            "version": self.version,
            "subset": self.subset,
            "ALL_F1": round(self.mean("overall"), 3),
            "ANS_F1": round(self.mean("answer"), 3),
            "EVI_F1": round(self.mean("evidence"), 3),
            "ANS_EM": round(self.mean("exact"), 3),
            "TOTAL": self.total,
            "SKIP": self.skipped,
            "UNKNOWN": len(self.unknown_ids),
            "by_type": self.by_type(),
        }

    def details(self) -> list[dict[str, Any]]:
        """One record per question, in dataset order, for `--details`."""
        return [asdict(q) for q in self.questions]


def load_predictions(path: str) -> dict[str, Any]:
    """Read a submission file: a JSON object mapping question ids to {"answer", "evidence"} objects."""
    doc = read_json(path, "prediction file")
    if not isinstance(doc, dict):
        raise ExpmrcError(f"{path}: prediction file must be a JSON object mapping question ids to predictions, "
                          f"got a JSON {type(doc).__name__ if not isinstance(doc, list) else 'array'}")
    return doc


def _checked_entry(path: str, qid: str, entry: Any) -> tuple[Any, Any]:
    """The (answer, evidence) of one prediction, refusing shapes the leaderboard would crash on."""
    if not isinstance(entry, dict):
        raise ExpmrcError(f"{path}: question {qid}: prediction must be an object with `answer` and `evidence`")
    for key in ("answer", "evidence"):
        if key not in entry:
            raise ExpmrcError(f"{path}: question {qid}: prediction lacks `{key}`")
        value = entry[key]
        if value is None:
            raise ExpmrcError(f"{path}: question {qid}: `{key}` is null")
        if not isinstance(value, SCALAR_TYPES):
            raise ExpmrcError(f"{path}: question {qid}: `{key}` must be a string (numbers are scored as text), "
                              f"got a JSON {'array' if isinstance(value, list) else 'object'}")
    return entry["answer"], entry["evidence"]


def score(dataset: Dataset, predictions: dict[str, Any], prediction_path: str = "") -> Report:
    """Score `predictions` (a parsed submission) on `dataset`; see the module docstring for the rules."""
    known = set()
    results = []
    for question in dataset.questions:
        known.add(question.qid)
        qtype = question_type(question.question, dataset.language)
        if question.qid not in predictions:
            results.append(QuestionScore(id=question.qid, type=qtype, answered=False))
            continue
        answer, evidence = _checked_entry(prediction_path, question.qid, predictions[question.qid])
        result = QuestionScore(id=question.qid, type=qtype, answered=True)
        if isinstance(question, SpanQuestion):
            result.answer, i = best_f1(answer, question.answers)
            result.best_answer_reference = str(question.answers[i])
            result.exact = exact_match(answer, question.answers)
        else:
            result.answer = float(isinstance(answer, str) and answer == question.answer)
            result.exact = result.answer
            result.best_answer_reference = question.answer
        if question.evidences is not None:
            result.evidence, i = best_f1(evidence, question.evidences)
            result.best_evidence_reference = str(question.evidences[i])
        result.overall = result.answer * result.evidence
        results.append(result)
    unknown = [qid for qid in predictions if qid not in known]
    return Report(dataset.path, prediction_path, dataset.version, dataset.subset, results, unknown)


def score_files(dataset: Dataset, prediction_path: str) -> Report:
    """Load a submission file and score it on `dataset`."""
    return score(dataset, load_predictions(prediction_path), prediction_path)


def warn_about(report: Report, stream=sys.stderr) -> None:
    """The leaderboard's `Unanswered question: ID` lines, then one line for ids not in the dataset."""
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


def signature() -> str:
    """A sacrebleu-style string naming exactly what computed a number, to quote beside it."""
    import nltk

    return "|".join([
        f"expmrc:{__version__}",
        f"nltk:{nltk.__version__}",
        "tok:zh-char+nltk-word_tokenize",
        f"punkt:{punkt_hash()}",
        "norm:articles+punct+lower",
        "f1:max-over-refs",
    ])


def punkt_hash() -> str:
    """The first 12 hex digits of a sha256 over NLTK's English Punkt data files (names and bytes)."""
    import nltk

    try:
        folder = nltk.data.find(PUNKT_RESOURCE)
    except LookupError:
        return "missing"
    digest = hashlib.sha256()
    for path in sorted(Path(str(folder.path)).iterdir()):
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]
