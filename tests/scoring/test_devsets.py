"""Integration on the official dev sets (skipped without EXPMRC_DATA)."""

import json
import subprocess
import sys

import pytest

from helpers.common import dev_set, needs_punkt
from expmrc.data.datasets import SpanQuestion, gold_option_text, load_dataset, passage_of
from expmrc.scoring.scorer import score

pytestmark = needs_punkt

SIZES = {"squad": 501, "cmrc2018": 515, "race": 561, "c3": 505}


@pytest.mark.data
@pytest.mark.parametrize("subset", list(SIZES))
def test_gold_answers_and_first_evidence_score_100(subset):
    dataset = load_dataset(dev_set(subset))
    assert len(dataset.questions) == SIZES[subset]
    predictions = {}
    for q in dataset.questions:
        answer = q.answers[0] if isinstance(q, SpanQuestion) else q.answer
        if not isinstance(q, SpanQuestion):
            assert gold_option_text(q) is not None
        predictions[q.qid] = {"answer": answer, "evidence": q.evidences[0]}
    official = score(dataset, predictions).official()
    assert (official["ANS_F1"], official["EVI_F1"], official["ALL_F1"]) == ("100.000", "100.000", "100.000")
    assert official["TOTAL"] == SIZES[subset] and official["SKIP"] == 0


@pytest.mark.data
def test_all_four_in_one_evaluate_call(tmp_path):
    args = []
    for subset in SIZES:
        dataset = load_dataset(dev_set(subset))
        # answer right, evidence = the whole passage: a realistic weak baseline
        preds = {q.qid: {"answer": q.answers[0] if isinstance(q, SpanQuestion) else "A",
                         "evidence": q.context if isinstance(q, SpanQuestion) else q.passage}
                 for q in dataset.questions}
        path = tmp_path / f"{subset}.json"
        path.write_text(json.dumps(preds, ensure_ascii=False), encoding="utf-8")
        args += [subset, str(path)]
    result = subprocess.run([sys.executable, "-m", "expmrc.cli", "evaluate", *args, "--json"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    results = json.loads(result.stdout)["results"]
    assert [r["subset"] for r in results] == list(SIZES)
    assert results[0]["ANS_F1"] == 100.0 and 0 < results[0]["EVI_F1"] < 60


@pytest.mark.data
def test_every_gold_evidence_of_the_four_dev_sets_is_passage_text_verbatim():
    """docs/report.md relies on it: the page finds each gold evidence at its first verbatim occurrence."""
    evidences = [(q.qid, str(e), passage_of(q)) for subset in SIZES for q in load_dataset(dev_set(subset)).questions
                 for e in q.evidences or []]
    assert len(evidences) == 5650 and [qid for qid, e, passage in evidences if e not in passage] == []
