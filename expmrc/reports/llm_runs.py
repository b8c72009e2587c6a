"""LLM run folders in `expmrc collect`: runs whose record says `llm`, listed in a table of their own beside the
trained runs (model, backend, template, shots with the dev-set mark, parse failures, raw and grounded scores,
evidence missing / unverified / altered / reworded, the verbatim and untrustworthy evidence rates, environment),
read from the scores.json each run wrote. A run recorded before grounding's one rule (its summary has no
`reworded` count: a `fuzzy` quote was then replaced by passage text and counted as trustworthy) shows the counts
it has and no rates, with a note. A run whose record is not `finished`, or whose files are damaged, is left out
with its reason, as a training run is. A run judged with --judge shows its support rate and its check's gap, and
the entailment split of its reworded and altered evidence (paraphrase / unsupported / contradicted %)."""

from __future__ import annotations

import json
import math
import os
from typing import Any

from expmrc.data.io import read_json
from expmrc.data.runs import LLM_SCORES, RUN_INFO, RunRecord
from expmrc.errors import ExpmrcError
from expmrc.text.grounding import ALTERED, MISSING, REWORDED, UNVERIFIED

TABLE = "llm_runs.md"
COLUMNS = ("run", "subset", "model", "backend", "template", "shots", "parse failed", "raw All", "grounded All",
           "grounded Ans.", "grounded Evi.", "evi. missing/unverified/altered/reworded", "verbatim evi. %",
           "untrustworthy evi. %", "reworded+altered para./unsup./contra. %", "support %", "environment")
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
        rates = [_f(100 * _number(r) if (r := grounding.get(key)) is not None and current else None)
                 for key in ("verbatim_evidence_rate", "untrustworthy_evidence_rate")]
        return [run_dir, str(record.get("subset")), str(record.get("model")), str(record.get("backend")),
                str(record.get("template")["name"]), shots, f"{scores['parse']['failed']}/{scores['questions']}",
                _f(raw["ALL_F1"]), _f(grounded["ALL_F1"]), _f(grounded["ANS_F1"]), _f(grounded["EVI_F1"]),
                counts + ("" if current or counts == "-" else f" ({OLD_RULE})"), *rates,
                _split(scores.get("entailment")), _support(scores.get("support")),
                record.environment.summary() if record.environment else "-"]
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise ExpmrcError(f"{path} or {os.path.join(run_dir, RUN_INFO)}: not what `expmrc llm` writes "
                          f"({type(exc).__name__}: {exc})") from None


def _number(value: Any) -> float:
    """A recorded figure, refused (ValueError) unless a finite number: a string or NaN must not pass as a score."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"a score is {json.dumps(value)[:40]}, not a finite number")
    return float(value)


def _support(support: Any) -> str:
    """`rate (check gap N)` of a run judged with --judge, `rate (check gap N!)` when the check warned, else "-"."""
    if support is None:
        return "-"
    check = support["check"]
    gap = "n/a" if check["gap"] is None else f"{check['gap']:.0f}" + ("!" if check["warning"] else "")
    return f"{'no verdict' if support['rate'] is None else _f(support['rate'])} (check gap {gap})"


def _split(split: Any) -> str:
    """`P/U/C of N (check gap G)` of a run whose reworded and altered evidence a judge split (`!` when the check
    warned), `none` with nothing to split, `no verdict` when the judge gave none, else "-"."""
    if split is None:
        return "-"
    if not split["quotes"] or not split["verdicts"]:
        return "none" if not split["quotes"] else f"no verdict (of {split['quotes']})"
    shares = "/".join(f"{_number(split['shares'][k]):.0f}" for k in ("paraphrase", "unsupported", "contradicted"))
    check = split["check"]
    gap = "n/a" if check["gap"] is None else f"{check['gap']:.0f}" + ("!" if check["warning"] else "")
    return f"{shares} of {split['verdicts']} (check gap {gap})"


def _f(value: Any) -> str:
    return "-" if value is None else f"{_number(value):.1f}"


def llm_rows(runs: dict[str, RunRecord]) -> tuple[list[list[str]], list[tuple[str, str, str]]]:
    """The rows of the finished runs that read, and each run left out as (folder, status, reason): one whose record
    does not say `finished` (still running, killed, failed), or whose files are not what `expmrc llm` writes."""
    rows: list[list[str]] = []
    left_out: list[tuple[str, str, str]] = []
    for run_dir, record in runs.items():
        if record.status != "finished":
            status = "failed" if record.status == "failed" else "unfinished"
            left_out.append((run_dir, status, f"status {record.status!r} (still running, killed or failed)"))
            continue
        try:
            rows.append(llm_row(run_dir, record))
        except ExpmrcError as exc:
            left_out.append((run_dir, "invalid", str(exc)))
    return rows, left_out


def llm_table(rows: list[list[str]], left_out: list[tuple[str, str, str]]) -> str:
    """The markdown section listing LLM runs (rows from `llm_rows`) and those left out, or "" when there are none."""
    if not rows and not left_out:
        return ""
    lines = ["## LLM runs (`expmrc llm`)", "", "| " + " | ".join(COLUMNS) + " |",
             "|" + " --- |" * len(COLUMNS)] + ["| " + " | ".join(row) + " |" for row in rows]
    if any("(dev set)" in row[5] for row in rows):
        lines += ["", "(dev set): few-shot examples were drawn from the dev set being scored (declare it)."]
    if any("!)" in row[COLUMNS.index("reworded+altered para./unsup./contra. %")] for row in rows):
        lines += ["", "reworded+altered (check gap N!): the judge did not tell a passage span with itself from its "
                  "negation or another sentence by 30 points; its entailment labels cannot be trusted there."]
    if any("!)" in row[COLUMNS.index("support %")] for row in rows):
        lines += ["", "support % (check gap N!): the judge did not separate the gold evidence from another passage "
                  "sentence by 30 points on these questions; its labels cannot be trusted there."]
    if any(OLD_RULE in row[11] for row in rows):
        lines += ["", f"({OLD_RULE}): the run's grounding replaced quotes with changed words (then `fuzzy`) by the "
                  "passage text and counted them as trustworthy, so its rates are not comparable and are not shown; "
                  "`expmrc ground` on its predictions.json gives today's (docs/grounding.md)."]
    if left_out:
        lines += ["", "Left out:", ""] + [f"- `{run_dir}` ({status}): {why}" for run_dir, status, why in left_out]
    return "\n".join(lines) + "\n"
