"""`expmrc llm` against a server (and Batch files, caches and output paths) that behave badly in every way the
issue lists: never a traceback, never a lost or damaged reply, never a deleted input. A reply that is no
chat completion is a counted per-question failure, never cached, so a rerun asks it again."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from helpers.hostile import assert_refused, run_cli
from helpers.fake_openai import FakeChatServer, Raw, completion
from helpers.llm_data import cached_rows, gold_reply, read_run, write_dataset

GOOD = '{"answer": "上海", "evidence": "它发源于青藏高原，最终在上海注入东海。"}'


def llm(tmp_path: Path, dataset: str, url: str, *extra: str, out: str = "run") -> tuple[int, str]:
    status, _, err = run_cli(["llm", dataset, "--model", "fake-model", "--base-url", url, "--output",
                              str(tmp_path / out), "--cache", str(tmp_path / "cache.sqlite"), "--quiet", "--retries",
                              "0", *extra])
    assert "Traceback" not in err, err
    return status, err


HOSTILE = {
    "html login page": (Raw(b"<!DOCTYPE html><html><body>Please log in</body></html>", "text/html"), "HTML"),
    "plain text": (Raw(b"upstream ready", "text/plain"), "plain text"),
    "event stream": (Raw(b'data: {"choices": [{"delta": {"content": "x"}}]}\n\ndata: [DONE]\n\n',
                         "text/event-stream"), "event stream"),
    "json string": (Raw(b'"just a string"'), "a string in JSON"),
    "json array": (Raw(b"[1, 2, 3]"), "an array in JSON"),
    "truncated json": (Raw(b'{"choices": [{"message": {"content": "{\\"answer'), "truncated JSON"),
    "empty body": (Raw(b""), "empty body"),
    "nested 50000 deep": (Raw(b"[" * 50000 + b"]" * 50000), "nested too deeply"),
    "choices a string": ({"choices": "none"}, "`choices` is a string"),
    "choices empty": ({"choices": []}, "nothing in it"),
    "no choices": ({"object": "chat.completion"}, "no `choices`"),
    "message a string": ({"choices": [{"message": "上海"}]}, "`choices[0].message` is a string"),
    "choice a number": ({"choices": [7]}, "`choices[0]` is a number"),
    "content a number": (completion(42), "`content` is a number"),
    "content an object": (completion({"text": "上海"}), "`content` is an object"),
    "content parts without text": (completion([{"type": "image_url", "image_url": {"url": "x"}}]),
                                   "none of which is text"),
    "error object with 200": ({"error": {"message": "model overloaded"}}, "model overloaded"),
    "refusal": (completion(None, message={"refusal": "I cannot help with that."}), "refused"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_reply_that_is_no_chat_completion_is_a_counted_failure_asked_again(tmp_path, name):
    answer, says = HOSTILE[name]
    path = write_dataset(tmp_path, "cmrc2018")
    with FakeChatServer(lambda body: answer) as server:
        assert llm(tmp_path, path, server.url)[0] == 0
        assert llm(tmp_path, path, server.url, out="again")[0] == 0
        assert len(server.requests) == 4  # nothing was cached: the rerun asked both again
    run = tmp_path / "run"
    assert read_run(run, "scores.json")["parse"]["failed"] == 2
    assert read_run(run, "scores.json")["unusable"]["count"] == 2
    records = read_run(run, "responses.jsonl")
    assert all(says in r["error"] and r["parsed"]["note"] == r["error"] and not r["cached"] for r in records)
    assert cached_rows(tmp_path / "cache.sqlite") == 0
    assert all(p == {"answer": "", "evidence": ""} for p in read_run(run, "predictions.json").values())


def test_content_as_a_list_of_parts_is_read(tmp_path):
    path = write_dataset(tmp_path, "cmrc2018")
    parts = [{"type": "text", "text": '{"answer": "上海", '}, {"type": "text", "text": '"evidence": "最终在上海注入东海。"}'}]
    with FakeChatServer(lambda body: completion(parts)) as server:
        assert llm(tmp_path, path, server.url)[0] == 0
    predictions = read_run(tmp_path / "run", "predictions.json")
    assert predictions["cm-1"] == {"answer": "上海", "evidence": "最终在上海注入东海。"}
    assert cached_rows(tmp_path / "cache.sqlite") == 2


def test_an_empty_reply_is_never_cached_and_a_glitch_recovers_on_the_rerun(tmp_path):
    path = write_dataset(tmp_path, "cmrc2018")
    glitch = {"on": True}
    with FakeChatServer(lambda body: "" if glitch["on"] else GOOD) as server:
        assert llm(tmp_path, path, server.url)[0] == 0
        assert read_run(tmp_path / "run", "scores.json")["parse"]["failed"] == 2
        glitch["on"] = False
        assert llm(tmp_path, path, server.url, out="again")[0] == 0
        assert len(server.requests) == 4
    assert read_run(tmp_path / "again", "predictions.json")["cm-1"]["answer"] == "上海"


def test_reasoning_is_kept_and_replies_cut_at_max_tokens_are_counted_and_named(tmp_path):
    path = write_dataset(tmp_path, "cmrc2018")

    def reply(body):
        cut = "全长约多少公里" in body["messages"][-1]["content"]
        return completion('{"answer": "上' if cut else GOOD, finish_reason="length" if cut else "stop",
                          message={"reasoning_content": "首先找到注入东海的句子。"})
    with FakeChatServer(reply) as server:
        status, err = llm(tmp_path, path, server.url, "--max-tokens", "64")
    assert status == 0
    records = {r["id"]: r for r in read_run(tmp_path / "run", "responses.jsonl")}
    assert records["cm-1"]["reasoning"] == "首先找到注入东海的句子。" and records["cm-2"]["finish_reason"] == "length"
    scores = read_run(tmp_path / "run", "scores.json")
    assert scores["truncated"] == {"count": 1, "ids": ["cm-2"], "first_reason": None}
    line = next(line for line in err.splitlines() if "finish_reason: length" in line)
    assert "--max-tokens 64" in line and "cm-2" in line and "raise --max-tokens" in line


def test_a_lone_surrogate_in_a_reply_is_stored_escaped_and_the_run_finishes(tmp_path):
    path = write_dataset(tmp_path, "cmrc2018")
    text = '{"answer": "上海\ud800", "evidence": "最终在上海注入东海。"}'
    with FakeChatServer(lambda body: text) as server:
        assert llm(tmp_path, path, server.url)[0] == 0
        assert llm(tmp_path, path, server.url, out="again")[0] == 0
        assert len(server.requests) == 2  # stored, and read back from the cache
    raw = (tmp_path / "run" / "responses.jsonl").read_text(encoding="utf-8")
    assert "\\ud800" in raw and json.loads(raw.splitlines()[0])["reply"] == text
    assert read_run(tmp_path / "again", "responses.jsonl")[0]["reply"] == text
    assert read_run(tmp_path / "run", "predictions.json")["cm-1"]["answer"] == "上海\ufffd"
    assert run_cli(["evaluate", path, str(tmp_path / "run" / "predictions.json")])[0] == 0


def test_a_megabyte_reply_is_refused_at_once_as_a_counted_failure(tmp_path):
    path = write_dataset(tmp_path, "cmrc2018")
    with FakeChatServer(lambda body: "{" * 1_000_000) as server:
        assert llm(tmp_path, path, server.url)[0] == 0
    records = read_run(tmp_path / "run", "responses.jsonl")
    assert all(r["parsed"]["status"] == "failed" and "1,000,000 characters" in r["parsed"]["note"] for r in records)


@pytest.mark.parametrize(("usage", "shown"), [
    ('{"prompt_tokens": -5, "completion_tokens": 3}', "-5"),
    ('{"prompt_tokens": 12.5, "completion_tokens": 3}', "12.5"),
    ('{"prompt_tokens": 1000000000000, "completion_tokens": 3}', "1000000000000"),
    ('{"prompt_tokens": NaN, "completion_tokens": 3}', "nan"),
    ('{"prompt_tokens": "12", "completion_tokens": 3}', '"12"'),
    ('[12, 3]', "an array"),
])
def test_usage_that_is_no_token_count_is_flagged_never_a_cost(tmp_path, usage, shown):
    path = write_dataset(tmp_path, "cmrc2018")
    body = json.dumps(completion(GOOD))
    body = body.replace(json.dumps(completion(GOOD)["usage"]), usage).encode("utf-8")
    with FakeChatServer(lambda request: Raw(body)) as server:
        status, err = llm(tmp_path, path, server.url, "--price", "1,2")
    assert status == 0
    info = read_run(tmp_path / "run", "run_info.json")
    assert info["cost_usd"] is None and info["cost_usd_this_run"] is None and info["usage_untrusted"] == 2
    assert info["tokens"] == {"prompt": 0, "completion": 0}
    assert read_run(tmp_path / "run", "predictions.json")["cm-1"]["answer"] == "上海"  # the reply itself is fine
    line = next(line for line in err.splitlines() if line.startswith("cost unknown"))
    assert shown in line


def test_trusted_usage_gives_a_cost(tmp_path):
    path = write_dataset(tmp_path, "cmrc2018")
    with FakeChatServer(lambda body: GOOD) as server:
        assert llm(tmp_path, path, server.url, "--price", "1,2")[0] == 0
    assert read_run(tmp_path / "run", "run_info.json")["cost_usd"] == pytest.approx(2 * (100 * 1 + 20 * 2) / 1e6)


def test_retries_0_and_a_response_format_refusal_still_send_the_plain_request(tmp_path):
    path = write_dataset(tmp_path, "cmrc2018")
    with FakeChatServer(gold_reply(path), refuse_response_format=True) as server:
        status, err = llm(tmp_path, path, server.url, "--concurrency", "1")
        assert [("response_format" in r) for r in server.requests] == [True, False, False]
    assert status == 0 and "does not take response_format" in err
    info = read_run(tmp_path / "run", "run_info.json")
    assert info["structured_output"] is False and info["replies"]["sent"] == 2


# ------------------------------------------------------------------ the cache


def test_a_damaged_cache_row_is_skipped_with_one_warning_and_asked_again(tmp_path):
    path = write_dataset(tmp_path, "cmrc2018")
    with FakeChatServer(lambda body: GOOD) as server:
        assert llm(tmp_path, path, server.url)[0] == 0
        with sqlite3.connect(tmp_path / "cache.sqlite") as db:
            db.execute("UPDATE responses SET reply = '{\"text\": 5' WHERE rowid = (SELECT MIN(rowid) FROM responses)")
        status, err = llm(tmp_path, path, server.url, out="again")
        assert status == 0 and len(server.requests) == 3
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "1 damaged cache rows skipped" in warnings[0]
    assert read_run(tmp_path / "again", "run_info.json")["replies"]["sent"] == 1
    assert cached_rows(tmp_path / "cache.sqlite") == 2  # the damaged row was replaced


@pytest.mark.parametrize(("setup", "says"), [
    (lambda p: p.write_text("not a database at all, just text\n" * 40), "not a usable response cache"),
    (lambda p: sqlite3.connect(p).execute("CREATE TABLE users (name TEXT)").connection.commit(), "another tool"),
    (lambda p: sqlite3.connect(p).execute("CREATE TABLE replies (id INTEGER, body BLOB)").connection.commit(),
     "another tool"),
    (lambda p: [db := sqlite3.connect(p), db.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)"),
                db.execute("INSERT INTO meta VALUES ('format', 'expmrc-llm-cache'), ('version', '99')"), db.commit()],
     "newer expmrc"),
])
def test_a_cache_that_is_corrupt_or_another_tools_is_one_line_before_any_request(tmp_path, setup, says):
    path = write_dataset(tmp_path, "cmrc2018")
    cache = tmp_path / "cache.sqlite"
    setup(cache)
    before = cache.read_bytes()
    with FakeChatServer(lambda body: GOOD) as server:
        status, _, err = run_cli(["llm", path, "--model", "fake-model", "--base-url", server.url, "--output",
                                  str(tmp_path / "run"), "--cache", str(cache), "--quiet"])
        assert server.requests == []
    assert_refused(status, err, says)
    assert str(cache) in err and cache.read_bytes() == before and not (tmp_path / "run").exists()


# ------------------------------------------------------------------ output paths and flags


def test_output_dot_is_refused_before_any_request(tmp_path, monkeypatch):
    path = write_dataset(tmp_path, "cmrc2018")
    monkeypatch.chdir(tmp_path)
    with FakeChatServer(lambda body: GOOD) as server:
        for output in (".", str(tmp_path), ".."):
            status, _, err = run_cli(["llm", path, "--model", "fake-model", "--base-url", server.url, "--output",
                                      output, "--overwrite", "--no-cache", "--quiet"])
            assert_refused(status, err, "current folder")
        assert server.requests == []
    assert Path(path).is_file()


def test_overwrite_never_deletes_a_users_files_or_an_input(tmp_path):
    path = write_dataset(tmp_path, "cmrc2018")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("my notes", encoding="utf-8")
    with FakeChatServer(lambda body: GOOD) as server:
        status, err = llm(tmp_path, path, server.url, "--overwrite", out="mine")
        assert_refused(status, err, "'notes.txt'")
        assert (mine / "notes.txt").read_text(encoding="utf-8") == "my notes"
        assert llm(tmp_path, path, server.url, "--limit", "1")[0] == 0  # a run folder with dataset.json
        inner = str(tmp_path / "run" / "dataset.json")
        status, _, err = run_cli(["llm", inner, "--model", "fake-model", "--base-url", server.url, "--output",
                                  str(tmp_path / "run"), "--overwrite", "--no-cache", "--quiet"])
        assert_refused(status, err, "an input of this command")
        assert Path(inner).is_file()
        status, _, err = run_cli(["llm", path, "--model", "fake-model", "--base-url", server.url, "--output",
                                  str(tmp_path / "run"), "--overwrite", "--cache", str(tmp_path / "run" / "c.sqlite"),
                                  "--quiet"])
        assert_refused(status, err, "an input of this command")
        sent = len(server.requests)
        assert llm(tmp_path, path, server.url, "--overwrite")[0] == 0  # an earlier run folder is replaced
        assert len(server.requests) == sent + 1  # question 2 was not asked before (--limit 1)
    assert not (tmp_path / "run" / "dataset.json").exists()


@pytest.mark.parametrize("victim", ["dataset", "prompt", "cache"])
def test_export_batch_never_overwrites_an_input(tmp_path, victim):
    path = write_dataset(tmp_path, "cmrc2018")
    prompt = tmp_path / "prompt.j2"
    prompt.write_text("{{ passage }} {{ question }}", encoding="utf-8")
    cache = tmp_path / "cache.sqlite"
    cache.write_bytes(b"")
    target = {"dataset": path, "prompt": str(prompt), "cache": str(cache)}[victim]
    before = Path(target).read_bytes()
    status, _, err = run_cli(["llm", path, "--model", "m", "--prompt", str(prompt), "--cache", str(cache),
                              "--export-batch", target])
    if victim == "cache":  # an export reads no cache: overwriting it is refused all the same
        status, _, err = run_cli(["llm", path, "--model", "m", "--prompt", str(prompt), "--export-batch", str(prompt)])
        target, before = str(prompt), prompt.read_bytes()
    assert_refused(status, err, "is also an input")
    assert Path(target).read_bytes() == before


def test_import_and_export_batch_together_are_refused(tmp_path):
    path = write_dataset(tmp_path, "cmrc2018")
    status, _, err = run_cli(["llm", path, "--model", "m", "--import-batch", str(tmp_path / "in.jsonl"),
                              "--export-batch", str(tmp_path / "out.jsonl")])
    assert_refused(status, err, "--import-batch and --export-batch")
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize(("template", "says"), [
    ("{% include 'other.j2' %}{{ question }}", "TypeError"),
    ("{{ question }} {{ 1 // 0 }}", "ZeroDivisionError"),
    ("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ question }}{{ f(1) }}", "RecursionError"),
    ("{{ question }} {{ passage.nothing() }}", "has no attribute 'nothing'"),
])
def test_an_include_or_a_runtime_error_in_a_users_template_is_one_line(tmp_path, template, says):
    path = write_dataset(tmp_path, "cmrc2018")
    prompt = tmp_path / "prompt.j2"
    prompt.write_text(template, encoding="utf-8")
    with FakeChatServer(lambda body: GOOD) as server:
        status, err = llm(tmp_path, path, server.url, "--prompt", str(prompt))
        assert server.requests == []
    assert_refused(status, err, says)


# ------------------------------------------------------------------ Batch output files


def batch_line(custom_id: str, body, status: int = 200, error=None) -> str:
    return json.dumps({"id": "b", "custom_id": custom_id, "error": error,
                       "response": {"status_code": status, "body": body}}, ensure_ascii=False) + "\n"


@pytest.mark.parametrize(("body", "says"), [
    ("a string", "a string in JSON"),
    ([1, 2], "an array in JSON"),
    ({"choices": "x"}, "`choices` is a string"),
    (completion(3), "`content` is a number"),
    (None, "null in JSON"),
])
def test_a_batch_output_body_that_is_no_chat_completion_is_a_counted_failure(tmp_path, body, says):
    path = write_dataset(tmp_path, "cmrc2018")
    output = tmp_path / "out.jsonl"
    output.write_text(batch_line("cm-1", body) + batch_line("cm-2", completion([{"type": "text", "text": GOOD}])),
                      encoding="utf-8")
    status, _, err = run_cli(["llm", path, "--model", "m", "--import-batch", str(output), "--output",
                              str(tmp_path / "run")])
    assert status == 0 and "Traceback" not in err
    records = {r["id"]: r for r in read_run(tmp_path / "run", "responses.jsonl")}
    assert says in records["cm-1"]["error"] and records["cm-1"]["parsed"]["status"] == "failed"
    assert records["cm-2"]["parsed"]["answer"] == "上海"  # content parts are read in Batch files too
    assert read_run(tmp_path / "run", "scores.json")["unusable"]["count"] == 1


@pytest.mark.parametrize(("lines", "says"), [
    (lambda: batch_line("cm-1", completion(GOOD)) * 2, "answered a second time (first on line 1)"),
    (lambda: '{"custom_id": "cm-1", "response": {', "line 1: not JSON"),
    (lambda: '"cm-1"\n', "not a Batch output record"),
    (lambda: '{"custom_id": 5}\n', "not a Batch output record"),
    (lambda: "[" * 50000 + "]" * 50000 + "\n", "line 1"),
    (lambda: batch_line("zz-9", completion(GOOD)), "no request of this run"),
])
def test_a_damaged_batch_output_file_is_one_line(tmp_path, lines, says):
    path = write_dataset(tmp_path, "cmrc2018")
    output = tmp_path / "out.jsonl"
    output.write_text(lines(), encoding="utf-8")
    status, _, err = run_cli(["llm", path, "--model", "m", "--import-batch", str(output), "--output",
                              str(tmp_path / "run")])
    assert_refused(status, err, says)
    assert str(output) in err and not (tmp_path / "run").exists()


def test_a_failed_batch_line_is_a_counted_failure_with_its_message(tmp_path):
    path = write_dataset(tmp_path, "cmrc2018")
    output = tmp_path / "out.jsonl"
    output.write_text(batch_line("cm-1", None, 500, {"code": "server_error", "message": "boom"})
                      + batch_line("cm-2", {"error": "x"}, 429), encoding="utf-8")
    assert run_cli(["llm", path, "--model", "m", "--import-batch", str(output), "--output", str(tmp_path / "run")])[0] == 0
    records = {r["id"]: r for r in read_run(tmp_path / "run", "responses.jsonl")}
    assert "boom" in records["cm-1"]["error"] and "status 429" in records["cm-2"]["error"]
