"""A fine-tuned model as it was saved, read in one place, and the one rule for the settings a prediction with it takes.

A fine-tuned folder's config.json carries an `expmrc` record of the run that trained it (`training.baseline` writes
it): the task, the window and decoding settings (`TaskSettings`), the precision, the attention path its predictions
took, the prediction batch size and `allow_unknown_tokens`. The run directory's run_info.json holds the settings too,
for models saved before their folder recorded them. `SavedModel` reads the record, checked, and `SavedModel.choose`
settles every setting of a prediction by one rule:

    a flag given overrides the record, else the record, else the default

for the windows, the precision, the attention, the batch size and `allow_unknown_tokens` alike. The predict-only run
of the baselines (any of whose flags may be given) and `FineTuned` (re-prediction and `expmrc faithfulness`, where only
the batch size may be given) both predict with what it chooses, so a saved model re-predicts as its run predicted.
A recorded precision the device cannot run (fp16 on a CPU, bf16 on a GPU without it) runs as `auto` does there, with
a line saying so; one given on the command line that cannot run is refused (`resolve_precision`). A model fine-tuned
here that records no settings at all is refused in one line: defaults would silently predict with other windows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import torch

from expmrc.data.io import json_kind, read_json
from expmrc.data.runs import MODEL_DIR, RUN_INFO, RunRecord, check_schema
from expmrc.errors import ExpmrcError
from expmrc.inference.predictor import PREDICT_BATCH_SIZE
from expmrc.models.unpadded import ATTENTION_MODES
from expmrc.tasks import TaskSettings, TaskSpec

PRECISIONS = ("auto", "no", "fp16", "bf16")
# the record's (and the flags') name of each setting of a prediction beside the window settings
RECORDED = {"predict_batch_size": "batch_size", "mixed_precision": "precision", "attention": "attention",
            "allow_unknown_tokens": "allow_unknown_tokens"}


def resolve_precision(requested: str, device: str) -> str:
    """The autocast precision a run uses: `auto` -> bf16 on GPUs (fp16 where bf16 is unsupported) and TPUs,
    no (FP32) elsewhere; fp16 on CPU is refused rather than silently run in FP32."""
    if requested not in PRECISIONS:
        raise ExpmrcError(f"--mixed_precision must be one of {', '.join(PRECISIONS)}, got {requested!r}")
    if requested == "auto":
        if device == "cuda":
            return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
        return "bf16" if device == "xla" else "no"
    if requested == "fp16" and device == "cpu":
        raise ExpmrcError("--mixed_precision fp16 needs a GPU; on CPU use no (FP32, what auto gives) or bf16")
    return requested


def runs_on(precision: str, device: str) -> bool:
    """Whether `device` ("cuda", "cpu", "mps", "xla") can predict under `precision`."""
    if precision == "fp16":
        return device != "cpu"
    if precision == "bf16" and device == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    return True


@dataclass(frozen=True)
class Prediction:
    """What a prediction with a saved model runs under, once `SavedModel.choose` has settled it; the defaults are the
    baseline flags' defaults."""

    settings: TaskSettings
    batch_size: int = PREDICT_BATCH_SIZE  # items per prediction batch, over all processes
    precision: str = "auto"  # no | fp16 | bf16 once chosen for a device
    attention: str = "auto"  # auto | padded | unpadded, as --attention (`models.unpadded.resolve_attention`)
    allow_unknown_tokens: bool = False
    notes: tuple[str, ...] = field(default=(), compare=False)  # lines to log: flags that overrode the record, ...


def _recorded_value(name: str, value: Any, where: str) -> Any:
    """A recorded prediction setting, checked; one line naming `where` when it is of the wrong kind."""
    if name == "predict_batch_size":
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
        kind = "a whole number of at least 1"
    elif name == "mixed_precision":
        ok, kind = value in PRECISIONS[1:], f"one of {', '.join(PRECISIONS[1:])}"
    elif name == "attention":
        ok, kind = value in ATTENTION_MODES, f"one of {', '.join(ATTENTION_MODES)}"
    else:
        ok, kind = isinstance(value, bool), "true or false"
    if not ok:
        raise ExpmrcError(f"{where}: the recorded {name} is {json.dumps(value)}, not {kind}")
    return value


@dataclass(frozen=True)
class SavedModel:
    """A model folder and the `expmrc` record its config.json carries ({} for a model never fine-tuned here, or one
    that is no local folder), with the run directory it was saved in, if any."""

    folder: Path | None
    record: Mapping[str, Any] = field(default_factory=dict)
    run_dir: Path | None = None

    @classmethod
    def find(cls, path: str) -> SavedModel:
        """The fine-tuned model a path names: a run directory (its `model/`) or the model folder itself; one line when
        there is none."""
        root = Path(path)
        if (root / MODEL_DIR / "config.json").is_file():
            return cls.read(root / MODEL_DIR)
        if (root / "config.json").is_file():
            return cls.read(root)
        if not root.exists():
            raise ExpmrcError(f"{path}: no such run directory or model folder")
        raise ExpmrcError(f"{path}: holds no fine-tuned model (neither {MODEL_DIR}/config.json nor config.json); "
                          "train first")

    @classmethod
    def read(cls, folder: Path) -> SavedModel:
        """FOLDER's record, checked (one line naming config.json when it cannot be read, its record is no object or
        was written by a newer expmrc); its run directory is the parent folder when that holds a run_info.json."""
        where = f"{folder / 'config.json'}"
        config = read_json(where, "model config")
        if not isinstance(config, dict):
            raise ExpmrcError(f"{where}: model config must be a JSON object")
        record = config.get("expmrc", {})
        if not isinstance(record, dict):
            raise ExpmrcError(f"{where}: the `expmrc` record is {json_kind(record)}, not an object")
        check_schema(record, where)
        return cls(folder, record, folder.parent if (folder.parent / RUN_INFO).is_file() else None)

    @property
    def where(self) -> str:
        """The file the record is read from, for messages."""
        return f"{self.folder / 'config.json'}" if self.folder is not None else "the model"

    @property
    def fine_tuned(self) -> bool:
        """Whether the model was fine-tuned here (its record names a task)."""
        return "task" in self.record

    def recorded_settings(self, spec: TaskSpec) -> TaskSettings | None:
        """The window and decoding settings the model was trained with: its folder's record, else its run's
        run_info.json; None when neither has them."""
        if "settings" in self.record:
            return spec.settings_from_record(self.record["settings"], self.where)
        info = RunRecord.read(self.run_dir) if self.run_dir is not None else None
        if self.run_dir is not None and info is not None and "settings" in info.settings:
            return spec.settings_from_record(info.get("settings"), f"{self.run_dir / RUN_INFO}")
        return None

    def choose(self, spec: TaskSpec, given: Mapping[str, Any], device: str) -> Prediction:
        """The settings a prediction on `device` takes, by the one rule (the module docstring): each flag in `given`
        (by its flag name: the window settings', predict_batch_size, mixed_precision, attention,
        allow_unknown_tokens) overrides the record, else the record, else `Prediction`'s default."""
        recorded = self.recorded_settings(spec)
        if recorded is None and self.fine_tuned:
            raise ExpmrcError(f"{self.where}: records no window and decoding settings (a model fine-tuned by an older "
                              "version); train it again to predict with it")
        defaults = Prediction(spec.defaults)
        record = {**(recorded.as_dict() if recorded is not None else {}),
                  **{name: _recorded_value(name, self.record[name], self.where) for name in RECORDED
                     if name in self.record}}
        chosen = {name: given[name] if name in given else record.get(name, default)
                  for name, default in [*defaults.settings.as_dict().items(),
                                        *((name, getattr(defaults, attribute)) for name, attribute in RECORDED.items())]}
        differing = sorted(name for name in given if name in record and given[name] != record[name])
        notes = [f"predicting with settings other than the model was trained with (its "
                 f"{', '.join(f'{name} {record[name]}' for name in differing)})"] if differing else []
        precision = chosen["mixed_precision"]
        if "mixed_precision" not in given and not runs_on(precision, device):
            chosen["mixed_precision"] = resolve_precision("auto", device)
            notes.append(f"{self.where} records {precision}, which {device} cannot run: predicting under "
                         f"{chosen['mixed_precision']} (what --mixed_precision auto gives there)")
        if "attention" not in given and chosen["attention"] == "unpadded" and device == "xla":
            chosen["attention"] = "auto"
            notes.append(f"{self.where} records the unpadded attention path, which cannot run on a TPU: --attention auto")
        settings = TaskSettings(**{f.name: chosen[f.name] for f in fields(TaskSettings)})
        return Prediction(settings, chosen["predict_batch_size"], resolve_precision(chosen["mixed_precision"], device),
                          chosen["attention"], chosen["allow_unknown_tokens"], tuple(notes))
