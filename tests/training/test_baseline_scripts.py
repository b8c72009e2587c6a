"""Both baseline scripts on every backbone given only --model_name_or_path, and for multiple choice what the
span script's tests show for span extraction: an interrupted run says so and resumes to exactly the
predictions of an uninterrupted one, and two CPU processes predict what one does."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time

import pytest

from expmrc.cli import run_guarded
from expmrc.training.choice_task import run_choice
from expmrc.training.span_task import run_span
from helpers.choice_data import choice_file
from helpers.common import ROOT, environment, predictions
from helpers.span_data import make_span_file
from helpers.tiny_backbones import KINDS, tiny_backbone

MC_SCRIPT = ROOT / "baseline" / "run_mc_mrc.py"
STEPS, SAVE_EVERY = 60, 10


@pytest.mark.slow
@pytest.mark.parametrize("kind", [k for k in KINDS if k != "bert"])
@pytest.mark.parametrize("task", ["span", "choice"])
def test_the_scripts_train_and_predict_with_any_encoder_given_only_its_folder(kind, task, tmp_path):
    if task == "span":
        data, run, extra = str(make_span_file(tmp_path / "d.json", 12, seed=3)), run_span, ["--max_query_length=16"]
    else:
        data, run, extra = choice_file(tmp_path / "d.json", 12, seed=3), run_choice, ["--max_qa_length=16"]
    out = tmp_path / "run"
    argv = ["--model_name_or_path", str(tiny_backbone(kind)), "--do_train", "--train_file", data, "--do_predict",
            "--predict_file", data, "--output_dir", str(out), "--max_seq_length=48", "--doc_stride=16",
            "--train_batch_size=4", "--max_steps=3", *extra]
    assert run_guarded(run, argv) == 0
    assert len(predictions(out)) == 12
    info = json.loads((out / "run_info.json").read_text(encoding="utf-8"))
    assert info["status"] == "finished" and info["train_features"]["unknown_share"] < 0.05
    saved = {p.name for p in (out / "model").iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} <= saved
    again = tmp_path / "again"  # the fine-tuned folder predicts on its own, as any other model folder
    assert run_guarded(run, ["--model_name_or_path", str(out / "model"), "--do_predict", "--predict_file", data,
                             "--output_dir", str(again), "--max_seq_length=48", "--doc_stride=16", *extra]) == 0
    assert predictions(again) == predictions(out)


@pytest.fixture(scope="module")
def choice_inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("mc")
    return {"root": root, "train": choice_file(root / "train.json", 80, seed=1),
            "dev": choice_file(root / "dev.json", 20, seed=2), "model": tiny_backbone("roberta")}


def choice_flags(inputs, out):
    return ["--model_name_or_path", str(inputs["model"]), "--do_train=True", f"--train_file={inputs['train']}",
            "--do_predict=True", f"--predict_file={inputs['dev']}", f"--output_dir={out}", "--max_seq_length=28",
            "--max_qa_length=8", "--doc_stride=6", "--train_batch_size=8", f"--max_steps={STEPS}",
            f"--save_checkpoints_steps={SAVE_EVERY}", "--learning_rate=3e-3", "--rand_seed=5", "--logging_steps=20"]


def run_script(argv, launcher=()):
    result = subprocess.run([sys.executable, *launcher, str(MC_SCRIPT), *argv], cwd=ROOT, env=environment(),
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


@pytest.fixture(scope="module")
def choice_reference(choice_inputs):
    out = choice_inputs["root"] / "reference"
    run_script(choice_flags(choice_inputs, out))
    return out


@pytest.mark.slow
def test_an_interrupted_choice_run_says_so_and_resumes_to_the_same_predictions(choice_inputs, choice_reference):
    out = choice_inputs["root"] / "interrupted"
    argv = choice_flags(choice_inputs, out)
    process = subprocess.Popen([sys.executable, str(MC_SCRIPT), *argv], cwd=ROOT, env=environment(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = out / "checkpoints" / f"step-{SAVE_EVERY:08d}" / "expmrc_state.json"
    deadline = time.monotonic() + 300
    while not first.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    process.send_signal(signal.SIGTERM)
    assert process.wait() == 143, "the run finished before it could be interrupted"
    info = json.loads((out / "run_info.json").read_text(encoding="utf-8"))
    assert info["status"] == "interrupted" and SAVE_EVERY <= info["resumable_from_step"] < STEPS
    assert f"resumes from step {info['resumable_from_step']}" in info["error"]
    resumed = run_script(argv)
    assert f"step {info['resumable_from_step']})" in resumed.stderr.split("resuming from ")[1]
    assert predictions(out) == predictions(choice_reference)


@pytest.mark.slow
def test_two_cpu_processes_predict_what_one_does_for_multiple_choice(choice_inputs, choice_reference):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = choice_inputs["root"] / "two-processes"
    launcher = ("-m", "torch.distributed.run", "--nproc_per_node=2", f"--master_port={port}")
    result = run_script(choice_flags(choice_inputs, out), launcher=launcher)
    assert result.stderr.count("wrote 20 predictions") == 1  # one writer
    assert predictions(out) == predictions(choice_reference)
