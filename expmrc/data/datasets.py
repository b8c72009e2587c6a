"""Reading ExpMRC datasets: the SQuAD-style span subsets and the RACE/C3-style multiple-choice ones.

Every dataset is flattened into a list of questions in file order, which is the order the official
scorer walks, so sums taken over this list match it float for float.
"""

from __future__ import annotations

import json
import os
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from expmrc.data import subsets
from expmrc.data.io import json_kind, read_json
from expmrc.errors import ExpmrcError, warn

LABELS = string.ascii_uppercase  # option labels: A, B, ... as the datasets spell them; at most 26 options


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
    id_is_text: bool = True  # False for an id that is a JSON number: the leaderboard never matches it


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


def passage_of(question: Question) -> str:
    """The passage a question is asked on (a span question's `context`, a choice question's `passage`)."""
    return question.context if isinstance(question, SpanQuestion) else question.passage


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
        return subsets.subset(self.subset).kind

    @property
    def language(self) -> str:
        """`en` or `zh`, as the subset table says."""
        return subsets.subset(self.subset).language


def resolve_dataset_path(name_or_path: str) -> str:
    """A dataset argument as a file path: a subset name is looked up in `$EXPMRC_DATA`, then `data/`."""
    if name_or_path in subsets.names() and not os.path.exists(name_or_path):
        roots = [os.environ.get("EXPMRC_DATA", ""), "data"]
        dev_file = subsets.subset(name_or_path).dev_file
        for root in [r for r in roots if r]:
            for candidate in (Path(root) / name_or_path / dev_file, Path(root) / dev_file):
                if candidate.is_file():
                    return str(candidate)
        raise ExpmrcError(
            f"{name_or_path}: no dev set found in $EXPMRC_DATA or data/; run `expmrc download` first"
        )
    if not os.path.lexists(name_or_path) and not any(c in name_or_path for c in "./\\"):  # a word: a subset meant
        raise ExpmrcError(f"{name_or_path}: unknown subset, and no such dataset file; the subsets are "
                          f"{', '.join(subsets.names())}")
    return name_or_path


def load_dataset(path: str, subset: str | None = None, kind: str | None = None,
                 fallback: str | None = None) -> Dataset:
    """Load and validate an ExpMRC dataset file (or a subset name's dev set).

    `subset` overrides detection from the file's `version`; `kind` ("span" or "choice") refuses a file of the
    other task kind; `fallback` (the baselines' --task_name) names the subset when the version names none and
    it is a subset of `kind`."""
    path = resolve_dataset_path(path)
    doc = read_json(path, "dataset file")
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        raise ExpmrcError(f"{path}: dataset must be a JSON object with a `data` list")
    version = doc.get("version")
    if version is not None and not isinstance(version, str):
        raise ExpmrcError(f"{path}: `version` must be a string, got {json_kind(version)}")
    version = version or ""
    subset = _subset_of(path, version, subset, kind, fallback)
    found = subsets.subset(subset).kind
    if kind is not None and found != kind:
        raise ExpmrcError(f"{path}: is a {subset} ({subsets.KINDS[found]}) file, not "
                          f"{subsets.KINDS[kind]} data ({', '.join(subsets.names_of(kind))})")
    if found == "span":
        questions: list[Question] = list(span_questions(path, doc["data"]))
    else:
        questions = list(choice_questions(path, doc["data"]))
    if not questions:
        raise ExpmrcError(f"{path}: dataset holds no questions")
    return Dataset(path=path, version=version, subset=subset, questions=questions, raw=doc)


def _subset_of(path: str, version: str, subset: str | None, kind: str | None, fallback: str | None) -> str:
    """The subset a dataset file is: `subset` when given (checked against the version), else the version's,
    else `fallback` when it is of `kind`; one line otherwise."""
    named = subsets.from_version(version)
    if subset is not None:
        if subset not in subsets.names():
            raise ExpmrcError(f"{path}: unknown subset {subset!r}; choose one of {', '.join(subsets.names())}")
        if named not in (None, subset):
            raise ExpmrcError(f"{path}: --subset {subset} contradicts the file's version {version!r}, which is "
                              f"{named}; drop --subset or give the right file")
        return subset
    if named is not None:
        return named
    if kind is not None and fallback is not None:
        if fallback in subsets.names_of(kind):
            return fallback
        raise ExpmrcError(f"{path}: version {version!r} names no subset and --task_name {fallback!r} is not a "
                          f"{subsets.KINDS[kind]} subset ({', '.join(subsets.names_of(kind))})")
    raise ExpmrcError(f"{path}: unknown dataset version {version!r} (it names none of {', '.join(subsets.names())}); "
                      "pass --subset to say which it is")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_text(value: Any) -> bool:
    """A string, or a number the leaderboard scores as its str()."""
    return isinstance(value, str) or _is_number(value)


def _texts(path: str, where: str, key: str, values: Any) -> list[Any]:
    """A non-empty list of strings or numbers (evidences, gold texts), refused otherwise in one line."""
    if not isinstance(values, list) or not values:
        raise ExpmrcError(f"{path}: {where}: `{key}` must be a non-empty list of strings, got {json_kind(values)}"
                          + (" that is empty" if isinstance(values, list) else ""))
    for i, value in enumerate(values):
        if not _is_text(value):
            raise ExpmrcError(f"{path}: {where}: `{key}`[{i}] must be a string, got {json_kind(value)}")
    return values


def span_questions(path: str, articles: list) -> Any:
    """Validate SQuAD-style `data` (read from `path`) and yield its questions in file order.

    A question id that is a JSON number is kept, but flagged: the leaderboard looks ids up in the
    submission's object, whose keys are strings, so such a question is never answered there.
    """
    numeric_ids: list[str] = []
    for a, article in enumerate(articles):
        if not isinstance(article, dict) or not isinstance(article.get("paragraphs"), list):
            raise ExpmrcError(f"{path}: data[{a}] must be an object with a `paragraphs` list")
        title = article.get("title")
        for p, para in enumerate(article["paragraphs"]):
            if not isinstance(para, dict) or not isinstance(para.get("qas"), list):
                raise ExpmrcError(f"{path}: data[{a}].paragraphs[{p}] must be an object with a `qas` list")
            context = para.get("context")
            if not isinstance(context, str):
                raise ExpmrcError(f"{path}: data[{a}].paragraphs[{p}]: `context` must be a string, "
                                  f"got {json_kind(context)}")
            for q, qa in enumerate(para["qas"]):
                where = f"data[{a}].paragraphs[{p}].qas[{q}]"
                if not isinstance(qa, dict) or "id" not in qa:
                    raise ExpmrcError(f"{path}: {where} must be an object with an `id`")
                raw_id = qa["id"]
                if not isinstance(raw_id, str) and not _is_number(raw_id):
                    raise ExpmrcError(f"{path}: {where}: `id` must be a string, got {json_kind(raw_id)}")
                qid = raw_id if isinstance(raw_id, str) else json.dumps(raw_id)
                if not isinstance(raw_id, str):
                    numeric_ids.append(qid)
                name = f"question {qid}"
                if not isinstance(qa.get("question"), str):
                    raise ExpmrcError(f"{path}: {name}: `question` must be a string, got {json_kind(qa.get('question'))}")
                answers, starts = _span_answers(path, name, qa.get("answers"), context)
                evidences = qa.get("evidences")
                if evidences is not None:
                    evidences = _texts(path, name, "evidences", evidences)
                yield SpanQuestion(
                    qid=qid,
                    question=qa["question"],
                    context=context,
                    answers=answers,
                    answer_starts=starts,
                    evidences=evidences,
                    title=title if isinstance(title, str) else "",
                    id_is_text=isinstance(raw_id, str),
                )
    if numeric_ids:
        warn(f"{path}: {len(numeric_ids)} question id(s) are JSON numbers, not strings (first: {numeric_ids[0]}); "
             "the leaderboard matches no prediction to them, so they score as unanswered")


def _span_answers(path: str, name: str, answers: Any, context: str) -> tuple[list[Any], list[int | None]]:
    """A span question's `answers` checked (a non-empty list of objects with a `text`): their texts, and their
    `answer_start`s (a character offset into `context`, -1 for unknown, None where absent)."""
    if not isinstance(answers, list) or not answers:
        raise ExpmrcError(f"{path}: {name}: `answers` must be a non-empty list of objects with `text`")
    starts = []
    for i, answer in enumerate(answers):
        if not isinstance(answer, dict) or not _is_text(answer.get("text")):
            got = json_kind(answer.get("text")) if isinstance(answer, dict) else json_kind(answer)
            raise ExpmrcError(f"{path}: {name}: answers[{i}] must be an object whose `text` is a "
                              f"string, got {got}")
        start = answer.get("answer_start")
        if start is not None and (not isinstance(start, int) or isinstance(start, bool)
                                  or not -1 <= start <= len(context)):
            raise ExpmrcError(f"{path}: {name}: answers[{i}].answer_start must be a character offset "
                              f"from 0 to {len(context)} (or -1 for unknown), got "
                              f"{start if _is_number(start) else json_kind(start)}")
        starts.append(start)
    return [x["text"] for x in answers], starts


def choice_questions(path: str, samples: list) -> Any:
    """Validate RACE/C3-style `data` (read from `path`) and yield its questions in file order."""
    for s, sample in enumerate(samples):
        if not isinstance(sample, dict):
            raise ExpmrcError(f"{path}: data[{s}] must be an object")
        pid = sample.get("id")
        if not isinstance(pid, str):
            raise ExpmrcError(f"{path}: data[{s}]: passage `id` must be a string (question ids are `<id>-<n>`), "
                              f"got {json_kind(pid)}")
        name = f"passage {pid}"
        for key in ("article", "questions", "options", "answers"):
            if key not in sample:
                raise ExpmrcError(f"{path}: {name} lacks `{key}`")
        article = sample["article"]
        if isinstance(article, list) and all(isinstance(x, str) for x in article):
            article = "\n".join(article)  # C3 keeps dialogue turns as a list of strings
        if not isinstance(article, str):
            raise ExpmrcError(f"{path}: {name}: `article` must be a string (or a list of strings), "
                              f"got {json_kind(article)}")
        questions, options, answers = sample["questions"], sample["options"], sample["answers"]
        for key, value in (("questions", questions), ("options", options), ("answers", answers)):
            if not isinstance(value, list):
                raise ExpmrcError(f"{path}: {name}: `{key}` must be a list, got {json_kind(value)}")
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
            where = f"question {qid}"
            if not isinstance(questions[j], str):
                raise ExpmrcError(f"{path}: {where}: the question must be a string, got {json_kind(questions[j])}")
            choices = options[j]
            if not isinstance(choices, list):
                raise ExpmrcError(f"{path}: {where}: options must be a list of strings, got {json_kind(choices)}")
            if len(choices) > len(LABELS):
                raise ExpmrcError(f"{path}: {where}: {len(choices)} options; at most {len(LABELS)} can be "
                                  f"labelled (A to {LABELS[-1]})")
            for k, option in enumerate(choices):
                if not _is_text(option):
                    raise ExpmrcError(f"{path}: {where}: option {LABELS[k]} must be a string, got {json_kind(option)}")
            label = answers[j]
            if not isinstance(label, str):  # one naming no option is kept: training skips and counts it
                raise ExpmrcError(f"{path}: {where}: the answer must be an option label such as \"A\", "
                                  f"got {json_kind(label)}")
            yield ChoiceQuestion(
                qid=qid,
                passage_id=pid,
                index=j,
                passage=article,
                question=questions[j],
                options=[str(o) for o in choices],
                answer=label,
                evidences=None if evidences is None else _texts(path, where, "evidences", evidences[j]),
            )


def gold_option_text(question: ChoiceQuestion) -> str | None:
    """The text of the gold option, or None when the label is outside the option list."""
    index = LABELS.find(question.answer) if len(question.answer) == 1 else -1
    if 0 <= index < len(question.options):
        return question.options[index]
    return None


def dataset_document(dataset: Dataset) -> dict[str, Any]:
    """The dataset's JSON cut to exactly its questions (a `Dataset` holding a prefix of its file's questions, as
    `--limit` makes), in the file's own format, so the official scorer scores exactly those questions."""
    keep = {q.qid for q in dataset.questions}
    raw = dataset.raw
    data: list[Any] = []
    if dataset.kind == "span":
        for article in raw["data"]:
            paragraphs = []
            for para in article["paragraphs"]:
                qas = [qa for qa in para["qas"] if (qa["id"] if isinstance(qa["id"], str) else json.dumps(qa["id"])) in keep]
                if qas:
                    paragraphs.append({**para, "qas": qas})
            if paragraphs:
                data.append({**article, "paragraphs": paragraphs})
    else:
        for sample in raw["data"]:
            kept = sum(f"{sample['id']}-{j}" in keep for j in range(len(sample["answers"])))
            if kept:
                data.append({**sample, **{key: sample[key][:kept] for key in ("questions", "options", "answers",
                                                                              "evidences") if key in sample}})
    return {**{k: v for k, v in raw.items() if k != "data"}, "data": data}
