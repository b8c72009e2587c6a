"""Many runs -> one Table-3-style table (markdown and CSV) and one λ figure (PNG) of the training runs, and a
table of the `expmrc llm` runs (expmrc/reports/llm_runs.py); each run's record (`RunRecord`) says which it is.

Reading (expmrc/reports/collect_runs.py) finds and scores the run directories; aggregating
(collect_stats.py) groups them into settings over seeds (mean, sample standard deviation, maximum: the
paper reports the 5-run maximum in Table 3 and 5-run means in its λ figure) and adds, over questions,
an interval per setting and a paired test against the best setting; rendering (collect_render.py)
writes the tables, the figure and the HTML page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from expmrc.data.io import write_text_atomic
from expmrc.data.runs import RunRecord
from expmrc.errors import ExpmrcError
from expmrc.reports.collect_render import (
    groups_csv,
    markdown_report,
    plot_lambda,
    runs_csv,
    write_html,
)
from expmrc.reports.collect_runs import (
    FORMATS,
    OUTPUT_FILES,
    DatasetCache,
    ScoredRun,
    find_run_dirs,
    read_record,
    read_run,
)
from expmrc.reports.collect_stats import Group, compare_settings, group_runs
from expmrc.reports.llm_runs import TABLE as LLM_TABLE
from expmrc.reports.llm_runs import llm_rows, llm_table

__all__ = ["FORMATS", "CollectResult", "collect"]


@dataclass
class CollectResult:
    """What `collect` read and wrote."""

    runs: list[ScoredRun]
    groups: list[Group]
    markdown: str
    written: list[str]
    llm_section: str = ""  # the table of `expmrc llm` runs ("" when there are none)
    llm_left_out: list[ScoredRun] = field(default_factory=list)  # LLM runs not tabulated, with the reason


def collect(paths: list[str], output_dir: str, data: list[str] | None = None,
            formats: tuple[str, ...] = FORMATS, progress: bool = True, html: bool = False,
            farm: bool = False) -> CollectResult:
    """Score every run under `paths` and write the requested tables and figure into `output_dir`, and the table of
    LLM runs (llm_runs.md) when there are any; nothing is written when something cannot be.

    `html` adds index.html (tables, the λ figure as SVG, every run) and a report page per scored run;
    `farm` adds FARM(4) columns from each run's faithfulness.json.
    """
    records = {d: read_record(d) for d in find_run_dirs(paths, ignore=output_dir)}
    llm = {d: r for d, r in records.items() if isinstance(r, RunRecord) and r.kind == "llm"}
    llm_found, llm_left = llm_rows(llm)
    section = llm_table(llm_found, llm_left)
    left_out = [ScoredRun(run_dir=d, status=status, note=why) for d, status, why in llm_left]
    trained = [d for d in records if d not in llm]
    out = Path(output_dir)
    if not trained:
        if llm_left and not llm_found:
            reasons = "; ".join(f"{r.run_dir}: {r.note}" for r in left_out[:3])
            raise ExpmrcError(f"none of the {len(left_out)} LLM run(s) finished with readable scores ({reasons})")
        write_text_atomic(str(out / LLM_TABLE), section)
        return CollectResult([], [], "", [str(out / LLM_TABLE)], section, left_out)
    datasets = DatasetCache(data)
    runs = [read_run(d, datasets, farm, records[d])
            for d in tqdm(trained, desc="scoring runs", unit="run", disable=not progress)]
    groups = group_runs(runs)
    if not groups:
        reasons = "; ".join(f"{r.run_dir}: {r.note}" for r in runs[:3])
        raise ExpmrcError(f"none of the {len(runs)} run(s) finished with scorable predictions ({reasons})")
    compare_settings(groups)
    markdown = markdown_report(groups, runs)
    written = []
    texts = {"md": markdown} if "md" in formats else {}
    if "csv" in formats:
        texts.update(csv=groups_csv(groups), runs=runs_csv(runs))
    for kind, text in texts.items():  # every table made before the first is written
        write_text_atomic(str(out / OUTPUT_FILES[kind]), text)
        written.append(str(out / OUTPUT_FILES[kind]))
    if "png" in formats:
        plot_lambda(groups, str(out / OUTPUT_FILES["png"]))
        written.append(str(out / OUTPUT_FILES["png"]))
    if html:
        written += write_html(groups, runs, datasets, output_dir, progress)
    if section:
        write_text_atomic(str(out / LLM_TABLE), section)
        written.append(str(out / LLM_TABLE))
    return CollectResult(runs, groups, markdown, written, section, left_out)
