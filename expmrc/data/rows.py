"""ExpMRC datasets as flat rows, one per question, and back: what `expmrc export` writes and the
lm-evaluation-harness tasks read.

A row holds `id`, `subset`, `language`, `task` (span or choice), `context` (the passage), `question`,
`options` (empty for span), `answers` (`text` and `answer_start` lists: the gold texts and offsets for
span, the gold letter and no offset for choice) and `evidences` (null where the dataset has none), then
what it takes to rebuild the file exactly: `version`, `title` and `passage_id` (the article's title, the
paragraph's or passage's `id`; null where the file has none) and `position` (the question's place:
`data[article].paragraphs[paragraph].qas[question]`, or `data[article]` and its question index).
"""

from __future__ import annotations

from typing import Any
from collections.abc import Iterable

from expmrc.data.datasets import ChoiceQuestion, Dataset, Question, SpanQuestion

COLUMNS = ("id", "subset", "language", "task", "context", "question", "options", "answers", "evidences",
           "version", "title", "passage_id", "position")


def _texts(values: list[Any] | None) -> list[str] | None:
    """Text values as strings (a number the scorer reads as its str() is written as that string)."""
    return None if values is None else [str(v) for v in values]


def _common(dataset: Dataset, question: Question) -> dict[str, Any]:
    return {"id": question.qid, "subset": dataset.subset, "language": dataset.language, "task": dataset.kind,
            "question": question.question, "evidences": _texts(question.evidences), "version": dataset.version}


def _span_rows(dataset: Dataset) -> Iterable[dict[str, Any]]:
    """Rows of a SQuAD-style dataset, walking its file in the loader's order."""
    questions = iter(dataset.questions)
    for a, article in enumerate(dataset.raw["data"]):
        title = article.get("title")
        for p, paragraph in enumerate(article["paragraphs"]):
            passage_id = paragraph.get("id")
            for q in range(len(paragraph["qas"])):
                question = next(questions, None)
                if question is None:  # a dataset cut to its first questions (`--limit`)
                    return
                assert isinstance(question, SpanQuestion)
                yield {**_common(dataset, question), "context": question.context, "options": [],
                       "answers": {"text": _texts(question.answers), "answer_start": list(question.answer_starts)},
                       "title": None if title is None else str(title),
                       "passage_id": None if passage_id is None else str(passage_id),
                       "position": {"article": a, "paragraph": p, "question": q}}


def _choice_rows(dataset: Dataset) -> Iterable[dict[str, Any]]:
    """Rows of a RACE/C3-style dataset, one per question of each passage, walking its file in the loader's order."""
    questions = iter(dataset.questions)
    for a, sample in enumerate(dataset.raw["data"]):
        for _ in range(len(sample["answers"])):
            question = next(questions, None)
            if question is None:  # a dataset cut to its first questions (`--limit`)
                return
            assert isinstance(question, ChoiceQuestion)
            yield {**_common(dataset, question), "context": question.passage, "options": list(question.options),
                   "answers": {"text": [question.answer], "answer_start": []}, "title": None,
                   "passage_id": question.passage_id,
                   "position": {"article": a, "paragraph": 0, "question": question.index}}


def dataset_rows(dataset: Dataset) -> list[dict[str, Any]]:
    """One row per question of `dataset`, in file order (see the module docstring for the columns)."""
    rows = _span_rows(dataset) if dataset.kind == "span" else _choice_rows(dataset)
    return [{key: row[key] for key in COLUMNS} for row in rows]


def _span_question(row: dict[str, Any]) -> dict[str, Any]:
    starts = row["answers"]["answer_start"]
    answers = [{"text": text} if start is None else {"text": text, "answer_start": start}
               for text, start in zip(row["answers"]["text"], starts)]
    record: dict[str, Any] = {"id": row["id"], "question": row["question"], "answers": answers}
    if row["evidences"] is not None:
        record["evidences"] = list(row["evidences"])
    return record


def _span_document(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    articles: list[dict[str, Any]] = []
    for row in rows:
        where = row["position"]
        if where["article"] == len(articles):
            articles.append({"paragraphs": []} if row["title"] is None else {"title": row["title"], "paragraphs": []})
        paragraphs = articles[-1]["paragraphs"]
        if where["paragraph"] == len(paragraphs):
            paragraph = {"context": row["context"], "qas": []}
            paragraphs.append(paragraph if row["passage_id"] is None else {"id": row["passage_id"], **paragraph})
        paragraphs[-1]["qas"].append(_span_question(row))
    return articles


def _choice_document(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    passages: list[dict[str, Any]] = []
    for row in rows:
        if row["position"]["article"] == len(passages):
            passages.append({"id": row["passage_id"], "article": row["context"], "questions": [], "options": [],
                             "answers": [], **({} if row["evidences"] is None else {"evidences": []})})
        passage = passages[-1]
        passage["questions"].append(row["question"])
        passage["options"].append(list(row["options"]))
        passage["answers"].append(row["answers"]["text"][0])
        if "evidences" in passage:
            passage["evidences"].append(list(row["evidences"]))
    return passages


def document(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The ExpMRC JSON document that `rows` (of one subset, in their order) were made from."""
    rows = list(rows)
    if not rows:
        raise ValueError("no rows to rebuild a dataset from")
    data = _span_document(rows) if rows[0]["task"] == "span" else _choice_document(rows)
    return {"version": rows[0]["version"], "data": data}


def question_of(row: dict[str, Any]) -> Question:
    """The question a row describes, as the dataset loader would have read it."""
    if row["task"] == "span":
        return SpanQuestion(qid=row["id"], question=row["question"], context=row["context"],
                            answers=list(row["answers"]["text"]), answer_starts=list(row["answers"]["answer_start"]),
                            evidences=None if row["evidences"] is None else list(row["evidences"]),
                            title=row["title"] or "")
    return ChoiceQuestion(qid=row["id"], passage_id=row["passage_id"], index=row["position"]["question"],
                          passage=row["context"], question=row["question"], options=list(row["options"]),
                          answer=row["answers"]["text"][0],
                          evidences=None if row["evidences"] is None else list(row["evidences"]))


def first_difference(left: Any, right: Any, where: str = "") -> str | None:
    """The JSON path where two documents first differ (key order aside), or None when they are equal."""
    if isinstance(left, dict) and isinstance(right, dict):
        for key in list(left) + [k for k in right if k not in left]:
            if key not in left or key not in right:
                return f"{where}.{key}".lstrip(".") + (" (not exported)" if key in left else " (added)")
            found = first_difference(left[key], right[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(left, list) and isinstance(right, list) and len(left) == len(right):
        for i, (a, b) in enumerate(zip(left, right)):
            found = first_difference(a, b, f"{where}[{i}]")
            if found:
                return found
        return None
    same = left == right and type(left) is type(right)
    return None if same else (where.lstrip(".") or "the top level")
