"""One run record for every run: a training run and an `expmrc llm` run written by this version share its shape
(schema, kind, status, environment, command), and `expmrc collect` lists both kinds, written by this version and
by the previous one (tests/fixtures/old_runs), each with its environment."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from expmrc.cli import main
from expmrc.data.runs import COMMON, SCHEMA, RunRecord
from expmrc.errors import ExpmrcError
from expmrc.training.span_task import run_span
from helpers.common import FIXTURES, needs_punkt
from helpers.fake_openai import FakeChatServer
from helpers.tiny_bert import make_tiny_bert_folder

OLD = FIXTURES / "old_runs"


def test_records_of_the_previous_version_read_with_their_environment():
    train, llm = RunRecord.read(OLD / "train-run"), RunRecord.read(OLD / "llm-run")
    assert (train.kind, train.schema, train.status, train.command) == ("baseline", 2, "finished", None)
    assert train.environment.summary() == "expmrc 0.1.0, cpu" and train.get("loss_lambda") == 0.5
    assert (llm.kind, llm.schema, llm.status, llm.get("template")["name"]) == ("llm", 1, "finished", "span-zh-v1")
    assert llm.environment.summary() == "expmrc 0.1.0" and llm.environment.packages["openai"]


@pytest.mark.parametrize("value, says", [([], "a run record must be a JSON object, got an array"),
                                         ({"schema": SCHEMA + 1}, "written by a newer expmrc"),
                                         ({"schema": "2"}, "the recorded schema is '2', not a whole number"),
                                         ({"kind": "eval"}, "the recorded kind is 'eval', not one of baseline, llm"),
                                         ({"status": None}, "the recorded status is null, not text"),
                                         ({"command": "run.py --x"}, "the recorded command is a string"),
                                         ({"environment": [1]}, "the recorded environment is an array")])
def test_a_record_of_the_wrong_shape_is_one_line_naming_it(value, says):
    with pytest.raises(ExpmrcError, match=f"^x/run_info.json: {says}"):
        RunRecord.from_json(value, "x/run_info.json")


def reply(body: dict) -> str:
    return json.dumps({"answer": "长江", "evidence": "长江注入东海。"}, ensure_ascii=False)


@needs_punkt
def test_collect_lists_old_and_new_runs_of_both_kinds_with_their_environment(tmp_path, capsys):
    runs = tmp_path / "runs"
    for name in ("train-run", "llm-run"):
        shutil.copytree(OLD / name, runs / f"old-{name}")
    dev = tmp_path / "dev.json"
    shutil.copy(OLD / "dev.json", dev)
    argv = ["--model_name_or_path", str(make_tiny_bert_folder(tmp_path / "bert")), "--do_train=True",
            f"--train_file={dev}", "--do_predict=True", f"--predict_file={dev}", "--output_dir", str(runs / "new-train"),
            "--max_seq_length=48", "--doc_stride=16", "--max_query_length=12", "--train_batch_size=4", "--max_steps=2",
            "--loss_lambda=0.5", "--rand_seed=4"]
    assert run_span(argv) == 0
    with FakeChatServer(reply) as server:
        url = server.url.replace("http://", "http://user:secret@")
        assert main(["llm", str(OLD / "llm-dev.json"), "--model", "fake-model", "--base-url", url,
                     "--output", str(runs / "new-llm"), "--no-cache", "--quiet"]) == 0

    train, llm = (json.loads((runs / name / "run_info.json").read_text(encoding="utf-8")) for name in ("new-train", "new-llm"))
    assert set(COMMON) <= set(train) and set(COMMON) <= set(llm)
    assert (train["schema"], train["kind"], llm["schema"], llm["kind"], llm["status"]) == (SCHEMA, "baseline", SCHEMA,
                                                                                         "llm", "finished")
    assert set(train["environment"]) == set(llm["environment"]) == {"packages", "git_commit", "device"}
    assert llm["environment"]["packages"]["expmrc"] == train["environment"]["packages"]["expmrc"]
    assert llm["command"][:2] == ["expmrc", "llm"] and "secret" not in json.dumps(llm)

    capsys.readouterr()
    out = tmp_path / "table"
    assert main(["collect", str(runs), "--output-dir", str(out), "--data", str(dev), "--quiet"]) == 0
    rows = {Path(r["run_dir"]).name: r for r in csv.DictReader((out / "runs.csv").open(encoding="utf-8"))}
    assert sorted(rows) == ["new-train", "old-train-run"] and all(r["status"] == "finished" for r in rows.values())
    assert rows["old-train-run"]["expmrc"] == rows["new-train"]["expmrc"] == "0.1.0"
    assert rows["old-train-run"]["device"] == rows["new-train"]["device"] == "cpu"
    assert rows["new-train"]["git_commit"] == (train["environment"]["git_commit"] or "")
    table = (out / "llm_runs.md").read_text(encoding="utf-8")
    old_row = next(line for line in table.splitlines() if "old-llm-run" in line)
    new_row = next(line for line in table.splitlines() if "new-llm" in line)
    assert old_row.endswith("| expmrc 0.1.0 |") and new_row.split("|")[-2].strip().startswith("expmrc 0.1.0")
