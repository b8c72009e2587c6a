"""Many training runs -> one Table-3-style table (markdown and CSV) and one λ figure (PNG).

Each run directory is read as the training scripts leave it (run_info.json, dev_predictions.json),
its predictions are scored on its dev set with `expmrc.scoring.scorer` (leaderboard rules), and runs are
grouped by (subset, task, model, λ, dev file) over seeds: mean, sample standard deviation and maximum.
The paper reports the 5-run maximum in Table 3 and 5-run means in its λ figure. A run that is
unfinished, failed or unscorable, or whose λ or seed is not a finite number / whole number, is listed
with the reason and never averaged in. Runs are grouped together only when they were scored on the
same dev file (by the sha256 of its bytes) and trained from the same model (its path resolved, so a
relative and an absolute path to one folder are one model); two runs of one group with the same seed
are refused. Folders holding only collect's own outputs are not runs.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import os
import re
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from expmrc.data.datasets import SUBSETS, Dataset, load_dataset, resolve_dataset_path
from expmrc.data.io import atomic_file, read_json, write_text_atomic
from expmrc.data.submissions import load_submission
from expmrc.errors import ExpmrcError
from expmrc.scoring.scorer import score
from expmrc.metrics.registry import select
from expmrc.reports.html import load_submissions, render_report
from expmrc.reports.pages import asset, pyplot, render, svg, write_page

RUN_INFO = "run_info.json"
PREDICTIONS = "dev_predictions.json"
FAITHFULNESS = "faithfulness.json"  # `expmrc faithfulness RUN_DIR DEV --output RUN_DIR/faithfulness.json`
SCORES = ("answer", "evidence", "overall")  # the leaderboard's, plotted in the λ figure
METRICS = SCORES + ("loca",)  # LOCA: span subsets by offsets, multiple choice its lexical stand-in
FARM = "farm4"  # FARM(4) from the run's faithfulness.json, with collect(farm=True)
METRIC_LABELS = {"answer": "Ans.", "evidence": "Evi.", "overall": "All", "loca": "LOCA", FARM: "FARM(4)"}
METRIC_NAMES = {"answer": "Answer", "evidence": "Evidence", "overall": "Overall", "loca": "LOCA", FARM: "FARM(4)"}
DIGITS = {FARM: 3}  # decimals in the tables: scores ×100 get 1, FARM (a ratio) 3
LOCA_KEYS = {"loca": "LOCA", "lexical-loca": "LEX_LOCA"}
SUBSET_NAMES = {"squad": "SQuAD", "cmrc2018": "CMRC 2018", "race": "RACE+", "c3": "C3"}
FORMATS = ("md", "csv", "png")
OUTPUT_FILES = {"md": "table3.md", "csv": "table3.csv", "runs": "runs.csv", "png": "lambda.png", "html": "index.html"}
REPORTS_DIR = "reports"  # with --html: one report page per scored run


@dataclass
class Run:
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


@dataclass
class Group:
    """The runs of one setting (subset, task, model, λ, dev file) over seeds."""

    subset: str
    task: str
    model: str
    loss_lambda: float
    dev_sha256: str
    runs: list[Run] = field(default_factory=list)
    dev_label: str = ""  # set when a subset's runs were scored on more than one dev file

    @property
    def dev_file(self) -> str:
        return self.runs[0].dev_file if self.runs else ""

    @property
    def seeds(self) -> list[int]:
        return sorted(r.rand_seed for r in self.runs if r.rand_seed is not None)

    def values(self, metric: str) -> list[float]:
        """The runs' values of a metric, leaving out runs that have none (FARM(4) without faithfulness.json)."""
        return [r.scores[metric] for r in self.runs if r.scores.get(metric) is not None]

    def mean(self, metric: str) -> float | None:
        values = self.values(metric)
        return statistics.fmean(values) if values else None

    def std(self, metric: str) -> float | None:
        """Sample standard deviation over seeds (n - 1); None for a single run."""
        values = self.values(metric)
        return statistics.stdev(values) if len(values) > 1 else None

    def max(self, metric: str) -> float | None:
        values = self.values(metric)
        return max(values) if values else None


# ---------------------------------------------------------------- reading runs

def find_run_dirs(paths: list[str], ignore: str | None = None) -> list[str]:
    """Run directories under `paths`: a folder with run_info.json or dev_predictions.json is a run; other
    folders are searched below; a folder with neither and nothing below is an unfinished run. The folder
    `ignore` (collect's output folder) and folders holding only collect's outputs are skipped."""
    found: list[str] = []
    skip = os.path.realpath(ignore) if ignore else None

    def visit(folder: Path) -> None:
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
        if predict_file in SUBSETS:
            return self.load(predict_file)
        raise ExpmrcError(f"{run_dir}: predict_file {predict_file} not found (pass --data DEV_SET)")


def read_run(run_dir: str, datasets: DatasetCache, farm: bool = False) -> Run:
    """Read and score one run directory; problems become the run's status and note, never an exception.

    Besides the leaderboard's scores, LOCA (the coupling metric of the task) is computed from the
    predictions; with `farm`, FARM(4) is read from the run's faithfulness.json.
    """
    run = Run(run_dir=run_dir, status="unfinished")
    info_path = os.path.join(run_dir, RUN_INFO)
    if not os.path.exists(info_path):
        run.note = "no run_info.json (never started, or written by something else)"
        return run
    try:
        info = read_json(info_path, "run record")
        if not isinstance(info, dict):
            raise ExpmrcError(f"{info_path}: run record must be a JSON object")
    except ExpmrcError as exc:
        run.status, run.note = "invalid", str(exc)
        return run
    run.task = str(info.get("task", ""))
    run.model = resolve_model(info.get("model"), run_dir, info.get("flags"))
    status = info.get("status")
    if status == "failed":
        run.status, run.note = "failed", f"failed: {info.get('error', 'no error recorded')}"
        return run
    if status != "finished":
        run.note = f"status {status!r} at step {info.get('global_step', '?')} (still running, or killed)"
        return run
    problem = _settings_problem(info)
    if problem:
        run.status, run.note = "invalid", f"{info_path}: {problem}"
        return run
    run.loss_lambda, run.rand_seed = float(info["loss_lambda"]), int(info["rand_seed"])
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
    figures = report.extra_figures()
    run.scores["loca"] = next((figures[key] for key in LOCA_KEYS.values() if key in figures), None)
    notes = [f"{report.skipped} of {report.total} questions unanswered (scored 0, as the leaderboard does)"] \
        if report.skipped else []
    if farm:
        run.scores[FARM], note = read_farm(run_dir, report.total)
        notes += [note] if note else []
    run.note = "; ".join(notes)
    return run


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
        return None, f"{path}: has no FARM(4) (written with --max_k below 4)"
    if count != questions:
        return None, f"{path}: covers {count} questions, the predictions {questions}, so no FARM(4)"
    return farm_value(path, farm[4]), ""


def farm_value(path: str, value: Any) -> float:
    """A recorded FARM(4), refused in one line naming the record unless a finite number in [0, 1] (a ratio)."""
    import json

    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        shown = json.dumps(value)[:40]
        raise ExpmrcError(f"{path}: FARM(4) must be a number from 0 to 1, got {shown}; rewrite it with "
                          "`expmrc faithfulness`")
    return float(value)


def shown_metrics(groups: list[Group]) -> tuple[str, ...]:
    """The metrics the tables show: the leaderboard's and LOCA, then FARM(4) when it was asked for."""
    farm = any(FARM in r.scores for g in groups for r in g.runs)
    return METRICS + ((FARM,) if farm else ())


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


def group_runs(runs: list[Run]) -> list[Group]:
    """Finished runs grouped by setting, ordered by subset (paper order), model and λ; a seed that repeats
    within a group is refused in one line naming both runs."""
    groups: dict[tuple, Group] = {}
    for run in runs:
        if run.status != "finished":
            continue
        key = (run.subset, run.task, run.model, run.loss_lambda, run.dev_sha256)
        group = groups.setdefault(key, Group(*key))
        twin = next((r for r in group.runs if r.rand_seed == run.rand_seed), None)
        if twin is not None:
            raise ExpmrcError(f"{twin.run_dir} and {run.run_dir}: the same setting ({run.subset}, model {run.model}, "
                              f"lambda {_lam(run.loss_lambda)}) and the same seed {run.rand_seed}; a seed must count "
                              "once, so collect one of them")
        group.runs.append(run)
    label_dev_files(list(groups.values()))
    return sorted(groups.values(), key=lambda g: (SUBSETS.index(g.subset), g.model, g.task, g.loss_lambda,
                                                  g.dev_label))


def label_dev_files(groups: list[Group]) -> None:
    """Name the dev file of each group of a subset whose runs used several: the file most runs used keeps
    no label, the others are labelled `name sha256[:8]` so their rows stand apart."""
    for subset in SUBSETS:
        mine = [g for g in groups if g.subset == subset]
        counts: dict[str, int] = {}
        for g in mine:
            counts[g.dev_sha256] = counts.get(g.dev_sha256, 0) + len(g.runs)
        if len(counts) < 2:
            continue
        usual = max(sorted(counts), key=lambda digest: counts[digest])
        for g in mine:
            if g.dev_sha256 != usual:
                g.dev_label = f"{Path(g.dev_file).name} {g.dev_sha256[:8]}"


# ---------------------------------------------------------------- writing tables

def short_model_names(groups: list[Group]) -> dict[str, str]:
    """A readable name per model path: its last folder name, unless two models would share it."""
    def short(path: str) -> str:
        parts = [p for p in path.replace("\\", "/").split("/") if p]
        if parts and parts[-1].startswith("bert_model.ckpt") and len(parts) > 1:
            return parts[-2]
        return parts[-1] if parts else path

    models = sorted({g.model for g in groups})
    names = {m: short(m) for m in models}
    clashes = {n for n in names.values() if list(names.values()).count(n) > 1}
    return {m: (m if names[m] in clashes else names[m]) for m in models}


def _fmt(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _cell(value: float | None, metric: str) -> str:
    return _fmt(value, DIGITS.get(metric, 1))


def _lam(value: float) -> str:
    return format(value, "g")


def setting_tables(groups: list[Group]) -> tuple[list[str], list[tuple[str, list[list[str]]]]]:
    """The two tables over settings, as cells: maximum over seeds (Table 3 style) and mean ± std (the λ figure)."""
    names = short_model_names(groups)
    subsets = [s for s in SUBSETS if any(g.subset == s for g in groups)]
    rows = sorted({(g.model, g.loss_lambda, g.dev_label) for g in groups}, key=lambda r: (names[r[0]], r[1], r[2]))
    by_key = {(g.subset, g.model, g.loss_lambda, g.dev_label): g for g in groups}
    metrics = shown_metrics(groups)
    header = ["Model", "λ"] + [f"{SUBSET_NAMES[s]} {METRIC_LABELS[m]}" for s in subsets for m in metrics] + ["n"]
    tables = []
    for title, cell in (
        ("Maximum over seeds (as in the paper's Table 3)", lambda g, m: _cell(g.max(m), m)),
        ("Mean ± standard deviation over seeds (as in the paper's λ figure)",
         lambda g, m: _cell(g.mean(m), m) + ("" if g.std(m) is None else f" ± {_cell(g.std(m), m)}")),
    ):
        table = []
        for model, lam, dev in rows:
            cells, counts = [names[model] + (f" (dev: {dev})" if dev else ""), _lam(lam)], []
            for subset in subsets:
                group = by_key.get((subset, model, lam, dev))
                cells += [cell(group, m) if group else "" for m in metrics]
                if group:
                    counts.append(len(group.runs))
            cells.append(str(counts[0]) if len(set(counts)) == 1 else "/".join(map(str, counts)))
            table.append(cells)
        tables.append((title, table))
    return header, tables


def setting_stats(group: Group, metrics: tuple[str, ...] = METRICS) -> list[str]:
    """Mean / std / max of each metric for one setting, three decimals."""
    return [f"{_fmt(group.mean(m), 3)} / {_fmt(group.std(m), 3)} / {_fmt(group.max(m), 3)}" for m in metrics]


def markdown_report(groups: list[Group], runs: list[Run]) -> str:
    """The tables: maximum over seeds (Table 3 style), mean ± std, every setting, runs left out."""
    names = short_model_names(groups)
    scored = sum(len(g.runs) for g in groups)
    lines = [
        f"# ExpMRC runs: {scored} scored in {len(groups)} settings, {len(runs) - scored} left out",
        "",
        "Scores ×100 on each run's dev set (`expmrc.scoring.scorer`, leaderboard rules). LOCA is the share of "
        "answers inside their evidence (span subsets; multiple choice: its lexical stand-in, docs/coupling.md); "
        "FARM(4), when asked for, comes from each run's faithfulness.json. Each setting is a model "
        "and λ over seeds; `n` counts the seeds. Runs scored on another dev file than most runs of their subset "
        "stand in rows of their own, labelled with that file.",
        "",
    ]
    header, tables = setting_tables(groups)
    for title, table in tables:
        lines += [f"## {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(cells) + " |" for cells in table]
        lines.append("")
    metrics = shown_metrics(groups)
    stats = [f"{METRIC_NAMES[m]} mean / std / max" for m in metrics]
    lines += ["## Settings", "", "| Subset | Model | λ | Seeds | " + " | ".join(stats) + " | Dev file (sha256) |",
              "|---|---|---|---|" + "---|" * len(stats) + "---|"]
    for g in groups:
        lines.append(f"| {SUBSET_NAMES[g.subset]} | {names[g.model]} | {_lam(g.loss_lambda)} | "
                     f"{', '.join(map(str, g.seeds))} | " + " | ".join(setting_stats(g, metrics)) +
                     f" | {Path(g.dev_file).name} ({g.dev_sha256[:12]}) |")
    left_out = [r for r in runs if r.status != "finished"]
    noted = [r for r in runs if r.status == "finished" and r.note]
    lines += ["", "## Runs left out", ""]
    lines += [f"- `{r.run_dir}` ({r.status}): {r.note}" for r in left_out] or ["None: every run finished and was scored."]
    if noted:
        lines += ["", "## Notes", ""] + [f"- `{r.run_dir}`: {r.note}" for r in noted]
    return "\n".join(lines) + "\n"


def _csv(rows: list[list]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return buffer.getvalue()


def groups_csv(groups: list[Group]) -> str:
    """One row per setting: mean, sample std and max of each metric over seeds."""
    metrics = shown_metrics(groups)
    header = ["subset", "task", "model", "loss_lambda", "runs", "seeds"]
    header += [f"{m}_{s}" for m in metrics for s in ("mean", "std", "max")] + ["dev_file", "dev_sha256"]
    rows: list[list] = [header]
    for g in groups:
        row = [g.subset, g.task, g.model, _lam(g.loss_lambda), len(g.runs), " ".join(map(str, g.seeds))]
        for m in metrics:
            row += [_number(g.mean(m)), _number(g.std(m)), _number(g.max(m))]
        rows.append(row + [g.dev_file, g.dev_sha256])
    return _csv(rows)


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def run_scores(run: Run, metrics: tuple[str, ...]) -> list[str]:
    """A run's values of `metrics`, three decimals ("" where it has none)."""
    return [_number((run.scores or {}).get(m)) for m in metrics]


def runs_csv(runs: list[Run]) -> str:
    """One row per run directory, scored or not, with the reason when it was left out."""
    metrics = METRICS + ((FARM,) if any(FARM in (r.scores or {}) for r in runs) else ())
    rows: list[list] = [["run_dir", "status", "subset", "task", "model", "loss_lambda", "rand_seed", *metrics,
                         "unanswered", "total", "dev_file", "dev_sha256", "note"]]
    for r in runs:
        scores = run_scores(r, metrics)
        rows.append([r.run_dir, r.status, r.subset, r.task, r.model,
                     "" if r.loss_lambda is None else _lam(r.loss_lambda),
                     "" if r.rand_seed is None else r.rand_seed, *scores, r.unanswered, r.total, r.dev_file,
                     r.dev_sha256, r.note])
    return _csv(rows)


def lambda_figure(groups: list[Group]) -> Any:
    """Answer, evidence and overall (mean over seeds, bars: std) against λ, one panel per subset."""
    plt = pyplot()
    names = short_model_names(groups)
    subsets = [s for s in SUBSETS if any(g.subset == s for g in groups)]
    fig, axes = plt.subplots(1, len(subsets), figsize=(4.6 * len(subsets), 3.8), squeeze=False)
    colours = {"answer": "tab:blue", "evidence": "tab:orange", "overall": "tab:green"}
    styles = ["-", "--", ":", "-."]
    for ax, subset in zip(axes[0], subsets):
        mine = [g for g in groups if g.subset == subset]
        lambdas = sorted({g.loss_lambda for g in mine})
        models = sorted({(g.model, g.dev_label) for g in mine})
        for k, (model, dev) in enumerate(models):
            series = sorted((g for g in mine if (g.model, g.dev_label) == (model, dev)), key=lambda g: g.loss_lambda)
            for j, metric in enumerate(SCORES):
                x = [lambdas.index(g.loss_lambda) + 0.04 * (j - 1) for g in series]  # nudged apart when equal
                label = metric + (f" ({names[model]}{', dev: ' + dev if dev else ''})" if len(models) > 1 else "")
                ax.errorbar(x, [g.mean(metric) for g in series], yerr=[g.std(metric) or 0.0 for g in series],
                            color=colours[metric], linestyle=styles[k % len(styles)], marker="o", markersize=4,
                            capsize=3, label=label)
        ax.set_xticks(range(len(lambdas)), [_lam(v) for v in lambdas])
        ax.set_xlabel("λ (weight of the evidence loss)")
        ax.set_ylabel("score (mean over seeds)")
        ax.set_title(SUBSET_NAMES[subset])
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_lambda(groups: list[Group], path: str) -> None:
    """The λ figure as a PNG at `path`, written atomically."""
    plt = pyplot()
    fig = lambda_figure(groups)
    try:
        with atomic_file(path) as tmp:
            fig.savefig(tmp, dpi=120, format="png")
    finally:
        plt.close(fig)


# ---------------------------------------------------------------- the HTML page

def report_names(runs: list[Run]) -> dict[str, str]:
    """A file name for each scored run's report page: its path below the runs' common folder, made safe."""
    dirs = [r.run_dir for r in runs if r.status == "finished"]
    if not dirs:
        return {}
    root = os.path.commonpath([os.path.abspath(d) for d in dirs])
    names: dict[str, str] = {}
    for run_dir in dirs:
        relative = os.path.relpath(os.path.abspath(run_dir), root)
        stem = re.sub(r"[^A-Za-z0-9._-]+", "_", relative if relative != "." else Path(run_dir).name).strip("._")
        name, k = f"{stem or 'run'}.html", 1
        while name in names.values():
            k += 1
            name = f"{stem or 'run'}-{k}.html"
        names[run_dir] = name
    return names


def write_html(groups: list[Group], runs: list[Run], datasets: DatasetCache, output_dir: str,
               progress: bool = True) -> list[str]:
    """index.html (the tables, the λ figure, every run) and a report page per scored run under reports/."""
    out = Path(output_dir)
    links = {run_dir: f"{REPORTS_DIR}/{name}" for run_dir, name in report_names(runs).items()}
    written = []
    for run in tqdm([r for r in runs if r.run_dir in links], desc="report pages", unit="run", disable=not progress,
                    file=sys.stderr):
        dataset = datasets.load(run.dev_file)
        submissions = load_submissions(dataset, [os.path.join(run.run_dir, PREDICTIONS)], select(None, dataset),
                                       [run.run_dir])
        page = str(out / links[run.run_dir])
        write_page(page, render_report(dataset, submissions, title=f"ExpMRC run {run.run_dir}"))
        written.append(page)
    header, tables = setting_tables(groups)
    names = short_model_names(groups)
    metrics = shown_metrics(groups)
    settings = [{"subset": SUBSET_NAMES[g.subset], "model": names[g.model], "lambda": _lam(g.loss_lambda),
                 "stats": setting_stats(g, metrics),
                 "runs": [{"seed": r.rand_seed, "link": links.get(r.run_dir)}
                          for r in sorted(g.runs, key=lambda r: (r.rand_seed is None, r.rand_seed))]}
                for g in groups]
    rows = [{"run_dir": r.run_dir, "status": r.status, "subset": r.subset, "model": r.model,
             "lambda": "" if r.loss_lambda is None else _lam(r.loss_lambda),
             "seed": "" if r.rand_seed is None else r.rand_seed,
             "scores": run_scores(r, metrics),
             "note": r.note, "link": links.get(r.run_dir)} for r in runs]
    scored = sum(len(g.runs) for g in groups)
    index = str(out / OUTPUT_FILES["html"])
    write_page(index, render("collect.html.j2", title=f"ExpMRC runs: {scored} scored in {len(groups)} settings",
                             left_out=len(runs) - scored, header=header, tables=tables, settings=settings, runs=rows,
                             metrics=[METRIC_NAMES[m] for m in metrics],
                             figure=svg(lambda_figure(groups), "lambda"), css=asset("report.css")))
    return [index] + written


# ---------------------------------------------------------------- the whole job

@dataclass
class CollectResult:
    """What `collect` read and wrote."""

    runs: list[Run]
    groups: list[Group]
    markdown: str
    written: list[str]


def collect(paths: list[str], output_dir: str, data: list[str] | None = None,
            formats: tuple[str, ...] = FORMATS, progress: bool = True, html: bool = False,
            farm: bool = False) -> CollectResult:
    """Score every run under `paths` and write the requested tables and figure into `output_dir`.

    `html` adds index.html (tables, the λ figure as SVG, every run) and a report page per scored run;
    `farm` adds FARM(4) columns from each run's faithfulness.json.
    """
    datasets = DatasetCache(data)
    run_dirs = find_run_dirs(paths, ignore=output_dir)
    runs = [read_run(d, datasets, farm) for d in tqdm(run_dirs, desc="scoring runs", unit="run", disable=not progress)]
    groups = group_runs(runs)
    if not groups:
        reasons = "; ".join(f"{r.run_dir}: {r.note}" for r in runs[:3])
        raise ExpmrcError(f"none of the {len(runs)} run(s) finished with scorable predictions ({reasons})")
    markdown = markdown_report(groups, runs)
    written = []
    out = Path(output_dir)
    if "md" in formats:
        write_text_atomic(str(out / OUTPUT_FILES["md"]), markdown)
        written.append(str(out / OUTPUT_FILES["md"]))
    if "csv" in formats:
        for kind, text in (("csv", groups_csv(groups)), ("runs", runs_csv(runs))):
            write_text_atomic(str(out / OUTPUT_FILES[kind]), text)
            written.append(str(out / OUTPUT_FILES[kind]))
    if "png" in formats:
        plot_lambda(groups, str(out / OUTPUT_FILES["png"]))
        written.append(str(out / OUTPUT_FILES["png"]))
    if html:
        written += write_html(groups, runs, datasets, output_dir, progress)
    return CollectResult(runs, groups, markdown, written)
