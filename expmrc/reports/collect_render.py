"""Rendering for `expmrc collect`: the tables (markdown, CSV), the λ figure (PNG, SVG) and the HTML page."""

from __future__ import annotations

import csv
import io
import os
import re
import sys
from pathlib import Path
from typing import Any

from tqdm import tqdm

from expmrc.data import subsets as subset_table
from expmrc.data.io import atomic_file
from expmrc.metrics.registry import select
from expmrc.reports.collect_runs import (
    FARM,
    FIGURES,
    OUTPUT_FILES,
    PREDICTIONS,
    SCORES,
    SUPPORT,
    DatasetCache,
    ScoredRun,
)
from expmrc.reports.collect_stats import Group, shown_metrics
from expmrc.reports.html import load_submissions, render_report
from expmrc.reports.pages import asset, pyplot, render, svg, write_page
from expmrc.scoring.stats import ALPHA

METRIC_LABELS = {"answer": "Ans.", "evidence": "Evi.", "overall": "All", "loca": "LOCA", FARM: "FARM(4)",
                 SUPPORT: "Support"}
METRIC_NAMES = {"answer": "Answer", "evidence": "Evidence", "overall": "Overall", "loca": "LOCA", FARM: "FARM(4)",
                SUPPORT: "Support"}
DIGITS = {FARM: 3}  # decimals in the tables: scores ×100 get 1, FARM (a ratio) 3
REPORTS_DIR = "reports"  # with --html: one report page per scored run
INTERVAL_TITLE = ("95% interval over questions (bootstrap of the seeds' mean per question); ★ the best setting "
                  f"of its subset, ≈ not significantly different from it (paired bootstrap, p ≥ {ALPHA:g})")


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
    subsets = [s for s in subset_table.names() if any(g.subset == s for g in groups)]
    rows = sorted({(g.model, g.loss_lambda, g.dev_label) for g in groups}, key=lambda r: (names[r[0]], r[1], r[2]))
    by_key = {(g.subset, g.model, g.loss_lambda, g.dev_label): g for g in groups}
    metrics = shown_metrics(groups)
    header = ["Model", "λ"] + [f"{subset_table.subset(s).display} {METRIC_LABELS[m]}" for s in subsets for m in metrics] + ["n"]
    tables = []
    for title, cell in (
        ("Maximum over seeds (as in the paper's Table 3)", lambda g, m: _cell(g.max(m), m)),
        ("Mean ± standard deviation over seeds (as in the paper's λ figure)",
         lambda g, m: _cell(g.mean(m), m) + ("" if g.std(m) is None else f" ± {_cell(g.std(m), m)}")),
        (INTERVAL_TITLE, interval_cell),
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


def interval_cell(group: Group, metric: str) -> str:
    """`mean [low, high] marker` for the leaderboard's scores; LOCA, FARM(4) and Support get none ("")."""
    span = group.intervals.get(metric)
    if metric not in SCORES or span is None:
        return ""
    marker = group.marker(metric)
    return f"{_cell(group.mean(metric), metric)} [{span[0]:.1f}, {span[1]:.1f}]" + (f" {marker}" if marker else "")


def setting_stats(group: Group, metrics: tuple[str, ...] = FIGURES) -> list[str]:
    """Mean / std / max of each metric for one setting, three decimals."""
    return [f"{_fmt(group.mean(m), 3)} / {_fmt(group.std(m), 3)} / {_fmt(group.max(m), 3)}" for m in metrics]


def markdown_report(groups: list[Group], runs: list[ScoredRun]) -> str:
    """The tables: maximum over seeds (Table 3 style), mean ± std, every setting, runs left out."""
    names = short_model_names(groups)
    scored = sum(len(g.runs) for g in groups)
    lines = [
        f"# ExpMRC runs: {scored} scored in {len(groups)} settings, {len(runs) - scored} left out",
        "",
        "Scores ×100 on each run's dev set (`expmrc.scoring.scorer`, leaderboard rules). LOCA is the share of "
        "answers inside their evidence (span subsets; multiple choice: its lexical stand-in, docs/coupling.md); "
        "FARM(4), when asked for, comes from each run's faithfulness.json, and Support (the share of questions whose "
        "evidence a judge found to support the answer) from its support.json (`expmrc judge`). Each setting is a model "
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
        lines.append(f"| {subset_table.subset(g.subset).display} | {names[g.model]} | {_lam(g.loss_lambda)} | "
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
    header += [f"{m}_{s}" for m in metrics for s in ("mean", "std", "max")]
    header += [f"{m}_{s}" for m in SCORES for s in ("ci_low", "ci_high", "p_vs_best")] + ["dev_file", "dev_sha256"]
    rows: list[list] = [header]
    for g in groups:
        row = [g.subset, g.task, g.model, _lam(g.loss_lambda), len(g.runs), " ".join(map(str, g.seeds))]
        for m in metrics:
            row += [_number(g.mean(m)), _number(g.std(m)), _number(g.max(m))]
        for m in SCORES:
            span, p = g.intervals.get(m), g.p_best.get(m)
            row += ["", ""] if span is None else [_number(span[0]), _number(span[1])]
            row.append("best" if m in g.p_best and p is None else "" if p is None else f"{p:.4f}")
        rows.append(row + [g.dev_file, g.dev_sha256])
    return _csv(rows)


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def run_scores(run: ScoredRun, metrics: tuple[str, ...]) -> list[str]:
    """A run's values of `metrics`, three decimals ("" where it has none)."""
    return [_number((run.scores or {}).get(m)) for m in metrics]


def runs_csv(runs: list[ScoredRun]) -> str:
    """One row per run directory, scored or not, with the reason when it was left out and where it ran (expmrc's
    version, the git commit and the device its record names)."""
    metrics = FIGURES + tuple(m for m in (FARM, SUPPORT) if any(m in (r.scores or {}) for r in runs))
    rows: list[list] = [["run_dir", "status", "subset", "task", "model", "loss_lambda", "rand_seed", *metrics,
                         "unanswered", "total", "dev_file", "dev_sha256", "note", "expmrc", "git_commit", "device"]]
    for r in runs:
        scores = run_scores(r, metrics)
        env = r.environment
        rows.append([r.run_dir, r.status, r.subset, r.task, r.model,
                     "" if r.loss_lambda is None else _lam(r.loss_lambda),
                     "" if r.rand_seed is None else r.rand_seed, *scores, r.unanswered, r.total, r.dev_file,
                     r.dev_sha256, r.note, (env.packages.get("expmrc") if env else None) or "",
                     (env.git_commit if env else None) or "", (env.device if env else None) or ""])
    return _csv(rows)


def lambda_figure(groups: list[Group]) -> Any:
    """Answer, evidence and overall (mean over seeds, bars: std) against λ, one panel per subset."""
    plt = pyplot()
    names = short_model_names(groups)
    subsets = [s for s in subset_table.names() if any(g.subset == s for g in groups)]
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
                            color=colours[metric], linestyle=styles[k % len(styles)], marker="none", capsize=3,
                            label=label)
                _interval_band(ax, x, series, metric, colours[metric])
        ax.set_xticks(range(len(lambdas)), [_lam(v) for v in lambdas])
        ax.set_xlabel("λ (weight of the evidence loss)")
        ax.set_ylabel("score (mean over seeds)")
        ax.set_title(subset_table.subset(subset).display)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _interval_band(ax: Any, x: list[float], series: list[Group], metric: str, colour: str) -> None:
    """The interval over questions as a shaded band; points filled where the setting is the best or does not
    differ significantly from it, hollow where it is significantly worse."""
    spans = [span for g in series if (span := g.intervals.get(metric)) is not None]
    if len(spans) == len(series):
        ax.fill_between(x, [s[0] for s in spans], [s[1] for s in spans], color=colour, alpha=0.12, linewidth=0)
    for xi, group in zip(x, series):
        filled = group.marker(metric) != "" or metric not in group.p_best
        ax.plot([xi], [group.mean(metric)], marker="*" if group.marker(metric) == "★" else "o", markersize=6,
                color=colour, markerfacecolor=colour if filled else "white", linestyle="none")


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

def report_names(runs: list[ScoredRun]) -> dict[str, str]:
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


def write_html(groups: list[Group], runs: list[ScoredRun], datasets: DatasetCache, output_dir: str,
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
    settings = [{"subset": subset_table.subset(g.subset).display, "model": names[g.model], "lambda": _lam(g.loss_lambda),
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
