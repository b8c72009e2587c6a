"""A saved model is read in one place (`SavedModel`), and the predict-only baseline run and `FineTuned` settle their
settings by its one rule: a flag given overrides the record, else the record, else the default, for the windows, the
precision, the attention path and the batch size alike."""

from __future__ import annotations

import json
import re

import pytest
import torch
from accelerate.state import AcceleratorState

from expmrc.cli import run_guarded
from expmrc.data.datasets import load_dataset
from expmrc.data.runs import NBEST_FILE, PREDICTIONS_FILE
from expmrc.data.submissions import write_predictions
from expmrc.errors import ExpmrcError
from expmrc.inference.rerun import FineTuned
from expmrc.inference.saved import Prediction, SavedModel
from expmrc.models.backbones import load_task_model, resolve_source
from expmrc.tasks import TASKS, TaskSettings
from expmrc.training.baseline import start_run
from expmrc.training.span_task import SPAN_TASK, run_span
from helpers.span_data import distractor_file
from helpers.tiny_bert import make_tiny_bert_folder

SETTINGS = TaskSettings(max_seq_length=48, max_query_length=12, doc_stride=16, max_answer_length=20,
                        max_evidence_length=40, n_best_size=7)
RECORD = {"schema": 3, "task": "span", "settings": SETTINGS.as_dict(), "mixed_precision": "bf16",
          "attention": "unpadded", "predict_batch_size": 5, "allow_unknown_tokens": True}


@pytest.fixture(autouse=True)
def fresh_accelerate():
    """Each run here makes its Accelerator at the precision the record asks for (bf16 or FP32); accelerate keeps one
    precision per process (a real run is one process and never notices), so its state is reset around each test."""
    AcceleratorState._reset_state(reset_partial_state=True)
    yield
    AcceleratorState._reset_state(reset_partial_state=True)


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    """A tiny BERT with span heads, saved as a fine-tuned folder is (the record is written per test)."""
    root = tmp_path_factory.mktemp("saved")
    source = resolve_source(str(make_tiny_bert_folder(root / "bert")))
    torch.manual_seed(0)
    model, _ = load_task_model(TASKS["span"].model_class, source)
    model.save_pretrained(str(root / "heads"))
    source.tokenizer.save_pretrained(str(root / "heads"))
    return root / "heads"


def saved_folder(bert, folder, record):
    """A copy of the tiny model whose config.json carries `record` as a fine-tuned folder's."""
    folder.mkdir()
    for path in bert.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config["expmrc"] = record
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def predict_only(folder, dev, out, *flags):
    """The predict-only run's settings as `start_run` settles them (nothing loaded yet)."""
    run, _, _ = start_run(SPAN_TASK, ["--model_name_or_path", str(folder), "--do_predict", f"--predict_file={dev}",
                                 "--output_dir", str(out), *flags])
    return run


def fine_tuned_chose(model: FineTuned) -> tuple:
    predictor = model.predictor
    with predictor.autocast():
        precision = {torch.bfloat16: "bf16", torch.float16: "fp16"}.get(torch.get_autocast_dtype("cpu"), "no") \
            if torch.is_autocast_enabled("cpu") else "no"
    return predictor.settings, predictor.batch_size, precision, model.model.attention_path


def predict_only_chose(run) -> tuple:
    return run.settings, run.predict_batch_size, run.accelerator.mixed_precision, run.info["attention"]["path"]


@pytest.mark.parametrize("case", ["recorded", "given", "unrecorded"])
def test_the_predict_only_run_and_fine_tuned_choose_the_same_settings(bert, tmp_path, case):
    record = {k: v for k, v in RECORD.items() if case != "unrecorded" or k in ("schema", "task", "settings")}
    folder = saved_folder(bert, tmp_path / "model", record)
    dev = distractor_file(tmp_path / "dev.json", 4, seed=1)
    given = ["--predict_batch_size=3"] if case == "given" else []
    fine = FineTuned(str(folder), "cpu", 3 if case == "given" else None)
    chose = fine_tuned_chose(fine)
    assert chose == predict_only_chose(predict_only(folder, dev, tmp_path / "run", *given))
    expected = {"recorded": (SETTINGS, 5, "bf16", "unpadded"), "given": (SETTINGS, 3, "bf16", "unpadded"),
                "unrecorded": (SETTINGS, 32, "no", "padded")}[case]  # CPU defaults: FP32, padded (auto)
    assert chose == expected


def test_both_paths_predict_alike_under_the_recorded_bf16(bert, tmp_path):
    """Before the one rule, the predict-only run took --mixed_precision's default (FP32 on a CPU) and FineTuned the
    record's bf16: their n-best scores differed. Now both predict under bf16 on the unpadded path, byte for byte."""
    folder = saved_folder(bert, tmp_path / "model", RECORD)
    dev = distractor_file(tmp_path / "dev.json", 6, seed=2)
    out = tmp_path / "run"
    assert run_span(["--model_name_or_path", str(folder), "--do_predict", f"--predict_file={dev}", "--output_dir",
                     str(out)]) == 0
    info = json.loads((out / "run_info.json").read_text(encoding="utf-8"))
    assert info["mixed_precision"] == "bf16" and info["attention"]["path"] == "unpadded"
    assert info["settings"] == SETTINGS.as_dict() and info["training"]["predict_batch_size"] == 5
    again = FineTuned(str(folder), "cpu").predict(load_dataset(dev).questions)
    write_predictions(str(tmp_path), again.predictions, again.nbest)
    for name in (PREDICTIONS_FILE, NBEST_FILE):
        assert (tmp_path / name).read_bytes() == (out / name).read_bytes()


def test_a_flag_given_overrides_the_record_and_says_so(bert, tmp_path, capsys):
    folder = saved_folder(bert, tmp_path / "model", RECORD)
    dev = distractor_file(tmp_path / "dev.json", 4, seed=1)
    run = predict_only(folder, dev, tmp_path / "run", "--max_seq_length=64", "--mixed_precision=no",
                       "--attention", "padded", "--n_best_size=7")
    assert run.settings.max_seq_length == 64 and run.settings.n_best_size == 7
    assert run.accelerator.mixed_precision == "no" and run.info["attention"]["path"] == "padded"
    assert run.predict_batch_size == 5 and run.allow_unknown_tokens  # not given: the record's
    assert ("predicting with settings other than the model was trained with (its attention unpadded, "
            "max_seq_length 48, mixed_precision bf16)") in capsys.readouterr().err  # n_best_size 7 is the record's


def test_the_rule_on_a_device_that_cannot_run_the_recorded_precision(bert, tmp_path):
    folder = saved_folder(bert, tmp_path / "model", {**RECORD, "mixed_precision": "fp16"})
    chosen = SavedModel.read(folder).choose(TASKS["span"], {}, "cpu")
    assert chosen == Prediction(SETTINGS, 5, "no", "unpadded", True)  # a recorded fp16 runs FP32 on a CPU
    assert any("records fp16, which cpu cannot run: predicting under no" in note for note in chosen.notes)
    with pytest.raises(ExpmrcError, match="^--mixed_precision fp16 needs a GPU"):  # a given one is refused
        SavedModel.read(folder).choose(TASKS["span"], {"mixed_precision": "fp16"}, "cpu")
    assert SavedModel.read(folder).choose(TASKS["span"], {}, "xla").attention == "auto"  # no unpadded path on TPUs
    # a model never fine-tuned here: the flags' defaults, the precision resolved for the device
    assert SavedModel(None).choose(TASKS["span"], {}, "cpu") == Prediction(TASKS["span"].defaults, precision="no")


@pytest.mark.parametrize("key, value, message", [
    ("predict_batch_size", "5", 'the recorded predict_batch_size is "5", not a whole number of at least 1'),
    ("predict_batch_size", True, "the recorded predict_batch_size is true, not"),
    ("predict_batch_size", 0, "the recorded predict_batch_size is 0, not"),
    ("mixed_precision", "fp32", 'the recorded mixed_precision is "fp32", not one of no, fp16, bf16'),
    ("mixed_precision", "auto", 'the recorded mixed_precision is "auto", not'),
    ("attention", 1, "the recorded attention is 1, not one of auto, padded, unpadded"),
    ("allow_unknown_tokens", "yes", 'the recorded allow_unknown_tokens is "yes", not true or false'),
    ("settings", None, "records no window and decoding settings"),
])
def test_a_damaged_record_is_one_line_on_both_paths(bert, tmp_path, capsys, key, value, message):
    record = {k: v for k, v in RECORD.items() if k != key}
    if value is not None:
        record[key] = value
    folder = saved_folder(bert, tmp_path / "model", record)
    with pytest.raises(ExpmrcError, match=f"^{re.escape(str(folder / 'config.json'))}: {re.escape(message)}"):
        FineTuned(str(folder), "cpu")
    dev = distractor_file(tmp_path / "dev.json", 2, seed=1)
    out = tmp_path / "run"
    assert run_guarded(run_span, ["--model_name_or_path", str(folder), "--do_predict", f"--predict_file={dev}",
                                  "--output_dir", str(out)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(f"error: {folder / 'config.json'}: {message}")
    assert not (out / "run_info.json").exists()  # refused before anything was written


def test_the_record_itself_is_read_once_and_checked(bert, tmp_path):
    folder = saved_folder(bert, tmp_path / "model", RECORD)
    saved = SavedModel.find(str(folder))
    assert saved.fine_tuned and saved.record == RECORD and saved.run_dir is None
    assert saved.recorded_settings(TASKS["span"]) == SETTINGS
    (folder / "config.json").write_text(json.dumps({**json.loads((folder / "config.json").read_text()),
                                                    "expmrc": ["not", "an", "object"]}), encoding="utf-8")
    with pytest.raises(ExpmrcError, match="the `expmrc` record is an array, not an object"):
        SavedModel.find(str(tmp_path))
    with pytest.raises(ExpmrcError, match="no such run directory or model folder"):
        SavedModel.find(str(tmp_path / "absent"))
