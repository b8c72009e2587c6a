"""The task layer: settings defined once and recorded, a saved run re-predicts its own dev_predictions.json,
predict-only keeps the training record, and reruns with other settings or mostly unknown tokens are refused."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from expmrc.cli import run_guarded
from expmrc.data.datasets import load_dataset
from expmrc.data.runs import NBEST_FILE, PREDICT_ONLY_DIR, PREDICTIONS_FILE, SCHEMA
from expmrc.data.submissions import write_predictions
from expmrc.errors import ExpmrcError
from expmrc.inference.rerun import FineTuned
from expmrc.tasks import TASKS, TaskSettings
from expmrc.training.choice_task import run_choice
from expmrc.training.span_task import run_span
from helpers.choice_data import choice_file
from helpers.span_data import make_span_file
from helpers.tiny_bert import make_tiny_bert_folder

COMMON = ["--do_train=True", "--do_predict=True", "--doc_stride=16", "--train_batch_size=8", "--max_steps=12",
          "--learning_rate=3e-3", "--loss_lambda=1.0", "--predict_batch_size=5"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A span run and a choice run of a tiny BERT at settings other than the defaults, with their flags."""
    root = tmp_path_factory.mktemp("tasks")
    bert = make_tiny_bert_folder(root / "bert")
    span = ["--model_name_or_path", str(bert), *COMMON, f"--train_file={make_span_file(root / 't.json', 24, 1)}",
            f"--predict_file={make_span_file(root / 'd.json', 10, 2)}", "--output_dir", str(root / "span"),
            "--max_seq_length=48", "--max_query_length=12", "--n_best_size=7"]
    choice = ["--model_name_or_path", str(bert), *COMMON, f"--train_file={choice_file(root / 'ct.json', 24, 1)}",
              f"--predict_file={choice_file(root / 'cd.json', 10, 2)}", "--output_dir", str(root / "choice"),
              "--max_seq_length=24", "--max_query_length=6"]
    assert run_span(span) == 0 and run_choice(choice) == 0
    return {"span": (root / "span", span, run_span), "choice": (root / "choice", choice, run_choice), "root": root}


def flag(argv, name):
    return next(a.split("=", 1)[1] for a in argv if a.startswith(f"--{name}="))


@pytest.mark.parametrize("task", ["span", "choice"])
def test_a_saved_run_re_predicts_its_own_predictions(runs, task, tmp_path):
    out, argv, _ = runs[task]
    info = json.loads((out / "run_info.json").read_text(encoding="utf-8"))
    assert info["settings"] == json.loads((out / "model" / "config.json").read_text())["expmrc"]["settings"]
    model = FineTuned(str(out))
    predictor = model.predictor  # the run's settings and --predict_batch_size, as recorded
    assert predictor.settings.max_seq_length == int(flag(argv, "max_seq_length")) and predictor.batch_size == 5
    again = model.predict(load_dataset(flag(argv, "predict_file")).questions)
    write_predictions(str(tmp_path), again.predictions, again.nbest)
    for name in (PREDICTIONS_FILE, NBEST_FILE):  # answers, evidence, offsets, every candidate's score: byte for byte
        assert (tmp_path / name).read_bytes() == (out / name).read_bytes()


@pytest.mark.parametrize("task", ["span", "choice"])
def test_predict_only_keeps_the_training_record_and_uses_its_settings(runs, task, capsys):
    out, argv, run = runs[task]
    before = {name: (out / name).read_bytes() for name in ("run_info.json", "dev_predictions.json", "dev_nbest.json")}
    given = ["--model_name_or_path", "unused", "--do_predict=True", f"--predict_file={flag(argv, 'predict_file')}",
             "--output_dir", str(out)]
    assert run(given) == 0  # no length flags: the model's recorded ones, not the defaults
    assert f"writes to {out / PREDICT_ONLY_DIR}" in capsys.readouterr().err
    assert {name: (out / name).read_bytes() for name in before} == before
    for name in (PREDICTIONS_FILE, NBEST_FILE):  # the predict-only rerun predicts byte for byte as the run did
        assert (out / PREDICT_ONLY_DIR / name).read_bytes() == (out / name).read_bytes()
    record = json.loads((out / PREDICT_ONLY_DIR / "run_info.json").read_text(encoding="utf-8"))
    assert record["status"] == "finished" and record["settings"]["max_seq_length"] == int(flag(argv, "max_seq_length"))


def test_a_rerun_with_other_settings_is_refused_unless_overwrite(runs, capsys):
    out, argv, _ = runs["span"]
    before = (out / "run_info.json").read_bytes()
    assert run_guarded(run_span, [a for a in argv if not a.startswith("--learning_rate")] + ["--learning_rate=1e-3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"error: {out}: holds a finished run trained with other settings (--learning_rate 0.003 -> "
                          "0.001)") and "--overwrite_output_dir True" in err
    assert (out / "run_info.json").read_bytes() == before


def test_mostly_unknown_tokens_are_refused_unless_allowed(runs, tmp_path, capsys):
    doc = {"version": "c3-dev", "data": [{"id": "m1", "article": "天很蓝。草很绿。", "questions": ["天什么颜色？"],
                                          "options": [["红", "蓝"]], "answers": ["B"]}]}
    data = tmp_path / "c3.json"
    data.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    argv = ["--model_name_or_path", str(runs["root"] / "bert"), "--do_predict", f"--predict_file={data}",
            "--output_dir", str(tmp_path / "run"), "--max_seq_length=64"]
    assert run_guarded(run_choice, argv) == 2
    assert "are the tokenizer's unknown token" in capsys.readouterr().err.strip().splitlines()[-1]
    assert run_choice(argv + ["--allow_unknown_tokens=True"]) == 0


def test_original_choice_command_line_at_128_tokens_runs(runs, tmp_path):
    """--max_seq_length 128 --max_query_length 64: the original runs, so ours does (the rows leave the
    passage 128 - 3 - 64 tokens at least)."""
    _, argv, _ = runs["choice"]
    argv = [a for a in argv if not a.startswith(("--max_seq_length", "--max_query_length", "--output_dir"))
            and a != str(runs["choice"][0])]
    assert run_choice(argv + ["--max_seq_length", "128", "--max_query_length", "64", "--output_dir",
                              str(tmp_path / "run")]) == 0
    assert json.loads((tmp_path / "run" / "run_info.json").read_text())["settings"]["max_seq_length"] == 128


def test_settings_are_defined_once_and_recorded_settings_are_checked(tmp_path):
    assert TASKS["span"].defaults == TaskSettings(384, 64, 128, 30, 128, 20, True)
    assert TASKS["choice"].defaults.sliding_windows is False
    good = TASKS["choice"].defaults.as_dict()
    assert TASKS["choice"].settings_from_record(good, "x") == TASKS["choice"].defaults
    for bad, message in [({**good, "max_seq_length": "384"}, "max_seq_length must be a whole number"),
                         ({**good, "doc_stride": 0}, "doc_stride must be a whole number of at least 1"),
                         ({k: v for k, v in good.items() if k != "n_best_size"}, "n_best_size is missing"),
                         ({**good, "sliding_windows": 1}, "sliding_windows is 1, not true or false"),
                         ([], "not an object")]:
        with pytest.raises(ExpmrcError, match=message):
            TASKS["choice"].settings_from_record(bad, "run/model/config.json")
    with pytest.raises(ExpmrcError, match="--max_query_length must be a whole number"):
        TaskSettings(max_query_length=0).checked("--")


def test_the_run_record_says_its_schema_and_environment_and_a_newer_one_is_refused(runs, tmp_path):
    out, _, _ = runs["choice"]
    info = json.loads((out / "run_info.json").read_text(encoding="utf-8"))
    assert info["schema"] == SCHEMA and info["environment"]["device"] == "cpu"
    assert torch.__version__.startswith(info["environment"]["packages"]["torch"].split("+")[0])
    folder = tmp_path / "model"
    shutil.copytree(out / "model", folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config["expmrc"]["schema"] = SCHEMA + 1
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(ExpmrcError, match=f"written by a newer expmrc \\(record schema {SCHEMA + 1}"):
        FineTuned(str(folder))
    config["expmrc"]["schema"] = SCHEMA
    config["expmrc"]["settings"]["max_query_length"] = -3
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(ExpmrcError, match="config.json: the recorded setting max_query_length must be a whole number"):
        FineTuned(str(folder))
