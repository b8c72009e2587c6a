"""LLM run folders in `expmrc collect`: recognised by their record, listed in a table of their own beside the
trained runs (model, backend, template, shots with the dev-set mark, parse failures, raw and grounded
scores, evidence missing / unverified / altered and the untrustworthy-evidence rate), read from the
scores.json each run wrote."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from expmrc.data.io import read_json, write_text_atomic
from expmrc.errors import ExpmrcError

TABLE = "llm_runs.md"
COLUMNS = ("run", "subset", "model", "backend", "template", "shots", "parse failed", "raw All", "grounded All",
           "grounded Ans.", "grounded Evi.", "evi. missing/unverified/altered", "untrustworthy evi. %")


def is_llm_run(run_dir: str) -> bool:
    """A folder `expmrc llm` wrote: run_info.json with a backend, and scores.json."""
    info = Path(run_dir) / "run_info.json"
    if not (Path(run_dir) / "scores.json").is_file() or not info.is_file():
        return False
    try:
        record = read_json(str(info), "run record")
    except ExpmrcError:  # an unreadable record is the trained-run reader's to report
        return False
    return isinstance(record, dict) and "backend" in record and "template" in record


def llm_row(run_dir: str) -> list[str]:
    """One table row from a run's run_info.json and scores.json."""
    info, scores = read_json(os.path.join(run_dir, "run_info.json")), read_json(os.path.join(run_dir, "scores.json"))
    shots = str(info["shots"]["k"]) + (" (dev set)" if info["shots"].get("dev") else "")
    grounding, raw, grounded = scores["grounding"], scores["raw"], scores["grounded"]
    rate = grounding.get("untrustworthy_evidence_rate")  # absent from runs recorded before it existed
    counts = "/".join(str(grounding[k]) for k in ("missing", "unverified", "altered")) if "altered" in grounding else "-"
    return [run_dir, info["subset"], info["model"], info["backend"], info["template"]["name"], shots,
            f"{scores['parse']['failed']}/{scores['questions']}", _f(raw["ALL_F1"]), _f(grounded["ALL_F1"]),
            _f(grounded["ANS_F1"]), _f(grounded["EVI_F1"]), counts, _f(None if rate is None else 100 * rate)]


def _f(value: Any) -> str:
    return "-" if value is None else f"{value:.1f}"


def llm_table(run_dirs: list[str]) -> str:
    """The markdown section listing LLM runs, or "" when there are none."""
    if not run_dirs:
        return ""
    rows = [llm_row(d) for d in run_dirs]
    lines = ["## LLM runs (`expmrc llm`)", "", "| " + " | ".join(COLUMNS) + " |",
             "|" + " --- |" * len(COLUMNS)] + ["| " + " | ".join(row) + " |" for row in rows]
    if any("(dev set)" in row[5] for row in rows):
        lines += ["", "(dev set): few-shot examples were drawn from the dev set being scored (declare it)."]
    return "\n".join(lines) + "\n"


def split_and_write(found: list[str], output_dir: str) -> tuple[list[str], str, list[str]]:
    """Separate LLM runs from trained ones; write their table into `output_dir` (if any).

    Returns the other run folders, the markdown section, and the files written."""
    llm = [d for d in found if is_llm_run(d)]
    section = llm_table(llm)
    written = []
    if section:
        path = str(Path(output_dir) / TABLE)
        write_text_atomic(path, section)
        written.append(path)
    return [d for d in found if d not in llm], section, written
