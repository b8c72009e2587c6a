"""An API key never appears in anything a run prints or writes: not on stdout or stderr (a refusal, a retry warning,
the error a server or the HTTP client gives, Ctrl-C's resume line), not in the run folder, the response cache or the
judge's details, whether the run finishes or fails (a server down, a server refusing the key and echoing it, a
reply that is no chat completion, a key an HTTP header cannot carry, the key given where its variable's name goes)."""

from __future__ import annotations

import pytest
from helpers.fake_openai import FakeChatServer, Raw
from helpers.judge_data import gold_judge, write_many, write_submission
from helpers.llm_data import gold_reply, write_dataset

from expmrc.cli import main

SENTINEL = "sk-proj-SENTINEL7f3a9c2e41d0b8"  # never to be seen
MARKS = (SENTINEL, SENTINEL[8:24])  # the key, and enough of it to give it away


def everything(tmp_path, out: str, err: str) -> bytes:
    """What the run printed and every file under `tmp_path`, as bytes."""
    files = b"".join(path.read_bytes() for path in sorted(tmp_path.rglob("*")) if path.is_file())
    return out.encode() + err.encode() + files


def run(argv: list[str], capfd) -> tuple[int, str, str]:
    capfd.readouterr()
    status = main(argv)
    out, err = capfd.readouterr()
    return status, out, err


def assert_secret(tmp_path, out: str, err: str) -> None:
    seen = everything(tmp_path, out, err)
    for mark in MARKS:
        assert mark.encode() not in seen, f"the key ({mark}) shows: {err[-800:]!r}"


def llm(tmp_path, url: str, *extra: str) -> list[str]:
    dataset = write_dataset(tmp_path, "squad")
    return ["llm", dataset, "--model", "fake-model", "--base-url", url, "--output", str(tmp_path / "run"), "--cache",
            str(tmp_path / "cache.sqlite"), "--quiet", "--retries", "1", "--backoff", "0.01", *extra]


SERVERS = {
    "a run that finishes": (lambda path: FakeChatServer(gold_reply(path), key=SENTINEL), 0),
    "the server refuses the key and echoes it": (
        lambda path: FakeChatServer(gold_reply(path), failures=[(401, f"Incorrect API key provided: {SENTINEL}")]), 2),
    "the server echoes it in a refused request": (
        lambda path: FakeChatServer(gold_reply(path), failures=[(400, f"bad request with key {SENTINEL}")]), 2),
    "the server fails and fails again": (
        lambda path: FakeChatServer(gold_reply(path), failures=[(500, SENTINEL)] * 4), 2),
    "replies that are no chat completion": (
        lambda path: FakeChatServer(lambda body: Raw(b"<html>login</html>", content_type="text/html")), 0),
}


@pytest.mark.parametrize("case", sorted(SERVERS))
def test_no_run_of_expmrc_llm_shows_the_key(case, tmp_path, capfd, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    make, expected = SERVERS[case]
    with make(write_dataset(tmp_path, "squad")) as server:
        status, out, err = run(llm(tmp_path, server.url), capfd)
    assert status == expected, err
    assert_secret(tmp_path, out, err)


def test_a_server_that_is_down_does_not_show_the_key(tmp_path, capfd, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    status, out, err = run(llm(tmp_path, "http://127.0.0.1:9/v1"), capfd)
    assert status == 2 and "no reply after 1 retries" in err
    assert_secret(tmp_path, out, err)


@pytest.mark.parametrize("key", [SENTINEL + "\nLEAK", SENTINEL + "\r", " " + SENTINEL, SENTINEL + "é", SENTINEL + "\t",
                                 SENTINEL + "\u2028"], ids=["newline", "carriage-return", "space", "non-ascii", "tab",
                                                            "line-separator"])
def test_a_key_no_header_can_carry_is_one_line_that_does_not_show_it(key, tmp_path, capfd, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", key)
    with FakeChatServer(lambda body: "{}") as server:
        status, out, err = run(llm(tmp_path, server.url), capfd)
        assert not server.requests
    assert status == 2 and len(err.splitlines()) == 1 and err.startswith("error: $OPENAI_API_KEY holds a character")
    assert_secret(tmp_path, out, err)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("given", [SENTINEL, "sk_live_SENTINEL7f3a9c2e41d0b8"], ids=["with-dashes", "name-like"])
def test_the_key_given_where_its_variables_name_goes_is_not_shown(given, tmp_path, capfd):
    status, out, err = run(llm(tmp_path, "http://127.0.0.1:9/v1", "--api-key-env", given), capfd)
    assert status == 2 and len(err.splitlines()) == 1 and "--api-key-env" in err
    assert given not in out + err and given[8:24] not in out + err
    assert_secret(tmp_path, out, err)


@pytest.mark.parametrize("down", [False, True], ids=["judged", "server-down"])
def test_the_chat_judge_does_not_show_the_key(down, tmp_path, capfd, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    dataset = write_many(tmp_path, "squad", 3)
    predictions = write_submission(tmp_path, dataset, "gold")
    argv = ["judge", dataset, predictions, "--judge", "chat", "--judge-model", "fake-model", "--cache",
            str(tmp_path / "judge.sqlite"), "--details", str(tmp_path / "details.jsonl"), "--output",
            str(tmp_path / "support.json"), "--quiet", "--retries", "1", "--backoff", "0.01"]
    with FakeChatServer(gold_judge(dataset), key=SENTINEL) as server:
        status, out, err = run([*argv, "--base-url", "http://127.0.0.1:9/v1" if down else server.url], capfd)
    assert status == (2 if down else 0), err
    assert_secret(tmp_path, out, err)
