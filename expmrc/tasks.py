"""The task layer: one registered spec per task kind, holding the one set of settings defaults, the
feature builder, the model class and the decoder.

The defaults are the original scripts' own (run_se_mrc.py and run_mc_mrc.py: 384 tokens per window,
64 question tokens, a stride of 128, answers of at most 30 tokens, 20 candidates), plus
`max_evidence_length` (128), which the original did not have. The baseline flags parse into a
`TaskSettings` once (`expmrc.training.flags.parse_config`); run_info.json and the fine-tuned folder's config.json
record it (`as_dict`), and anything that re-predicts reads it back (`TaskSettings.from_record`), so a
saved model always predicts with the windows and decoding lengths it was trained with. A new task kind
(yes/no, generative) is one more `TaskSpec` in `TASKS` for the model's side (windows, model, decoding); reading
its data, scoring it, finding its evidence, prompting for it and grounding it branch on `span`/`choice` and each
need a case of their own.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import TYPE_CHECKING, Any, ClassVar
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from expmrc.decoding.predictions import decode_predictions
from expmrc.errors import ExpmrcError
from expmrc.features.choice import build_choice_features
from expmrc.features.span import build_span_features
from expmrc.features.windows import FeatureReport, FeatureTable
from expmrc.models.choice import ChoiceModel
from expmrc.models.heads import TaskModel
from expmrc.models.span import SpanModel
from expmrc.registry import Registry

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast


@dataclass(frozen=True)
class TaskSettings:
    """The window and decoding settings of a run: what its features and its decoded predictions depend on."""

    max_seq_length: int = 384  # tokens per input window (row)
    max_query_length: int = 64  # question tokens (span: its first ones; choice: the last of question + option)
    doc_stride: int = 128  # tokens between window starts when a passage slides over several windows
    max_answer_length: int = 30  # longest span answer in tokens when decoding
    max_evidence_length: int = 128  # longest evidence in tokens when decoding
    n_best_size: int = 20  # candidates kept per question
    sliding_windows: bool = True  # choice only: slide over long passages instead of cutting them to one window

    FEATURE_FIELDS: ClassVar[tuple[str, ...]] = ("max_seq_length", "max_query_length", "doc_stride", "sliding_windows")

    @classmethod
    def from_record(cls, values: Any, where: str, defaults: TaskSettings) -> TaskSettings:
        """The settings a run record holds; one line naming `where` when one is missing, mistyped or out of range.

        `sliding_windows`, which older records lack, takes `defaults`' value only when the record names no
        multiple-choice window policy at all."""
        if not isinstance(values, Mapping):
            raise ExpmrcError(f"{where}: the recorded settings are {type(values).__name__}, not an object")
        chosen: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in values:
                if f.name == "sliding_windows":
                    continue
                raise ExpmrcError(f"{where}: the recorded setting {f.name} is missing")
            chosen[f.name] = values[f.name]
        return replace(defaults, **chosen).checked(f"{where}: the recorded setting ")

    def checked(self, prefix: str) -> TaskSettings:
        """These settings, once every field has its type and range (one line starting with `prefix` otherwise)."""
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "sliding_windows":
                if not isinstance(value, bool):
                    raise ExpmrcError(f"{prefix}{f.name} is {value!r}, not true or false")
            elif isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ExpmrcError(f"{prefix}{f.name} must be a whole number of at least 1, got {value!r}")
        return self

    def as_dict(self) -> dict[str, Any]:
        """Every setting, as run_info.json and the fine-tuned folder record them."""
        return asdict(self)

    def feature_dict(self) -> dict[str, Any]:
        """The settings the windows depend on (part of the feature cache key)."""
        return {name: getattr(self, name) for name in self.FEATURE_FIELDS}


FeatureBuilder = Callable[[Sequence[Any], "PreTrainedTokenizerFast", TaskSettings, bool, bool, bool],
                          tuple[FeatureTable, FeatureReport]]
# (questions, windows, per-window outputs, n_best_size, max_answer_length, max_evidence_length) -> (submission, n-best)
Decoder = Callable[[Sequence[Any], FeatureTable, Sequence[Mapping[str, np.ndarray]], int, int, int],
                   tuple[dict[str, dict[str, Any]], dict[str, Any]]]


def span_features(questions: Sequence[Any], tokenizer: PreTrainedTokenizerFast, settings: TaskSettings,
                  is_training: bool, token_types: bool, progress: bool) -> tuple[FeatureTable, FeatureReport]:
    """The windows of span-extraction questions (always sliding over long passages)."""
    return build_span_features(questions, tokenizer, settings.max_seq_length, settings.doc_stride,
                               settings.max_query_length, is_training, token_types, progress)


def choice_features(questions: Sequence[Any], tokenizer: PreTrainedTokenizerFast, settings: TaskSettings,
                    is_training: bool, token_types: bool, progress: bool) -> tuple[FeatureTable, FeatureReport]:
    """The option rows of multiple-choice questions (one window per question unless `sliding_windows`)."""
    return build_choice_features(questions, tokenizer, settings.max_seq_length, settings.max_query_length,
                                 settings.doc_stride, is_training, token_types, progress,
                                 sliding_windows=settings.sliding_windows)


@dataclass(frozen=True)
class TaskSpec:
    """One task kind: its settings defaults, how its windows are built, its model and its decoder."""

    kind: str
    defaults: TaskSettings
    features: FeatureBuilder
    model_class: type[TaskModel]
    decoder: Decoder = decode_predictions

    def decode(self, questions: Sequence[Any], table: FeatureTable, outputs: Sequence[Mapping[str, np.ndarray]],
               settings: TaskSettings) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
        """The submission and the n-best records of `questions` from the model's per-window outputs, decoded with
        the candidate count and the answer and evidence lengths of `settings`."""
        return self.decoder(questions, table, outputs, settings.n_best_size, settings.max_answer_length,
                            settings.max_evidence_length)

    def settings_from_record(self, values: Any, where: str) -> TaskSettings:
        """The recorded settings of a run of this task (see `TaskSettings.from_record`)."""
        return TaskSettings.from_record(values, where, self.defaults)


TASKS: Registry[TaskSpec] = Registry.of("task", {
    "span": TaskSpec("span", TaskSettings(), span_features, SpanModel),
    # the original run_mc_mrc.py cut each passage to one window; sliding windows stay behind a flag
    "choice": TaskSpec("choice", TaskSettings(sliding_windows=False), choice_features, ChoiceModel),
})


def task_spec(kind: Any, where: str) -> TaskSpec:
    """The registered spec of a task kind; one line naming `where` for an unknown one."""
    return TASKS.lookup(kind, f"{where}: ")
