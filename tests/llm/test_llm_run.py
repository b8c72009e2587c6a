"""`expmrc llm` end to end against a real HTTP server on 127.0.0.1 that answers as scripted: outputs, scores,
the cache, retries, Batch files, shots and every bad input the issue names (one line, exit 2)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from helpers.common import environment, needs_punkt
from helpers.fake_openai import FakeChatServer
from helpers.llm_data import (DATASETS, cached_rows, gold_reply, official_scores, read_run, run_llm,
                              write_dataset, write_training)

from expmrc.cli import main
from expmrc.data.datasets import load_dataset

SECRET = "sk-test-secret-0123456789"


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


@pytest.mark.parametrize("subset", [pytest.param("squad", marks=needs_punkt), "cmrc2018",
                                    pytest.param("race", marks=needs_punkt), "c3"])
def test_a_run_writes_a_complete_scored_grounded_record(tmp_path, subset, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    path = write_dataset(tmp_path, subset)
    with FakeChatServer(gold_reply(path), key=SECRET) as server:
        assert run_llm(tmp_path, path, server.url) == 0
    run = tmp_path / "run"
    assert sorted(os.listdir(run)) == ["grounded.json", "predictions.json", "responses.jsonl", "run_info.json",
                                       "scores.json"]
    for name in os.listdir(run):
        assert SECRET not in (run / name).read_text(encoding="utf-8")
    dataset = load_dataset(path)
    predictions, grounded = read_run(run, "predictions.json"), read_run(run, "grounded.json")
    assert set(predictions) == {q.qid for q in dataset.questions}
    for question in dataset.questions:
        passage = getattr(question, "context", None) or question.passage
        assert grounded[question.qid]["evidence"] == question.evidences[0] and question.evidences[0] in passage
        assert predictions[question.qid]["evidence"] != question.evidences[0]  # the raw quote was perturbed
    scores = read_run(run, "scores.json")
    assert scores["grounded"]["ALL_F1"] == 100.0 and scores["grounded"]["SKIP"] == 0
    assert scores["raw"]["ANS_F1"] == 100.0 and scores["parse"] == {"json": 2, "text": 0, "revised": 0, "failed": 0}
    assert ("LOCA" if dataset.kind == "span" else "LEX_LOCA") in scores["raw"]
    assert scores["grounding"]["untrustworthy_evidence_rate"] == 0.0 and scores["grounding"]["missing"] == 0
    info = read_run(run, "run_info.json")
    assert info["template"]["name"] == f"{dataset.kind}-{dataset.language}-v1" and info["replies"]["sent"] == 2
    records = read_run(run, "responses.jsonl")
    assert [r["id"] for r in records] == [q.qid for q in dataset.questions]
    assert all(r["parsed"]["status"] == "json" and r["grounding"]["evidence"]["status"] != "unverified"
               for r in records)


@pytest.mark.parametrize("subset", ["cmrc2018", pytest.param("race", marks=needs_punkt)])
def test_the_official_scorer_reads_every_question_even_when_replies_are_gibberish(tmp_path, subset):
    path = write_dataset(tmp_path, subset)
    with FakeChatServer(lambda body: ", 城 河 question 么 says 上 : 河") as server:
        assert run_llm(tmp_path, path, server.url) == 0
    run = tmp_path / "run"
    assert read_run(run, "scores.json")["parse"] == {"json": 0, "text": 0, "revised": 0, "failed": 2}
    assert all(p == {"answer": "", "evidence": ""} for p in read_run(run, "predictions.json").values())
    official = official_scores(path, str(run / "predictions.json"))
    assert official["SKIP"] == 0 and official["TOTAL"] == 2


def test_a_rerun_sends_no_request_twice(tmp_path):
    path = write_dataset(tmp_path, "squad")
    with FakeChatServer(gold_reply(path)) as server:
        assert run_llm(tmp_path, path, server.url, out="one") == 0
        assert run_llm(tmp_path, path, server.url, out="two") == 0
        assert len(server.requests) == 2
        assert run_llm(tmp_path, path, server.url, "--temperature", "0.5", out="three") == 0  # other sampling: new key
        assert len(server.requests) == 4
    assert read_run(tmp_path / "two", "run_info.json")["replies"] == {"sent": 0, "cached": 2, "cached_by_old_key": 0,
                                                                  "unusable": 0, "truncated": 0, "imported_from": None}
    assert read_run(tmp_path / "two", "predictions.json") == read_run(tmp_path / "one", "predictions.json")


def test_rate_limits_and_server_errors_are_retried(tmp_path):
    path = write_dataset(tmp_path, "race")
    with FakeChatServer(gold_reply(path), failures=[429, 503, 500]) as server:
        assert run_llm(tmp_path, path, server.url, "--concurrency", "1", "--backoff", "0.01") == 0
        assert len(server.requests) == 5
    assert read_run(tmp_path / "run", "scores.json")["raw"]["ANS_F1"] == 100.0


def test_a_refused_key_is_one_line_without_retries(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MY_KEY", "wrong")
    path = write_dataset(tmp_path, "race")
    with FakeChatServer(gold_reply(path), key=SECRET) as server:
        assert run_llm(tmp_path, path, server.url, "--api-key-env", "MY_KEY", "--concurrency", "1") == 2
        assert len(server.requests) == 1
    line = one_error_line(capsys)
    assert server.url in line and "401" in line and "MY_KEY" in line and "wrong" not in line
    assert not (tmp_path / "run").exists()


def test_other_client_errors_are_not_retried(tmp_path, capsys):
    path = write_dataset(tmp_path, "race")
    with FakeChatServer(gold_reply(path), failures=[400]) as server:
        assert run_llm(tmp_path, path, server.url, "--concurrency", "1", "--backoff", "0.01") == 2
        assert len(server.requests) == 1
    assert "(400)" in one_error_line(capsys)


def test_an_unknown_model_is_one_line(tmp_path, capsys):
    path = write_dataset(tmp_path, "c3")
    with FakeChatServer(gold_reply(path), model="other-model") as server:
        assert run_llm(tmp_path, path, server.url) == 2
    line = one_error_line(capsys)
    assert "'fake-model'" in line and "404" in line


def test_an_unreachable_endpoint_is_a_line_per_retry_round_then_one_error_line(tmp_path, capsys):
    path = write_dataset(tmp_path, "c3")
    with FakeChatServer(lambda body: "") as server:
        url = server.url
    assert run_llm(tmp_path, path, url, "--retries", "2", "--backoff", "0.01", "--concurrency", "1") == 2
    *rounds, line = capsys.readouterr().err.strip().splitlines()
    assert [r.split("; ")[-1].split(" in ")[0] for r in rounds] == ["retry 1 of 2", "retry 2 of 2"], rounds
    assert line.startswith("error: ") and url in line and "after 2 retries" in line


@pytest.mark.parametrize(("flags", "names"), [
    (["--concurrency", "0"], "--concurrency"),
    (["--temperature", "nan"], "--temperature"),
    (["--temperature", "inf"], "--temperature"),
    (["--shots", "2"], "--shots-file"),
    (["--base-url", "ftp://127.0.0.1/v1"], "--base-url"),
    (["--base-url", "http://127.0.0.1:abc/v1"], "--base-url"),  # the client's parser raised its own error
    (["--base-url", "http://127.0.0.1:99999/v1"], "--base-url"),
    (["--base-url", "http://[::1/v1"], "--base-url"),
    (["--base-url", "https://"], "--base-url"),
])
def test_bad_flags_are_one_line(tmp_path, capsys, flags, names):
    path = write_dataset(tmp_path, "squad")
    assert run_llm(tmp_path, path, "http://127.0.0.1:9/v1", *flags) == 2
    assert names in one_error_line(capsys)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("template", "says"), [
    ("Passage: {{ passage }}\nQuestion: {{ question }}\nHint: {{ hint }}", "'hint' is undefined"),
    ("Passage: {{ passage }}\nAnswer in JSON.", "renders no question"),
    ("{% for x in %}", "not a Jinja2 template"),
])
def test_a_bad_prompt_template_is_one_line_before_any_request(tmp_path, capsys, template, says):
    path = write_dataset(tmp_path, "squad")
    prompt = tmp_path / "prompt.j2"
    prompt.write_text(template, encoding="utf-8")
    with FakeChatServer(gold_reply(path)) as server:
        assert run_llm(tmp_path, path, server.url, "--prompt", str(prompt)) == 2
        assert server.requests == []
    assert says in one_error_line(capsys)


def test_a_template_of_ones_own_is_used_and_recorded(tmp_path):
    path = write_dataset(tmp_path, "cmrc2018")
    prompt = tmp_path / "prompt.j2"
    prompt.write_text("阅读：{{ passage }}\n回答：{{ question }}\n用 JSON 回复。", encoding="utf-8")
    with FakeChatServer(gold_reply(path)) as server:
        assert run_llm(tmp_path, path, server.url, "--prompt", str(prompt)) == 0
        assert server.requests[0]["messages"][-1]["content"].startswith("阅读：长江")
    assert read_run(tmp_path / "run", "run_info.json")["template"]["name"] == f"file:{prompt}"


def test_shots_are_seeded_turns_and_dev_shots_need_the_flag(tmp_path, capsys):
    path = write_dataset(tmp_path, "squad")
    train = write_training(tmp_path)
    with FakeChatServer(gold_reply(path)) as server:
        assert run_llm(tmp_path, path, server.url, "--shots", "2", "--shots-file", train, "--seed", "3", out="a") == 0
        messages = server.requests[0]["messages"]
        assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
        assert json.loads(messages[2]["content"])["evidence"].startswith("It was founded in year")
        capsys.readouterr()
        assert run_llm(tmp_path, path, server.url, "--shots", "1", "--shots-file", path, out="b") == 2
        assert "--allow-dev-shots" in one_error_line(capsys)
        assert run_llm(tmp_path, path, server.url, "--shots", "1", "--shots-file", path, "--allow-dev-shots",
                   out="c") == 0
    info = read_run(tmp_path / "a", "run_info.json")["shots"]
    assert info["k"] == 2 and not info["dev"] and len(set(info["ids"])) == 2
    assert read_run(tmp_path / "c", "run_info.json")["shots"]["dev"] is True
    assert read_run(tmp_path / "c", "scores.json")["dev_shots"] is True


def test_batch_files_round_trip_with_custom_ids(tmp_path):
    path = write_dataset(tmp_path, "race")
    batch = tmp_path / "batch.jsonl"
    assert main(["llm", path, "--model", "gpt-x", "--export-batch", str(batch)]) == 0
    lines = [json.loads(line) for line in batch.read_text(encoding="utf-8").splitlines()]
    assert [line["custom_id"] for line in lines] == ["r1-0", "r1-1"]
    assert all(line["url"] == "/v1/chat/completions" and line["body"]["model"] == "gpt-x" for line in lines)
    reply = gold_reply(path)
    output = tmp_path / "out.jsonl"
    output.write_text("".join(json.dumps({"id": f"b{n}", "custom_id": line["custom_id"], "error": None,
                                          "response": {"status_code": 200, "body": {
                                              "choices": [{"message": {"content": reply(line["body"])},
                                                           "finish_reason": "stop"}],
                                              "usage": {"prompt_tokens": 7, "completion_tokens": 3}}}}) + "\n"
                              for n, line in enumerate(lines)), encoding="utf-8")
    assert main(["llm", path, "--model", "gpt-x", "--import-batch", str(output), "--output", str(tmp_path / "run"),
                 "--price", "1,2"]) == 0
    info = read_run(tmp_path / "run", "run_info.json")
    assert info["tokens"] == {"prompt": 14, "completion": 6} and info["cost_usd"] == pytest.approx(26e-6)
    assert read_run(tmp_path / "run", "predictions.json")["r1-1"]["answer"] == "B"


def test_limit_scores_the_first_questions_only(tmp_path):
    path = write_dataset(tmp_path, "c3")
    with FakeChatServer(gold_reply(path)) as server:
        assert run_llm(tmp_path, path, server.url, "--limit", "1") == 0
        assert len(server.requests) == 1
    assert list(read_run(tmp_path / "run", "predictions.json")) == ["c1-0"]
    assert read_run(tmp_path / "run", "scores.json")["raw"]["TOTAL"] == 1


@pytest.mark.slow
def test_a_killed_run_leaves_no_output_and_resumes_paying_nothing_twice(tmp_path):
    doc = json.loads(json.dumps(DATASETS["squad"]))
    qas = doc["data"][0]["paragraphs"][0]["qas"]
    doc["data"][0]["paragraphs"][0]["qas"] = [dict(qas[n % 2], id=f"q{n}", question=f"{qas[n % 2]['question']} ({n})")
                                             for n in range(8)]
    path = tmp_path / "squad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    cache, run = tmp_path / "cache.sqlite", tmp_path / "run"
    argv = [sys.executable, "-m", "expmrc.cli", "llm", str(path), "--model", "fake-model", "--output", str(run),
            "--cache", str(cache), "--concurrency", "1", "--quiet"]
    with FakeChatServer(lambda body: '{"answer": "x", "evidence": "y"}', delay=0.3) as server:
        child = subprocess.Popen(argv + ["--base-url", server.url], env=environment(), stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        while len(server.requests) < 3 and time.time() < deadline:
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert not run.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".run")] == []
        cached = cached_rows(cache)
        assert 1 <= cached < 8
        before = len(server.requests)
        subprocess.run(argv + ["--base-url", server.url], env=environment(), check=True, stderr=subprocess.DEVNULL)
        assert len(server.requests) - before == 8 - cached
    replies = read_run(run, "run_info.json")["replies"]
    assert (replies["sent"], replies["cached"], replies["unusable"]) == (8 - cached, cached, 0)




def test_collect_lists_llm_runs_with_the_dev_mark_and_report_shows_the_replies(tmp_path, capsys):
    path = write_dataset(tmp_path, "cmrc2018")
    runs = tmp_path / "runs"
    with FakeChatServer(gold_reply(path)) as server:
        assert run_llm(runs, path, server.url, out="zero") == 0
        assert run_llm(runs, path, server.url, "--shots", "1", "--shots-file", path, "--allow-dev-shots", out="dev") == 0
    capsys.readouterr()
    assert main(["collect", str(runs), "--output-dir", str(tmp_path / "table"), "--quiet"]) == 0
    table = (tmp_path / "table" / "llm_runs.md").read_text(encoding="utf-8")
    rows = [line for line in table.splitlines() if line.startswith(f"| {runs}")]
    assert len(rows) == 2 and "| fake-model | openai | span-zh-v1 |" in rows[0]
    assert "| 1 (dev set) |" in next(r for r in rows if "/dev |" in r) and "| 100.0 |" in rows[0]
    page = tmp_path / "report.html"
    assert main(["report", path, str(runs / "zero" / "predictions.json"), "--output", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert "parse status" in html and "evidence grounding" in html and "raw reply" in html
    assert json.dumps(gold_reply(path)({"messages": [{"content": "长江在哪里注入东海？"}]}), ensure_ascii=False)[1:-1] \
        in html.replace("\\u003c", "<")
