"""A fine-tuned model outside its training run: load it from a run directory or its folder, and predict any
list of questions exactly as the run predicted its own.

`expmrc faithfulness` re-predicts passages it edited itself, so it builds the windows of the questions it
is given (no feature cache). Everything else is the run's: the settings come from the fine-tuned folder's
record (`config.json` → `expmrc.settings`, read by the task layer, `expmrc.tasks`), else from
the run's run_info.json; the windows are built by the task's feature builder, run through the one
prediction loop (`expmrc.inference.predictor.predict_items`: longest first, under the run's autocast
precision, in batches of the run's --predict_batch_size unless told otherwise) and decoded by the
task's decoder. So a saved run re-predicts its own dev_predictions.json.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from functools import cached_property, partial
from pathlib import Path
from typing import Any
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import torch

from expmrc.data.datasets import Question, SpanQuestion
from expmrc.data.runs import MODEL_DIR, RUN_INFO, RunRecord, check_schema
from expmrc.decoding.spans import span_probability
from expmrc.errors import ExpmrcError
from expmrc.features.windows import FeatureTable, WindowDataset, uses_token_types
from expmrc.inference.predictor import PREDICT_BATCH_SIZE, predict_items
from expmrc.metrics.leaderboard import score_tokens
from expmrc.models.backbones import load_task_model, resolve_source, training_record
from expmrc.tasks import TaskSettings, TaskSpec, task_spec



def find_model(path: str) -> tuple[Path, Path | None]:
    """The fine-tuned model folder a path names (a run directory's `model/`, or the folder itself) and the
    run directory, if any; one line when there is none."""
    root = Path(path)
    if (root / MODEL_DIR / "config.json").is_file():
        return root / MODEL_DIR, root
    if (root / "config.json").is_file():
        return root, root.parent if (root.parent / RUN_INFO).is_file() else None
    if not root.exists():
        raise ExpmrcError(f"{path}: no such run directory or model folder")
    raise ExpmrcError(f"{path}: holds no fine-tuned model (neither {MODEL_DIR}/config.json nor config.json); "
                      "train first")


def torch_device(name: str | None) -> torch.device:
    """The device `--device` names (default: cuda when available, else cpu); one line for a name torch does not
    know, a device this build or machine lacks, or `meta` (which holds no numbers to predict with)."""
    if name is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise ExpmrcError(f"--device {name!r}: not a torch device ({' '.join(str(exc).split())[:120]})") from None
    if device.type == "meta":
        raise ExpmrcError(f"--device {name!r}: the meta device holds no weights to predict with; use cpu or cuda")
    if device.type != "cpu":
        module = getattr(torch, device.type, None)
        available = getattr(module, "is_available", lambda: False)
        if not available():
            raise ExpmrcError(f"--device {name!r}: no {device.type} device is available in this torch build or "
                              "machine; use cpu")
        count = getattr(module, "device_count", lambda: 1)()
        if device.index is not None and device.index >= count:
            raise ExpmrcError(f"--device {name!r}: this machine has {count} {device.type} device(s)")
    return device


def recorded_settings(spec: TaskSpec, record: dict[str, Any], folder: Path, run_dir: Path | None) -> TaskSettings:
    """The settings the model was trained and decoded with: its folder's record, else its run's run_info.json."""
    if "settings" in record:
        return spec.settings_from_record(record["settings"], f"{folder / 'config.json'}")
    info = RunRecord.read(run_dir) if run_dir is not None else None
    if run_dir is not None and info is not None and "settings" in info.settings:
        return spec.settings_from_record(info.get("settings"), f"{run_dir / RUN_INFO}")
    raise ExpmrcError(f"{folder / 'config.json'}: records no window and decoding settings (a model fine-tuned by an "
                      "older version); train it again to predict with it")


def autocast_for(precision: Any, device: torch.device) -> Callable[[], Any]:
    """The autocast context the run predicted under: bf16/fp16 as recorded, FP32 otherwise."""
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(str(precision))
    if dtype is None or (dtype == torch.float16 and device.type == "cpu"):
        return nullcontext
    return partial(torch.autocast, device_type=device.type, dtype=dtype)


@dataclass
class Predicted:
    """What one call to `FineTuned.predict` gives: the submission, the n-best records, the windows run, and
    what p(ŷ) is computed from (the questions, their windows and the model's outputs)."""

    predictions: dict[str, dict[str, Any]]
    nbest: dict[str, Any]
    windows: int
    questions: Sequence[Question] = ()
    table: FeatureTable | None = None
    outputs: Sequence[Mapping[str, np.ndarray]] = ()
    max_answer_length: int = 30

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
        if not key or self.table is None:
            return None
        windows = self._windows.get(index, [])
        return span_probability(self.table, windows, self.outputs, question.context, key, self.max_answer_length)

    @cached_property
    def _index(self) -> dict[str, int]:
        return {q.qid: i for i, q in enumerate(self.questions)}

    @cached_property
    def _windows(self) -> dict[int, list[int]]:
        return self.table.windows_of() if self.table is not None else {}


class FineTuned:
    """A fine-tuned span or choice model with its tokenizer, settings and device, ready to predict."""

    def __init__(self, path: str, device: str | None = None, batch_size: int | None = None) -> None:
        folder, run_dir = find_model(path)
        record = training_record(str(folder))
        if "task" not in record:
            raise ExpmrcError(f"{folder}: not a fine-tuned expmrc model (its config.json has no expmrc task record)")
        check_schema(record, f"{folder / 'config.json'}")
        self.spec = task_spec(record["task"], f"{folder / 'config.json'}")
        self.kind: str = self.spec.kind
        self.record = record
        source = resolve_source(str(folder))
        self.model, _ = load_task_model(self.spec.model_class, source)
        self.tokenizer = source.tokenizer
        self.token_types = uses_token_types(self.tokenizer, self.model.config)
        self.settings = recorded_settings(self.spec, record, folder, run_dir)
        if self.settings.max_seq_length > self.model.usable_length():
            raise ExpmrcError(f"{folder / 'config.json'}: the recorded setting max_seq_length "
                              f"{self.settings.max_seq_length} exceeds the {self.model.usable_length()} positions "
                              "the model has")
        self.device = torch_device(device)
        self.model.to(self.device).eval()
        self.autocast = autocast_for(record.get("mixed_precision"), self.device)
        recorded_batch = record.get("predict_batch_size")
        self.batch_size = batch_size or (recorded_batch if isinstance(recorded_batch, int) and recorded_batch > 0
                                         else PREDICT_BATCH_SIZE)
        self.name = str(folder)

    def features(self, questions: Sequence[Question]) -> FeatureTable:
        """The prediction windows of `questions` under the model's settings."""
        return self.spec.features(questions, self.tokenizer, self.settings, False, self.token_types, False)[0]

    def outputs(self, table: FeatureTable) -> list[dict[str, np.ndarray]]:
        """The model's per-window outputs, through the one prediction loop."""
        data = WindowDataset(table, False, self.tokenizer.pad_token_id or 0, 1, self.settings.max_seq_length)
        found = predict_items(self.model, data, list(range(len(table))), self.batch_size, self.device, self.autocast)
        return [found[i] for i in range(len(table))]

    def predict(self, questions: Sequence[Question]) -> Predicted:
        """Answers and evidence for `questions`: windows, model, decoding on the questions' own passages."""
        table = self.features(questions)
        s = self.settings
        outputs = self.outputs(table)
        predictions, nbest = self.spec.decode(questions, table, outputs, s.n_best_size, s.max_answer_length,
                                              s.max_evidence_length)
        return Predicted(predictions, nbest, len(table), questions, table, outputs, s.max_answer_length)
