"""The one task predictor: questions → windows → padded batches → the one prediction loop → decoded answers and
evidence, the same for the baseline run, Select & Forget, re-prediction (`inference.rerun.FineTuned`) and
`expmrc faithfulness`.

A `TaskPredictor` holds what predictions depend on: the task's spec, the tokenizer, the run's `TaskSettings`
(windows and decoding lengths), whether rows carry token types, the device, the batch size and the autocast
precision. Batches pad their rows by one policy (`pad_multiple`): to the longest row, rounded up to a multiple
the device decides (8 on CUDA, for tensor-core shapes; 1 elsewhere, where padding buys nothing) and never past
max_seq_length. A run's training batches pad the same way (a compiled run's to its length buckets instead,
`training.loop.bucketed`), so a saved model re-predicts on a device exactly as its run predicted there. A run whose
steps were replayed as CUDA graphs predicts in its token buckets (`buckets`, `expmrc.inference.buckets`) on the
unpadded path, and so does its model re-predicting where graphs run.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import torch
from accelerate import Accelerator

from expmrc.data.datasets import Question, SpanQuestion
from expmrc.decoding.spans import span_probability
from expmrc.errors import ExpmrcError
from expmrc.features.windows import FeatureReport, FeatureTable, WindowDataset
from expmrc.inference.buckets import BucketedWindows, BucketPlan
from expmrc.inference.predictor import PREDICT_BATCH_SIZE, Batches, predict, predict_items
from expmrc.metrics.leaderboard import score_tokens
from expmrc.tasks import TaskSettings, TaskSpec

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast
    from expmrc.models.heads import TaskModel


def pad_multiple(device: torch.device | str) -> int:
    """What batches on `device` round their length up to: 8 on CUDA (tensor-core shapes), 1 elsewhere."""
    return 8 if torch.device(device).type == "cuda" else 1


@dataclass
class Predicted:
    """What one prediction gives: the submission, the n-best records, and what p(ŷ) is computed from (the
    questions, their windows and the model's per-window outputs)."""

    predictions: dict[str, dict[str, Any]]
    nbest: dict[str, Any]
    questions: Sequence[Question]
    table: FeatureTable
    outputs: Sequence[Mapping[str, np.ndarray]]
    max_answer_length: int

    @property
    def windows(self) -> int:
        """The windows run (forward passes)."""
        return len(self.table)

    def answer_probability(self, qid: str, answer: str) -> float | None:
        """p(ŷ) of answer `answer` to question `qid`: spans, the model's probability of a span whose normalized
        text is ŷ (`decoding.spans.span_probability`); choice, option ŷ's probability. None for an empty answer."""
        if not answer:
            return None
        index = self._index[qid]
        question = self.questions[index]
        if not isinstance(question, SpanQuestion):
            return next((float(c["probability"]) for c in self.nbest[qid]["answer"] if c["label"] == answer), 0.0)
        key = score_tokens(answer)
        if not key:
            return None
        windows = self._windows.get(index, [])
        return span_probability(self.table, windows, self.outputs, question.context, key, self.max_answer_length)

    @cached_property
    def _index(self) -> dict[str, int]:
        return {q.qid: i for i, q in enumerate(self.questions)}

    @cached_property
    def _windows(self) -> dict[int, list[int]]:
        return self.table.windows_of()


@dataclass(frozen=True, eq=False)
class TaskPredictor:
    """A task's prediction under one run's settings, on one device (or a run's processes, `accelerator`)."""

    spec: TaskSpec
    tokenizer: PreTrainedTokenizerFast
    settings: TaskSettings
    token_types: bool  # whether rows carry token type ids (`features.windows.uses_token_types`)
    device: torch.device
    batch_size: int = PREDICT_BATCH_SIZE  # items per prediction batch, over all processes
    autocast: Callable[[], Any] = nullcontext  # the precision predictions run under
    accelerator: Accelerator | None = None  # a run's: its processes share the items and gather the outputs
    buckets: BucketPlan | None = None  # a graphed run's token buckets: unpadded predictions laid out in them

    @classmethod
    def of_run(cls, spec: TaskSpec, tokenizer: PreTrainedTokenizerFast, settings: TaskSettings, token_types: bool,
               accelerator: Accelerator, batch_size: int, buckets: BucketPlan | None = None) -> TaskPredictor:
        """The predictor of a training run: its accelerator's device, precision and processes."""
        return cls(spec, tokenizer, settings, token_types, accelerator.device, batch_size, accelerator.autocast,
                   accelerator, buckets)

    def check_fits(self, model: TaskModel, prefix: str) -> None:
        """One line starting with `prefix` when max_seq_length exceeds the positions the model has."""
        usable = model.usable_length()
        if self.settings.max_seq_length > usable:
            raise ExpmrcError(f"{prefix}max_seq_length {self.settings.max_seq_length} exceeds the {usable} positions "
                              "the model has")

    def features(self, questions: Sequence[Question], is_training: bool = False,
                 progress: bool = False) -> tuple[FeatureTable, FeatureReport]:
        """The windows of `questions` under these settings (no cache)."""
        return self.spec.features(questions, self.tokenizer, self.settings, is_training, self.token_types, progress)

    def windows(self, table: FeatureTable, with_labels: bool = False) -> WindowDataset:
        """A feature table as padded batches, by this device's padding policy (the module docstring)."""
        return WindowDataset(table, with_labels, self.tokenizer.pad_token_id or 0, pad_multiple(self.device),
                             self.settings.max_seq_length)

    def batches(self, model: torch.nn.Module, table: FeatureTable) -> Batches:
        """The batches `model` predicts `table` in: padded windows, laid out in the token buckets where there are any
        and the model runs the unpadded path."""
        data = self.windows(table)
        if self.buckets is not None and getattr(model, "attention_path", "padded") == "unpadded":
            return BucketedWindows(data, self.buckets, for_training=False)
        return data

    def outputs(self, model: torch.nn.Module, table: FeatureTable) -> list[dict[str, np.ndarray]]:
        """The model's per-window outputs, in window order, through the one prediction loop."""
        data = self.batches(model, table)
        if self.accelerator is not None:
            return predict(model, data, self.batch_size, self.accelerator)
        found = predict_items(model, data, list(range(len(table))), self.batch_size, self.device, self.autocast)
        return [found[i] for i in range(len(table))]

    def predict(self, model: torch.nn.Module, questions: Sequence[Question],
                table: FeatureTable | None = None) -> Predicted:
        """Answers and evidence for `questions` (their windows `table` where already built), decoded by the task's
        decoder with these settings."""
        table = self.features(questions)[0] if table is None else table
        outputs = self.outputs(model, table)
        predictions, nbest = self.spec.decode(questions, table, outputs, self.settings)
        return Predicted(predictions, nbest, questions, table, outputs, self.settings.max_answer_length)
