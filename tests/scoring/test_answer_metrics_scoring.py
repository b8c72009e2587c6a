"""The squad and cmrc2018 answer metrics through the scorer and `expmrc evaluate`: defaults, aggregation,
output, answers-only scoring of a dataset without evidences, and bad input."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.common import CHOICE_DATA, SPAN_DATA, dev_set, needs_punkt, official_cmrc2018_dev
from expmrc.data.datasets import SpanQuestion, load_dataset
from expmrc.errors import ExpmrcError
from expmrc.metrics.registry import METRICS, select
from expmrc.scoring.scorer import score

pytestmark = needs_punkt
ROOT = Path(__file__).resolve().parents[2]

CMRC_DATA = {"version": "expmrc-cmrc2018-dev", "data": [{"paragraphs": [{"context": "北京和上海市。", "qas": [
    {"id": "c1", "question": "哪里？", "answers": [{"text": "北京"}, {"text": "北京市"}], "evidences": ["北京和上海市。"]},
    {"id": "c2", "question": "哪里？", "answers": [{"text": "上海市"}], "evidences": ["北京和上海市。"]},
    {"id": "c3", "question": "哪里？", "answers": [{"text": "北京"}], "evidences": ["北京和上海市。"]},
]}]}]}
CMRC_PRED = {"c1": {"answer": "《北京》", "evidence": "北京和上海市。"},  # EM 1, F1 1
             "c2": {"answer": "上海", "evidence": "上海市"}}              # EM 0, F1 0.8; c3 left out


def evaluate(*args):
    return subprocess.run([sys.executable, "-m", "expmrc.cli", "evaluate", *args], capture_output=True, text=True,
                          cwd=ROOT)


def test_each_is_on_by_default_for_its_own_subset_only(write_json):
    squad = [m.name for m in select(None, load_dataset(write_json("s.json", SPAN_DATA)))]
    cmrc = [m.name for m in select(None, load_dataset(write_json("c.json", CMRC_DATA)))]
    choice = [m.name for m in select(None, load_dataset(write_json("m.json", CHOICE_DATA)))]
    assert "squad" in squad and "cmrc2018" not in squad
    assert "cmrc2018" in cmrc and "squad" not in cmrc
    assert "squad" not in choice and "cmrc2018" not in choice
    assert METRICS["cmrc2018"].keys == ("CMRC2018_EM", "CMRC2018_F1", "CMRC2018_AVERAGE")
    assert METRICS["squad"].keys == ("SQUAD_EM", "SQUAD_F1")


def test_a_left_out_question_counts_zero_and_average_is_the_mean(write_json):
    report = score(load_dataset(write_json("c.json", CMRC_DATA)), CMRC_PRED, "p.json", [METRICS["cmrc2018"]])
    figures = report.extra_figures()
    assert figures["CMRC2018_EM"] == pytest.approx(100 / 3)
    assert figures["CMRC2018_F1"] == pytest.approx(100 * 1.8 / 3)
    assert figures["CMRC2018_AVERAGE"] == pytest.approx((100 / 3 + 60) / 2)
    assert report.skipped == 1


def test_the_leaderboard_figures_do_not_move_when_they_are_on(write_json):
    for data, pred in ((CMRC_DATA, CMRC_PRED), (SPAN_DATA, {"q1": {"answer": "the Melbourne", "evidence": "x"}})):
        dataset = load_dataset(write_json("d.json", data))
        plain = score(dataset, pred, "p.json")
        both = score(dataset, pred, "p.json", [METRICS["squad"], METRICS["cmrc2018"]])
        assert plain.official() == both.official()
        assert [q.answer for q in plain.questions] == [q.answer for q in both.questions]


@pytest.mark.data
@pytest.mark.parametrize("subset", ["squad", "cmrc2018"])
def test_the_leaderboard_figures_do_not_move_on_the_dev_sets(subset):
    dataset = load_dataset(dev_set(subset))
    pred = {q.qid: {"answer": q.answers[-1][:4], "evidence": q.context[:60]} for q in dataset.questions[::2]}
    plain = score(dataset, pred, "p.json").official()
    with_metrics = score(dataset, pred, "p.json", [METRICS["squad"], METRICS["cmrc2018"]])
    assert with_metrics.official() == plain
    assert 0 < with_metrics.extra_figures()["SQUAD_F1"] < 100


def test_evaluate_json_text_and_details_carry_them(write_json, tmp_path):
    data, pred = write_json("c.json", CMRC_DATA), write_json("p.json", CMRC_PRED)
    details = tmp_path / "d.jsonl"
    out = evaluate(data, pred, "--metrics", "squad,cmrc2018", "--json", "--details", str(details))
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)["results"][0]
    assert (result["CMRC2018_EM"], result["CMRC2018_F1"], result["CMRC2018_AVERAGE"]) == (33.333, 60.0, 46.667)
    # SQuAD's rules on Chinese: no spaces, so each answer is one word; 《》 are not ASCII punctuation
    assert (result["SQUAD_EM"], result["SQUAD_F1"]) == (0.0, 0.0)
    assert "LOCA" not in result  # --metrics replaces the defaults
    records = [json.loads(line) for line in details.read_text(encoding="utf-8").splitlines()]
    assert records[0]["extra"]["cmrc2018"] == {"em": 1.0, "f1": 1.0}
    assert records[1]["extra"]["cmrc2018"] == {"em": 0.0, "f1": pytest.approx(0.8)}
    assert records[2]["extra"] == {} and not records[2]["answered"]
    text = evaluate(data, pred, "--metrics", "cmrc2018")
    assert text.returncode == 0, text.stderr
    assert "CMRC2018_EM 33.333, CMRC2018_F1 60.000, CMRC2018_AVERAGE 46.667" in text.stdout


def test_numbers_as_answers_are_scored_as_text_with_a_note(write_json):
    data = write_json("s.json", SPAN_DATA)
    out = evaluate(data, write_json("p.json", {"q1": {"answer": 7, "evidence": "x"}}), "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)["results"][0]
    assert result["SQUAD_EM"] == 0.0
    assert any("squad: 1 answer(s) are not strings" in note for note in result["notes"])


def _without_evidences(data: dict) -> dict:
    data = json.loads(json.dumps(data))
    data["version"] = "v1.0"
    for qa in data["data"][0]["paragraphs"][0]["qas"]:
        del qa["evidences"]
    return data


def test_a_dataset_without_evidences_gets_answer_figures_and_absent_evidence(write_json):
    data, pred = write_json("c.json", _without_evidences(CMRC_DATA)), write_json("p.json", CMRC_PRED)
    out = evaluate(data, pred, "--subset", "cmrc2018", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)["results"][0]
    assert (result["EVI_F1"], result["ALL_F1"]) == (None, None)
    assert result["ANS_F1"] == pytest.approx(100 * 1.8 / 3, abs=1e-3) and result["CMRC2018_EM"] == 33.333
    assert all(v["EVI_F1"] is None and v["ALL_F1"] is None for v in result["by_type"].values())
    text = evaluate(data, pred, "--subset", "cmrc2018")
    assert text.returncode == 0, text.stderr
    row = text.stdout.splitlines()[1].split()
    assert row[4:6] == ["n/a", "n/a"] and "has no gold evidences" in text.stdout
    # the leaderboard's own script still stops, as the leaderboard does
    stopped = subprocess.run([sys.executable, "eval_expmrc.py", data, pred, "--subset", "cmrc2018"],
                             capture_output=True, text=True, cwd=ROOT)
    assert stopped.returncode == 2 and "has no `evidences`" in stopped.stderr


def test_a_dataset_with_evidences_on_some_questions_only_is_refused(write_json):
    data = json.loads(json.dumps(CMRC_DATA))
    del data["data"][0]["paragraphs"][0]["qas"][1]["evidences"]
    dataset = load_dataset(write_json("c.json", data))
    with pytest.raises(ExpmrcError, match=r"c\.json: question c2 has no `evidences` while others have"):
        score(dataset, CMRC_PRED, "p.json", answers_only=True)


@pytest.mark.parametrize("dataset, metrics, message", [
    (CHOICE_DATA, "squad", r"m\.json: metric squad applies to span data, this is c3 \(choice\)"),
    (CMRC_DATA, "cmrc2018,bleu", r"unknown metric 'bleu'; choose one of .*squad, cmrc2018"),
    (CMRC_DATA, "CMRC2018", r"unknown metric 'CMRC2018'"),
])
def test_bad_metric_choices_are_one_line_exit_2(write_json, dataset, metrics, message):
    out = evaluate(write_json("m.json", dataset), write_json("p.json", {}), "--metrics", metrics)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("error: ")
    assert re.search(message, out.stderr), out.stderr


def test_a_span_dataset_without_gold_answers_is_one_line_exit_2(write_json):
    data = json.loads(json.dumps(CMRC_DATA))
    data["data"][0]["paragraphs"][0]["qas"][0]["answers"] = []
    out = evaluate(write_json("c.json", data), write_json("p.json", CMRC_PRED), "--metrics", "cmrc2018")
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "question c1: `answers` must be a non-empty list" in out.stderr


@pytest.mark.data
def test_the_original_cmrc2018_dev_set_through_evaluate(tmp_path):
    path = official_cmrc2018_dev()
    dataset = load_dataset(path, "cmrc2018")
    assert len(dataset.questions) == 3219 and all(isinstance(q, SpanQuestion) for q in dataset.questions)
    pred = {q.qid: {"answer": q.answers[2], "evidence": ""} for q in dataset.questions}
    (tmp_path / "p.json").write_text(json.dumps(pred, ensure_ascii=False), encoding="utf-8")
    out = evaluate(path, str(tmp_path / "p.json"), "--subset", "cmrc2018", "--metrics", "cmrc2018", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)["results"][0]
    # the third annotation against all three: the first two never beat its own copy
    assert (result["CMRC2018_EM"], result["CMRC2018_F1"], result["TOTAL"]) == (100.0, 100.0, 3219)
    assert (result["EVI_F1"], result["ALL_F1"]) == (None, None)
