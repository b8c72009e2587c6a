"""Ctrl-C, SIGTERM and a refused key in a real `expmrc llm` process: every reply that arrived is cached, the run
stops within seconds with one line (how many replies are cached, the command that resumes), and the resumed
run asks only what never arrived."""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import interrupt
from helpers.common import environment
from helpers.fake_openai import FakeChatServer
from helpers.llm_data import cached_rows, read_run, write_many

pytestmark = pytest.mark.slow
GOOD = '{"answer": "上海", "evidence": "它发源于青藏高原，最终在上海注入东海。"}'
QUESTIONS = 10


def command(tmp_path: Path, dataset: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "expmrc.cli", "llm", dataset, "--model", "fake-model", "--output",
            str(tmp_path / "run"), "--cache", str(tmp_path / "cache.sqlite"), "--quiet", *extra]


def stop_after(server: FakeChatServer, argv: list[str], requests: int, signum: int) -> tuple[int, str, float]:
    """Start `argv`, send `signum` (Ctrl-C: tests/helpers/interrupt.py) once the server has `requests` requests;
    (exit status, stderr, seconds to exit)."""
    child = interrupt.start(argv, env=environment(), stderr=subprocess.PIPE, text=True)
    status, _, err, seconds = interrupt.press_when(child, lambda: len(server.requests) >= requests, signum=signum)
    return status, err, seconds


def asked(server: FakeChatServer, start: int = 0) -> list[str]:
    return [r["messages"][-1]["content"] for r in server.requests[start:]]


def test_ctrl_c_keeps_every_reply_that_arrived_and_the_resume_asks_only_the_rest(tmp_path, press_ctrl_c):
    dataset = write_many(tmp_path, QUESTIONS)
    with FakeChatServer(lambda body: GOOD, delay=0.3) as server:
        status, err, _ = stop_after(server, command(tmp_path, dataset, "--concurrency", "2", "--base-url", server.url),
                                    4, signal.SIGINT)
        lines = err.strip().splitlines()
        assert status == 130 and len(lines) == 1, err
        match = re.fullmatch(rf"interrupted: (\d+) of {QUESTIONS} replies are cached in (.+); resume with: (.+)", lines[0])
        assert match, lines[0]
        cached, first = int(match[1]), asked(server)
        assert 4 <= cached < QUESTIONS and cached == len(first) == cached_rows(tmp_path / "cache.sqlite")
        assert not (tmp_path / "run").exists()
        words = shlex.split(match[3])
        assert words[:2] == ["expmrc", "llm"] and "--base-url" in words
        done = subprocess.run([sys.executable, "-m", "expmrc.cli", *words[1:]], env=environment(),
                              stderr=subprocess.PIPE, text=True)
        assert done.returncode == 0, done.stderr
        again = asked(server, len(first))
        assert len(again) == QUESTIONS - cached and not set(again) & set(first)
    replies = read_run(tmp_path / "run", "run_info.json")["replies"]
    assert (replies["sent"], replies["cached"]) == (QUESTIONS - cached, cached)


def test_sigterm_stops_at_once_with_the_count(tmp_path):
    dataset = write_many(tmp_path, QUESTIONS)
    with FakeChatServer(lambda body: GOOD, delay=0.3) as server:
        status, err, seconds = stop_after(server, command(tmp_path, dataset, "--concurrency", "2", "--base-url",
                                                          server.url), 3, signal.SIGTERM)
    lines = err.strip().splitlines()
    assert status == 143 and len(lines) == 1 and lines[0].startswith("terminated: "), err
    cached = int(re.match(r"terminated: (\d+) of", lines[0])[1])
    assert cached == cached_rows(tmp_path / "cache.sqlite") and seconds < 10


def test_ctrl_c_does_not_hang_on_a_server_that_never_answers(tmp_path, press_ctrl_c):
    dataset = write_many(tmp_path, QUESTIONS)

    def never(body):
        time.sleep(30)
        return GOOD
    with FakeChatServer(never) as server:
        status, err, seconds = stop_after(server, command(tmp_path, dataset, "--timeout", "2", "--base-url",
                                                          server.url), 8, signal.SIGINT)
    assert status == 130 and "interrupted: 0 of 10 replies are cached" in err and seconds < 15, err


@pytest.mark.parametrize("code", [401, 403])
def test_a_refused_key_stops_the_run_within_seconds_with_requests_in_flight(tmp_path, code):
    dataset = write_many(tmp_path, QUESTIONS)

    def slow(body):
        time.sleep(30)
        return GOOD
    started = time.monotonic()
    with FakeChatServer(slow, failures=[code], delay=0.0) as server:
        done = subprocess.run(command(tmp_path, dataset, "--base-url", server.url), env=environment(),
                              stderr=subprocess.PIPE, text=True, timeout=60)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and f"refused the API key ({code})" in lines[0], done.stderr
    assert time.monotonic() - started < 15
