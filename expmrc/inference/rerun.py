"""A fine-tuned model outside its training run: load it from a run directory or its folder, and predict any
list of questions exactly as the run predicted its own.

`expmrc faithfulness` re-predicts passages it edited itself, so it builds the windows of the questions it
is given (no feature cache). Everything else is the run's: the fine-tuned folder's record (`config.json` →
`expmrc`, else the run's run_info.json for the settings) is read by `expmrc.inference.saved.SavedModel`, whose one
rule also settles a predict-only run's settings, and the run's own task predictor
(`expmrc.inference.task_predictor`) builds the windows, pads them as the run padded them on this device, predicts
through the one prediction loop (longest first, under the run's precision and attention path, in batches of the
run's --predict_batch_size unless told otherwise) and decodes them with the recorded settings. So a saved run
re-predicts its own dev_predictions.json.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import replace
import logging
from functools import partial
from typing import Any
from collections.abc import Callable, Sequence

import torch

from expmrc.data.datasets import Question
from expmrc.errors import ExpmrcError
from expmrc.features.windows import uses_token_types
from expmrc.inference.buckets import BucketPlan, graphs_unavailable
from expmrc.inference.saved import SavedModel
from expmrc.inference.task_predictor import Predicted, TaskPredictor
from expmrc.models.backbones import load_task_model, resolve_source
from expmrc.models.unpadded import resolve_attention
from expmrc.tasks import task_spec

logger = logging.getLogger("expmrc")


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


def autocast_for(precision: str, device: torch.device) -> Callable[[], Any]:
    """The autocast context of a chosen precision (`Prediction.precision`, one the device runs): bf16 or fp16
    autocast, else FP32."""
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    if dtype is None:
        return nullcontext
    return partial(torch.autocast, device_type=device.type, dtype=dtype)


class FineTuned:
    """A fine-tuned span or choice model and its task predictor (`predictor`: the tokenizer, the recorded settings,
    the device, the batch size and precision), on the attention path a predict-only run of the baselines takes on
    that device: both settle their settings by `SavedModel.choose` (`prediction`)."""

    def __init__(self, path: str, device: str | None = None, batch_size: int | None = None) -> None:
        saved = SavedModel.find(path)
        if not saved.fine_tuned:
            raise ExpmrcError(f"{saved.folder}: not a fine-tuned expmrc model (its config.json has no expmrc task "
                              "record)")
        self.spec = task_spec(saved.record["task"], saved.where)
        self.kind: str = self.spec.kind
        self.record = saved.record
        on = torch_device(device)
        self.prediction = saved.choose(self.spec, {} if batch_size is None else {"predict_batch_size": batch_size},
                                       on.type)
        for note in self.prediction.notes:
            logger.info(note)
        source = resolve_source(str(saved.folder))
        self.model, _ = load_task_model(self.spec.model_class, source)
        chosen = self.prediction
        self.predictor = TaskPredictor(self.spec, source.tokenizer, chosen.settings,
                                       uses_token_types(source.tokenizer, self.model.config), on, chosen.batch_size,
                                       autocast_for(chosen.precision, on))
        self.predictor.check_fits(self.model, f"{saved.where}: the recorded setting ")
        self.model.use_attention(resolve_attention(chosen.attention, on.type, chosen.precision, False)[0])
        record = saved.record
        if record.get("graph_buckets") is not None and graphs_unavailable(on.type, chosen.precision,
                                                                          self.model.attention_path) is None:
            # predicted in the graphed run's token buckets, as a predict-only run predicts where graphs run
            self.predictor = replace(self.predictor, buckets=BucketPlan.from_record(record["graph_buckets"],
                                                                                    saved.where))
        # transformers types PreTrainedModel.to as @wraps(nn.Module.to), an unbound signature: the device reads as self
        self.model.to(on).eval()  # type: ignore[arg-type]
        self.name = str(saved.folder)

    def predict(self, questions: Sequence[Question]) -> Predicted:
        """Answers and evidence for `questions`: windows, model, decoding on the questions' own passages."""
        return self.predictor.predict(self.model, questions)
