"""Run folders and the one run record: every file a run writes is named here, and `RunRecord` is what its
run_info.json holds, for training runs and `expmrc llm` runs alike.

A baseline (training) run:

    OUTPUT_DIR/
      run_info.json          the run record (below)
      dev_predictions.json   the submission          dev_nbest.json   n-best answers and evidence
      model/                 the fine-tuned model (a complete Hugging Face folder)
      checkpoints/step-N/    resumable checkpoints (Accelerator.save_state + expmrc_state.json), removed
                             when the run finishes unless --keep_final_checkpoints True
      train_log.jsonl        loss, its parts, learning rate and throughput every --logging_steps
      tensorboard/           with --report_to tensorboard: the training curves' event files
      predict-only/          run_info.json and predictions of a --do_predict run without --do_train into the
                             folder of a training run, whose own record and predictions are kept
      faithfulness.json      `expmrc faithfulness RUN_DIR DEV --output RUN_DIR/faithfulness.json`, read by collect
      support.json           `expmrc judge DEV RUN_DIR/dev_predictions.json ... --output RUN_DIR/support.json`: the
                             support rate, its check and the judge's record (kind `judge`), read by collect
    and with --select_and_forget (expmrc/training/select_forget.py; `model/` is then the selector):
      selected_evidence.json the selector's evidence span chosen for each training question
      answerer/              the fine-tuned answerer, trained on the evidence alone
      answerer-training/     its checkpoints/ (removed like the selector's) and train_log.jsonl

An `expmrc llm` run: run_info.json, predictions.json, grounded.json, responses.jsonl, scores.json and, with
--limit, dataset.json (exactly the questions asked), written in one rename; with --judge, scores.json holds the
support rate and responses.jsonl each question's label.

The record (`RunRecord`) says which kind of run it is (`baseline`, `llm`, or `judge`: the record an `expmrc judge
--output` file keeps under `record`), carries `schema` (`SCHEMA`,
raised when its meaning changes), `environment` (package versions, the git commit of a checkout, the device)
and `command` (the command line that started the run), the run's own settings and results, and its `status`:
"running" when a run starts, then "finished", "failed" with the error, or "interrupted" (Ctrl-C or SIGTERM)
with the step the same command resumes from. A killed run leaves "running" behind; `expmrc collect` trusts
only "finished" runs. A rerun that stops on an error never rewrites the record of a run that had finished.
Records of earlier versions still read: schema 2 and 1 training records, and the LLM records that had no
schema (recognised by their `backend` and `template`; an LLM folder was only ever written whole, finished).

A training record's `timing` says where the run's time went: `train_seconds` and what the loop measured within it
(compiling, checkpoints, CUDA graph captures), and `phases` (`Phases`): seconds of the process before the run
started (`startup`: the interpreter and imports), reading or building each set's features, loading the model,
saving it, predicting, scoring, and `wall`, the process's time until the record's last write. Records written
before `phases` existed have none (`recorded_phases` gives {}); the keys are only ever added to.
"""

from __future__ import annotations

import os
import platform
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any
from collections.abc import Callable, Iterator

from expmrc import __version__
from expmrc.data.io import json_kind, read_json, write_json_atomic
from expmrc.errors import ExpmrcError, Terminated

RUN_INFO = "run_info.json"
PREDICTIONS_FILE = "dev_predictions.json"
NBEST_FILE = "dev_nbest.json"
MODEL_DIR = "model"
CHECKPOINT_DIR = "checkpoints"
CHECKPOINT_STATE = "expmrc_state.json"
LOG_FILE = "train_log.jsonl"
TENSORBOARD_DIR = "tensorboard"
SELECTION_FILE = "selected_evidence.json"
ANSWERER_DIR = "answerer"
ANSWERER_RUN_DIR = "answerer-training"
PREDICT_ONLY_DIR = "predict-only"
FAITHFULNESS_FILE = "faithfulness.json"
SUPPORT_FILE = "support.json"
LLM_PREDICTIONS = "predictions.json"
LLM_GROUNDED = "grounded.json"
LLM_RESPONSES = "responses.jsonl"
LLM_SCORES = "scores.json"
LLM_DATASET = "dataset.json"  # with --limit: exactly the questions asked
LLM_FILES = (RUN_INFO, LLM_PREDICTIONS, LLM_GROUNDED, LLM_RESPONSES, LLM_SCORES, LLM_DATASET)  # all an LLM run writes

# 3: one record for training and LLM runs (`kind`, `command`); 2: `settings` from the task layer, `schema` and
# `environment`; 1 (or none): earlier training records, and the LLM records before this one
SCHEMA = 3
KINDS = ("baseline", "llm", "judge")
PACKAGES = ("torch", "transformers", "accelerate", "tokenizers", "numpy", "openai")
COMMON = ("schema", "kind", "status", "environment", "command")  # the keys every record has


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


@dataclass(frozen=True)
class Environment:
    """Where a run ran: package versions (expmrc's and Python's among them), the git commit, the device."""

    packages: dict[str, str | None]
    git_commit: str | None = None
    device: str | None = None

    @classmethod
    def here(cls, device: str | None) -> Environment:
        """This process's environment, on `device` (None: no local device, e.g. a remote LLM endpoint)."""
        from importlib import metadata  # here, not at the top: scoring imports this module and needs none of it

        versions: dict[str, str | None] = {"expmrc": __version__, "python": platform.python_version()}
        for name in PACKAGES:
            try:
                versions[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                versions[name] = None
        return cls(versions, git_commit(), device)

    @classmethod
    def from_json(cls, value: Any, where: str) -> Environment:
        """The recorded environment; one line naming `where` when it is of the wrong shape."""
        if not isinstance(value, dict) or not isinstance(value.get("packages", {}), dict):
            raise ExpmrcError(f"{where}: the recorded environment is {json_kind(value)}, not an object with packages")
        commit, device = value.get("git_commit"), value.get("device")
        if not isinstance(commit, (str, type(None))) or not isinstance(device, (str, type(None))):
            raise ExpmrcError(f"{where}: the recorded git_commit and device must be text or null")
        packages = {str(k): (v if isinstance(v, str) else None) for k, v in value.get("packages", {}).items()}
        return cls(packages, commit, device)

    def as_json(self) -> dict[str, Any]:
        return {"packages": self.packages, "git_commit": self.git_commit, "device": self.device}

    def summary(self) -> str:
        """One short line: expmrc's version, the commit and the device, as far as they are known."""
        parts = [f"expmrc {self.packages.get('expmrc') or '?'}"]
        if self.git_commit:
            parts.append(f"git {self.git_commit[:10]}")
        if self.device:
            parts.append(self.device)
        return ", ".join(parts)


@dataclass
class RunRecord:
    """What run_info.json holds: the kind of run, its schema, environment, command line and status, and the run's
    own settings and results (`settings`: flags, model, λ, seed, template, tokens, ...), kept flat in the file."""

    kind: str
    settings: dict[str, Any] = field(default_factory=dict)
    status: str = "running"
    environment: Environment | None = None
    command: list[str] | None = None
    schema: int = SCHEMA
    raw: dict[str, Any] | None = field(default=None, repr=False, compare=False)  # the object it was read from

    def get(self, key: str, default: Any = None) -> Any:
        """One of the run's own settings or results."""
        return self.settings.get(key, default)

    def as_json(self) -> dict[str, Any]:
        """The record as run_info.json holds it: one object, keys sorted so the file diffs cleanly."""
        common = {"schema": self.schema, "kind": self.kind, "status": self.status, "command": self.command,
                  "environment": self.environment.as_json() if self.environment else None}
        return dict(sorted({**self.settings, **common}.items()))

    @classmethod
    def from_json(cls, value: Any, where: str) -> RunRecord:
        """A record read back (any schema up to `SCHEMA`); one line naming `where` when it is of the wrong shape or
        was written by a newer expmrc."""
        if not isinstance(value, dict):
            raise ExpmrcError(f"{where}: a run record must be a JSON object, got {json_kind(value)}")
        schema = check_schema(value, where)
        kind = value.get("kind", "llm" if "backend" in value and "template" in value else "baseline")
        if kind not in KINDS:
            raise ExpmrcError(f"{where}: the recorded kind is {kind!r}, not one of {', '.join(KINDS)}")
        status = value.get("status", "finished" if kind == "llm" else "")
        if not isinstance(status, str):
            raise ExpmrcError(f"{where}: the recorded status is {json_kind(status)}, not text")
        command = value.get("command")
        if command is not None and not (isinstance(command, list) and all(isinstance(w, str) for w in command)):
            raise ExpmrcError(f"{where}: the recorded command is {json_kind(command)}, not a list of words")
        environment = _environment_of(value, where)
        settings = {key: v for key, v in value.items() if key not in COMMON}
        return cls(kind, settings, status, environment, command, schema, raw=value)

    @classmethod
    def read(cls, folder: str | Path) -> RunRecord | None:
        """FOLDER/run_info.json, or None when there is none; one line naming the file when it cannot be read, is of
        the wrong shape or was written by a newer expmrc."""
        path = Path(folder) / RUN_INFO
        if not path.exists():
            return None
        return cls.from_json(read_json(str(path), "run record"), str(path))

    def write(self, folder: str | Path) -> None:
        """Write FOLDER/run_info.json atomically."""
        write_json_atomic(str(Path(folder) / RUN_INFO), self.as_json(), indent=2)


def _environment_of(value: dict[str, Any], where: str) -> Environment | None:
    """A record's environment: its own, or for an LLM record of before the schema, the `versions` it kept."""
    if value.get("environment") is not None:
        return Environment.from_json(value["environment"], where)
    versions = value.get("versions")
    if isinstance(versions, dict):
        return Environment({str(k): (v if isinstance(v, str) else None) for k, v in versions.items()})
    return None


def process_seconds() -> float | None:
    """Seconds since this process started (Linux: from /proc; None where that cannot be read)."""
    try:
        fields = Path("/proc/self/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
        uptime = float(Path("/proc/uptime").read_text(encoding="ascii").split()[0])
        return max(0.0, uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


class Phases:
    """The seconds a run spends in each named phase (several spans of one phase add up), and its process's start-up:
    what the record keeps under `timing.phases`."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        started = process_seconds()
        if started is not None:
            self.seconds["startup"] = started
        self.origin = time.perf_counter() - (started or 0.0)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the body as (part of) phase `name`, whether it ends or raises."""
        began = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - began

    def as_dict(self) -> dict[str, float]:
        """Each phase's seconds, and `wall`, the process's seconds so far (rounded to milliseconds)."""
        return {**{name: round(value, 3) for name, value in self.seconds.items()},
                "wall": round(time.perf_counter() - self.origin, 3)}


def recorded_phases(record: RunRecord) -> dict[str, float]:
    """A training record's phases in seconds (`timing.phases`); {} for records written before they were kept, and
    for any value that is not a number."""
    timing = record.get("timing")
    phases = timing.get("phases") if isinstance(timing, dict) else None
    if not isinstance(phases, dict):
        return {}
    return {str(k): float(v) for k, v in phases.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


class NewerRecord(ExpmrcError):
    """A record written by a newer expmrc: refused, and nothing is written into its folder."""


def check_schema(record: dict[str, Any], where: str) -> int:
    """A record's schema (1 when it names none); one line when it was written by a newer expmrc (its `schema` above
    `SCHEMA`) or its schema is no number. Fine-tuned folders' records (config.json's `expmrc`) are checked too."""
    schema = record.get("schema", 1)
    if isinstance(schema, bool) or not isinstance(schema, int):
        raise ExpmrcError(f"{where}: the recorded schema is {schema!r}, not a whole number")
    if schema > SCHEMA:
        raise NewerRecord(f"{where}: written by a newer expmrc (record schema {schema}, this one reads up to "
                          f"{SCHEMA}); upgrade expmrc")
    return schema


def peek(folder: str | Path) -> RunRecord | None:
    """FOLDER's record when it can be read, else None (for a writer that has checked the folder already)."""
    try:
        return RunRecord.read(folder)
    except ExpmrcError:
        return None


@contextmanager
def recorded_run(output_dir: str, record: RunRecord, is_main_process: bool = True,
                 resumable_step: Callable[[], int] = lambda: 0) -> Iterator[RunRecord]:
    """Mark the run "running", hand `record` to the body to fill in, then record how it ended (module docstring).

    `resumable_step` tells, after an interruption, the newest checkpoint's step.
    """
    previous = peek(output_dir) if is_main_process else None
    if is_main_process:
        record.status = "running"
        record.write(output_dir)
    try:
        yield record
    except (KeyboardInterrupt, Terminated):  # Ctrl-C, or SIGTERM (the command line turns it into Terminated)
        if is_main_process:
            step = resumable_step()
            record.status = "interrupted"
            record.settings.update(resumable_from_step=step,
                                   error=f"interrupted; the same command resumes from step {step}")
            record.write(output_dir)
        raise
    except BaseException as exc:
        if is_main_process:
            if previous is not None and previous.status == "finished" and previous.raw is not None:
                # a refused rerun leaves the finished record as it was
                write_json_atomic(str(Path(output_dir) / RUN_INFO), previous.raw, indent=2)
            else:
                record.status = "failed"
                record.settings["error"] = str(exc) or type(exc).__name__
                record.write(output_dir)
        raise
    if is_main_process:
        record.status = "finished"
        record.settings.pop("error", None)
        record.write(output_dir)
