"""`expmrc llm` against a real OpenAI-compatible server, `transformers serve`, on 127.0.0.1, and through the
local transformers backend, both with a tiny random chat model the test builds: its replies are gibberish,
so every question must fail to parse, be counted, and still be in a submission the official scorer reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.llm_data import official_scores, write_dataset
from helpers.serve import transformers_serve
from helpers.tiny_chat import make_tiny_chat_model

from expmrc.cli import main

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> str:
    return str(make_tiny_chat_model(tmp_path_factory.mktemp("tiny-chat")))


@pytest.fixture(scope="module")
def server(tiny_model):
    """`transformers serve` pinned to the tiny model; its URL while the module's tests run."""
    with transformers_serve(tiny_model) as url:
        yield url


def check_gibberish_run(run: Path, dataset: str, questions: int) -> None:
    scores = json.loads((run / "scores.json").read_text(encoding="utf-8"))
    assert scores["parse"]["failed"] == questions and scores["questions"] == questions
    records = [json.loads(line) for line in (run / "responses.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all(r["reply"] and r["completion_tokens"] > 0 and r["prompt_tokens"] > 0 for r in records)
    result = official_scores(dataset, str(run / "predictions.json"))
    assert result["SKIP"] == 0 and result["TOTAL"] == questions


@pytest.mark.parametrize("subset", ["cmrc2018", "c3"])
def test_a_run_against_transformers_serve(tmp_path, server, tiny_model, subset):
    dataset = write_dataset(tmp_path, subset)
    argv = ["llm", dataset, "--model", tiny_model, "--base-url", server, "--max-tokens", "12", "--quiet",
            "--cache", str(tmp_path / "cache.sqlite"), "--concurrency", "2"]
    assert main(argv + ["--output", str(tmp_path / "run")]) == 0
    check_gibberish_run(tmp_path / "run", dataset, 2)
    assert main(argv + ["--output", str(tmp_path / "again")]) == 0
    info = json.loads((tmp_path / "again" / "run_info.json").read_text(encoding="utf-8"))
    assert info["replies"]["sent"] == 0 and info["replies"]["cached"] == 2


def test_a_model_the_server_does_not_know_is_one_line(tmp_path, server, capsys):
    dataset = write_dataset(tmp_path, "c3")
    assert main(["llm", dataset, "--model", "no-such-model", "--base-url", server, "--quiet", "--no-cache",
                 "--output", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "'no-such-model'" in err[0] and server in err[0]


def test_the_local_transformers_backend(tmp_path, tiny_model):
    dataset = write_dataset(tmp_path, "cmrc2018")
    assert main(["llm", dataset, "--backend", "transformers", "--model", tiny_model, "--batch-size", "2",
                 "--max-tokens", "8", "--no-cache", "--quiet", "--output", str(tmp_path / "run")]) == 0
    check_gibberish_run(tmp_path / "run", dataset, 2)
    info = json.loads((tmp_path / "run" / "run_info.json").read_text(encoding="utf-8"))
    assert info["backend"] == "transformers" and info["base_url"] is None
    assert info["environment"]["packages"]["transformers"] and info["environment"]["device"] == "cpu"
