"""Select & Forget (`--select_and_forget`, docs/coupling.md): the evidence is chosen first, and the answer is
predicted from the evidence text alone.

Zeroing hidden states does not make a Transformer forget the passage (attention has already mixed it in),
so the answer comes from a second model that reads the question with the evidence text as its whole passage:

1. The selector is the baseline's usual model, trained as without the flag (OUTPUT_DIR/model).
2. It predicts the evidence of every training question. Each question becomes an evidence-only question
   whose passage is that evidence when it holds the answer, else the pseudo evidence (teacher forcing,
   counted). Which span each question got is written once to OUTPUT_DIR/selected_evidence.json, so a
   resumed run trains on exactly the same questions.
3. The answerer, a fresh model of the same task on the same encoder, is trained on those questions through
   the same loop (evidence loss off), with its own checkpoints in OUTPUT_DIR/answerer-training, and saved
   to OUTPUT_DIR/answerer. It is a separate model, so no answer gradient ever reaches the selector.
4. At prediction the selector decodes the evidence; the answerer reads the question and that text alone.
   A span answer's offsets are mapped back into the passage, so it lies inside the evidence by
   construction. The submission keeps the selector's evidence.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Callable, Mapping, Sequence

from accelerate import Accelerator
from accelerate.utils import set_seed

from expmrc.data.datasets import Question, SpanQuestion, passage_of
from expmrc.data.io import read_json, write_json_atomic
from expmrc.data.runs import ANSWERER_DIR, ANSWERER_RUN_DIR, SELECTION_FILE
from expmrc.errors import ExpmrcError
from expmrc.features.windows import FeatureTable
from expmrc.inference.task_predictor import TaskPredictor
from expmrc.text.locate import locate_answer, locate_evidence
from expmrc.training.loop import TrainConfig, TrainResult, train

logger = logging.getLogger("expmrc")

Span = tuple[int, int]
SELECTED, TEACHER_FORCED, UNCHECKED, DROPPED = "selected", "teacher_forced", "unchecked", "dropped"


def predicted_evidence(prediction: Mapping[str, Any]) -> Span | None:
    """The character span of a prediction's evidence in its passage, or None when it has none."""
    text, start = str(prediction.get("evidence", "")), prediction.get("evidence_start")
    if not text or not isinstance(start, int):
        return None
    return start, start + len(text)


def choose_span(question: Question, prediction: Mapping[str, Any]) -> tuple[Span | None, str]:
    """The passage span a training question's answerer reads, and why (SELECTED, TEACHER_FORCED, UNCHECKED, DROPPED).

    Span questions: the predicted evidence when it holds the first gold answer's characters, else the pseudo
    evidence when that holds them, else none (the question is dropped). Multiple choice has no answer in the
    passage: the predicted evidence counts as holding the answer when it overlaps the pseudo evidence; without
    pseudo evidence it is kept unchecked.
    """
    predicted = predicted_evidence(prediction)
    passage = passage_of(question)
    if isinstance(question, SpanQuestion):
        answer = str(question.answers[0]) if question.answers else ""
        found, _ = locate_answer(passage, answer, question.answer_starts[0]) if answer.strip() else (None, False)
        if found is None:
            return None, DROPPED
        if predicted is not None and predicted[0] <= found[0] and found[1] <= predicted[1]:
            return predicted, SELECTED
        pseudo, _ = locate_evidence(passage, question.evidences, found)
        if pseudo is not None and pseudo[0] <= found[0] and found[1] <= pseudo[1]:
            return pseudo, TEACHER_FORCED
        return None, DROPPED
    pseudo, _ = locate_evidence(passage, question.evidences)
    if pseudo is None:
        return (predicted, UNCHECKED) if predicted is not None else (None, DROPPED)
    if predicted is not None and predicted[0] < pseudo[1] and pseudo[0] < predicted[1]:
        return predicted, SELECTED
    return pseudo, TEACHER_FORCED


def evidence_only(question: Question, span: Span | None) -> Question:
    """The question asked on the text of `span` alone (an empty passage for None); a span question keeps its
    first answer, shifted into that text, and the whole text is its evidence."""
    start, end = span or (0, 0)
    text = passage_of(question)[start:end]
    if isinstance(question, SpanQuestion):
        answer = str(question.answers[0]) if question.answers else ""
        found = locate_answer(question.context, answer, question.answer_starts[0])[0] if answer.strip() else None
        shifted = found[0] - start if found is not None and start <= found[0] and found[1] <= end else None
        return dataclasses.replace(question, context=text, answers=[answer], answer_starts=[shifted], evidences=[text])
    return dataclasses.replace(question, passage=text, evidences=[text])


def selection_summary(reasons: Mapping[str, str]) -> dict[str, Any]:
    """The counts run_info.json records: questions, how each passage was chosen, and the teacher-forced share."""
    counts = {reason: sum(1 for r in reasons.values() if r == reason)
              for reason in (SELECTED, TEACHER_FORCED, UNCHECKED, DROPPED)}
    judged = counts[SELECTED] + counts[TEACHER_FORCED]
    return {"questions": len(reasons), **counts,
            "teacher_forced_share": round(counts[TEACHER_FORCED] / judged, 6) if judged else None}


def read_selection(path: Path, key: str) -> dict[str, Any] | None:
    """A selection file written for this selector and training file, else None (missing or stale)."""
    if not path.is_file():
        return None
    record = read_json(str(path), "selection record")
    if not isinstance(record, dict) or record.get("key") != key or not isinstance(record.get("questions"), dict):
        return None
    return record


@dataclass
class SelectAndForget:
    """The answerer phase of one baseline run: what it needs from the run, and its two steps."""

    output_dir: Path
    accelerator: Accelerator
    predictor: TaskPredictor  # the run's: its windows, padding, prediction loop and decoding settings

    def select(self, selector: Any, questions: Sequence[Question], windows: Callable[[], FeatureTable],
               key: str) -> tuple[list[Question], dict[str, Any]]:
        """The evidence-only training questions (the selector's evidence, or the pseudo evidence where it misses
        the answer) and their counts; read back from the selection file when it was written for this selector
        and data."""
        path = self.output_dir / SELECTION_FILE
        record = read_selection(path, key)
        if record is None:
            predictions = self.predictor.predict(selector, questions, windows()).predictions
            chosen = {q.qid: choose_span(q, predictions[q.qid]) for q in questions}
            record = {"key": key, "questions": {qid: {"span": list(span) if span else None, "reason": reason}
                                                for qid, (span, reason) in chosen.items()}}
            if self.accelerator.is_main_process:
                write_json_atomic(str(path), record)
            self.accelerator.wait_for_everyone()
        else:
            logger.info(f"select and forget: the evidence chosen for training is reused from {path}")
        entries = record["questions"]
        missing = [q.qid for q in questions if q.qid not in entries]
        if missing:
            raise ExpmrcError(f"{path}: holds no evidence for question {missing[0]}; delete it to select again")
        summary = selection_summary({q.qid: str(entries[q.qid]["reason"]) for q in questions})
        share = summary["teacher_forced_share"]
        logger.info(f"select and forget: the selector's evidence missed the answer in {summary[TEACHER_FORCED]} of "
                    f"{summary[SELECTED] + summary[TEACHER_FORCED]} training questions "
                    f"({'n/a' if share is None else f'{100 * share:.1f}%'}): the pseudo evidence is used there "
                    f"(teacher forcing); {summary[UNCHECKED]} had no pseudo evidence to check, "
                    f"{summary[DROPPED]} were left out")
        return [evidence_only(q, tuple(entries[q.qid]["span"]) if entries[q.qid]["span"] else None)
                for q in questions if entries[q.qid]["reason"] != DROPPED], summary

    def train_answerer(self, new_model: Callable[[], Any], questions: Sequence[Question],
                       config: TrainConfig) -> tuple[Any, TrainResult]:
        """A fresh task model (`new_model` builds it with the default loss settings: evidence loss and coupling off)
        trained on the evidence-only questions, resuming from the answerer's own checkpoints."""
        self.accelerator.free_memory()  # the selector's prepared objects stay out of the answerer's checkpoints
        set_seed(config.seed)
        model = new_model()
        table = self.predictor.features(questions, is_training=True)[0]
        answer_config = dataclasses.replace(config, output_dir=str(self.output_dir / ANSWERER_RUN_DIR))
        result = train(model, self.predictor.windows(table, with_labels=True), answer_config, self.accelerator,
                       curve="answerer")
        return self.accelerator.unwrap_model(model), result

    def answer(self, answerer: Any, questions: Sequence[Question], predictions: dict[str, dict[str, Any]],
               nbest: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
        """The selector's predictions with each answer replaced by the answerer's from the evidence text alone
        (span offsets mapped back into the passage)."""
        spans = [predicted_evidence(predictions[q.qid]) for q in questions]
        forgotten = [evidence_only(q, span) for q, span in zip(questions, spans)]
        answered = self.predictor.predict(answerer, forgotten)
        answers, answer_nbest = answered.predictions, answered.nbest
        merged, merged_nbest = {}, {}
        for question, span in zip(questions, spans):
            offset = span[0] if span else 0
            answer = answers[question.qid]
            prediction = {"answer": answer["answer"], **{k: v for k, v in predictions[question.qid].items()
                                                         if k.startswith("evidence")}}
            if "answer_start" in answer:
                prediction["answer_start"] = answer["answer_start"] + offset
            candidates = [{**c, "start": c["start"] + offset, "end": c["end"] + offset} if "start" in c else c
                          for c in answer_nbest[question.qid]["answer"]]
            merged[question.qid] = prediction
            merged_nbest[question.qid] = {**nbest[question.qid], "answer": candidates,
                                          "answerer_windows": answer_nbest[question.qid]["windows"]}
        return merged, merged_nbest


def answerer_folder(output_dir: Path) -> Path:
    """OUTPUT_DIR/answerer, checked to hold a model: one line when a --select_and_forget prediction has none."""
    folder = output_dir / ANSWERER_DIR
    if not (folder / "config.json").is_file():
        raise ExpmrcError(f"{folder}: holds no answerer model, so --select_and_forget cannot predict; train first "
                          "with --do_train True --select_and_forget True")
    return folder

