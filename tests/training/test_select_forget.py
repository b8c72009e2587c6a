"""--select_and_forget: how training passages are chosen, what a run records, how it resumes and refuses, and
tiny models of each task whose answers move inside their evidence (LOCA, lexical LOCA) where the plain
model's do not."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import pytest
import torch
from safetensors.torch import load_file

from expmrc.cli import run_guarded
from expmrc.data.datasets import load_dataset
from expmrc.data.runs import PREDICT_ONLY_DIR
from expmrc.metrics.coupling import choice_aggregate, choice_question, span_aggregate, span_question
from expmrc.training.choice_task import run_choice
from expmrc.training.select_forget import DROPPED, SELECTED, TEACHER_FORCED, choose_span, evidence_only
from expmrc.training.span_task import run_span
from helpers.choice_data import choice_distractor_file
from helpers.common import needs_punkt, record_figures, seeded
from helpers.hostile import assert_refused, run_cli
from helpers.span_data import distractor_file
from helpers.tiny_backbones import texts_of, tiny_backbone
from helpers.tiny_bert import make_tiny_bert_folder

LEARNING = ["--max_seq_length=64", "--doc_stride=16", "--train_batch_size=16", "--max_steps=300",
            "--learning_rate=3e-3", "--loss_lambda=0.003", "--save_checkpoints_steps=10000", "--logging_steps=10000",
            f"--rand_seed={seeded(1)}", "--max_evidence_length=30", "--predict_batch_size=32"]


def read(path):
    return json.loads(path.read_text(encoding="utf-8"))


def test_training_passages_are_the_selection_or_the_pseudo_evidence(tmp_path):
    question = load_dataset(distractor_file(tmp_path / "one.json", 1, seed=3)).questions[0]
    context, answer, fact = question.context, question.answers[0], question.evidences[0]
    fact_span = (context.index(fact), context.index(fact) + len(fact))
    distractor = next(s + " ." for s in context.split(" . ") if s.startswith(answer))
    # the predicted evidence holds the answer: it is kept, and the answer's offset moves into it
    span, reason = choose_span(question, {"evidence": fact, "evidence_start": fact_span[0]})
    assert (span, reason) == (fact_span, SELECTED)
    forgotten = evidence_only(question, span)
    assert forgotten.context == fact and fact[forgotten.answer_starts[0]:].startswith(answer)
    # the distractor names the answer too, but not at the gold offset: the pseudo evidence is taught instead
    assert choose_span(question, {"evidence": distractor, "evidence_start": context.index(distractor)}) == (
        fact_span, TEACHER_FORCED)
    assert choose_span(question, {"evidence": "", "evidence_start": None}) == (fact_span, TEACHER_FORCED)
    # no pseudo evidence holding the answer: the question is left out
    assert choose_span(dataclasses.replace(question, evidences=None), {"evidence": ""}) == (None, DROPPED)
    # multiple choice: the selection counts when it overlaps the pseudo evidence
    choice = load_dataset(choice_distractor_file(tmp_path / "c.json", 1, seed=3)).questions[0]
    pseudo = choice.evidences[0]
    where = choice.passage.index(pseudo)
    assert choose_span(choice, {"evidence": pseudo[:6], "evidence_start": where})[1] == SELECTED
    other = next(s + " ." for s in choice.passage.split(" . ") if not pseudo.startswith(s))
    assert choose_span(choice, {"evidence": other, "evidence_start": choice.passage.index(other)}) == (
        (where, where + len(pseudo)), TEACHER_FORCED)
    assert evidence_only(choice, (where, where + len(pseudo))).passage == pseudo


def small_run(tmp_path, name, *extra):
    model = make_tiny_bert_folder(tmp_path / "bert")
    train_file = distractor_file(tmp_path / "train.json", 12, seed=1)
    out = tmp_path / name
    flags = ["--model_name_or_path", str(model), "--do_train", f"--train_file={train_file}", "--output_dir", str(out),
             "--max_seq_length=64", "--doc_stride=16", "--max_query_length=16", "--train_batch_size=4",
             "--max_steps=4", "--save_checkpoints_steps=2", "--logging_steps=2", *extra]
    return flags, out


def test_teacher_forcing_is_logged_recorded_and_a_killed_answerer_phase_resumes(tmp_path, capsys):
    flags, out = small_run(tmp_path, "run", "--select_and_forget", "--keep_final_checkpoints=True")
    assert run_guarded(run_span, flags) == 0
    log = capsys.readouterr().err
    info = read(out / "run_info.json")
    counts = info["select_and_forget_training"]
    reasons = [q["reason"] for q in read(out / "selected_evidence.json")["questions"].values()]
    assert counts["questions"] == 12 and counts["teacher_forced"] == reasons.count(TEACHER_FORCED)
    assert counts["selected"] == reasons.count(SELECTED)
    assert counts["teacher_forced_share"] == pytest.approx(counts["teacher_forced"] / (counts["selected"]
                                                                                     + counts["teacher_forced"]))
    assert (f"missed the answer in {counts['teacher_forced']} of {counts['selected'] + counts['teacher_forced']} "
            "training questions") in log
    assert info["select_and_forget"] is True and info["flags"]["select_and_forget"] is True
    assert info["answerer_global_step"] == 4
    selector = read(out / "model" / "config.json")["expmrc"]
    answerer = read(out / "answerer" / "config.json")["expmrc"]
    assert selector["select_and_forget"] is True and "role" not in selector
    assert answerer["select_and_forget"] is True and answerer["role"] == "answerer"
    assert answerer["loss_lambda"] == 0.0 and answerer["selection"] == counts
    weights = load_file(str(out / "answerer" / "model.safetensors"))
    selector_weights = load_file(str(out / "model" / "model.safetensors"))

    # killed after the answerer's step-2 checkpoint: the same command resumes there and ends in the same weights
    checkpoints = out / "answerer-training" / "checkpoints"
    assert sorted(p.name for p in checkpoints.iterdir()) == ["step-00000002", "step-00000004"]
    for path in (checkpoints / "step-00000004", out / "answerer"):
        for file in sorted(path.rglob("*"), reverse=True):
            file.unlink() if file.is_file() else file.rmdir()
        path.rmdir()
    assert run_guarded(run_span, flags) == 0
    log = capsys.readouterr().err
    assert "reused from" in log and "answerer-training/checkpoints/step-00000002" in log
    resumed = load_file(str(out / "answerer" / "model.safetensors"))
    assert all(torch.equal(weights[k], resumed[k]) for k in weights)
    selector_again = load_file(str(out / "model" / "model.safetensors"))
    assert all(torch.equal(selector_weights[k], selector_again[k]) for k in selector_weights)

    # killed right after the selector phase: the answerer phase runs again from the start, the same way
    for name in ("answerer", "answerer-training", "selected_evidence.json"):
        path = out / name
        for file in sorted(path.rglob("*"), reverse=True) if path.is_dir() else []:
            file.unlink() if file.is_file() else file.rmdir()
        path.rmdir() if path.is_dir() else path.unlink()
    assert run_guarded(run_span, flags) == 0
    again = load_file(str(out / "answerer" / "model.safetensors"))
    assert all(torch.equal(weights[k], again[k]) for k in weights)

    # a finished run run again trains neither phase
    capsys.readouterr()
    assert run_guarded(run_span, flags) == 0
    log = capsys.readouterr().err
    assert "already holds the result of this training run" in log and "already holds the trained answerer" in log


def test_refusals(tmp_path, capsys):
    flags, out = small_run(tmp_path, "plain")
    assert run_guarded(run_span, flags) == 0
    before = (out / "run_info.json").read_text(encoding="utf-8")
    dev = distractor_file(tmp_path / "dev.json", 4, seed=2)
    capsys.readouterr()
    predict_only = ["--do_predict", f"--predict_file={dev}", "--output_dir", str(out), "--select_and_forget"]
    assert run_guarded(run_span, predict_only) == 2
    err = capsys.readouterr().err
    assert_refused(2, err, f"{out / 'answerer'}: holds no answerer model")
    assert (out / "run_info.json").read_text(encoding="utf-8") == before

    flags, forget = small_run(tmp_path, "forget", "--select_and_forget")
    assert run_guarded(run_span, flags) == 0
    assert not (forget / "checkpoints").exists() and not (forget / "answerer-training" / "checkpoints").exists()
    status, _, err = run_cli(["faithfulness", str(forget), dev, "--quiet"])
    assert_refused(status, err, "a Select & Forget run")


def predictions_of(out):
    return read(out / "dev_predictions.json")


@pytest.mark.slow
@pytest.mark.learning
@needs_punkt
def test_span_answers_move_inside_the_selected_evidence(tmp_path, learning_threads):
    """Measured by scripts/check_flaky.sh on a 2-core AMD EPYC (seeds 0-2, 1 thread; a tokenizer of the
    training file's own text, so the same with or without data): LOCA 22.1, 28.0 and 3.9 plain, 100.0 with
    Select & Forget (+72.0 to +96.1), 58.8-91.2% of answers counted. Asserts +50; without the option's effect
    the answerer is the plain model again (+0)."""
    train = distractor_file(tmp_path / "train.json", 300, 1)
    dev = distractor_file(tmp_path / "dev.json", 80, 2)
    out = tmp_path / "run"
    model = tiny_backbone("bert", hidden=64, seed=seeded(0), texts=texts_of(train))
    flags = ["--model_name_or_path", str(model), "--do_train", f"--train_file={train}",
             "--do_predict", f"--predict_file={dev}", "--output_dir", str(out), "--max_query_length=16",
             "--max_answer_length=10", *LEARNING, "--select_and_forget"]
    assert run_guarded(run_span, flags) == 0
    forgotten = predictions_of(out)
    # the selector alone, as the plain model it was trained as
    assert run_guarded(run_span, [f for f in flags if f not in ("--do_train", "--select_and_forget")]) == 0
    plain = predictions_of(out / PREDICT_ONLY_DIR)  # predict-only keeps the training run's predictions
    questions = load_dataset(dev).questions
    figures = {}
    for name, predictions in (("plain", plain), ("select and forget", forgotten)):
        values = [span_question(q, SimpleNamespace(**{"answer_start": None, "evidence_start": None,
                                                      **predictions[q.qid]})) for q in questions]
        assert all(v["located_by"] == "offsets" for v in values if v["location"] in ("inside", "outside"))
        figures[name] = span_aggregate(values)
    for qid, p in forgotten.items():  # the same evidence, and the answer inside it by construction
        assert p["evidence"] == plain[qid]["evidence"]
        if "answer_start" in p:
            assert p["evidence_start"] <= p["answer_start"]
            assert p["answer_start"] + len(p["answer"]) <= p["evidence_start"] + len(p["evidence"])
    record_figures(**{f"{name} {key}": round(f[key], 1) for name, f in figures.items()
                      for key in ("LOCA", "LOCA_OUTSIDE", "LOCA_COUNTED")})
    assert figures["select and forget"]["LOCA"] >= figures["plain"]["LOCA"] + 50, figures
    assert figures["select and forget"]["LOCA_OUTSIDE"] == 0 and figures["select and forget"]["LOCA_COUNTED"] >= 50


@pytest.mark.slow
@pytest.mark.learning
@needs_punkt
def test_choice_answers_come_from_the_selected_evidence(tmp_path, learning_threads):
    """Measured on a 2-core AMD EPYC (seeds 0-2 as scripts/check_flaky.sh adds them, 1 thread; a tokenizer of
    the training file's own text, so the same with or without data): LEX_LOCA 46.5 plain, 92.3, 75.4 and
    100.0 with Select & Forget (+28.9 to +53.5); option named in the evidence 25.0 plain, 75.0, 53.8 and 100.0
    (+28.8 to +75.0). Asserts +8 on both: the evidence is the selector's in both runs, so an answerer that
    ignored it would score the plain model's figures (+0)."""
    train = choice_distractor_file(tmp_path / "train.json", 300, 1)
    dev = choice_distractor_file(tmp_path / "dev.json", 80, 2)
    out = tmp_path / "run"
    model = tiny_backbone("bert", hidden=64, seed=seeded(0), texts=texts_of(train))
    flags = ["--model_name_or_path", str(model), "--do_train", f"--train_file={train}",
             "--do_predict", f"--predict_file={dev}", "--output_dir", str(out), "--max_qa_length=16", *LEARNING,
             "--learning_rate=1e-3", "--select_and_forget"]  # at 3e-3 one seed in three left the answerer at chance
    assert run_guarded(run_choice, flags) == 0
    forgotten = predictions_of(out)
    assert run_guarded(run_choice, [f for f in flags if f not in ("--do_train", "--select_and_forget")]) == 0
    plain = predictions_of(out / PREDICT_ONLY_DIR)  # predict-only keeps the training run's predictions
    questions = load_dataset(dev).questions
    figures = {}
    for name, predictions in (("plain", plain), ("select and forget", forgotten)):
        values = [choice_question(q, SimpleNamespace(**{"evidence_start": None, **predictions[q.qid]}))
                  for q in questions]
        # the chosen option's word is in the evidence: the answer can be read off it
        named = [q.options["ABCD".index(predictions[q.qid]["answer"])] in predictions[q.qid]["evidence"].split()
                 for q in questions]
        figures[name] = {**choice_aggregate(values), "NAMED": 100 * sum(named) / len(named)}
    record_figures(**{f"{name} {key}": round(f[key], 1) for name, f in figures.items() for key in ("LEX_LOCA", "NAMED")})
    assert figures["select and forget"]["LEX_LOCA"] >= figures["plain"]["LEX_LOCA"] + 8, figures
    assert figures["select and forget"]["NAMED"] >= figures["plain"]["NAMED"] + 8, figures
