"""What evaluation-harness users expect of `expmrc llm`: self-consistency (--samples), the system prompt
(--system-prompt, --no-system, and a chat template without a system role), --limit's dataset.json that the
official scorer reads, and the flags refused in one line."""

from __future__ import annotations

import json

import pytest
from helpers.fake_openai import FakeChatServer
from helpers.hostile import assert_refused, run_cli
from helpers.llm_data import official_scores, read_run, run_llm, write_dataset

from expmrc.cli.llm import add_arguments, resume_command

EVIDENCE = "它发源于青藏高原，最终在上海注入东海。"


def by_seed(replies: dict[int, str]):
    """A server script answering question cm-1 by the request's seed (other questions: a fixed reply)."""
    def reply(body):
        if "注入东海？" not in body["messages"][-1]["content"]:
            return '{"answer": "6300公里", "evidence": "长江是中国第一长河，全长约6300公里。"}'
        return replies[body["seed"]]
    return reply


def answer(text: str, evidence: str) -> str:
    return json.dumps({"answer": text, "evidence": evidence}, ensure_ascii=False)


def test_samples_vote_the_majority_answer_with_its_best_grounded_evidence(tmp_path):
    path = write_dataset(tmp_path, "cmrc2018")
    replies = {0: answer("北京", "长江流域是中国经济最发达的地区之一。"),
               1: answer("上海", "长江最终在上海流入大海，据说是这样。"),  # the majority's answer, evidence not in the passage
               2: answer("上海", EVIDENCE),  # the majority's best-grounded reply
               3: answer("北京", "长江流域是中国经济最发达的地区之一。"),
               4: "我不知道。"}
    replies[5] = replies[2]
    with FakeChatServer(by_seed(replies)) as server:
        assert run_llm(tmp_path, path, server.url, "--samples", "5", "--temperature", "0.7", "--seed", "1") == 0
        assert sorted(r["seed"] for r in server.requests if "注入东海？" in r["messages"][-1]["content"]) == [1, 2, 3, 4, 5]
    predictions = read_run(tmp_path / "run", "predictions.json")
    assert predictions["cm-1"] == {"answer": "上海", "evidence": EVIDENCE}
    record = next(r for r in read_run(tmp_path / "run", "responses.jsonl") if r["id"] == "cm-1")
    assert record["votes"] == {"上海": 3, "北京": 1} and record["agreement"] == pytest.approx(0.6)
    assert record["chosen_sample"] == 1 and len(record["samples"]) == 5
    assert [s["parsed"]["status"] for s in record["samples"]].count("failed") == 1
    info = read_run(tmp_path / "run", "run_info.json")
    assert info["samples"] == {"n": 5, "mean_agreement": pytest.approx(0.8), "unanimous": 1}
    assert info["sampling"]["samples"] == 5 and info["replies"]["sent"] == 10


def test_a_tie_goes_to_the_better_grounded_answer(tmp_path):
    path = write_dataset(tmp_path, "cmrc2018")
    replies = {0: answer("北京", "北京是首都。"), 1: answer("上海", EVIDENCE)}
    with FakeChatServer(by_seed(replies)) as server:
        assert run_llm(tmp_path, path, server.url, "--samples", "2", "--temperature", "1") == 0
    assert read_run(tmp_path / "run", "predictions.json")["cm-1"]["answer"] == "上海"


@pytest.mark.parametrize(("flags", "says"), [
    (["--samples", "0"], "--samples: must be from 1 to 64, got 0"),
    (["--samples", "65"], "--samples: must be from 1 to 64, got 65"),
    (["--samples", "3"], "--samples 3 at --temperature 0 would repeat the same reply 3 times"),
    (["--system-prompt", ""], "empty"),
    (["--system-prompt", "missing-file.txt"], "no such file"),
    (["--system-prompt", "."], "is a folder"),  # not taken as the text "."
])
def test_sample_and_system_flags_that_cannot_work_are_one_line_before_any_request(tmp_path, flags, says):
    path = write_dataset(tmp_path, "cmrc2018")
    with FakeChatServer(lambda body: "x") as server:
        status, _, err = run_cli(["llm", path, "--model", "fake-model", "--base-url", server.url, "--output",
                                  str(tmp_path / "run"), "--no-cache", *flags])
        assert server.requests == []
    assert_refused(status, err, says)
    assert not (tmp_path / "run").exists()


def test_a_system_prompt_of_ones_own_as_text_or_file_and_merged_with_no_system(tmp_path):
    path = write_dataset(tmp_path, "cmrc2018")
    prompt = tmp_path / "system.txt"
    prompt.write_text("你是严谨的阅读理解助手。", encoding="utf-8")
    with FakeChatServer(lambda body: answer("上海", EVIDENCE)) as server:
        assert run_llm(tmp_path, path, server.url, "--system-prompt", "Answer briefly.", out="text") == 0
        assert server.requests[-1]["messages"][0] == {"role": "system", "content": "Answer briefly."}
        assert run_llm(tmp_path, path, server.url, "--system-prompt", str(prompt), out="file") == 0
        assert server.requests[-1]["messages"][0]["content"] == "你是严谨的阅读理解助手。"
        assert run_llm(tmp_path, path, server.url, "--no-system", out="merged") == 0
        messages = server.requests[-1]["messages"]
        assert [m["role"] for m in messages] == ["user"] and messages[0]["content"].startswith("你是阅读理解答题助手。")
        assert "问题：" in messages[0]["content"]
    assert read_run(tmp_path / "file", "run_info.json")["system_prompt"]["source"] == f"file:{prompt}"
    assert read_run(tmp_path / "merged", "run_info.json")["system_prompt"]["merged_into_user_turn"] is True


def test_a_server_refusing_the_system_role_is_one_line_naming_no_system(tmp_path):
    path = write_dataset(tmp_path, "cmrc2018")
    with FakeChatServer(lambda body: answer("上海", EVIDENCE), refuse_system=True) as server:
        status, _, err = run_cli(["llm", path, "--model", "fake-model", "--base-url", server.url, "--output",
                                  str(tmp_path / "run"), "--no-cache", "--quiet", "--concurrency", "1"])
        assert_refused(status, err, "--no-system")
        assert run_llm(tmp_path, path, server.url, "--no-system") == 0


@pytest.mark.slow
def test_a_local_chat_template_without_a_system_role_is_one_line_naming_no_system(tmp_path):
    from helpers.tiny_chat import make_tiny_chat_model

    model = make_tiny_chat_model(tmp_path / "tiny", system_role=False)
    path = write_dataset(tmp_path, "c3")
    argv = ["llm", path, "--backend", "transformers", "--model", str(model), "--max-tokens", "4", "--quiet",
            "--no-cache", "--output", str(tmp_path / "run")]
    status, _, err = run_cli(argv)
    assert_refused(status, err, "System role not supported; pass --no-system")
    assert run_cli(argv + ["--no-system", "--samples", "2", "--temperature", "0.9"])[0] == 0
    record = read_run(tmp_path / "run", "responses.jsonl")[0]
    assert len(record["samples"]) == 2 and all(s["completion_tokens"] > 0 for s in record["samples"])
    assert read_run(tmp_path / "run", "scores.json")["questions"] == 2


def test_samples_go_to_a_batch_file_one_line_each(tmp_path):
    path = write_dataset(tmp_path, "c3")
    batch = tmp_path / "batch.jsonl"
    assert run_cli(["llm", path, "--model", "m", "--samples", "3", "--temperature", "0.8", "--seed", "7",
                    "--export-batch", str(batch)])[0] == 0
    lines = [json.loads(line) for line in batch.read_text(encoding="utf-8").splitlines()]
    assert [(line["custom_id"], line["body"]["seed"]) for line in lines[:3]] == [("c1-0#0", 7), ("c1-0#1", 8),
                                                                                ("c1-0#2", 9)]
    assert len(lines) == 6


@pytest.mark.parametrize("subset", ["cmrc2018", "c3"])
def test_limit_writes_exactly_the_questions_asked_as_dataset_json(tmp_path, subset):
    path = write_dataset(tmp_path, subset)
    with FakeChatServer(lambda body: answer("上海", EVIDENCE)) as server:
        assert run_llm(tmp_path, path, server.url, "--limit", "1") == 0
        assert run_llm(tmp_path, path, server.url, out="all") == 0
    assert not (tmp_path / "all" / "dataset.json").exists()  # without --limit the dataset file is the record
    run = tmp_path / "run"
    doc = read_run(run, "dataset.json")
    first = "cm-1" if subset == "cmrc2018" else "c1-0"
    assert doc["version"] == json.loads(open(path, encoding="utf-8").read())["version"]
    official = official_scores(str(run / "dataset.json"), str(run / "predictions.json"))
    assert official["TOTAL"] == 1 and official["SKIP"] == 0 and list(read_run(run, "predictions.json")) == [first]


def test_the_resume_command_parses_back_to_the_same_run():
    import argparse

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    argv = ["squad", "--model", "gpt x", "--output", "runs/a b", "--temperature", "0.7", "--samples", "3",
            "--price", "0.15,0.6", "--no-system", "--system-prompt", "Be brief.", "--cache", "c.sqlite"]
    args = parser.parse_args(argv)
    again = parser.parse_args(__import__("shlex").split(resume_command(args))[2:])
    assert vars(again) == vars(args)
