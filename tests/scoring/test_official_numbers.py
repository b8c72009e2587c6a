"""The scorer is the ruler: its numbers are the official script's to the last digit, on every dev set.

Pinned below, for three submissions on each of the four dev sets, are the official eval_expmrc.py's unrounded ALL_F1,
ANS_F1 and EVI_F1 (its `evaluate_span` / `evaluate_multi_choice`) and a digest of its per-question answer and evidence
scores (its `calc_f1_score` and label comparison, question by question in file order), computed by the official script
itself (github.com/ymcui/expmrc at 21e39a1) under NLTK 3.10.4 with its English punkt_tab tables. The scorer must give
the very same floats, so any speed-up of tokenization or F1 that changes a single bit fails here.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from helpers.common import ROOT, dev_set, needs_punkt

from expmrc.data.datasets import load_dataset
from expmrc.metrics.leaderboard import nltk_tokenizer
from expmrc.scoring.scorer import score

pytestmark = [needs_punkt, pytest.mark.data]

PINNED_NLTK = "3.10.4"
OFFICIAL = {
    ("squad", "sample"): ((83.05658194167121, 100.0, 83.05658194167121), "75f273ca569639b6"),
    ("squad", "head"): ((40.873191665043, 100.0, 40.873191665043), "c023650906abed38"),
    ("squad", "other"): ((1.7005744932869638, 5.852676482948444, 30.23268811857442), "32f1007b8cd0edfb"),
    ("cmrc2018", "sample"): ((76.177050959063, 100.0, 76.177050959063), "5e7e6a33566dfaa3"),
    ("cmrc2018", "head"): ((26.844984747907443, 100.0, 26.844984747907443), "0d4a40bdf217b020"),
    ("cmrc2018", "other"): ((2.137849095129242, 9.353228625040979, 23.35760100111817), "4fc801762260e6ac"),
    ("race", "sample"): ((50.6563298691833, 100.0, 50.6563298691833), "182874fff37dc01c"),
    ("race", "head"): ((22.970385852450967, 100.0, 22.970385852450967), "04fe74c1585a4db9"),
    ("race", "other"): ((8.50044982044554, 26.55971479500891, 24.484551739976194), "5170349c8a5fcd07"),
    ("c3", "sample"): ((67.63250150475677, 100.0, 67.63250150475677), "b74249673eb149bb"),
    ("c3", "head"): ((22.80429890453882, 100.0, 22.80429890453882), "64d70bb248f0f720"),
    ("c3", "other"): ((9.892339428254722, 23.564356435643564, 32.90068016271165), "85a48f5ae6ec7b02"),
}


def submissions(subset: str, data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The sample submission; the gold answers with the passage's first 300 characters as evidence (what
    benchmarks/bench_scoring.py scores); and partly right ones: a span question's own text as its answer with the
    passage's last 200 characters as evidence, option B with the question and that option as evidence."""
    found = {"sample": json.loads((ROOT / "sample_submission" / f"{subset}.json").read_text(encoding="utf-8"))}
    head: dict[str, Any] = {}
    other: dict[str, Any] = {}
    if subset in ("squad", "cmrc2018"):
        for paragraph in (p for article in data["data"] for p in article["paragraphs"]):
            for qa in paragraph["qas"]:
                head[qa["id"]] = {"answer": qa["answers"][0]["text"], "evidence": paragraph["context"][:300]}
                other[qa["id"]] = {"answer": qa["question"], "evidence": paragraph["context"][-200:]}
    else:
        for sample in data["data"]:
            for j, answer in enumerate(sample["answers"]):
                head[f"{sample['id']}-{j}"] = {"answer": answer, "evidence": sample["article"][:300]}
                other[f"{sample['id']}-{j}"] = {"answer": "B",
                                                "evidence": sample["questions"][j] + " " + sample["options"][j][1]}
    return {**found, "head": head, "other": other}


@pytest.mark.parametrize("subset", ["squad", "cmrc2018", "race", "c3"])
def test_every_score_is_the_official_scripts_to_the_last_bit(subset):
    if nltk_tokenizer().version != PINNED_NLTK:
        pytest.skip(f"the official numbers were pinned under NLTK {PINNED_NLTK}, this is {nltk_tokenizer().version}")
    path = dev_set(subset)
    dataset = load_dataset(path)
    with open(path, "rb") as handle:
        data = json.load(handle)
    for name, predictions in submissions(subset, data).items():
        report = score(dataset, predictions, metrics=[])
        per_question = "\n".join(f"{q.answer!r} {q.evidence!r}" for q in report.questions)
        figures = (report.mean("overall"), report.mean("answer"), report.mean("evidence"))
        assert (figures, hashlib.sha256(per_question.encode()).hexdigest()[:16]) == OFFICIAL[subset, name], name
