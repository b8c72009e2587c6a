"""The response cache never mixes servers or weights: two scripted servers on 127.0.0.1 answering under the same
model name are each asked and scored, a `response_format` refusal on one never leaks into another's record,
replies cached by the old key (no server in it) are used only when asked for, and a local model's cache key
changes with its weights."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest
from helpers.fake_openai import FakeChatServer, completion
from helpers.hostile import run_cli
from helpers.llm_data import read_run, run_llm, write_dataset

from expmrc.cli import main
from expmrc.llm.backends import public_url, weights_fingerprint
from expmrc.llm.cache import old_request_key

SHANGHAI = '{"answer": "上海", "evidence": "它发源于青藏高原，最终在上海注入东海。"}'
BEIJING = '{"answer": "北京", "evidence": "长江流域是中国经济最发达的地区之一。"}'


def test_two_servers_behind_the_same_model_name_are_each_asked_and_scored(tmp_path):
    path = write_dataset(tmp_path, "cmrc2018")
    with FakeChatServer(lambda body: SHANGHAI) as a, FakeChatServer(lambda body: BEIJING) as b:
        assert run_llm(tmp_path, path, a.url, out="a") == 0
        assert run_llm(tmp_path, path, b.url, out="b") == 0
        assert len(a.requests) == 2 and len(b.requests) == 2
        assert run_llm(tmp_path, path, a.url + "/", out="a2") == 0  # the same server, spelt with a slash
        assert len(a.requests) == 2
    assert read_run(tmp_path / "a", "predictions.json")["cm-1"]["answer"] == "上海"
    assert read_run(tmp_path / "b", "predictions.json")["cm-1"]["answer"] == "北京"
    info = read_run(tmp_path / "b", "run_info.json")
    assert info["base_url"] == b.url and info["replies"]["sent"] == 2 and info["replies"]["cached"] == 0
    assert not any(r["cached"] for r in read_run(tmp_path / "b", "responses.jsonl"))
    assert all(r["cached"] for r in read_run(tmp_path / "a2", "responses.jsonl"))
    assert read_run(tmp_path / "a2", "predictions.json") == read_run(tmp_path / "a", "predictions.json")


def test_a_response_format_refusal_on_one_server_never_reaches_another_servers_run(tmp_path):
    path = write_dataset(tmp_path, "cmrc2018")
    with FakeChatServer(lambda body: SHANGHAI, refuse_response_format=True) as a, \
            FakeChatServer(lambda body: SHANGHAI) as b:
        assert run_llm(tmp_path, path, a.url, out="a") == 0
        assert run_llm(tmp_path, path, b.url, out="b") == 0
        assert [("response_format" in r) for r in b.requests] == [True, True]
        answered = sum("response_format" not in r for r in a.requests)
        refused = len(a.requests) - answered
        # the plain requests are found after the refusal: one refused request, none answered again
        assert run_llm(tmp_path, path, a.url, "--concurrency", "1", out="a2") == 0
        assert sum("response_format" not in r for r in a.requests) == answered
        assert len(a.requests) == answered + refused + 1
    assert read_run(tmp_path / "a", "run_info.json")["structured_output"] is False
    assert read_run(tmp_path / "b", "run_info.json")["structured_output"] is True
    again = read_run(tmp_path / "a2", "run_info.json")
    assert again["structured_output"] is False and again["replies"]["sent"] == 0 and again["replies"]["cached"] == 2


def test_the_servers_own_model_id_and_fingerprint_are_recorded(tmp_path):
    path = write_dataset(tmp_path, "cmrc2018")
    reply = completion(SHANGHAI, model="Qwen/Qwen2.5-7B-Instruct-AWQ", system_fingerprint="fp_44709d6fcb")
    with FakeChatServer(lambda body: reply) as server:
        assert run_llm(tmp_path, path, server.url) == 0
    info = read_run(tmp_path / "run", "run_info.json")
    assert info["server"] == {"model_ids": ["Qwen/Qwen2.5-7B-Instruct-AWQ"], "system_fingerprints": ["fp_44709d6fcb"]}
    assert all(r["model"] == "Qwen/Qwen2.5-7B-Instruct-AWQ" for r in read_run(tmp_path / "run", "responses.jsonl"))


def write_old_cache(cache: Path, requests: list[dict], text: str) -> None:
    """A version-1 cache (what expmrc wrote before the key named the server) holding a reply for each request."""
    with sqlite3.connect(cache) as db:
        db.execute("CREATE TABLE replies (key TEXT PRIMARY KEY, reply TEXT NOT NULL)")
        db.executemany("INSERT INTO replies VALUES (?, ?)", [
            (old_request_key("openai", body), json.dumps({"text": text, "prompt_tokens": 1, "completion_tokens": 1,
                                                           "latency": 0.1, "finish_reason": "stop"}))
            for body in requests])


def test_replies_cached_by_the_old_key_are_used_only_when_asked_for(tmp_path):
    path = write_dataset(tmp_path, "cmrc2018")
    batch = tmp_path / "batch.jsonl"
    assert main(["llm", path, "--model", "fake-model", "--export-batch", str(batch)]) == 0
    write_old_cache(tmp_path / "cache.sqlite", [json.loads(line)["body"] for line in batch.read_text().splitlines()],
                    BEIJING)
    with FakeChatServer(lambda body: SHANGHAI) as server:
        status, _, err = run_cli(["llm", path, "--model", "fake-model", "--base-url", server.url, "--output",
                                  str(tmp_path / "new"), "--cache", str(tmp_path / "cache.sqlite"), "--quiet"])
        assert status == 0 and len(server.requests) == 2
        warnings = [line for line in err.splitlines() if line.startswith("warning:")]
        assert len(warnings) == 1 and "2 replies cached before the cache key named the server" in warnings[0]
        assert "--cache-old-keys" in warnings[0]
        assert run_llm(tmp_path, path, server.url, "--cache-old-keys", "--no-cache", out="none") == 2
        assert len(server.requests) == 2 and not (tmp_path / "none").exists()  # --no-cache reads no old keys: refused
        os.remove(tmp_path / "cache.sqlite")
        write_old_cache(tmp_path / "cache.sqlite",
                        [json.loads(line)["body"] for line in batch.read_text().splitlines()], BEIJING)
        assert run_llm(tmp_path, path, server.url, "--cache-old-keys", out="old") == 0
        assert len(server.requests) == 2
    assert read_run(tmp_path / "new", "predictions.json")["cm-1"]["answer"] == "上海"
    assert read_run(tmp_path / "old", "predictions.json")["cm-1"]["answer"] == "北京"
    info = read_run(tmp_path / "old", "run_info.json")
    assert info["replies"]["cached_by_old_key"] == 2 and info["cache"]["old_keys"] is True
    assert all(r["cached_by_old_key"] for r in read_run(tmp_path / "old", "responses.jsonl"))


def test_urls_are_normalised_without_secrets():
    assert public_url("HTTP://User:pw@LocalHost:80/v1/?key=sk-1#x") == "http://localhost/v1"
    assert public_url("https://api.example.com:443/v1") == "https://api.example.com/v1"
    assert public_url("http://127.0.0.1:8000/v1/") == "http://127.0.0.1:8000/v1"
    assert public_url("http://127.0.0.1:8000/openai/v1") != public_url("http://127.0.0.1:8000/v1")
    assert public_url("http://u:pw@[::1]:8000/v1") == "http://[::1]:8000/v1"  # an address, brackets kept
    assert public_url("http://[::1/v1?key=sk-1") == "(not a URL)"


def test_the_weights_fingerprint_follows_content_size_and_mtime(tmp_path, monkeypatch):
    monkeypatch.setattr("expmrc.llm.backends.SMALL_FILE", 16)
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}", encoding="utf-8")
    (folder / "model.safetensors").write_bytes(b"w" * 64)
    first = weights_fingerprint(str(folder))
    os.utime(folder / "config.json", (time.time() + 100, time.time() + 100))  # touched, same content
    assert weights_fingerprint(str(folder)) == first
    (folder / "config.json").write_text("[]", encoding="utf-8")  # same size, other content
    second = weights_fingerprint(str(folder))
    assert second != first
    (folder / "model.safetensors").write_bytes(b"v" * 64)  # same size, new weights (a new mtime)
    stat = (folder / "model.safetensors").stat()
    os.utime(folder / "model.safetensors", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    third = weights_fingerprint(str(folder))
    assert third != second
    moved = tmp_path / "elsewhere"
    os.rename(folder, moved)  # a folder moved keeps its fingerprint (and its cached replies)
    assert weights_fingerprint(str(moved)) == third


@pytest.mark.slow
def test_replacing_local_weights_at_the_same_path_asks_again(tmp_path):
    from helpers.tiny_chat import make_tiny_chat_model

    model = make_tiny_chat_model(tmp_path / "tiny", seed=0)
    path = write_dataset(tmp_path, "cmrc2018")
    argv = ["llm", path, "--backend", "transformers", "--model", str(model), "--max-tokens", "4", "--quiet",
            "--cache", str(tmp_path / "cache.sqlite")]
    assert main(argv + ["--output", str(tmp_path / "one")]) == 0
    assert main(argv + ["--output", str(tmp_path / "two")]) == 0
    assert read_run(tmp_path / "two", "run_info.json")["replies"]["cached"] == 2
    make_tiny_chat_model(tmp_path / "tiny", seed=1)  # other weights, same folder
    assert main(argv + ["--output", str(tmp_path / "three")]) == 0
    assert read_run(tmp_path / "three", "run_info.json")["replies"] == {
        "sent": 2, "cached": 0, "cached_by_old_key": 0, "unusable": 0, "truncated": 2, "imported_from": None}
