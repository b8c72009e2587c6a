"""Submissions: the one reader of prediction files and the one writer of what a run predicts.

A submission maps question ids to `{"answer": ..., "evidence": ...}`, as the leaderboard reads it;
`answer_start` and `evidence_start` (character offsets into the passage) may be added and are used
where a metric needs to know *where* a text lies. Answers and evidences that are numbers are kept as
given and scored as their `str()`, as the leaderboard does; null, arrays and objects are refused.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from expmrc.data.io import read_json, write_json_atomic
from expmrc.data.runs import NBEST_FILE, PREDICTIONS_FILE
from expmrc.errors import ExpmrcError

SCALAR_TYPES = (str, int, float)  # bool is an int: scored as str(True) == "True", as the leaderboard does


@dataclass(frozen=True)
class Prediction:
    """One question's prediction as the submission gives it."""

    answer: str | int | float
    evidence: str | int | float
    answer_start: int | None = None
    evidence_start: int | None = None


def load_submission(path: str) -> dict[str, Any]:
    """A prediction file's JSON object (question id -> entry), entries not yet checked."""
    doc = read_json(path, "prediction file")
    if not isinstance(doc, dict):
        kind = "array" if isinstance(doc, list) else type(doc).__name__
        raise ExpmrcError(f"{path}: prediction file must be a JSON object mapping question ids to predictions, "
                          f"got a JSON {kind}")
    return doc


def _offset(path: str, qid: str, entry: dict, key: str) -> int | None:
    value = entry.get(key)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
        raise ExpmrcError(f"{path}: question {qid}: `{key}` must be a non-negative integer")
    return value


def parse_prediction(path: str, qid: str, entry: Any) -> Prediction:
    """One entry of a submission, refusing the shapes the leaderboard would crash on."""
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
    return Prediction(entry["answer"], entry["evidence"], _offset(path, qid, entry, "answer_start"),
                      _offset(path, qid, entry, "evidence_start"))


def read_answers(path: str, qids: list[str]) -> dict[str, tuple[str, int | None]]:
    """qid -> (answer, answer_start or None) for every id in `qids`, from a submission or `{qid: answer}`.

    This is what an evidence method explains: only the answers are read, and each of `qids` must have one.
    """
    doc = load_submission(path)
    answers: dict[str, tuple[str, int | None]] = {}
    missing = []
    for qid in qids:
        if qid not in doc:
            missing.append(qid)
            continue
        entry, start = doc[qid], None
        if isinstance(entry, dict):
            if "answer" not in entry:
                raise ExpmrcError(f"{path}: question {qid}: prediction lacks `answer`")
            start = _offset(path, qid, entry, "answer_start")
            entry = entry["answer"]
        if entry is None or isinstance(entry, (list, dict, bool)):
            raise ExpmrcError(f"{path}: question {qid}: the answer must be a string")
        answers[qid] = (str(entry), start)
    if missing:
        raise ExpmrcError(f"{path}: no answer for {len(missing)} of {len(qids)} questions "
                          f"(first: {missing[0]}); give every question an answer")
    return answers


def write_predictions(output_dir: str, predictions: dict[str, dict[str, Any]], nbest: dict[str, Any]) -> None:
    """Write a run's n-best lists, then its submission, each atomically, into `output_dir`."""
    write_json_atomic(os.path.join(output_dir, NBEST_FILE), nbest, indent=1)
    write_json_atomic(os.path.join(output_dir, PREDICTIONS_FILE), predictions, indent=1)
