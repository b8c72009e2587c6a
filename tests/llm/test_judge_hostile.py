"""Hostile input to `expmrc judge` and to the judge flags of evaluate, compare, llm, ground and report (issue 37,
item 2): a damaged NLI folder is one line naming the file and what is wrong; a missing folder says so and a Hub
id without a network fails at once; a judge that gives no verdict never prints a rate; one file for two outputs
is refused; judge details name the submission they judged, and a report refuses another submission's; a judge
setting without --judge is refused, never ignored. Every refusal: exit 2, one line, no traceback, nothing
written."""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path

import pytest
from helpers.common import needs_punkt
from helpers.fake_openai import FakeChatServer
from helpers.hostile import assert_refused, files_under, run_cli
from helpers.judge_data import gold_judge, write_many, write_submission
from helpers.llm_data import read_run
from helpers.tiny_nli import make_tiny_nli_folder


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    return make_tiny_nli_folder(tmp_path_factory.mktemp("nli") / "good")


def _config(folder: Path, **changes) -> None:
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")


def _cut(folder: Path, name: str, keep: float) -> None:
    data = (folder / name).read_bytes()
    (folder / name).write_bytes(data[:int(len(data) * keep)])


def _torch_weights_cut(folder: Path) -> None:
    import torch
    from safetensors.torch import load_file

    weights = load_file(str(folder / "model.safetensors"))
    (folder / "model.safetensors").unlink()
    torch.save(weights, str(folder / "pytorch_model.bin"))
    _cut(folder, "pytorch_model.bin", 0.5)


def _keep(folder: Path, names: tuple[str, ...]) -> None:
    for path in folder.iterdir():
        if path.name not in names:
            path.unlink()


# what is done to a copy of a good model's folder, and what the one line says after the folder's path
DAMAGES = {
    "config without labels": (lambda f: _config(f, id2label=None, label2id=None), "/config.json: names no labels"),
    "labels without entailment": (lambda f: _config(f, id2label={"0": "neutral", "1": "contradiction", "2": "other"},
                                                    label2id=None), "/config.json: its id2label (0: neutral, "
                                                                    "1: contradiction, 2: other) names no entailment"),
    "a one-label classifier": (lambda f: _config(f, id2label={"0": "entailment"}, label2id=None),
                               "/config.json: names one label only (0: entailment)"),
    "config not JSON": (lambda f: (f / "config.json").write_text("{not json", encoding="utf-8"),
                        "/config.json: cannot be read as a model's config"),
    "weights cut short": (lambda f: _cut(f, "model.safetensors", 0.5),
                          "/model.safetensors: damaged weights (cut short, or not a safetensors file)"),
    "weights cut in their header": (lambda f: _cut(f, "model.safetensors", 0.00005),
                                    "/model.safetensors: damaged weights"),
    "torch weights cut short": (_torch_weights_cut, "/pytorch_model.bin: cannot load the weights"),
    "weights of another head": (lambda f: _config(f, id2label={"0": "entailment", "1": "neutral"}, label2id=None),
                                "/model.safetensors: cannot load the weights of a sequence-classification (NLI) "
                                "model: they do not fit config.json"),
    "an empty folder": (lambda f: _keep(f, ()), ": an empty folder"),
    "a config alone": (lambda f: _keep(f, ("config.json",)), ": no weights (model.safetensors or pytorch_model.bin)"),
    "no tokenizer files": (lambda f: _keep(f, ("config.json", "model.safetensors")),
                           ": its tokenizer knows only its special tokens"),
}


def damaged(good: Path, folder: Path, damage: str) -> Path:
    shutil.copytree(good, folder)
    DAMAGES[damage][0](folder)
    return folder


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_nli_folder_is_one_line_naming_the_file(tmp_path, good, damage):
    model = damaged(good, tmp_path / "model", damage)
    dataset = write_many(tmp_path, "race", 2)
    before = files_under(tmp_path)
    status, out, err = run_cli(["judge", dataset, write_submission(tmp_path, dataset), "--judge", "nli",
                                "--judge-model", str(model), "--quiet", "--details", str(tmp_path / "d.jsonl")])
    assert_refused(status, err, f"{model}{DAMAGES[damage][1]}")
    assert out == "" and files_under(tmp_path) == before | {"sub.json"}


@needs_punkt
@pytest.mark.parametrize("command", ["evaluate", "compare", "ground", "llm"])
def test_the_judge_flags_elsewhere_load_the_judge_the_same_way(tmp_path, good, command):
    model = damaged(good, tmp_path / "model", "weights cut short")
    dataset = write_many(tmp_path, "squad", 3)
    gold, other = write_submission(tmp_path, dataset), write_submission(tmp_path, dataset, "other", "other.json")
    argv = {"evaluate": ["evaluate", dataset, gold], "compare": ["compare", dataset, gold, other],
            "ground": ["ground", dataset, gold, "--output", str(tmp_path / "g.json")],
            "llm": ["llm", dataset, "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--no-cache",
                    "--output", str(tmp_path / "run")]}[command]
    status, _, err = run_cli([*argv, "--judge", "nli", "--judge-model", str(model)])
    assert_refused(status, err, f"{model}/model.safetensors: damaged weights")
    assert not (tmp_path / "g.json").exists() and not (tmp_path / "run").exists()


@pytest.mark.parametrize("given", ["{tmp}/no/such/model", "./no/such/model", "{tmp}/sub.json"])
def test_a_missing_folder_or_a_file_says_so(tmp_path, given):
    dataset = write_many(tmp_path, "c3", 2)
    predictions = write_submission(tmp_path, dataset)
    model = given.format(tmp=tmp_path)
    status, _, err = run_cli(["judge", dataset, predictions, "--judge", "nli", "--judge-model", model])
    assert_refused(status, err, f"{model}: " + ("a file, not a model's folder" if model == predictions else
                                                "no such folder"))


@pytest.mark.parametrize("offline", [False, True], ids=["hub-unreachable", "hf-hub-offline"])
def test_a_hub_id_without_a_network_fails_at_once(tmp_path, offline, monkeypatch):
    from huggingface_hub import constants
    from test_llm_unreachable import closed_port

    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{closed_port()}")  # no Hub, and an empty cache
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", offline)
    import transformers  # noqa: F401 - imported before the clock starts: only the Hub's answer is timed
    from huggingface_hub import HfApi  # noqa: F401

    dataset = write_many(tmp_path, "race", 2)
    started = time.monotonic()
    status, _, err = run_cli(["judge", dataset, write_submission(tmp_path, dataset), "--judge", "nli",
                              "--judge-model", "org/nli-model", "--quiet"])
    seconds = time.monotonic() - started  # transformers alone retries each file for about a minute
    assert_refused(status, err, "org/nli-model: no such folder")
    assert ("HF_HUB_OFFLINE is set" if offline else "cannot be reached") in err and seconds < 10


# ---------------------------------------------------------------- no verdict, no rate


def silent_judge(body: dict) -> str:
    return "I would rather not say."


def chat_flags(url: str, cache: Path) -> list[str]:
    return ["--judge", "chat", "--judge-model", "fake-model", "--judge-base-url", url, "--judge-cache", str(cache)]


@needs_punkt
def test_a_chat_judge_giving_no_verdict_prints_no_rate_anywhere(tmp_path):
    dataset = write_many(tmp_path, "squad", 4)
    predictions = write_submission(tmp_path, dataset)
    with FakeChatServer(silent_judge) as server:
        status, out, err = run_cli(["judge", dataset, predictions, "--judge", "chat", "--judge-model", "fake-model",
                                    "--base-url", server.url, "--cache", str(tmp_path / "c.sqlite"), "--quiet",
                                    "--details", str(tmp_path / "d.jsonl"), "--output", str(tmp_path / "o.json")])
        assert_refused(status, err, f"{predictions}: the judge gave no verdict on any of the 4 questions it was asked "
                                    "about (squad); first: no verdict in the reply; no support rate")
        assert out == "" and not (tmp_path / "d.jsonl").exists() and not (tmp_path / "o.json").exists()
        for argv in (["evaluate", dataset, predictions], ["compare", dataset, predictions,
                                                          write_submission(tmp_path, dataset, "other", "o.json")]):
            status, out, err = run_cli([*argv, *chat_flags(server.url, tmp_path / "c.sqlite")])
            assert_refused(status, err, "the judge gave no verdict on any of the 4 questions")
            assert "support" not in out.lower()


@needs_punkt
def test_an_llm_run_whose_judge_gives_no_verdict_says_so_and_records_no_rate(tmp_path):
    from helpers.llm_data import gold_reply

    dataset = write_many(tmp_path, "squad", 3)
    with FakeChatServer(gold_reply(dataset)) as answers, FakeChatServer(silent_judge) as judge:
        status, out, err = run_cli(["llm", dataset, "--model", "fake-model", "--base-url", answers.url, "--output",
                                    str(tmp_path / "run"), "--cache", str(tmp_path / "a.sqlite"), "--quiet",
                                    *chat_flags(judge.url, tmp_path / "j.sqlite")])
    assert status == 0, err
    assert "support no verdict (n = 0) of 3 questions" in err and "support 0.0%" not in err
    support = read_run(tmp_path / "run", "scores.json")["support"]
    assert support["rate"] is None and support["ci"] is None and support["verdicts"] == 0
    assert support["check"]["gold_evidence"]["rate"] is None and support["check"]["gap"] is None
    status, _, err = run_cli(["collect", str(tmp_path / "run"), "--output-dir", str(tmp_path / "out"), "--quiet"])
    assert status == 0, err
    assert "| no verdict (check gap n/a) |" in (tmp_path / "out" / "llm_runs.md").read_text(encoding="utf-8")


def test_an_empty_submission_is_refused_before_the_judge_loads(tmp_path, write_json):
    dataset = write_many(tmp_path, "c3", 3)
    status, out, err = run_cli(["judge", dataset, write_json("empty.json", {}), "--judge", "nli", "--judge-model",
                                str(tmp_path / "no-model-here")])
    assert_refused(status, err, "empty.json: holds no predictions for the 3 questions of")
    assert out == ""


# ---------------------------------------------------------------- outputs and details


@pytest.mark.parametrize("spelling", ["same", "dotted"])
def test_one_file_for_output_and_details_is_refused(tmp_path, good, spelling, monkeypatch):
    monkeypatch.chdir(tmp_path)
    dataset = write_many(tmp_path, "race", 2)
    other = "out.json" if spelling == "same" else "./sub/../out.json"
    (tmp_path / "sub").mkdir()
    status, out, err = run_cli(["judge", dataset, write_submission(tmp_path, dataset), "--judge", "nli",
                                "--judge-model", str(good), "--output", "out.json", "--details", other])
    assert_refused(status, err, "out.json: given for both --details and --output")
    assert not (tmp_path / "out.json").exists()


def judge_chat(dataset: str, predictions: str, url: str, cache: Path, details: Path) -> None:
    status, _, err = run_cli(["judge", dataset, predictions, "--judge", "chat", "--judge-model", "fake-model",
                              "--base-url", url, "--cache", str(cache), "--quiet", "--details", str(details)])
    assert status == 0, err


@needs_punkt
def test_judge_details_name_their_submission_and_a_report_keeps_them_to_it(tmp_path):
    from test_judge_commands import page_data

    dataset = write_many(tmp_path, "race", 5)
    gold, other = write_submission(tmp_path, dataset), write_submission(tmp_path, dataset, "other", "other.json")
    with FakeChatServer(gold_judge(dataset)) as server:
        judge_chat(dataset, gold, server.url, tmp_path / "c.sqlite", tmp_path / "a.jsonl")
        judge_chat(dataset, other, server.url, tmp_path / "c.sqlite", tmp_path / "b.jsonl")
    sha = hashlib.sha256(Path(other).read_bytes()).hexdigest()
    records = [json.loads(line) for line in (tmp_path / "b.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {(r["predictions"], r["predictions_sha256"]) for r in records} == {(other, sha)}

    def report(*argv: str) -> tuple[int, str, str]:
        return run_cli(["report", dataset, *argv, "--output", str(tmp_path / "r.html")])
    status, _, err = report(gold, "--judge-details", str(tmp_path / "b.jsonl"))  # B's labels for A: refused
    assert_refused(status, err, f"b.jsonl: the judge's details of another submission ({other} with sha256 "
                                f"{sha[:12]}…), not of {gold}")
    assert not (tmp_path / "r.html").exists()
    status, _, err = report(gold, other, "--judge-details", str(tmp_path / "b.jsonl"))  # one file, two submissions
    assert status == 0, err
    assert f"b.jsonl: the judge's labels of {other} ({other})" in err
    page = page_data(tmp_path / "r.html")
    assert [[s["support"] and s["support"]["label"] for s in q["subs"]] for q in page["questions"]] == \
        [[None, "not-supported"]] * 5
    status, _, err = report(gold, other, "--judge-details", str(tmp_path / "a.jsonl"), "--judge-details",
                            str(tmp_path / "a.jsonl"))
    assert_refused(status, err, f"a.jsonl and {tmp_path / 'a.jsonl'} both hold the judge's labels of {gold}")
    old = [{k: v for k, v in json.loads(line).items() if k not in ("predictions", "predictions_sha256")}
           for line in (tmp_path / "a.jsonl").read_text(encoding="utf-8").splitlines()]
    (tmp_path / "old.jsonl").write_text("".join(json.dumps(r) + "\n" for r in old), encoding="utf-8")
    status, _, err = report(gold, "--judge-details", str(tmp_path / "old.jsonl"))
    assert status == 0, err
    assert "old.jsonl: written before the judge's details named the submission they judged" in err


# ---------------------------------------------------------------- a judge setting without --judge


@needs_punkt
@pytest.mark.parametrize("command", ["evaluate", "compare", "ground", "llm"])
@pytest.mark.parametrize("flag", [["--judge-model", "models/nli"], ["--judge-device", "cuda"]])
def test_a_judge_setting_without_judge_is_refused(tmp_path, command, flag):
    dataset = write_many(tmp_path, "squad", 2)
    gold, other = write_submission(tmp_path, dataset), write_submission(tmp_path, dataset, "other", "other.json")
    argv = {"evaluate": ["evaluate", dataset, gold], "compare": ["compare", dataset, gold, other],
            "ground": ["ground", dataset, gold, "--output", str(tmp_path / "g.json")],
            "llm": ["llm", dataset, "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--no-cache",
                    "--output", str(tmp_path / "run")]}[command]
    status, out, err = run_cli([*argv, *flag])
    assert_refused(status, err, f"{flag[0]} sets the support judge, and no --judge is given (nli or chat)")
    assert out == "" and not (tmp_path / "g.json").exists() and not (tmp_path / "run").exists()
