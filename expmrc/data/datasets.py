"""Reading ExpMRC datasets: the SQuAD-style span subsets and the RACE/C3-style multiple-choice ones.

Every dataset is flattened into a list of questions in file order, which is the order the official
scorer walks, so sums taken over this list match it float for float.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from expmrc.data.io import read_json
from expmrc.errors import ExpmrcError

SUBSETS = ("squad", "cmrc2018", "race", "c3")
SPAN_SUBSETS = ("squad", "cmrc2018")
CHOICE_SUBSETS = ("race", "c3")
CHINESE_SUBSETS = ("cmrc2018", "c3")
LABELS = "ABCDEFGHIJ"


@dataclass(frozen=True)
class SpanQuestion:
    """One question of a span-extraction subset (SQuAD, CMRC 2018)."""

    qid: str
    question: str
    context: str
    answers: list[Any]
    answer_starts: list[int | None]
    evidences: list[Any] | None
    title: str = ""


@dataclass(frozen=True)
class ChoiceQuestion:
    """One question of a multiple-choice subset (RACE+, C3); `qid` is `<passage id>-<index>`."""

    qid: str
    passage_id: str
    index: int
    passage: str
    question: str
    options: list[str]
    answer: str
    evidences: list[Any] | None


Question = SpanQuestion | ChoiceQuestion


@dataclass
class Dataset:
    """A loaded dataset file: its version, subset, task kind and questions in file order."""

    path: str
    version: str
    subset: str
    questions: list[Question]
    raw: dict = field(repr=False, default_factory=dict)

    @property
    def kind(self) -> str:
        """`span` or `choice`."""
        return "span" if self.subset in SPAN_SUBSETS else "choice"

    @property
    def language(self) -> str:
        """`zh` for CMRC 2018 and C3, `en` otherwise."""
        return "zh" if self.subset in CHINESE_SUBSETS else "en"


def subset_from_version(version: str) -> str | None:
    """The subset a dataset `version` names, by the official scorer's substring rule, or None."""
    if "squad" in version:
        return "squad"
    if "cmrc2018" in version:
        return "cmrc2018"
    if "race" in version:
        return "race"
    if "c3" in version:
        return "c3"
    return None


def resolve_dataset_path(name_or_path: str) -> str:
    """A dataset argument as a file path: a subset name is looked up in `$EXPMRC_DATA`, then `data/`."""
    if name_or_path in SUBSETS and not os.path.exists(name_or_path):
        roots = [os.environ.get("EXPMRC_DATA", ""), "data"]
        for root in [r for r in roots if r]:
            for candidate in (
                Path(root) / name_or_path / f"expmrc-{name_or_path}-dev.json",
                Path(root) / f"expmrc-{name_or_path}-dev.json",
            ):
                if candidate.is_file():
                    return str(candidate)
        raise ExpmrcError(
            f"{name_or_path}: no dev set found in $EXPMRC_DATA or data/; run `expmrc download` first"
        )
    return name_or_path



def load_dataset(path: str, subset: str | None = None) -> Dataset:
    """Load and validate an ExpMRC dataset file; `subset` overrides detection from its `version`."""
    path = resolve_dataset_path(path)
    doc = read_json(path, "dataset file")
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        raise ExpmrcError(f"{path}: dataset must be a JSON object with a `data` list")
    version = doc.get("version")
    version = "" if version is None else str(version)
    if subset is None:
        subset = subset_from_version(version)
        if subset is None:
            raise ExpmrcError(
                f"{path}: unknown dataset version {version!r} (it names none of {', '.join(SUBSETS)}); "
                "pass --subset to say which it is"
            )
    elif subset not in SUBSETS:
        raise ExpmrcError(f"{path}: unknown subset {subset!r}; choose one of {', '.join(SUBSETS)}")
    if subset in SPAN_SUBSETS:
        questions: list[Question] = list(span_questions(path, doc["data"]))
    else:
        questions = list(choice_questions(path, doc["data"]))
    if not questions:
        raise ExpmrcError(f"{path}: dataset holds no questions")
    return Dataset(path=path, version=version, subset=subset, questions=questions, raw=doc)


def span_questions(path: str, articles: list) -> Any:
    """Validate SQuAD-style `data` (read from `path`) and yield its questions in file order."""
    for a, article in enumerate(articles):
        if not isinstance(article, dict) or not isinstance(article.get("paragraphs"), list):
            raise ExpmrcError(f"{path}: data[{a}] must be an object with a `paragraphs` list")
        for p, para in enumerate(article["paragraphs"]):
            if not isinstance(para, dict) or not isinstance(para.get("qas"), list):
                raise ExpmrcError(f"{path}: data[{a}].paragraphs[{p}] must be an object with a `qas` list")
            context = para.get("context")
            if not isinstance(context, str):
                raise ExpmrcError(f"{path}: data[{a}].paragraphs[{p}] has no `context` string")
            for q, qa in enumerate(para["qas"]):
                where = f"data[{a}].paragraphs[{p}].qas[{q}]"
                if not isinstance(qa, dict) or "id" not in qa:
                    raise ExpmrcError(f"{path}: {where} must be an object with an `id`")
                qid = str(qa["id"])
                answers = qa.get("answers")
                if not isinstance(answers, list) or not answers or not all(
                    isinstance(x, dict) and "text" in x for x in answers
                ):
                    raise ExpmrcError(f"{path}: question {qid}: `answers` must be a non-empty list of objects with `text`")
                evidences = qa.get("evidences")
                if evidences is not None and (not isinstance(evidences, list) or not evidences):
                    raise ExpmrcError(f"{path}: question {qid}: `evidences` must be a non-empty list")
                yield SpanQuestion(
                    qid=qid,
                    question=str(qa.get("question", "")),
                    context=context,
                    answers=[x["text"] for x in answers],
                    answer_starts=[x.get("answer_start") for x in answers],
                    evidences=evidences,
                    title=str(article.get("title", "")),
                )


def choice_questions(path: str, samples: list) -> Any:
    """Validate RACE/C3-style `data` (read from `path`) and yield its questions in file order."""
    for s, sample in enumerate(samples):
        if not isinstance(sample, dict):
            raise ExpmrcError(f"{path}: data[{s}] must be an object")
        pid = sample.get("id")
        name = f"passage {pid}" if pid is not None else f"data[{s}]"
        for key in ("id", "article", "questions", "options", "answers"):
            if key not in sample:
                raise ExpmrcError(f"{path}: {name} lacks `{key}`")
        article = sample["article"]
        if isinstance(article, list):  # C3 keeps dialogue turns as a list of strings
            article = "\n".join(str(x) for x in article)
        questions, options, answers = sample["questions"], sample["options"], sample["answers"]
        if not all(isinstance(x, list) for x in (questions, options, answers)):
            raise ExpmrcError(f"{path}: {name}: `questions`, `options` and `answers` must be lists")
        if not len(questions) == len(options) == len(answers):
            raise ExpmrcError(
                f"{path}: {name}: {len(questions)} questions, {len(options)} option lists and "
                f"{len(answers)} answers; they must be equal"
            )
        evidences = sample.get("evidences")
        if evidences is not None and (not isinstance(evidences, list) or len(evidences) != len(answers)):
            raise ExpmrcError(f"{path}: {name}: `evidences` must hold one list per question")
        for j in range(len(answers)):
            qid = f"{pid}-{j}"
            if evidences is not None and (not isinstance(evidences[j], list) or not evidences[j]):
                raise ExpmrcError(f"{path}: question {qid}: `evidences` must be a non-empty list of strings")
            if not isinstance(options[j], list):
                raise ExpmrcError(f"{path}: question {qid}: options must be a list")
            yield ChoiceQuestion(
                qid=qid,
                passage_id=str(pid),
                index=j,
                passage=str(article),
                question=str(questions[j]),
                options=[str(o) for o in options[j]],
                answer=str(answers[j]),
                evidences=None if evidences is None else evidences[j],
            )


def gold_option_text(question: ChoiceQuestion) -> str | None:
    """The text of the gold option, or None when the label is outside the option list."""
    index = LABELS.find(question.answer) if len(question.answer) == 1 else -1
    if 0 <= index < len(question.options):
        return question.options[index]
    return None
