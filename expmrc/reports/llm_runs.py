"""LLM run folders in `expmrc collect`: runs whose record says `llm`, listed in a table of their own beside the
trained runs (model, backend, template, shots with the dev-set mark, parse failures, raw and grounded scores,
evidence missing / unverified / altered / reworded, the verbatim and untrustworthy evidence rates, environment),
read from the scores.json each run wrote. A run recorded before grounding's one rule (its summary has no
`reworded` count: a `fuzzy` quote was then replaced by passage text and counted as trustworthy) shows the counts
it has and no rates, with a note."""

from __future__ import annotations

import os
from typing import Any

from expmrc.data.io import read_json
from expmrc.data.runs import LLM_SCORES, RUN_INFO, RunRecord
from expmrc.errors import ExpmrcError
from expmrc.text.grounding import ALTERED, MISSING, REWORDED, UNVERIFIED

TABLE = "llm_runs.md"
COLUMNS = ("run", "subset", "model", "backend", "template", "shots", "parse failed", "raw All", "grounded All",
           "grounded Ans.", "grounded Evi.", "evi. missing/unverified/altered/reworded", "verbatim evi. %",
           "untrustworthy evi. %", "environment")
OLD_RULE = "recorded before grounding's one rule"


def llm_row(run_dir: str, record: RunRecord) -> list[str]:
    """One table row from a run's record and scores.json; one line naming the file that does not hold them."""
    path = os.path.join(run_dir, LLM_SCORES)
    scores = read_json(path, "scores file")
    try:
        shots = str(record.get("shots")["k"]) + (" (dev set)" if record.get("shots").get("dev") else "")
        grounding, raw, grounded = scores["grounding"], scores["raw"], scores["grounded"]
        current = REWORDED in grounding  # else recorded before the one rule: its rate counted `fuzzy` as trusted
        counts = "/".join(str(grounding.get(k, "-")) for k in (MISSING, UNVERIFIED, ALTERED, REWORDED)) \
            if ALTERED in grounding else "-"
        rates = [_f(100 * r if (r := grounding.get(key)) is not None and current else None)
                 for key in ("verbatim_evidence_rate", "untrustworthy_evidence_rate")]
        return [run_dir, str(record.get("subset")), str(record.get("model")), str(record.get("backend")),
                str(record.get("template")["name"]), shots, f"{scores['parse']['failed']}/{scores['questions']}",
                _f(raw["ALL_F1"]), _f(grounded["ALL_F1"]), _f(grounded["ANS_F1"]), _f(grounded["EVI_F1"]),
                counts + ("" if current or counts == "-" else f" ({OLD_RULE})"), *rates,
                record.environment.summary() if record.environment else "-"]
    except (KeyError, TypeError, AttributeError) as exc:
        raise ExpmrcError(f"{path} or {os.path.join(run_dir, RUN_INFO)}: not what `expmrc llm` writes "
                          f"({type(exc).__name__}: {exc})") from None


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
    if any(OLD_RULE in row[11] for row in rows):
        lines += ["", f"({OLD_RULE}): the run's grounding replaced quotes with changed words (then `fuzzy`) by the "
                  "passage text and counted them as trustworthy, so its rates are not comparable and are not shown; "
                  "`expmrc ground` on its predictions.json gives today's (docs/grounding.md)."]
    return "\n".join(lines) + "\n"
