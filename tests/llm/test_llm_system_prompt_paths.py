"""--system-prompt TEXT|FILE never sends a path as the system message: a path-like value naming no file (an
upper-case .TXT, a path without an extension) and anything that exists but is not a regular file (a FIFO, a
device, a broken link) are one line before any request; text stays text."""

from __future__ import annotations

import os

import pytest
from helpers.fake_openai import FakeChatServer
from helpers.hostile import assert_refused, run_cli
from helpers.llm_data import read_run, write_dataset


def ask(tmp_path, value: str) -> tuple[int, str, list]:
    path = write_dataset(tmp_path, "cmrc2018")
    with FakeChatServer(lambda body: '{"answer": "x", "evidence": "x"}') as server:
        status, _, err = run_cli(["llm", path, "--model", "fake-model", "--base-url", server.url, "--output",
                                  str(tmp_path / "run"), "--no-cache", "--quiet", "--system-prompt", value])
        return status, err, server.requests


@pytest.mark.parametrize(("value", "says"), [
    ("prompts/SYSTEM.TXT", "no such file"),
    ("prompts/system", "no such file"),
    ("system.prompt", "no such file"),
    ("~/my-system-prompt", "no such file"),
    ("/dev/null", "is not a regular file"),
    ("FIFO", "is not a regular file"),
    ("LINK", "is a broken symbolic link"),
])
def test_a_path_that_is_no_readable_file_is_one_line_before_any_request(tmp_path, value, says):
    if value == "FIFO":
        value = str(tmp_path / "fifo")
        os.mkfifo(value)
    elif value == "LINK":
        value = str(tmp_path / "link.txt")
        os.symlink(tmp_path / "gone.txt", value)
    status, err, requests = ask(tmp_path, value)
    assert_refused(status, err, f"--system-prompt {value}: {says}")
    assert requests == [] and not (tmp_path / "run").exists()


@pytest.mark.parametrize("text", ["Answer briefly.", "Quote the passage exactly; e.g. copy a sentence", "concise"])
def test_text_that_is_no_path_is_sent_as_the_system_message(tmp_path, text):
    status, err, requests = ask(tmp_path, text)
    assert status == 0, err
    assert {r["messages"][0]["content"] for r in requests} == {text}
    assert read_run(tmp_path / "run", "run_info.json")["system_prompt"]["source"] == "text"
