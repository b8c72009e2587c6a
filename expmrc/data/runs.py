"""The run directory: every file a baseline run writes is named here, and run_info.json records the run.

    OUTPUT_DIR/
      run_info.json          what ran, on what, and how it ended (below)
      dev_predictions.json   the submission          dev_nbest.json   n-best answers and evidence
      model/                 the fine-tuned model (a complete Hugging Face folder)
      checkpoints/step-N/    resumable checkpoints (Accelerator.save_state + expmrc_state.json), removed
                             when the run finishes unless --keep_final_checkpoints True
      train_log.jsonl        loss every --logging_steps
      predict-only/          run_info.json and predictions of a --do_predict run without --do_train into the
                             folder of a training run, whose own record and predictions are kept
    and with --select_and_forget (expmrc/training/select_forget.py; `model/` is then the selector):
      selected_evidence.json the selector's evidence span chosen for each training question
      answerer/              the fine-tuned answerer, trained on the evidence alone
      answerer-training/     its checkpoints/ (removed like the selector's) and train_log.jsonl

`run_info.json` carries `schema` (`SCHEMA`, raised when its meaning changes) and `environment`
(package versions, the git commit of a checkout, the device), and says "running" when a run starts, then "finished" (with its global step), "failed"
with the error, or "interrupted" (Ctrl-C or SIGTERM) with the step the same command resumes from. A
killed run leaves "running" behind. `expmrc collect` trusts only "finished" runs. A rerun that stops
on an error never rewrites the record of a run that had finished. Only the main process writes.
"""

from __future__ import annotations

import subprocess
from contextlib import contextmanager
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any
from collections.abc import Callable, Iterator

from expmrc.data.io import read_json, write_json_atomic
from expmrc.errors import ExpmrcError, Terminated

RUN_INFO = "run_info.json"
MODEL_DIR = "model"
CHECKPOINT_DIR = "checkpoints"
CHECKPOINT_STATE = "expmrc_state.json"
LOG_FILE = "train_log.jsonl"
SELECTION_FILE = "selected_evidence.json"
ANSWERER_DIR = "answerer"
ANSWERER_RUN_DIR = "answerer-training"
PREDICT_ONLY_DIR = "predict-only"


SCHEMA = 2  # 2: `settings` from the task layer, `schema` and `environment`; 1 (or none): earlier records
PACKAGES = ("expmrc", "torch", "transformers", "accelerate", "tokenizers", "numpy")


@lru_cache(maxsize=1)
def git_commit() -> str | None:
    """The commit of the checkout this package runs from, or None outside a git checkout."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and len(commit) == 40 else None


def environment(device: str) -> dict[str, Any]:
    """What a run record says about where it ran: package versions, the git commit, the device."""
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {"packages": versions, "git_commit": git_commit(), "device": device}


def check_schema(record: dict[str, Any], where: str) -> None:
    """One line when a record was written by a newer expmrc (its `schema` above `SCHEMA`) or its schema is no number."""
    schema = record.get("schema", 1)
    if isinstance(schema, bool) or not isinstance(schema, int):
        raise ExpmrcError(f"{where}: the recorded schema is {schema!r}, not a whole number")
    if schema > SCHEMA:
        raise ExpmrcError(f"{where}: written by a newer expmrc (record schema {schema}, this one reads up to "
                          f"{SCHEMA}); upgrade expmrc")


def write_run_info(output_dir: str, info: dict[str, Any]) -> None:
    """Write run_info.json atomically, keys sorted so the file diffs cleanly."""
    write_json_atomic(str(Path(output_dir) / RUN_INFO), dict(sorted(info.items())), indent=2)


def read_run_info(output_dir: str) -> dict[str, Any] | None:
    """The run_info.json of a run directory, or None when there is none or it cannot be read."""
    path = Path(output_dir) / RUN_INFO
    if not path.is_file():
        return None
    try:
        info = read_json(str(path), "run record")
    except ExpmrcError:
        return None
    return info if isinstance(info, dict) else None


@contextmanager
def recorded_run(output_dir: str, info: dict[str, Any], is_main_process: bool = True,
                 resumable_step: Callable[[], int] = lambda: 0) -> Iterator[dict[str, Any]]:
    """Mark the run "running", hand `info` to the body to fill in, then record how it ended (module docstring).

    `resumable_step` tells, after an interruption, the newest checkpoint's step.
    """
    previous = read_run_info(output_dir) if is_main_process else None
    if is_main_process:
        write_run_info(output_dir, {**info, "status": "running"})
    try:
        yield info
    except (KeyboardInterrupt, Terminated):  # Ctrl-C, or SIGTERM (the command line turns it into Terminated)
        if is_main_process:
            step = resumable_step()
            write_run_info(output_dir, {**info, "status": "interrupted", "resumable_from_step": step,
                                        "error": f"interrupted; the same command resumes from step {step}"})
        raise
    except BaseException as exc:
        if is_main_process:
            if previous is not None and previous.get("status") == "finished":
                write_run_info(output_dir, previous)  # a refused rerun leaves the finished record as it was
            else:
                write_run_info(output_dir, {**info, "status": "failed", "error": str(exc) or type(exc).__name__})
        raise
    if is_main_process:
        info["status"] = "finished"
        info.pop("error", None)
        write_run_info(output_dir, info)
