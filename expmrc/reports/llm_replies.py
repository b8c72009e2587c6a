"""LLM replies on `expmrc report` pages: for a submission inside an `expmrc llm` run folder, each question
shows the raw reply, the parsed answer and its parse status, the grounding status of each field, and the support
judge's label of a run judged with --judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from expmrc.data.runs import LLM_RESPONSES, peek
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
                **{f"{key} changes": "; ".join(f"“{c['quote']}” for “{c['passage']}” ({c['kind']})"
                                               for c in value["changes"])
                   for key, value in grounding.items() if value.get("changes")},
                "raw reply": record.get("reply"),
                **({"support": record["support"]["label"]} if record.get("support") else {}),  # llm --judge
            }
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise ExpmrcError(f"{path}: line {number}: not an `expmrc llm` "
                          f"responses file ({type(exc).__name__})") from None
    return shown


def attach_llm_replies(report: Any, submission_path: str) -> None:
    """Add each question's reply record to its `extra` (as `llm`), which the page lists under the scores."""
    shown = llm_replies(submission_path)
    for question in report.questions:
        if question.id in shown:
            question.extra["llm"] = shown[question.id]
