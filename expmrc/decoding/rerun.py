"""A fine-tuned model in the loop: load it from a run directory or its folder, and predict any list of questions.

`expmrc faithfulness` re-predicts passages it edited itself, so it cannot use a feature cache or the
training loop's multi-process prediction: `FineTuned.predict` builds the windows of the questions it is
given, runs the model over them in batches on one device and decodes them as the baselines do. The
lengths the model was trained and decoded with come from the run's run_info.json flags, else from the
fine-tuned folder's record (`config.json` → `expmrc.settings`), else the baselines' defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from expmrc.data.datasets import Question
from expmrc.data.io import read_json
from expmrc.decoding.predictions import decode_predictions
from expmrc.errors import ExpmrcError
from expmrc.features.choice import build_choice_features
from expmrc.features.span import build_span_features
from expmrc.features.windows import FeatureTable, WindowDataset, uses_token_types
from expmrc.models.backbones import load_task_model, resolve_source, training_record
from expmrc.models.choice import ChoiceModel
from expmrc.models.span import SpanModel

MODEL_CLASSES = {"span": SpanModel, "choice": ChoiceModel}
DEFAULTS: dict[str, Any] = {"max_seq_length": 512, "doc_stride": 128, "max_query_length": 128, "max_qa_length": 128,
                            "n_best_size": 20, "max_answer_length": 30, "max_evidence_length": 128}


def find_model(path: str) -> tuple[Path, Path | None]:
    """The fine-tuned model folder a path names (a run directory's `model/`, or the folder itself) and the
    run directory, if any; one line when there is none."""
    root = Path(path)
    if (root / "model" / "config.json").is_file():
        return root / "model", root
    if (root / "config.json").is_file():
        return root, root.parent if (root.parent / "run_info.json").is_file() else None
    if not root.exists():
        raise ExpmrcError(f"{path}: no such run directory or model folder")
    raise ExpmrcError(f"{path}: holds no fine-tuned model (neither model/config.json nor config.json); train first")


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


def prediction_settings(record: dict[str, Any], run_dir: Path | None) -> dict[str, Any]:
    """Window and decoding lengths: the run's flags, else the folder's recorded settings, else the defaults."""
    settings = dict(DEFAULTS)
    origin = dict.fromkeys(DEFAULTS, "the model folder's config.json (expmrc.settings)")
    recorded = record.get("settings")
    if isinstance(recorded, dict):
        settings.update({k: v for k, v in recorded.items() if k in DEFAULTS})
    if run_dir is not None and (run_dir / "run_info.json").is_file():
        info = read_json(str(run_dir / "run_info.json"), "run record")
        flags = info.get("flags", {}) if isinstance(info, dict) else {}
        if isinstance(flags, dict):
            settings.update({k: v for k, v in flags.items() if k in DEFAULTS})
            origin.update(dict.fromkeys((k for k in flags if k in DEFAULTS), str(run_dir / "run_info.json")))
    for key, value in settings.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ExpmrcError(f"{origin[key]}: the recorded setting {key} is {value!r}, not a whole number of "
                              "at least 1")
    return settings


@dataclass
class Predicted:
    """What one call to `FineTuned.predict` gives: the submission, the n-best records, and the windows run."""

    predictions: dict[str, dict[str, Any]]
    nbest: dict[str, Any]
    windows: int


class FineTuned:
    """A fine-tuned span or choice model with its tokenizer, settings and device, ready to predict."""

    def __init__(self, path: str, device: str | None = None, batch_size: int = 16) -> None:
        folder, run_dir = find_model(path)
        record = training_record(str(folder))
        task = record.get("task")
        if task not in MODEL_CLASSES:
            raise ExpmrcError(f"{folder}: not a fine-tuned expmrc model (its config.json has no expmrc task record)")
        self.kind: str = task
        self.record = record
        source = resolve_source(str(folder))
        self.model, _ = load_task_model(MODEL_CLASSES[task], source)
        self.tokenizer = source.tokenizer
        self.token_types = uses_token_types(self.tokenizer, self.model.config)
        self.settings = prediction_settings(record, run_dir)
        self.settings["max_seq_length"] = min(self.settings["max_seq_length"], self.model.usable_length())
        self.device = torch_device(device)
        self.model.to(self.device).eval()
        self.batch_size = batch_size
        self.name = str(folder)

    def features(self, questions: Sequence[Question]) -> FeatureTable:
        """The prediction windows of `questions` under the model's settings."""
        s = self.settings
        if self.kind == "span":
            table, _ = build_span_features(questions, self.tokenizer, s["max_seq_length"], s["doc_stride"],
                                           s["max_query_length"], False, self.token_types)
        else:
            table, _ = build_choice_features(questions, self.tokenizer, s["max_seq_length"], s["max_qa_length"],
                                             s["doc_stride"], False, self.token_types)
        return table

    def outputs(self, table: FeatureTable) -> list[dict[str, np.ndarray]]:
        """The model's per-window outputs, in batches of windows of similar length."""
        data = WindowDataset(table, False, self.tokenizer.pad_token_id or 0)
        order = np.argsort(table.lengths(), kind="stable")
        results: list[dict[str, np.ndarray]] = [{} for _ in range(len(table))]
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                windows = [int(w) for w in order[start:start + self.batch_size]]
                batch = {k: v.to(self.device) for k, v in data.batch(windows).items()}
                arrays = {k: v.float().cpu().numpy() for k, v in self.model(**batch).items() if v.dim() > 0}
                for j, window in enumerate(windows):
                    results[window] = {k: v[j] for k, v in arrays.items()}
        return results

    def predict(self, questions: Sequence[Question]) -> Predicted:
        """Answers and evidence for `questions`: windows, model, decoding on the questions' own passages."""
        table = self.features(questions)
        s = self.settings
        predictions, nbest = decode_predictions(questions, table, self.outputs(table), s["n_best_size"],
                                                s["max_answer_length"], s["max_evidence_length"])
        return Predicted(predictions, nbest, len(table))

