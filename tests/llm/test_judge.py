"""`expmrc judge` end to end on all four subsets, with a tiny random NLI model saved here (labels read from its
config) and with a scripted OpenAI-compatible server on 127.0.0.1 (prompts, cache, resume, a failing server,
hostile replies): the same question order and figures on a rerun, the check of the judge every run and its
warning on a judge that labels at random, and one line with exit 2 for every bad input the issue names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.fake_openai import FakeChatServer, Raw
from helpers.hostile import assert_refused, run_cli
from helpers.judge_data import asked, gold_judge, random_judge, write_many, write_submission
from helpers.tiny_nli import make_tiny_nli_folder

from expmrc.data.datasets import load_dataset
from expmrc.llm.nli import label_role
from expmrc.scoring.support import LABELS, SUPPORTED, Pair, check_cases, choose_statement

SUBSETS = ["squad", "cmrc2018", "race", "c3"]


@pytest.fixture(scope="module")
def nli(tmp_path_factory) -> str:
    return str(make_tiny_nli_folder(tmp_path_factory.mktemp("nli") / "model"))


def judge(dataset: str, predictions: str, *flags: str) -> tuple[int, str, str]:
    return run_cli(["judge", dataset, predictions, "--quiet", *flags])


def details(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_label_names_are_read_as_their_roles():
    assert [label_role(n) for n in ("entailment", "ENTAILMENT", "Entails", "entail")] == ["entailment"] * 4
    assert [label_role(n) for n in ("not_entailment", "NOT ENTAILMENT", "non-entailment")] == ["not_entailment"] * 3
    assert [label_role(n) for n in ("CONTRADICTION", "contradictory", "neutral")] == ["contradiction", "contradiction",
                                                                                         "neutral"]
    assert label_role("LABEL_0") is None


@pytest.mark.parametrize("subset", SUBSETS)
def test_the_nli_judge_end_to_end_gives_the_same_order_and_figures_on_a_rerun(tmp_path, subset, nli):
    dataset = write_many(tmp_path, subset, 6)
    predictions = write_submission(tmp_path, dataset)
    runs = []
    for k in range(2):
        status, out, err = judge(dataset, predictions, "--judge", "nli", "--judge-model", nli, "--json",
                                 "--details", str(tmp_path / f"d{k}.jsonl"), "--output", str(tmp_path / f"o{k}.json"))
        assert status == 0, err
        runs.append((json.loads(out), details(tmp_path / f"d{k}.jsonl"), json.loads((tmp_path / f"o{k}.json").read_text())))
    (summary, records, output), (summary2, records2, output2) = runs
    assert summary == summary2 and records == records2 and output["support"] == output2["support"]
    questions = load_dataset(dataset).questions
    assert [r["id"] for r in records] == [q.qid for q in questions]
    assert all(r["label"] in LABELS and 0 <= r["probability"] <= 1 and r["grounding"] == "exact" for r in records)
    assert all(set(r["check"]) == {"gold_evidence", "other_sentence"} for r in records)
    assert summary["rate"] == round(100 * sum(r["label"] == SUPPORTED for r in records) / len(records), 3)
    assert summary["check"]["gold_evidence"]["count"] == len(questions) and summary["ci"] is not None
    record = output["record"]
    assert record["kind"] == "judge" and record["judge"]["model"] == nli and record["environment"]["device"] == "cpu"
    assert record["judge"]["labels"] == {"0": "entailment", "1": "neutral", "2": "contradiction"}
    assert output["support"]["signature"] in err or "signature" in summary
    language = load_dataset(dataset).language
    assert f"statement:statement-{language}-v1" in summary["signature"] and "judge:nli+model-" in summary["signature"]


def test_labels_follow_the_config_and_batches_change_nothing(tmp_path, nli):
    dataset = write_many(tmp_path, "race", 12)
    predictions = write_submission(tmp_path, dataset, "other")
    permuted = make_tiny_nli_folder(tmp_path / "permuted", {0: "contradiction", 1: "neutral", 2: "entailment"})
    found = {}
    for name, model, batch in (("a", nli, "1"), ("b", nli, "5"), ("c", str(permuted), "32")):
        status, _, err = judge(dataset, predictions, "--judge", "nli", "--judge-model", model, "--batch-size", batch,
                               "--details", str(tmp_path / f"{name}.jsonl"))
        assert status == 0, err
        found[name] = details(tmp_path / f"{name}.jsonl")
    same = [(r["id"], r["label"], r["evidence"], r["check"]["other_sentence"]["label"]) for r in found["a"]]
    assert same == [(r["id"], r["label"], r["evidence"], r["check"]["other_sentence"]["label"]) for r in found["b"]]
    assert [r["probability"] for r in found["a"]] == pytest.approx([r["probability"] for r in found["b"]], abs=1e-5)
    swap = {"supported": "contradicted", "contradicted": "supported", "not-supported": "not-supported"}
    assert [swap[r["label"]] for r in found["a"]] == [r["label"] for r in found["c"]]
    assert {r["label"] for r in found["a"]} - {"not-supported"}  # so the swap above says something


def test_a_model_without_an_entailment_label_is_one_line(tmp_path):
    dataset = write_many(tmp_path, "c3", 2)
    for labels, says in (({0: "LABEL_0", 1: "LABEL_1"}, "names no labels (id2label is 0: LABEL_0, 1: LABEL_1"),
                         ({0: "neutral", 1: "contradiction"}, "names no entailment label")):
        model = make_tiny_nli_folder(tmp_path / says[:8], labels)
        status, _, err = judge(dataset, write_submission(tmp_path, dataset), "--judge", "nli", "--judge-model",
                               str(model))
        assert_refused(status, err, f"{model / 'config.json'}: ")
        assert says in err


def test_a_folder_that_is_no_model_and_a_missing_model_flag_are_one_line(tmp_path):
    dataset = write_many(tmp_path, "c3", 2)
    predictions = write_submission(tmp_path, dataset)
    status, _, err = judge(dataset, predictions, "--judge", "nli", "--judge-model", str(tmp_path))
    assert_refused(status, err, f"{tmp_path}: no config.json, so not a model's folder")
    status, _, err = judge(dataset, predictions, "--judge", "nli")
    assert_refused(status, err, "needs --judge-model")


def test_predictions_for_another_subset_are_one_line_before_any_model_loads(tmp_path):
    c3, cmrc = write_many(tmp_path, "c3", 3), write_many(tmp_path, "cmrc2018", 3)
    status, _, err = judge(c3, write_submission(tmp_path, cmrc), "--judge", "nli", "--judge-model", "no/such-model")
    assert_refused(status, err, "another subset")


def test_a_random_nli_model_sets_off_the_checks_warning(tmp_path, nli):
    dataset = write_many(tmp_path, "c3", 40)
    status, out, err = judge(dataset, write_submission(tmp_path, dataset), "--judge", "nli", "--judge-model", nli)
    assert status == 0, err
    assert "judge check: gold evidence supported" in out
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "does not separate the gold evidence from another passage sentence" in warnings[0]


# ---------------------------------------------------------------- the chat judge


def chat(dataset: str, predictions: str, url: str, cache: Path, *flags: str) -> tuple[int, str, str]:
    return judge(dataset, predictions, "--judge", "chat", "--judge-model", "fake-model", "--base-url", url,
                 "--cache", str(cache), "--retries", "0", "--backoff", "0", *flags)


@pytest.mark.parametrize("subset", SUBSETS)
def test_the_chat_judge_end_to_end_with_prompts_cache_and_the_same_figures_on_a_rerun(tmp_path, subset):
    dataset = write_many(tmp_path, subset, 5)
    predictions = write_submission(tmp_path, dataset)
    with FakeChatServer(gold_judge(dataset)) as server:
        status, out, err = chat(dataset, predictions, server.url, tmp_path / "c.sqlite", "--json",
                                "--details", str(tmp_path / "d.jsonl"))
        sent = len(server.requests)
        again = chat(dataset, predictions, server.url, tmp_path / "c.sqlite", "--json", "--details",
                     str(tmp_path / "d2.jsonl"))
        assert len(server.requests) == sent  # every reply from the cache
    assert status == 0 and again[0] == 0, err
    summary = json.loads(out)
    assert summary == json.loads(again[1]) and details(tmp_path / "d.jsonl") == details(tmp_path / "d2.jsonl")
    gold, other = check_cases(load_dataset(dataset), choose_statement(None, load_dataset(dataset).language), 12345)
    pairs = {(c.pair.premise, c.pair.hypothesis) for c in gold + other}
    assert [asked(body) for body in server.requests] == list(dict.fromkeys(asked(b) for b in server.requests))
    assert {asked(body) for body in server.requests} == pairs  # the submission's pairs are the check's gold ones
    assert summary["rate"] == 100.0 and summary["check"]["gold_evidence"]["rate"] == 100.0
    assert summary["check"]["other_sentence"]["rate"] == 0.0 and "warning" not in err
    records = details(tmp_path / "d.jsonl")
    assert [r["id"] for r in records] == [q.qid for q in load_dataset(dataset).questions]
    assert all(r["reply"] and r["probability"] is None for r in records)
    zh = load_dataset(dataset).language == "zh"
    prompt = server.requests[0]["messages"][0]["content"]
    assert ("证据：" in prompt and "答案是：" in prompt) if zh else ("Evidence: " in prompt and "The answer is:" in prompt)
    assert server.requests[0]["temperature"] == 0.0 and "judge:chat+model-fake-model+openai-" in summary["signature"]


def test_a_chat_judge_answering_at_random_sets_off_the_warning(tmp_path):
    dataset = write_many(tmp_path, "c3", 40)
    with FakeChatServer(random_judge) as server:
        status, out, err = chat(dataset, write_submission(tmp_path, dataset), server.url, tmp_path / "c.sqlite")
    assert status == 0, err
    assert [line for line in err.splitlines() if line.startswith("warning:")] == [
        next(line for line in err.splitlines() if "does not separate" in line)]


def test_a_failing_server_is_one_line_and_a_rerun_resumes_from_the_cache(tmp_path):
    dataset = write_many(tmp_path, "cmrc2018", 6)
    predictions = write_submission(tmp_path, dataset, "other")
    with FakeChatServer(gold_judge(dataset)) as gone:
        url = gone.url
    with FakeChatServer(gold_judge(dataset)) as good:
        calls = {"n": 0}

        def flaky(body: dict) -> object:
            calls["n"] += 1
            return gold_judge(dataset)(body) if calls["n"] <= 5 else Raw(b'{"error": {"message": "down"}}', status=500)
        good.reply = flaky
        status, _, err = chat(dataset, predictions, good.url, tmp_path / "c.sqlite", "--concurrency", "1")
        assert_refused(status, err, "no reply after 0 retries")
        good.reply = gold_judge(dataset)
        before = len(good.requests)
        status, out, err = chat(dataset, predictions, good.url, tmp_path / "c.sqlite", "--json")
        assert status == 0, err
        paid = [asked(body) for body in good.requests[:5]]
        resumed = [asked(body) for body in good.requests[before:]]
        assert len(set(resumed)) == len(resumed) > 0 and not set(paid) & set(resumed)  # only the pairs not cached
    assert json.loads(out)["rate"] == 0.0 and json.loads(out)["check"]["gold_evidence"]["rate"] == 100.0
    status, _, err = chat(dataset, predictions, url, tmp_path / "other.sqlite")  # nobody listens there now
    assert_refused(status, err, url)


def test_hostile_replies_leave_questions_unjudged_never_a_crash(tmp_path):
    dataset = write_many(tmp_path, "c3", 4)

    def hostile(body: dict) -> object:
        premise, _ = asked(body)
        if "5点" in premise:
            return "supported"  # one verdict: a judge with none gives no rate (test_judge_hostile.py)
        number = sum(map(ord, premise)) % 3
        return [Raw(b"<html>login</html>", "text/html"), "I cannot tell.", {"choices": "x"}][number]
    with FakeChatServer(hostile) as server:
        status, out, err = chat(dataset, write_submission(tmp_path, dataset), server.url, tmp_path / "c.sqlite",
                                "--json", "--details", str(tmp_path / "d.jsonl"))
    assert status == 0, err
    summary = json.loads(out)
    assert summary["labels"]["unjudged"] == 3 and summary["rate"] == 25.0 and summary["verdicts"] == 1
    notes = {r["note"] for r in details(tmp_path / "d.jsonl")} - {None}
    assert notes <= {"no verdict in the reply", "an HTML or XML page (a login or proxy page?), not a chat completion: "
                     "'<html>login</html>'", "`choices` is a string, not a chat completion"}


def test_a_local_chat_model_judges_through_the_transformers_backend(tmp_path):
    from helpers.llm_data import cached_rows
    from helpers.tiny_chat import make_tiny_chat_model

    from expmrc.llm.judges import ChatJudge, JudgeConfig

    model = make_tiny_chat_model(tmp_path / "chat")
    dataset = write_many(tmp_path, "c3", 3)
    status, out, err = judge(dataset, write_submission(tmp_path, dataset), "--judge", "chat", "--backend",
                             "transformers", "--judge-model", str(model), "--max-tokens", "4", "--json",
                             "--cache", str(tmp_path / "c.sqlite"), "--output", str(tmp_path / "o.json"))
    # its replies are gibberish: no verdict on any question, so no rate (and no file), but every reply is cached
    assert_refused(status, err, "the judge gave no verdict on any of the 3 questions it was asked about (c3); "
                                "first: no verdict in the reply; no support rate")
    assert out == "" and not (tmp_path / "o.json").exists() and cached_rows(tmp_path / "c.sqlite") >= 3
    local = ChatJudge(JudgeConfig("chat", str(model), backend="transformers", max_tokens=4, no_cache=True, quiet=True))
    assert "judge:" not in local.identity("zh") and "+transformers-" in local.identity("zh")  # the weights' digest
    assert len(local.judge([Pair("小明五点起床。", "小明几点起床？答案是：5点。")], "zh")) == 1
    record = local.record()
    assert record["backend"] == "transformers" and record["base_url"] is None and local.device == "cpu"
    assert set(record["prompts"]) == {"judge-zh-v1"}


@pytest.mark.data
@pytest.mark.slow
@pytest.mark.parametrize("subset", ["squad", "cmrc2018", "race", "c3"])
def test_the_sample_submissions_on_the_dev_sets_with_a_judge_that_knows_the_gold_evidence(tmp_path, subset):
    from helpers.common import ROOT, dev_set

    from expmrc.data.datasets import passage_of

    dataset = load_dataset(dev_set(subset))
    predictions = str(ROOT / "sample_submission" / f"{subset}.json")
    with FakeChatServer(gold_judge(dataset.path)) as server:
        status, out, err = chat(dataset.path, predictions, server.url, tmp_path / "c.sqlite", "--json",
                                "--details", str(tmp_path / "d.jsonl"), "--concurrency", "4", "--retries", "3")
    assert status == 0, err
    summary, records = json.loads(out), details(tmp_path / "d.jsonl")
    assert [r["id"] for r in records] == [q.qid for q in dataset.questions]
    golds = {str(e).strip() for q in dataset.questions for e in q.evidences}
    assert summary["rate"] == round(100 * sum(r["evidence"] in golds for r in records) / len(records), 3)
    assert summary["check"]["gold_evidence"]["rate"] == 100.0 and not summary["check"]["warning"]
    drawn = [(q, r["check"]["other_sentence"]["sentence"]) for q, r in zip(dataset.questions, records)
             if "other_sentence" in r["check"]]  # none where the passage holds no other sentence
    assert len(drawn) == summary["check"]["other_sentence"]["count"] > 0.95 * len(records)
    for question, sentence in drawn:
        assert sentence in passage_of(question) and not any(sentence in str(e) or str(e) in sentence
                                                            for e in question.evidences)


@pytest.mark.slow
def test_ctrl_c_keeps_the_judges_replies_and_the_same_command_resumes(tmp_path, press_ctrl_c):
    import re
    import subprocess
    import sys

    from helpers.common import environment

    dataset = write_many(tmp_path, "cmrc2018", 8)
    predictions = write_submission(tmp_path, dataset, "other")
    argv = [sys.executable, "-m", "expmrc.cli", "judge", dataset, predictions, "--judge", "chat", "--judge-model",
            "fake-model", "--cache", str(tmp_path / "c.sqlite"), "--concurrency", "2", "--quiet", "--json"]
    with FakeChatServer(gold_judge(dataset), delay=0.3) as server:
        child = press_ctrl_c.start([*argv, "--base-url", server.url], env=environment(), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        status, _, err, _ = press_ctrl_c.press_when(child, lambda: len(server.requests) >= 4)
        assert status == 130 and len(err.strip().splitlines()) == 1, err
        assert re.fullmatch(r"interrupted: \d+ of \d+ judge replies are cached in .+; the same command resumes",
                            err.strip()), err
        first = [asked(body) for body in server.requests]
        done = subprocess.run([*argv, "--base-url", server.url], env=environment(), capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        again = [asked(body) for body in server.requests[len(first):]]
    assert again and not set(again) & set(first)  # the resumed run asks only what never arrived
    assert json.loads(done.stdout)["check"]["gold_evidence"]["rate"] == 100.0
