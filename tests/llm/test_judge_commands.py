"""Where the support rate appears besides `expmrc judge`: `evaluate --judge` beside the scores, `compare --judge` with
a paired test of two systems' rates, `llm --judge` after grounding (scores.json, responses.jsonl, run_info.json),
`report --judge-details` beside each evidence, and `collect` (training runs' support.json, the LLM runs' table).
The judge is a scripted chat server that knows the gold evidence, or the tiny random NLI model."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.common import needs_punkt
from helpers.fake_openai import FakeChatServer
from helpers.hostile import assert_refused, run_cli
from helpers.judge_data import gold_judge, write_many, write_submission
from helpers.llm_data import gold_reply, read_run, run_llm
from helpers.tiny_nli import make_tiny_nli_folder

from expmrc.data.datasets import load_dataset

pytestmark = needs_punkt  # the scorer's English tokenizer: evaluate, compare, llm, report and collect all score


def chat_flags(url: str, cache: Path) -> list[str]:
    return ["--judge", "chat", "--judge-model", "fake-model", "--judge-base-url", url, "--judge-cache", str(cache)]


def test_evaluate_adds_the_support_rate_and_each_questions_label(tmp_path):
    dataset = write_many(tmp_path, "race", 8)
    gold, other = write_submission(tmp_path, dataset), write_submission(tmp_path, dataset, "other", "other.json")
    with FakeChatServer(gold_judge(dataset)) as server:
        status, out, err = run_cli(["evaluate", dataset, gold, dataset, other, "--json", "--details",
                                    str(tmp_path / "d.jsonl"), *chat_flags(server.url, tmp_path / "c.sqlite")])
        text = run_cli(["evaluate", dataset, gold, *chat_flags(server.url, tmp_path / "c.sqlite")])
    assert status == 0, err
    results = json.loads(out)["results"]
    assert [r["support"]["rate"] for r in results] == [100.0, 0.0]
    assert results[0]["support"]["check"]["gap"] == 100.0 and results[0]["ANS_F1"] == 100.0
    lines = [json.loads(line) for line in (tmp_path / "d.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [line["support"]["label"] for line in lines] == ["supported"] * 8 + ["not-supported"] * 8
    assert text[0] == 0 and "support 100.0% [100.0, 100.0]" in text[1] and "support signature: " in text[1]
    assert "judge check: gold evidence supported 100.0% of 8, another passage sentence 0.0% of 8" in text[1]


def test_compare_tests_two_systems_support_rates_paired(tmp_path):
    dataset = write_many(tmp_path, "cmrc2018", 30)
    gold, other = write_submission(tmp_path, dataset), write_submission(tmp_path, dataset, "other", "other.json")
    with FakeChatServer(gold_judge(dataset)) as server:
        status, out, err = run_cli(["compare", dataset, gold, other, "--json", *chat_flags(server.url,
                                                                                           tmp_path / "c.sqlite")])
        asked = len(server.requests)
    assert status == 0, err
    support = json.loads(out)["systems"][0]["scores"]["SUPPORT"]
    assert support["baseline"] == 100.0 and support["system"] == 0.0 and support["delta"] == -100.0
    assert support["ci"] == [-100.0, -100.0] and support["p"] < 0.01
    assert json.loads(out)["support_check"]["gap"] == 100.0
    assert asked == len({(b["messages"][0]["content"]) for b in server.requests})  # each pair once for both


def test_evaluate_without_a_judge_model_is_one_line(tmp_path):
    dataset = write_many(tmp_path, "c3", 2)
    status, _, err = run_cli(["evaluate", dataset, write_submission(tmp_path, dataset), "--judge", "nli"])
    assert_refused(status, err, "--judge nli needs --judge-model")


@pytest.mark.parametrize("subset", ["squad", "cmrc2018"])  # questions of distinct texts: gold_reply finds each
def test_llm_judges_the_grounded_run_and_collect_and_report_carry_it(tmp_path, subset):
    dataset = write_many(tmp_path, subset, 4)
    with FakeChatServer(gold_reply(dataset)) as answers, FakeChatServer(gold_judge(dataset)) as judge:
        assert run_llm(tmp_path, dataset, answers.url, *chat_flags(judge.url, tmp_path / "j.sqlite")) == 0
    run = tmp_path / "run"
    scores, records = read_run(run, "scores.json"), read_run(run, "responses.jsonl")
    assert scores["support"]["rate"] == 100.0 and scores["support"]["check"]["gap"] == 100.0
    assert [r["support"]["label"] for r in records] == ["supported"] * 4
    assert all(r["support"]["grounding"] == r["grounding"]["evidence"]["status"] for r in records)
    assert read_run(run, "run_info.json")["support_signature"] == scores["support"]["signature"]
    status, _, err = run_cli(["collect", str(run), "--output-dir", str(tmp_path / "out"), "--quiet"])
    assert status == 0, err
    table = (tmp_path / "out" / "llm_runs.md").read_text(encoding="utf-8")
    assert "| support % |" in table and "| 100.0 (check gap 100) |" in table
    status, _, err = run_cli(["report", dataset, str(run / "grounded.json"), "--output", str(tmp_path / "r.html")])
    assert status == 0, err
    page = page_data(tmp_path / "r.html")
    assert [q["subs"][0]["extra"]["llm"]["support"] for q in page["questions"]] == ["supported"] * 4


def page_data(path: Path) -> dict:
    html = path.read_text(encoding="utf-8")
    return json.loads(re.search(r'<script[^>]*id="report-data"[^>]*>(.*?)</script>', html, re.S).group(1))


def test_report_shows_each_label_beside_its_evidence_and_the_rate(tmp_path):
    dataset = write_many(tmp_path, "race", 6)
    gold, other = write_submission(tmp_path, dataset), write_submission(tmp_path, dataset, "other", "other.json")
    with FakeChatServer(gold_judge(dataset)) as server:
        for name, path in (("a", gold), ("b", other)):
            status, _, err = run_cli(["judge", dataset, path, "--judge", "chat", "--judge-model", "fake-model",
                                      "--base-url", server.url, "--cache", str(tmp_path / "c.sqlite"), "--quiet",
                                      "--details", str(tmp_path / f"{name}.jsonl")])
            assert status == 0, err
    status, _, err = run_cli(["report", dataset, gold, other, "--output", str(tmp_path / "r.html"),
                              "--judge-details", str(tmp_path / "a.jsonl"), "--judge-details", str(tmp_path / "b.jsonl")])
    assert status == 0, err
    page = page_data(tmp_path / "r.html")
    assert [[s["support"]["label"] for s in q["subs"]] for q in page["questions"]] == [["supported", "not-supported"]] * 6
    assert all(q["subs"][0]["support"]["reply"] for q in page["questions"])
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert re.search(r"<th scope=\"row\">SUPPORT</th><td>100\.000</td><td>0\.000</td><td class=\"diff\">-100\.000", html)
    cmrc = write_many(tmp_path, "cmrc2018", 6)
    status, _, err = run_cli(["report", dataset, gold, "--output", str(tmp_path / "x.html"),
                              "--judge-details", write_submission(tmp_path, cmrc, name="not-details.json")])
    assert_refused(status, err, "not-details.json: line 1: not a record of `expmrc judge --details`")
    lines = (tmp_path / "a.jsonl").read_text(encoding="utf-8").splitlines()
    (tmp_path / "part.jsonl").write_text("\n".join(lines[:3]) + "\n", encoding="utf-8")
    status, _, err = run_cli(["report", dataset, gold, "--output", str(tmp_path / "x.html"),
                              "--judge-details", str(tmp_path / "part.jsonl")])
    assert_refused(status, err, "covers 3 of the 6 questions")
    assert not (tmp_path / "x.html").exists()


def make_training_run(folder: Path, dataset: str, predictions: str, seed: int) -> Path:
    folder.mkdir(parents=True)
    info = {"task": "span", "task_name": "squad", "predict_file": dataset, "train_file": "train.json",
            "loss_lambda": 0.1, "rand_seed": seed, "model": "models/tiny", "status": "finished", "global_step": 4,
            "flags": {}}
    (folder / "run_info.json").write_text(json.dumps(info), encoding="utf-8")
    (folder / "dev_predictions.json").write_text(Path(predictions).read_text(encoding="utf-8"), encoding="utf-8")
    return folder


def test_collect_reads_each_training_runs_support_json(tmp_path):
    dataset = write_many(tmp_path, "squad", 6)
    runs = [make_training_run(tmp_path / "sweep" / f"seed_{k}", dataset, write_submission(
        tmp_path, dataset, evidence, f"{evidence}.json"), k) for k, evidence in ((1, "gold"), (2, "other"), (3, "gold"))]
    with FakeChatServer(gold_judge(dataset)) as server:
        for run in runs[:2]:
            status, _, err = run_cli(["judge", dataset, str(run / "dev_predictions.json"), "--judge", "chat",
                                      "--judge-model", "fake-model", "--base-url", server.url, "--quiet",
                                      "--cache", str(tmp_path / "c.sqlite"), "--output", str(run / "support.json")])
            assert status == 0, err
    (runs[2] / "support.json").write_text((runs[1] / "support.json").read_text(encoding="utf-8"), encoding="utf-8")
    status, out, err = run_cli(["collect", str(tmp_path / "sweep"), "--output-dir", str(tmp_path / "out"),
                                "--format", "md,csv"])
    assert status == 0, err
    assert "SQuAD Support" in out
    rows = (tmp_path / "out" / "runs.csv").read_text(encoding="utf-8").splitlines()
    support = {row.split(",")[0].rsplit("/", 1)[-1]: row.split(",")[rows[0].split(",").index("support")]
               for row in rows[1:]}
    assert support == {"seed_1": "100.000", "seed_2": "0.000", "seed_3": ""}  # seed_3's judged other predictions
    assert "judged other predictions than the run's dev_predictions.json" in out + err + \
        (tmp_path / "out" / "table3.md").read_text(encoding="utf-8")
    assert load_dataset(dataset).subset == "squad"


def test_llm_judge_with_export_batch_is_one_line(tmp_path):
    dataset = write_many(tmp_path, "c3", 2)
    nli = make_tiny_nli_folder(tmp_path / "nli")
    status, _, err = run_cli(["llm", dataset, "--model", "m", "--export-batch", str(tmp_path / "b.jsonl"),
                              "--judge", "nli", "--judge-model", str(nli)])
    assert_refused(status, err, "--judge with --export-batch")
