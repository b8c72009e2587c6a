"""End-to-end scoring on small fixtures: the leaderboard's numbers, output format and bad input."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.common import CHOICE_DATA, SPAN_DATA, needs_punkt
from expmrc.data.datasets import load_dataset
from expmrc.errors import ExpmrcError
from expmrc.metrics.leaderboard import SHIPPED_NLTK_DATA
from expmrc.scoring.scorer import question_type, score

pytestmark = needs_punkt
ROOT = Path(__file__).resolve().parents[2]

SPAN_PRED = {
    "q1": {"answer": "Melbourne", "evidence": "Melbourne is the sporting capital of Australia."},
    "q2": {"answer": "Sydney is", "evidence": "Sydney"},
}
CHOICE_PRED = {
    "m1-0": {"answer": "A", "evidence": "小明去北京。"},
    "m1-1": {"answer": "B", "evidence": "喜欢长城"},
    "m2-0": {"answer": 1, "evidence": "天很蓝。"},
}


def run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd)


def test_span_numbers(write_json):
    report = score(load_dataset(write_json("d.json", SPAN_DATA)), SPAN_PRED)
    # q1: 1 x 1; q2: answer 2/3 ("Sydney is" vs "Sydney"), evidence 1/2; q3 missing: 0, skipped.
    assert report.official()["ANS_F1"] == "55.556"
    assert report.official()["EVI_F1"] == "50.000"
    assert report.official()["ALL_F1"] == "44.444"
    assert (report.total, report.skipped) == (3, 1)


def test_choice_numbers(write_json):
    report = score(load_dataset(write_json("d.json", CHOICE_DATA)), CHOICE_PRED)
    # answers: A right, B wrong, the number 1 never equals a label; evidences all match a reference.
    assert [q.answer for q in report.questions] == [1.0, 0.0, 0.0]
    assert [q.evidence for q in report.questions] == [1.0, 1.0, 1.0]
    assert report.official()["ANS_F1"] == "33.333"
    assert report.official()["EVI_F1"] == "100.000"
    assert report.official()["ALL_F1"] == "33.333"


def test_choice_without_evidences_scores_zero_evidence(write_json):
    data = json.loads(json.dumps(CHOICE_DATA))
    for sample in data["data"]:
        del sample["evidences"]
    report = score(load_dataset(write_json("d.json", data)), CHOICE_PRED)
    assert report.official()["EVI_F1"] == "0.000" and report.official()["ANS_F1"] == "33.333"


def test_eval_script_prints_the_leaderboard_line(write_json):
    dataset, pred = write_json("d.json", SPAN_DATA), write_json("p.json", SPAN_PRED)
    result = run("eval_expmrc.py", dataset, pred)
    assert result.returncode == 0, result.stderr
    line = result.stdout.strip()
    assert list(json.loads(line)) == ["ALL_F1", "ANS_F1", "EVI_F1", "TOTAL", "SKIP", "VERSION", "FILE"]
    assert line == ('{"ALL_F1": "44.444", "ANS_F1": "55.556", "EVI_F1": "50.000", "TOTAL": 3, "SKIP": 1, '
                    f'"VERSION": "expmrc-squad-dev", "FILE": "{pred}"}}')
    assert result.stderr.splitlines() == ["Unanswered question: q3"]


def test_bom_and_numbers_are_accepted(write_json):
    pred = {"q1": {"answer": 1990, "evidence": 2.5}}
    path = write_json("p.json", b"\xef\xbb\xbf" + json.dumps(pred).encode())
    result = run("eval_expmrc.py", write_json("d.json", SPAN_DATA), path)
    assert result.returncode == 0 and json.loads(result.stdout)["SKIP"] == 2


@pytest.mark.parametrize("content, message", [
    ("{\"q1\": {\"answer\": \"x\", ", "truncated"),
    ("not json at all", "not valid JSON"),
    ("", "empty"),
    ("[1, 2]", "must be a JSON object"),
    ('{"q1": "Melbourne"}', "question q1: prediction must be an object"),
    ('{"q1": {"answer": "x"}}', "question q1: prediction lacks `evidence`"),
    ('{"q1": {"evidence": "x"}}', "question q1: prediction lacks `answer`"),
    ('{"q1": {"answer": null, "evidence": "x"}}', "question q1: `answer` is null"),
    ('{"q2": {"answer": "x", "evidence": ["a"]}}', "question q2: `evidence` must be a string"),
])
def test_bad_prediction_files_end_in_one_line(write_json, content, message):
    dataset, pred = write_json("d.json", SPAN_DATA), write_json("p.json", content)
    for command in (["eval_expmrc.py"], ["-m", "expmrc.cli", "evaluate"]):
        result = run(*command, dataset, pred)
        assert result.returncode == 2
        assert result.stdout == ""
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: {pred}: ") and message in lines[0], result.stderr


@pytest.mark.parametrize("dataset, message", [
    ({"version": "v1.1", "data": []}, "unknown dataset version 'v1.1'"),
    ({"version": "expmrc-squad-dev", "data": []}, "holds no questions"),
    ({"version": "expmrc-squad-dev", "data": [{"title": "x"}]}, "data[0] must be an object with a `paragraphs` list"),
    ({"version": "expmrc-race-dev", "data": [{"id": "p", "article": "a", "questions": ["q"], "options": [],
                                               "answers": ["A"]}]}, "passage p: 1 questions, 0 option lists"),
    ([1], "must be a JSON object with a `data` list"),
])
def test_bad_dataset_files_end_in_one_line(write_json, dataset, message):
    path = write_json("d.json", dataset)
    result = run("eval_expmrc.py", path, write_json("p.json", SPAN_PRED))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().count("\n") == 0 and message in result.stderr, result.stderr


def test_unknown_version_can_be_overridden(write_json):
    data = dict(SPAN_DATA, version="my-copy")
    result = run("eval_expmrc.py", write_json("d.json", data), write_json("p.json", SPAN_PRED), "--subset", "squad")
    assert result.returncode == 0 and json.loads(result.stdout)["VERSION"] == "my-copy"


def test_unknown_ids_are_counted_not_fatal(write_json):
    pred = dict(SPAN_PRED, zzz={"answer": "x", "evidence": "y"})
    report = score(load_dataset(write_json("d.json", SPAN_DATA)), pred)
    assert report.unknown_ids == ["zzz"] and report.official()["ANS_F1"] == "55.556"
    result = run("-m", "expmrc.cli", "evaluate", write_json("d.json", SPAN_DATA), write_json("p.json", pred))
    assert result.returncode == 0 and "1 prediction id(s) not in the dataset" in result.stderr


def test_missing_file_is_one_line(tmp_path, write_json):
    result = run("eval_expmrc.py", write_json("d.json", SPAN_DATA), str(tmp_path / "nope.json"))
    assert result.returncode == 2 and result.stderr.strip() == f"error: {tmp_path / 'nope.json'}: prediction file not found"


def test_evaluate_several_pairs_json_and_details(write_json, tmp_path):
    details = tmp_path / "details.jsonl"
    result = run("-m", "expmrc.cli", "evaluate", write_json("s.json", SPAN_DATA), write_json("sp.json", SPAN_PRED),
                 write_json("c.json", CHOICE_DATA), write_json("cp.json", CHOICE_PRED), "--json", "--details", str(details))
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    span, choice = out["results"]
    assert (span["ANS_F1"], span["EVI_F1"], span["ALL_F1"], span["SKIP"]) == (55.556, 50.0, 44.444, 1)
    assert span["ANS_EM"] == pytest.approx(100 / 3, abs=1e-3)          # only q1 matches exactly
    assert (choice["ANS_F1"], choice["ANS_EM"]) == (33.333, 33.333)
    assert span["by_type"]["what"]["count"] == 1 and span["by_type"]["which"]["ALL_F1"] == pytest.approx(100 / 3, abs=1e-3)
    assert out["signature"].startswith("expmrc:") and "|nltk:" in out["signature"] and "|punkt:" in out["signature"]
    records = [json.loads(line) for line in details.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in records] == ["q1", "q2", "q3", "m1-0", "m1-1", "m2-0"]
    assert records[1]["answer"] == pytest.approx(2 / 3) and records[1]["best_evidence_reference"] == "Sydney is larger."
    assert records[2]["answered"] is False and records[2]["overall"] == 0


def test_details_carry_the_texts_beside_the_scores(write_json, tmp_path):
    details = tmp_path / "details.jsonl"
    result = run("-m", "expmrc.cli", "evaluate", write_json("s.json", SPAN_DATA), write_json("sp.json", SPAN_PRED),
                 write_json("c.json", CHOICE_DATA), write_json("cp.json", CHOICE_PRED), "--details", str(details))
    assert result.returncode == 0, result.stderr
    records = {r["id"]: r for r in map(json.loads, details.read_text(encoding="utf-8").splitlines())}
    q2 = records["q2"]
    assert (q2["question"], q2["predicted_answer"], q2["predicted_evidence"]) == ("Which city is larger?", "Sydney is",
                                                                                  "Sydney")
    assert (q2["best_answer_reference"], q2["best_evidence_reference"]) == ("Sydney", "Sydney is larger.")
    assert records["q3"]["question"] == "How many opens?" and records["q3"]["predicted_answer"] is None
    assert records["m1-1"]["question"] == "他喜欢什么？" and records["m1-1"]["predicted_evidence"] == "喜欢长城"
    assert records["m2-0"]["predicted_answer"] == 1   # kept as the submission gives it


def test_evaluate_text_report_has_signature(write_json):
    result = run("-m", "expmrc.cli", "evaluate", write_json("s.json", SPAN_DATA), write_json("sp.json", SPAN_PRED))
    assert result.returncode == 0 and "44.444" in result.stdout and "signature: expmrc:" in result.stdout


def test_odd_number_of_paths_is_refused(write_json):
    result = run("-m", "expmrc.cli", "evaluate", write_json("s.json", SPAN_DATA))
    assert result.returncode == 2 and "pairs" in result.stderr


def test_scoring_an_unvalidated_entry_raises_clearly(write_json):
    with pytest.raises(ExpmrcError, match="question q1: prediction lacks `answer`"):
        score(load_dataset(write_json("d.json", SPAN_DATA)), {"q1": {}}, "p.json")


@pytest.mark.parametrize("question, language, expected", [
    ("What city is it?", "en", "what"),
    ("In which year did he die?", "en", "which"),
    ("Whose car was stolen?", "en", "who"),
    ("How many people live there?", "en", "how many/much"),
    ("How did he do it?", "en", "how"),
    ("The passage is mainly about ____.", "en", "other"),
    ("为什么他要离开？", "zh", "why"),
    ("他什么时候出生？", "zh", "when"),
    ("公司在哪里？", "zh", "where"),
    ("哪个国家最大？", "zh", "which"),
    ("有多少人？", "zh", "how many/much"),
    ("谁写了这本书？", "zh", "who"),
    ("这是什么？", "zh", "what"),
    ("请说明原因。", "zh", "other"),
])
def test_question_types(question, language, expected):
    assert question_type(question, language) == expected


# eval_expmrc.py where NLTK's search finds no Punkt (its folders emptied) and the shipped copy is at argv[1]
WITHOUT_NLTKS_PUNKT = """
import runpy, sys
from pathlib import Path
import nltk
import expmrc.metrics.leaderboard as leaderboard
nltk.data.path[:] = []
leaderboard.SHIPPED_NLTK_DATA = Path(sys.argv[1])
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_without_nltk_data_the_shipped_punkt_scores_and_without_it_too_one_line_says_the_fix(write_json, tmp_path):
    import os
    env = {k: v for k, v in os.environ.items() if k != "NLTK_DATA"}
    env["HOME"] = str(tmp_path)  # NLTK also looks in ~/nltk_data
    argv = [str(ROOT / "eval_expmrc.py"), write_json("d.json", SPAN_DATA), write_json("p.json", SPAN_PRED)]
    shipped = subprocess.run([sys.executable, "-c", WITHOUT_NLTKS_PUNKT, str(SHIPPED_NLTK_DATA), *argv],
                             capture_output=True, text=True, cwd=ROOT, env=env)
    assert shipped.returncode == 0 and json.loads(shipped.stdout)["TOTAL"] == 3, shipped.stderr
    gone = tmp_path / "no-shipped-copy"
    result = subprocess.run([sys.executable, "-c", WITHOUT_NLTKS_PUNKT, str(gone), *argv], capture_output=True,
                            text=True, cwd=ROOT, env=env)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"error: NLTK's English Punkt data (tokenizers/punkt_tab/english/) is missing, and so is the copy this package "
        f"ships ({gone}): reinstall expmrc, run `python -m nltk.downloader punkt_tab` or point NLTK_DATA at a folder "
        "that holds it"]


def test_the_signature_names_the_metrics_and_mode_in_use(write_json):
    from expmrc.metrics.registry import select
    from expmrc.scoring.scorer import signature

    dataset = load_dataset(write_json("s.json", SPAN_DATA))
    plain = score(dataset, SPAN_PRED, metrics=[])
    with_loca = score(dataset, SPAN_PRED, metrics=select("loca,grounding", dataset))
    assert "metrics:" not in signature([plain]) and signature([plain]) == signature()
    assert "|f1:max-over-refs|metrics:loca+grounding|ci:x" in signature([with_loca], "ci:x")
    no_evidence = {**SPAN_DATA, "data": [{**a, "paragraphs": [{**p, "qas": [{k: v for k, v in qa.items() if k != "evidences"}
                                                                             for qa in p["qas"]]} for p in a["paragraphs"]]}
                                        for a in SPAN_DATA["data"]]}
    answers_only = score(load_dataset(write_json("n.json", no_evidence)), SPAN_PRED, metrics=[], answers_only=True)
    assert signature([answers_only]).endswith("|mode:answers-only")
