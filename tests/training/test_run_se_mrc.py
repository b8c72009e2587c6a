"""baseline/run_se_mrc.py end to end: a scored smoke run, bad input, kill and resume, two processes, reuse.

One uninterrupted run (module fixture) is the reference the other runs must reproduce exactly: a
run killed after a checkpoint and restarted with the same command, and the same run on two CPU
processes joined by gloo.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.common import environment, needs_punkt, predictions, record_figures, seeded
from expmrc.cli import run_guarded
from expmrc.training.span_task import run_span
from helpers.span_data import make_span_file
from helpers.tiny_bert import make_tiny_bert_folder

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "baseline" / "run_se_mrc.py"
STEPS, SAVE_EVERY = 120, 20


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A tiny model, a training file with some broken questions, and a dev file of 30 questions."""
    root = tmp_path_factory.mktemp("se")
    train = make_span_file(root / "train.json", 48, seed=1)
    doc = json.loads(train.read_text(encoding="utf-8"))
    context = "the king is bo . the capital is ka ."
    broken = [
        {"id": "moved", "question": "who is the king ?", "answers": [{"text": "bo", "answer_start": 3}],
         "evidences": ["the king is bo ."]},
        {"id": "absent", "question": "who is the king ?", "answers": [{"text": "zu", "answer_start": 12}],
         "evidences": ["the king is bo ."]},
        {"id": "no-evidence-field", "question": "what is the capital ?", "answers": [{"text": "ka", "answer_start": 32}]},
        {"id": "evidence-elsewhere", "question": "what is the capital ?",
         "answers": [{"text": "ka", "answer_start": 32}], "evidences": ["the capital is zz ."]},
    ]
    doc["data"].append({"title": "broken", "paragraphs": [{"context": context, "qas": broken}]})
    train.write_text(json.dumps(doc), encoding="utf-8")
    dev = make_span_file(root / "dev.json", 30, seed=2)
    return {"root": root, "train": train, "dev": dev, "model": make_tiny_bert_folder(root / "bert", seed=seeded(0))}


def flags(inputs, output_dir, *extra):
    return ["--model_name_or_path", str(inputs["model"]), "--do_train=True", f"--train_file={inputs['train']}",
            "--do_predict", "True", "--predict_file", str(inputs["dev"]), "--output_dir", str(output_dir),
            "--max_seq_length=64", "--doc_stride=16", "--max_query_length=16", "--train_batch_size=8",
            f"--max_steps={STEPS}", f"--save_checkpoints_steps={SAVE_EVERY}", "--learning_rate=3e-3",
            "--loss_lambda=1.0", f"--rand_seed={seeded(7)}", "--logging_steps=40", *extra]


def run_script(argv, launcher=(), timeout=300):
    result = subprocess.run([sys.executable, *launcher, str(SCRIPT), *argv], cwd=ROOT, env=environment(),
                            capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


@pytest.fixture(scope="module")
def reference(inputs):
    """The uninterrupted run every other run is compared with."""
    out = inputs["root"] / "reference"
    result = run_script(flags(inputs, out))
    return out, result.stderr


@pytest.mark.learning
@needs_punkt
def test_smoke_run_writes_a_submission_the_scorer_reads(inputs, reference):
    """Measured by scripts/check_flaky.sh on a 2-core AMD EPYC (seed 0, 1 thread): answer F1 83.3, evidence
    F1 81.5 after 120 steps. Asserts > 50; untrained tiny span models answer under 5 (test_learning.py)."""
    out, stderr = reference
    preds = predictions(out)
    assert len(preds) == 30 and all({"answer", "evidence"} <= set(p) for p in preds.values())
    scored = subprocess.run([sys.executable, "eval_expmrc.py", str(inputs["dev"]), str(out / "dev_predictions.json")],
                            cwd=ROOT, env=environment(), capture_output=True, text=True, timeout=120)
    assert scored.returncode == 0, scored.stderr
    official = json.loads(scored.stdout)
    assert official["TOTAL"] == 30 and official["SKIP"] == 0
    record_figures(ANS_F1=float(official["ANS_F1"]), EVI_F1=float(official["EVI_F1"]))
    assert float(official["ANS_F1"]) > 50 and float(official["EVI_F1"]) > 50  # 120 steps already learn a lot
    assert (f"answer F1 {official['ANS_F1']}, evidence F1 {official['EVI_F1']}, overall {official['ALL_F1']}"
            in stderr)  # the run prints the same figures itself
    info = json.loads((out / "run_info.json").read_text(encoding="utf-8"))
    assert (info["status"], info["global_step"], info["task"], info["loss_lambda"], info["rand_seed"]) == \
        ("finished", STEPS, "span", 1.0, seeded(7))
    assert info["predict_file"] == str(inputs["dev"]) and info["flags"]["max_seq_length"] == 64
    assert not (out / "checkpoints").exists()  # a finished run keeps model/, not checkpoints duplicating it
    assert (info["mixed_precision"], info["precision"]["requested"], info["precision"]["device"]) == ("no", "auto", "cpu")


def test_rerunning_a_finished_run_does_not_train_again(inputs, reference):
    out = inputs["root"] / "rerun"
    shutil.copytree(reference[0], out)
    result = run_script(flags(inputs, out))
    assert "already holds the result of this training run; not training again" in result.stderr
    assert "features reused from" in result.stderr and "training:" not in result.stderr
    assert predictions(out) == predictions(reference[0])


def test_nbest_offsets_point_into_the_passage(inputs, reference):
    out, _ = reference
    nbest = json.loads((out / "dev_nbest.json").read_text(encoding="utf-8"))
    contexts = {qa["id"]: p["context"] for a in json.loads(inputs["dev"].read_text())["data"]
                for p in a["paragraphs"] for qa in p["qas"]}
    for qid, entry in nbest.items():
        assert entry["answer"][0]["text"] == predictions(out)[qid]["answer"]
        for candidate in entry["answer"] + entry["evidence"]:
            assert contexts[qid][candidate["start"]:candidate["end"]] == candidate["text"]


def test_broken_training_questions_are_repaired_or_skipped_and_counted(reference):
    out, stderr = reference
    counts = json.loads((out / "run_info.json").read_text(encoding="utf-8"))["train_features"]
    assert (counts["questions"], counts["answer_start_repaired"], counts["answer_not_found"]) == (52, 1, 1)
    assert (counts["evidence_missing"], counts["evidence_not_found"]) == (1, 1)
    assert counts["examples"]["evidence_missing"] == ["no-evidence-field"]
    assert counts["examples"]["evidence_not_found"] == ["evidence-elsewhere"]
    assert "answer not found: 1 (e.g. absent)" in stderr


@pytest.mark.slow
def test_killed_run_restarted_with_the_same_command_ends_with_the_same_predictions(inputs, reference):
    out = inputs["root"] / "killed"
    argv = flags(inputs, out)
    process = subprocess.Popen([sys.executable, str(SCRIPT), *argv], cwd=ROOT, env=environment(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = out / "checkpoints" / f"step-{SAVE_EVERY:08d}" / "expmrc_state.json"
    deadline = time.monotonic() + 240
    while not first.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    assert process.wait() == -signal.SIGKILL, "the run finished before it could be killed"
    info = json.loads((out / "run_info.json").read_text(encoding="utf-8"))
    assert info["status"] == "running" and not (out / "dev_predictions.json").exists()

    resumed = run_script(argv)
    step = int(resumed.stderr.split("resuming from ")[1].split("(step ")[1].split(")")[0])
    assert SAVE_EVERY <= step < STEPS
    assert "features reused from" in resumed.stderr
    assert predictions(out) == predictions(reference[0])
    assert json.loads((out / "run_info.json").read_text(encoding="utf-8"))["status"] == "finished"


@pytest.mark.slow
def test_two_cpu_processes_give_the_same_predictions_as_one(inputs, reference):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = inputs["root"] / "two-processes"
    launcher = ("-m", "torch.distributed.run", "--nproc_per_node=2", f"--master_port={port}")
    result = run_script(flags(inputs, out), launcher=launcher)
    assert result.stderr.count("wrote 30 predictions") == 1  # one writer
    assert predictions(out) == predictions(reference[0])
    one = json.loads((reference[0] / "dev_nbest.json").read_text(encoding="utf-8"))
    two = json.loads((out / "dev_nbest.json").read_text(encoding="utf-8"))
    for qid in one:
        assert [c["text"] for c in two[qid]["answer"]][:3] == [c["text"] for c in one[qid]["answer"]][:3]
        assert two[qid]["answer"][0]["score"] == pytest.approx(one[qid]["answer"][0]["score"], abs=1e-3)


def test_fine_tuned_folder_predicts_on_its_own(inputs, reference, capsys):
    out = inputs["root"] / "predict-only"
    argv = ["--model_name_or_path", str(reference[0] / "model"), "--do_predict=True",
            "--predict_file", str(inputs["dev"]), "--output_dir", str(out), "--max_seq_length=64",
            "--doc_stride=16", "--max_query_length=16"]
    assert run_guarded(run_span, argv) == 0
    assert predictions(out) == predictions(reference[0])
    info = json.loads((out / "run_info.json").read_text(encoding="utf-8"))
    # recorded under the settings that trained it, not this command's defaults
    assert (info["global_step"], info["model"], info["loss_lambda"], info["rand_seed"]) == (STEPS, str(inputs["model"]), 1.0, seeded(7))


def test_bad_input_is_one_line_and_a_failed_run(inputs, tmp_path, capsys):
    choice = tmp_path / "c3.json"
    choice.write_text(json.dumps({"version": "expmrc-c3-dev", "data": [
        {"id": "m1", "article": "天很蓝。", "questions": ["天？"], "options": [["红", "蓝"]], "answers": ["B"]}]}),
        encoding="utf-8")
    argv = ["--model_name_or_path", str(inputs["model"]), "--do_predict", "--predict_file", str(choice),
            "--output_dir", str(tmp_path / "run"), "--max_seq_length=64"]
    assert run_guarded(run_span, argv) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == (f"error: {choice}: is a c3 (multiple-choice) file, not "
                                            "span-extraction data (squad, cmrc2018)")
    assert not (tmp_path / "run").exists()  # inputs are checked before any work: no run was started

    squad_own = tmp_path / "train-v1.1.json"  # SQuAD's release says only "1.1": --task_name decides
    squad_own.write_text(json.dumps(dict(json.loads(inputs["dev"].read_text()), version="1.1")), encoding="utf-8")
    argv = ["--model_name_or_path", str(inputs["model"]), "--do_predict", "--predict_file", str(squad_own),
            "--output_dir", str(tmp_path / "run1"), "--max_seq_length=64", "--task_name=race"]
    assert run_guarded(run_span, argv) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: {squad_own}: version '1.1' names no subset and --task_name 'race' is not a span-extraction "
        "subset (squad, cmrc2018)")
    assert run_guarded(run_span, argv[:-1] + ["--task_name=squad"]) == 0

    broken_model = tmp_path / "broken-model"
    broken_model.mkdir()
    (broken_model / "config.json").write_text((inputs["model"] / "config.json").read_text())
    (broken_model / "vocab.txt").write_text((inputs["model"] / "vocab.txt").read_text())
    argv = ["--model_name_or_path", str(broken_model), "--do_predict", "--predict_file", str(inputs["dev"]),
            "--output_dir", str(tmp_path / "run2")]
    assert run_guarded(run_span, argv) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == \
        f"error: {broken_model}: model folder has no model.safetensors (nor pytorch_model.bin)"

    a_file = tmp_path / "taken"
    a_file.write_text("x")
    for flag, value, message in (("--output_dir", str(a_file), f"error: {a_file}: is a file; give a folder"),
                                 ("--predict_tfrecord", str(tmp_path), f"error: {tmp_path}: is a directory")):
        argv = ["--model_name_or_path", str(inputs["model"]), "--do_predict", "--predict_file", str(inputs["dev"]),
                "--output_dir", str(tmp_path / "run4"), flag, value]
        assert run_guarded(run_span, argv) == 2
        assert capsys.readouterr().err.strip().splitlines()[-1].startswith(message)

    argv = ["--model_name_or_path", str(inputs["model"]), "--do_predict", "--predict_file", str(inputs["dev"]),
            "--output_dir", str(tmp_path / "run3")]  # the default 384 tokens on a model with 128 positions
    assert run_guarded(run_span, argv) == 2
    assert "--max_seq_length 384 exceeds the 128 positions the model has" in capsys.readouterr().err
