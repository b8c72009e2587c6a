"""Training sets as released: SQuAD-style JSON, ExpMRC-style multiple choice, the original C3 files
(a JSON list of `[paragraphs, questions, id]`) and RACE (a folder of one JSON file per passage).

The two original multiple-choice formats are turned into ExpMRC's (`id`, `article`, `questions`,
`options`, `answers` as labels), which is what `expmrc pseudo` then writes out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from expmrc.data.datasets import LABELS, Dataset, choice_questions, load_dataset
from expmrc.data.io import read_json
from expmrc.errors import ExpmrcError


def load_training_set(path: str, subset: str) -> Dataset:
    """Load a training set in any of the formats above as a Dataset whose `raw` is ExpMRC-style."""
    if Path(path).is_dir():
        if subset != "race":
            raise ExpmrcError(f"{path}: is a folder; only RACE comes as a folder of passage files (--subset race)")
        return _dataset(path, subset, {"version": "race-train", "data": _race_folder(path)})
    if subset == "c3":
        doc = read_json(path, "training set")
        if isinstance(doc, list):
            return _dataset(path, subset, {"version": "c3-train", "data": [_c3_item(path, i, x) for i, x in enumerate(doc)]})
    return load_dataset(path, subset)


def _dataset(path: str, subset: str, doc: dict[str, Any]) -> Dataset:
    questions = list(choice_questions(path, doc["data"]))
    if not questions:
        raise ExpmrcError(f"{path}: training set holds no questions")
    return Dataset(path=path, version=doc["version"], subset=subset, questions=questions, raw=doc)


def _race_folder(path: str) -> list[dict[str, Any]]:
    """Every passage file under the folder (`*.txt` or `*.json`, sorted by path) as one sample."""
    files = sorted(p for p in Path(path).rglob("*") if p.is_file() and p.suffix in (".txt", ".json"))
    if not files:
        raise ExpmrcError(f"{path}: no RACE passage files (*.txt) in this folder")
    samples = []
    for file in files:
        sample = read_json(str(file), "RACE passage file")
        if not isinstance(sample, dict):
            raise ExpmrcError(f"{file}: a RACE passage file must hold one JSON object")
        sample.setdefault("id", str(file.relative_to(path)))
        samples.append(sample)
    return samples


def _c3_item(path: str, index: int, item: Any) -> dict[str, Any]:
    """One `[paragraphs, [{question, choice, answer}], id]` entry of the original C3 release."""
    if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], list) and isinstance(item[1], list)
            and isinstance(item[2], str)):
        raise ExpmrcError(f"{path}: entry {index} is not [paragraphs, questions, id] as in the C3 release")
    paragraphs, questions, pid = item
    if not all(isinstance(p, str) for p in paragraphs):
        raise ExpmrcError(f"{path}: passage {pid}: every paragraph must be a string")
    sample: dict[str, Any] = {"id": pid, "article": "\n".join(paragraphs), "questions": [], "options": [], "answers": []}
    for j, q in enumerate(questions):
        if not (isinstance(q, dict) and isinstance(q.get("question"), str) and isinstance(q.get("choice"), list)
                and q["choice"] and all(isinstance(c, str) for c in q["choice"]) and isinstance(q.get("answer"), str)):
            raise ExpmrcError(f"{path}: question {pid}-{j}: needs a `question` string, a `choice` list of strings "
                              "and an `answer` string")
        if len(q["choice"]) > len(LABELS):
            raise ExpmrcError(f"{path}: question {pid}-{j}: {len(q['choice'])} choices; at most {len(LABELS)} can be "
                              f"labelled (A to {LABELS[-1]})")
        if q["answer"] not in q["choice"]:
            raise ExpmrcError(f"{path}: question {pid}-{j}: answer {q['answer']!r} is none of its choices")
        sample["questions"].append(q["question"])
        sample["options"].append(list(q["choice"]))
        sample["answers"].append(LABELS[q["choice"].index(q["answer"])])
    return sample
