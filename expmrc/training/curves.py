"""Training curves in the tools researchers already use: `--report_to tensorboard|wandb|mlflow|none`, through
accelerate's trackers (`Accelerator(log_with=...)`, `init_trackers`, `log`, `end_training`).

What a run logs, from the main process: at every log line (`--logging_steps`) the loss and its parts, `train/loss`,
`train/answer_loss` (L_A), `train/evidence_loss` (L_E, unweighted) and, with the coupling regularizer on,
`train/coupling_loss` (J), then `train/lambda` (λ), `train/learning_rate` and `train/examples_per_second` (over the
steps since the previous line); a Select & Forget answerer's the same under `answerer/`; and once the predictions are
scored, `dev/answer`, `dev/evidence` and `dev/overall` (the leaderboard's figures) at the run's last step.

TensorBoard writes into the run directory's `tensorboard/` folder (`TENSORBOARD_DIR`; a predict-only run into a
training run's folder, into `predict-only/tensorboard/`), so TensorBoard names each run by its output folder and
`tensorboard --logdir SWEEP_ROOT` shows every run of a λ sweep side by side (`lambda_0.1/seed_2/tensorboard`, ...).
A resumed run hides the events the interrupted one wrote after its checkpoint (TensorBoard's `purge_step`), so its
curves do not double back. Weights & Biases and MLflow runs go to the project `expmrc` (WANDB_PROJECT,
MLFLOW_EXPERIMENT_NAME and the tools' other variables apply), named by the output folder as given, with every flag
as the run's configuration. A tracker whose package is not installed is refused in one line at flag parsing (exit 2),
before anything is loaded: accelerate itself would drop it silently.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from accelerate import Accelerator
from accelerate.utils import is_mlflow_available, is_tensorboard_available, is_wandb_available

from expmrc.data.io import check_output_path
from expmrc.data.runs import TENSORBOARD_DIR
from expmrc.errors import ExpmrcError

logger = logging.getLogger("expmrc")
PROJECT = "expmrc"  # the Weights & Biases project and MLflow experiment of every run


# --report_to's values: the package each needs, the extra that brings it (if any), and accelerate's own test of it
TRACKERS: dict[str, tuple[str, str | None, Callable[[], Any]]] = {
    "tensorboard": ("tensorboard", "train", is_tensorboard_available),
    "wandb": ("wandb", None, is_wandb_available),
    "mlflow": ("mlflow", None, is_mlflow_available),
}
REPORT_TO = ("none", *TRACKERS)


def check_report_to(report_to: str) -> str:
    """--report_to's value once its tracker's package is installed; one line naming the package (and the extra that
    brings it) otherwise."""
    if report_to not in REPORT_TO:
        raise ExpmrcError(f"--report_to must be one of {', '.join(REPORT_TO)}, got {report_to!r}")
    if report_to != "none":
        package, extra, available = TRACKERS[report_to]
        if not available():
            how = f"pip install 'expmrc[{extra}]' (or pip install {package})" if extra else f"pip install {package}"
            raise ExpmrcError(f"--report_to {report_to} needs the Python package {package}, which is not installed: "
                              f"{how}, or pass --report_to none")
    return report_to


def check_tracker_dir(report_to: str, destination: Path) -> None:
    """Refuse, in one line, a TensorBoard folder in the run's folder that could not be written (before any write)."""
    if report_to == "tensorboard":
        try:
            check_output_path(str(destination / TENSORBOARD_DIR), "dir")
        except ExpmrcError as exc:
            raise ExpmrcError(f"--report_to tensorboard: {exc}") from None


def start_curves(accelerator: Accelerator, report_to: str, destination: Path, run_name: str,
                 flags: Mapping[str, Any], purge_step: int | None) -> None:
    """Start the run's tracker (nothing for `none`): TensorBoard into DESTINATION/tensorboard, hiding the events from
    `purge_step` on (a resumed run's, written after its checkpoint); the others named `run_name`, with the flags as
    the run's configuration. A tracker that fails to start (not logged in, no server) is one line."""
    if report_to == "none":
        return
    if report_to == "tensorboard":
        accelerator.project_configuration.logging_dir = str(destination)
        project, config = TENSORBOARD_DIR, None
        kwargs: dict[str, Any] = {} if purge_step is None else {"purge_step": purge_step}
    else:
        project = os.environ.get("WANDB_PROJECT", PROJECT) if report_to == "wandb" else PROJECT
        config = {key: value if isinstance(value, (bool, int, float, str)) or value is None else str(value)
                  for key, value in flags.items()}
        kwargs = {"name": run_name, "dir": str(destination)} if report_to == "wandb" else {"run_name": run_name}
    try:
        accelerator.init_trackers(project, config=config, init_kwargs={report_to: kwargs})
    except Exception as exc:  # the tracker's own library failing to start: its reason, in one line
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
        raise ExpmrcError(f"--report_to {report_to}: the tracker did not start ({reason})") from None
    logger.info(f"training curves: {report_to}" + (f", in {destination / TENSORBOARD_DIR}"
                                                    if report_to == "tensorboard" else f", run {run_name}"))


def log_dev_scores(accelerator: Accelerator, scores: Mapping[str, float], step: int) -> None:
    """The dev set's leaderboard figures (`answer`, `evidence`, `overall`) at the run's last step, under `dev/`."""
    accelerator.log({f"dev/{name}": float(value) for name, value in scores.items()}, step=step)
