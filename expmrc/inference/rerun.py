"""A fine-tuned model outside its training run: load it from a run directory or its folder, and predict any
list of questions exactly as the run predicted its own.

`expmrc faithfulness` re-predicts passages it edited itself, so it builds the windows of the questions it
is given (no feature cache). Everything else is the run's: the settings come from the fine-tuned folder's
record (`config.json` → `expmrc.settings`, read by the task layer, `expmrc.tasks`), else from
the run's run_info.json, and the run's own task predictor (`expmrc.inference.task_predictor`) builds the
windows, pads them as the run padded them on this device, predicts through the one prediction loop (longest
first, under the run's autocast precision, in batches of the run's --predict_batch_size unless told otherwise)
and decodes them with the recorded settings. So a saved run re-predicts its own dev_predictions.json.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any
from collections.abc import Callable, Sequence

import torch

from expmrc.data.datasets import Question
from expmrc.data.runs import MODEL_DIR, RUN_INFO, RunRecord, check_schema
from expmrc.errors import ExpmrcError
from expmrc.features.windows import uses_token_types
from expmrc.inference.buckets import BucketPlan, graphs_unavailable
from expmrc.inference.predictor import PREDICT_BATCH_SIZE
from expmrc.inference.task_predictor import Predicted, TaskPredictor
from expmrc.models.backbones import load_task_model, resolve_source, training_record
from expmrc.models.unpadded import resolve_attention
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


class FineTuned:
    """A fine-tuned span or choice model and its task predictor (`predictor`: the tokenizer, the recorded settings,
    the device, the batch size and precision), ready to predict on the attention path a predict-only run of the
    baselines takes on that device (`--attention auto`)."""

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
        settings = recorded_settings(self.spec, record, folder, run_dir)
        on = torch_device(device)
        recorded_batch = record.get("predict_batch_size")
        self.predictor = TaskPredictor(
            self.spec, source.tokenizer, settings, uses_token_types(source.tokenizer, self.model.config), on,
            batch_size or (recorded_batch if isinstance(recorded_batch, int) and recorded_batch > 0
                           else PREDICT_BATCH_SIZE), autocast_for(record.get("mixed_precision"), on))
        self.predictor.check_fits(self.model, f"{folder / 'config.json'}: the recorded setting ")
        path = resolve_attention("auto", on.type, str(record.get("mixed_precision")), False)[0]
        self.model.use_attention(path)
        if record.get("graph_buckets") is not None and graphs_unavailable(on.type, str(record.get("mixed_precision")),
                                                                          self.model.attention_path) is None:
            # predicted in the graphed run's token buckets, as a predict-only run predicts where graphs run
            self.predictor = replace(self.predictor, buckets=BucketPlan.from_record(record["graph_buckets"],
                                                                                    f"{folder / 'config.json'}"))
        self.model.to(on).eval()
        self.name = str(folder)

    def predict(self, questions: Sequence[Question]) -> Predicted:
        """Answers and evidence for `questions`: windows, model, decoding on the questions' own passages."""
        return self.predictor.predict(self.model, questions)
