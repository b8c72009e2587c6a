"""Reading training runs for `expmrc collect`: finding run directories, scoring each run's predictions.

Each run directory is read as the training scripts leave it (the files named in
expmrc/data/runs.py: its run record, `RunRecord`, and dev_predictions.json), its predictions are scored on its
dev set with `expmrc.scoring.scorer` (leaderboard rules). A run that is unfinished, failed or unscorable, or
whose λ or seed is not a finite number / whole number, gets the reason as its status and note, never an
exception. Folders holding only collect's own outputs are not runs.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from expmrc.data import subsets
from expmrc.data.datasets import Dataset, load_dataset, resolve_dataset_path
from expmrc.data.io import read_json
from expmrc.data.runs import FAITHFULNESS_FILE as FAITHFULNESS
from expmrc.data.runs import PREDICTIONS_FILE as PREDICTIONS
from expmrc.data.runs import RUN_INFO, SUPPORT_FILE, Environment, RunRecord
from expmrc.data.submissions import load_submission
from expmrc.errors import ExpmrcError
from expmrc.metrics.registry import select
from expmrc.scoring.scorer import score

SCORES = ("answer", "evidence", "overall")  # the leaderboard's, plotted in the λ figure
FIGURES = SCORES + ("loca",)  # LOCA: span subsets by offsets, multiple choice its lexical stand-in
FARM = "farm4"  # FARM(4) from the run's faithfulness.json, with collect(farm=True)
SUPPORT = "support"  # the support rate from the run's support.json (`expmrc judge ... --output`), where there is one
LOCA_KEYS = {"loca": "LOCA", "lexical-loca": "LEX_LOCA"}
FORMATS = ("md", "csv", "png")
OUTPUT_FILES = {"md": "table3.md", "csv": "table3.csv", "runs": "runs.csv", "png": "lambda.png", "html": "index.html"}


@dataclass
class ScoredRun:
    """One run directory: what it was, whether it counts, and its scores (×100) when it does."""

    run_dir: str
    status: str  # finished | unfinished | failed | invalid
    note: str = ""
    task: str = ""
    subset: str = ""
    model: str = ""
    loss_lambda: float | None = None
    rand_seed: int | None = None
    scores: dict[str, float | None] | None = None
    unanswered: int = 0
    total: int = 0
    dev_file: str = ""
    dev_sha256: str = ""
    vectors: dict[str, np.ndarray] = field(default_factory=dict)  # per-question SCORES, dataset order (0: unanswered)
    environment: Environment | None = None  # where it ran, as its record says


def find_run_dirs(paths: list[str], ignore: str | None = None) -> list[str]:
    """Run directories under `paths`: a folder with run_info.json or dev_predictions.json is a run; other
    folders are searched below; a folder with neither and nothing below is an unfinished run. The folder
    `ignore` (collect's output folder) and folders holding only collect's outputs are skipped. A run whose
    name is not valid UTF-8 is refused here, before anything is read or written: every table names it."""
    found: list[str] = []
    skip = os.path.realpath(ignore) if ignore else None

    def visit(folder: Path) -> None:
        if any("\udc80" <= ch <= "\udcff" for ch in str(folder)):  # undecodable bytes, as Python keeps them
            shown = os.fsencode(folder).decode("utf-8", "backslashreplace")
            raise ExpmrcError(f"{shown}: the folder's name is not valid UTF-8, so no table can name it; rename "
                              "it, or collect the folders beside it")
        if (folder / RUN_INFO).exists() or (folder / PREDICTIONS).exists():
            found.append(str(folder))
            return
        if os.path.realpath(folder) == skip or any((folder / name).is_file() for name in OUTPUT_FILES.values()):
            return
        children = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
        if not children:
            found.append(str(folder))
        for child in children:
            visit(child)

    for path in paths:
        if not os.path.isdir(path):
            raise ExpmrcError(f"{path}: not a run directory (no such folder)")
        try:
            visit(Path(path))
        except OSError as exc:
            raise ExpmrcError(f"{exc.filename or path}: cannot list folder: {exc.strerror}") from None
    return list(dict.fromkeys(found))


class DatasetCache:
    """Dev sets to score against: `--data` overrides, else each run's `predict_file`, each loaded once."""

    def __init__(self, overrides: list[str] | None = None):
        self.loaded: dict[str, Dataset] = {}
        self.digests: dict[str, str] = {}  # dataset path -> sha256 of its bytes, which identifies the dev set
        self.overrides = [self.load(path) for path in overrides or []]

    def load(self, path: str) -> Dataset:
        key = os.path.realpath(resolve_dataset_path(path))
        if key not in self.loaded:
            dataset = load_dataset(path)
            try:
                self.digests[dataset.path] = hashlib.sha256(Path(dataset.path).read_bytes()).hexdigest()
            except OSError as exc:
                raise ExpmrcError(f"{dataset.path}: cannot read: {exc.strerror}") from None
            self.loaded[key] = dataset
        return self.loaded[key]

    def for_run(self, run_dir: str, predict_file: str | None, qids: set[str]) -> Dataset:
        """The dataset a run is scored on; with several overrides, the one sharing most question ids."""
        if len(self.overrides) == 1:
            return self.overrides[0]
        if self.overrides:
            best = max(self.overrides, key=lambda d: len(qids & {q.qid for q in d.questions}))
            if not qids & {q.qid for q in best.questions}:
                raise ExpmrcError(f"{run_dir}: no --data file shares question ids with its predictions")
            return best
        if not predict_file:
            raise ExpmrcError(f"{run_dir}: run_info.json names no predict_file (pass --data DEV_SET)")
        if not isinstance(predict_file, str):
            raise ExpmrcError(f"{os.path.join(run_dir, RUN_INFO)}: predict_file must be a path or a subset name, "
                              f"got {type(predict_file).__name__} {str(predict_file)[:40]} (pass --data DEV_SET)")
        for candidate in (predict_file, os.path.join(run_dir, predict_file)):
            if os.path.isfile(candidate):
                return self.load(candidate)
        if predict_file in subsets.names():
            return self.load(predict_file)
        raise ExpmrcError(f"{run_dir}: predict_file {predict_file} not found (pass --data DEV_SET)")


def read_record(run_dir: str) -> RunRecord | str | None:
    """A run directory's record, the one line saying why it cannot be read, or None when it has none."""
    try:
        return RunRecord.read(run_dir)
    except ExpmrcError as exc:
        return str(exc)


def read_run(run_dir: str, datasets: DatasetCache, farm: bool = False,
             record: RunRecord | str | None = None) -> ScoredRun:
    """Read and score one training run directory (its `record`, read here unless given); problems become the run's
    status and note, never an exception.

    Besides the leaderboard's scores, LOCA (the coupling metric of the task) is computed from the
    predictions; with `farm`, FARM(4) is read from the run's faithfulness.json.
    """
    run = ScoredRun(run_dir=run_dir, status="unfinished")
    info_path = os.path.join(run_dir, RUN_INFO)
    info = read_record(run_dir) if record is None else record
    if info is None:
        run.note = "no run_info.json (never started, or written by something else)"
        return run
    if isinstance(info, str):
        run.status, run.note = "invalid", info
        return run
    run.task, run.environment = str(info.get("task", "")), info.environment
    run.model = resolve_model(info.get("model"), run_dir, info.get("flags"))
    if info.status == "failed":
        run.status, run.note = "failed", f"failed: {info.get('error', 'no error recorded')}"
        return run
    if info.status != "finished":
        status = info.status or None
        run.note = f"status {status!r} at step {info.get('global_step', '?')} (still running, or killed)"
        return run
    problem = _settings_problem(info.settings)
    if problem:
        run.status, run.note = "invalid", f"{info_path}: {problem}"
        return run
    run.loss_lambda, run.rand_seed = float(info.get("loss_lambda")), int(info.get("rand_seed"))
    try:
        predictions = load_submission(os.path.join(run_dir, PREDICTIONS))
        dataset = datasets.for_run(run_dir, info.get("predict_file"), set(predictions))
        coupling = [m for m in select(None, dataset) if m.name in LOCA_KEYS]
        report = score(dataset, predictions, os.path.join(run_dir, PREDICTIONS), coupling)
    except ExpmrcError as exc:
        run.status, run.note = "invalid", str(exc)
        return run
    run.subset, run.total, run.unanswered = dataset.subset, report.total, report.skipped
    run.dev_file, run.dev_sha256 = dataset.path, datasets.digests[dataset.path]
    if report.skipped == report.total:
        run.status, run.note = "invalid", f"none of its predictions match a question of {dataset.path}"
        return run
    run.status = "finished"
    run.scores = {metric: report.mean(metric) for metric in SCORES}
    run.vectors = {metric: np.array([getattr(q, metric) if q.answered else 0.0 for q in report.questions])
                   for metric in SCORES}
    figures = report.extra_figures()
    run.scores["loca"] = next((figures[key] for key in LOCA_KEYS.values() if key in figures), None)
    notes = [f"{report.skipped} of {report.total} questions unanswered (scored 0, as the leaderboard does)"] \
        if report.skipped else []
    if farm:
        run.scores[FARM], note = read_farm(run_dir, report.total)
        notes += [note] if note else []
    if os.path.exists(os.path.join(run_dir, SUPPORT_FILE)):
        run.scores[SUPPORT], note = read_support(run_dir, report.total)
        notes += [note] if note else []
    run.note = "; ".join(notes)
    return run


def read_support(run_dir: str, questions: int) -> tuple[float | None, str]:
    """The support rate from RUN_DIR/support.json when it judged the run's own predictions, else None and why; a
    rate whose check warned comes with a note saying so."""
    from expmrc.scoring.support import file_sha256

    path = os.path.join(run_dir, SUPPORT_FILE)
    try:
        support = read_json(path, "support record")["support"]
        rate, count, judged, check = support["rate"], support["questions"], support["predictions_sha256"], support["check"]
    except (ExpmrcError, KeyError, TypeError) as exc:
        return None, f"{path}: not what `expmrc judge --output` writes ({exc}), so no support rate"
    if judged != file_sha256(os.path.join(run_dir, PREDICTIONS)):
        return None, f"{path}: judged other predictions than the run's {PREDICTIONS}, so no support rate; judge again"
    if count != questions:
        return None, f"{path}: covers {count} questions, the predictions {questions}, so no support rate"
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 100:
        raise ExpmrcError(f"{path}: the support rate must be a number from 0 to 100, got {json.dumps(rate)[:40]}; "
                          "judge again with `expmrc judge`")
    warned = f"{path}: the judge's check warned (gap {check.get('gap')} points), so its labels are doubtful" \
        if isinstance(check, dict) and check.get("warning") else ""
    return float(rate), warned


def read_farm(run_dir: str, questions: int) -> tuple[float | None, str]:
    """FARM(4) from RUN_DIR/faithfulness.json, or None and why not."""
    path = os.path.join(run_dir, FAITHFULNESS)
    if not os.path.exists(path):
        return None, f"no {FAITHFULNESS} (run `expmrc faithfulness {run_dir} DEV --output {path}`), so no FARM(4)"
    try:
        record = read_json(path, "faithfulness record")
        farm = {row["k"]: row["farm"] for row in record["farm"]}
        count = record["questions"]
    except (ExpmrcError, KeyError, TypeError) as exc:
        return None, f"{path}: not a faithfulness record ({exc}), so no FARM(4)"
    if 4 not in farm:
        return None, f"{path}: has no FARM(4) (written with --max-k below 4)"
    if count != questions:
        return None, f"{path}: covers {count} questions, the predictions {questions}, so no FARM(4)"
    return farm_value(path, farm[4]), ""


def farm_value(path: str, value: object) -> float:
    """A recorded FARM(4), refused in one line naming the record unless a finite number in [0, 1] (a ratio)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ExpmrcError(f"{path}: FARM(4) must be a number from 0 to 1, got {json.dumps(value)[:40]}; rewrite it "
                          "with `expmrc faithfulness`")
    return float(value)


def _settings_problem(info: dict) -> str:
    """Why a finished run's λ or seed cannot place it in a setting, or "" when both are usable."""
    lam, seed = info.get("loss_lambda"), info.get("rand_seed")
    if isinstance(lam, bool) or not isinstance(lam, (int, float)):
        return f"loss_lambda is {'missing' if lam is None else repr(lam)}, not a number"
    if not math.isfinite(lam) or lam < 0:
        return f"loss_lambda {lam} is not a finite number >= 0"
    if isinstance(seed, bool) or not isinstance(seed, (int, float)):
        return f"rand_seed is {'missing' if seed is None else repr(seed)}, not a whole number"
    if isinstance(seed, float) and not seed.is_integer():
        return f"rand_seed {seed} is not a whole number"
    return ""


def resolve_model(model: object, run_dir: str, flags: object = None) -> str:
    """The model a run started from, as one spelling per folder: a path that exists (absolute, relative to
    the folder the run was started in, or relative to here) becomes its real path; anything else (a hub
    name, a path on another machine) stays as written."""
    if not isinstance(model, str) or not model:
        return ""
    candidates = [model] if os.path.isabs(model) else []
    output_dir = flags.get("output_dir") if isinstance(flags, dict) else None
    if isinstance(output_dir, str) and output_dir and not os.path.isabs(output_dir) and not os.path.isabs(model):
        parts = Path(os.path.normpath(output_dir)).parts
        real = Path(os.path.realpath(run_dir)).parts
        if ".." not in parts and len(real) > len(parts) and real[-len(parts):] == parts:
            candidates.append(os.path.join(*real[:-len(parts)], model))  # the folder training started in
    candidates.append(model)
    for candidate in candidates:
        if os.path.exists(candidate):
            return os.path.realpath(candidate)
    return os.path.normpath(model)
