"""LLM replies on `expmrc report` pages: for a submission inside an `expmrc llm` run folder, the page names
the run (model, template, evidence form: quoted or cited by sentence number) and each question shows the raw
reply, the parsed answer and its parse status, the grounding status of each field with its changes (reworded
or altered), for the ids form the sentences cited, and of a run judged with --judge the support judge's label and
the entailment label of reworded or altered evidence (paraphrase, unsupported, contradicted)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from expmrc.data.runs import LLM_RESPONSES, RunRecord, peek
from expmrc.errors import ExpmrcError


def llm_replies(submission_path: str) -> dict[str, dict[str, Any]]:
    """Per question id, what the page shows; empty unless the submission sits in an `expmrc llm` run folder (one
    whose run record says so)."""
    path = Path(submission_path).parent / LLM_RESPONSES
    record = peek(path.parent)
    if not path.is_file() or record is None or record.kind != "llm":
        return {}
    shown, number = {}, 0
    try:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):  # noqa: B007 (named on error)
            record = json.loads(line)
            grounding = record.get("grounding") or {}
            shown[record["id"]] = {
                "parse status": record["parsed"]["status"], "parsed answer": record["parsed"]["answer"],
                **{f"{key} grounding": value["status"] for key, value in grounding.items()},
                **{f"{key} changes": "; ".join(map(described, value["changes"]))
                   for key, value in grounding.items() if value.get("changes")},
                **{f"{key} entailment": value["entailment"]["label"]  # llm --judge: reworded, altered
                   for key, value in grounding.items() if value.get("entailment")},
                **_citations(grounding.get("evidence") or {}),
                "raw reply": record.get("reply"),
                **({"support": record["support"]["label"]} if record.get("support") else {}),  # llm --judge
            }
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise ExpmrcError(f"{path}: line {number}: not an `expmrc llm` "
                          f"responses file ({type(exc).__name__})") from None
    return shown


def _citations(evidence: dict[str, Any]) -> dict[str, str]:
    """The sentences an ids-form reply cited, and the numbers it cited that name none (nothing for a quote)."""
    if "cited" not in evidence:
        return {}
    shown = {"cited sentences": ", ".join(str(n) for n in evidence["cited"]) or "none"}
    if evidence.get("out_of_range_count"):
        shown["cited, naming no sentence"] = ", ".join(evidence["out_of_range"]) + (
            " ..." if evidence["out_of_range_count"] > len(evidence["out_of_range"]) else "")
    return shown


def llm_run(submission_path: str) -> str:
    """One line naming the `expmrc llm` run a submission sits in (model, template, evidence form, and for a run
    judged with --judge the entailment split of its reworded and altered evidence), else ""."""
    record: RunRecord | None = peek(Path(submission_path).parent)
    if record is None or record.kind != "llm":
        return ""
    from expmrc.llm.forms import DEFAULT_FORM, FORMS

    template = record.get("template")
    name = template.get("name") if isinstance(template, dict) else None
    form = record.get("evidence_form") or DEFAULT_FORM  # runs recorded before the ids form quoted
    known = FORMS.get(form) if isinstance(form, str) else None
    evidence = f"evidence {(known or FORMS[DEFAULT_FORM]).phrase}"
    return f"expmrc llm: {record.get('model')}, template {name}, {evidence} (--evidence-form {form})" + \
        _split_phrase(record.get("entailment"))


def _split_phrase(split: Any) -> str:
    """The entailment split a run recorded, as the page's run line says it ("" when there is none, or a record
    not of its shape: the line names the run, the figures are in its scores.json)."""
    try:
        if not split["verdicts"]:
            return f"; reworded and altered evidence: no entailment verdict (of {int(split['quotes'])})"
        figures = [float(split["shares"][label]) for label in ("paraphrase", "unsupported", "contradicted")]
        if not all(0 <= f <= 100 for f in figures):  # NaN fails too
            return ""
        shares = ", ".join(f"{label} {f:.1f}%" for label, f in zip(("paraphrase", "unsupported", "contradicted"),
                                                                    figures))
        return f"; reworded and altered evidence by entailment: {shares} of {int(split['verdicts'])}"
    except (KeyError, TypeError, ValueError):
        return ""


def described(change: dict[str, Any]) -> str:
    """One change of a grounding record, as the page says it: `“6800” for “6300” (number)`, `“not” left out
    (negation)`, `“very” added (word)`."""
    quote, passage, kind = change["quote"], change["passage"], change["kind"]
    if not quote:
        return f"“{passage}” left out ({kind})"
    return f"“{quote}” added ({kind})" if not passage else f"“{quote}” for “{passage}” ({kind})"


def attach_llm_replies(report: Any, submission_path: str) -> None:
    """Add each question's reply record to its `extra` (as `llm`), which the page lists under the scores."""
    shown = llm_replies(submission_path)
    for question in report.questions:
        if question.id in shown:
            question.extra["llm"] = shown[question.id]
