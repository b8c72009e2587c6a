"""One baseline run's configuration: the flags parse once (`expmrc.training.flags.parse_config`) into typed parts,
each checking its own ranges, and nothing past the flag parser sees the argparse Namespace.

    BaselineConfig
      task      TaskSettings   windows and decoding (expmrc/tasks.py)
      training  TrainConfig    optimization and bookkeeping (expmrc/training/loop.py)
      loss      LossSettings   λ and the coupling regularizer, given to the model when it is built (models/heads.py)
      paths     Paths          model, data, caches and the run directory
and what the run does (train, predict, Select & Forget, ...). run_info.json records the parts (`settings`,
`training`, the loss settings) beside every flag as given (`flags`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from expmrc.models.heads import LossSettings
from expmrc.tasks import TaskSettings
from expmrc.training.loop import TrainConfig


@dataclass(frozen=True)
class Paths:
    """Where a baseline run reads and writes: the model (a folder or Hub id, or the original release's three
    files), the data, the feature caches and the run directory."""

    output_dir: str
    train_file: str | None = None
    predict_file: str | None = None
    model_name_or_path: str | None = None
    bert_config_file: str | None = None
    vocab_file: str | None = None
    init_checkpoint: str | None = None
    train_tfrecord: str | None = None  # a feature cache file of its own for --train_file (the original's name)
    predict_tfrecord: str | None = None
    cache_dir: str | None = None


@dataclass(frozen=True)
class BaselineConfig:
    """Everything one baseline run is told: typed parts, what to do, and the flags as given."""

    kind: str  # "span" or "choice"
    task_name: str
    paths: Paths
    task: TaskSettings
    training: TrainConfig
    loss: LossSettings
    do_train: bool = False
    do_predict: bool = False
    do_lower_case: bool | None = None  # None: not given (an original vocab.txt is then read cased)
    select_and_forget: bool = False
    overwrite_output_dir: bool = False
    allow_unknown_tokens: bool = False
    keep_final_checkpoints: bool = False
    use_tpu: bool = False
    report_to: str = "none"  # the tracker of the training curves (`expmrc.training.curves`), or none
    flags: dict[str, Any] = field(default_factory=dict)  # every flag's value by name, as run_info.json records them
    given: frozenset[str] = frozenset()  # the flags the command line gives explicitly
    ignored: tuple[str, ...] = ()  # `--name=value` of original TPU-era flags given, logged as ignored
    command: tuple[str, ...] = ()  # the command line, as the run record keeps it

    def recorded(self) -> dict[str, Any]:
        """The parts as run_info.json holds them beside the flags."""
        return {"settings": self.task.as_dict(), "training": _plain(self.training), **self.loss.as_dict(),
                "select_and_forget": self.select_and_forget}


def _plain(config: TrainConfig) -> dict[str, Any]:
    """The training configuration's fields, the run directory left out (it is the run's own folder)."""
    return {name: value for name, value in vars(config).items() if name != "output_dir"}
