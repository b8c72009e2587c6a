"""LLM run folders in `expmrc collect`: runs whose record says `llm`, listed in a table of their own beside the
trained runs (model, backend, template, shots with the dev-set mark, parse failures, raw and grounded scores,
evidence missing / unverified / altered and the untrustworthy-evidence rate, the support rate of a run judged with
--judge and its check's gap, environment), read from the scores.json each run wrote."""

from __future__ import annotations

import os
from typing import Any

from expmrc.data.io import read_json
from expmrc.data.runs import LLM_SCORES, RUN_INFO, RunRecord
from expmrc.errors import ExpmrcError

TABLE = "llm_runs.md"
COLUMNS = ("run", "subset", "model", "backend", "template", "shots", "parse failed", "raw All", "grounded All",
           "grounded Ans.", "grounded Evi.", "evi. missing/unverified/altered", "untrustworthy evi. %", "support %",
           "environment")


def llm_row(run_dir: str, record: RunRecord) -> list[str]:
    """One table row from a run's record and scores.json; one line naming the file that does not hold them."""
    path = os.path.join(run_dir, LLM_SCORES)
    scores = read_json(path, "scores file")
    try:
        shots = str(record.get("shots")["k"]) + (" (dev set)" if record.get("shots").get("dev") else "")
        grounding, raw, grounded = scores["grounding"], scores["raw"], scores["grounded"]
        rate = grounding.get("untrustworthy_evidence_rate")  # absent from runs recorded before it existed
        counts = "/".join(str(grounding[k]) for k in ("missing", "unverified", "altered")) if "altered" in grounding \
            else "-"
        return [run_dir, str(record.get("subset")), str(record.get("model")), str(record.get("backend")),
                str(record.get("template")["name"]), shots, f"{scores['parse']['failed']}/{scores['questions']}",
                _f(raw["ALL_F1"]), _f(grounded["ALL_F1"]), _f(grounded["ANS_F1"]), _f(grounded["EVI_F1"]),
                counts, _f(None if rate is None else 100 * rate), _support(scores.get("support")),
                record.environment.summary() if record.environment else "-"]
    except (KeyError, TypeError, AttributeError) as exc:
        raise ExpmrcError(f"{path} or {os.path.join(run_dir, RUN_INFO)}: not what `expmrc llm` writes "
                          f"({type(exc).__name__}: {exc})") from None


def _support(support: Any) -> str:
    """`rate (check gap N)` of a run judged with --judge, `rate (check gap N!)` when the check warned, else "-"."""
    if support is None:
        return "-"
    check = support["check"]
    gap = "n/a" if check["gap"] is None else f"{check['gap']:.0f}" + ("!" if check["warning"] else "")
    return f"{_f(support['rate'])} (check gap {gap})"


def _f(value: Any) -> str:
    return "-" if value is None else f"{value:.1f}"


def llm_table(runs: dict[str, RunRecord]) -> str:
    """The markdown section listing LLM runs (run folder -> its record), or "" when there are none."""
    if not runs:
        return ""
    rows = [llm_row(run_dir, record) for run_dir, record in runs.items()]
    lines = ["## LLM runs (`expmrc llm`)", "", "| " + " | ".join(COLUMNS) + " |",
             "|" + " --- |" * len(COLUMNS)] + ["| " + " | ".join(row) + " |" for row in rows]
    if any("(dev set)" in row[5] for row in rows):
        lines += ["", "(dev set): few-shot examples were drawn from the dev set being scored (declare it)."]
    if any("!)" in row[COLUMNS.index("support %")] for row in rows):
        lines += ["", "support % (check gap N!): the judge did not separate the gold evidence from another passage "
                  "sentence by 30 points on these questions; its labels cannot be trusted there."]
    return "\n".join(lines) + "\n"
