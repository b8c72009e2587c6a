"""Reading replies as an `expmrc llm` run reads them: each reply parsed (a failed or overlong one is status
`failed` with the reason), the ids evidence form's citations turned into the cited sentences' text, the parsed
replies as a complete submission, and the submission grounded in the passages. `expmrc/llm/run.py` and the
lm-evaluation-harness tasks (`expmrc/llm/harness.py`) read through here, so a reply reads the same in both."""

from __future__ import annotations

import re
from typing import Any

from expmrc.data.datasets import ChoiceQuestion, Dataset, Question
from expmrc.llm.citations import Citation
from expmrc.llm.completion import Reply
from expmrc.llm.forms import FORMS
from expmrc.llm.parsing import STATUSES, Parsed, parse_reply, strip_reasoning
from expmrc.llm.samples import request_ids

MAX_PARSED_CHARS = 200_000  # a reply longer than this (reasoning blocks aside) is refused, not parsed
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def parse_one(reply: Reply | None, options: list[str] | None) -> Parsed:
    """One reply parsed; no reply, a failed one, or one too long to parse is status `failed` with the reason."""
    if reply is None:
        return Parsed("", "", "failed", "no reply")
    if reply.error:
        return Parsed("", "", "failed", reply.error)
    text = LONE_SURROGATE.sub("\ufffd", reply.text)  # not a character: no output may hold it
    if len(strip_reasoning(text)) > MAX_PARSED_CHARS:
        return Parsed("", "", "failed", f"a reply of {len(text):,} characters, more than the {MAX_PARSED_CHARS:,} read")
    try:
        return parse_reply(text, options)
    except RecursionError:
        return Parsed("", "", "failed", "JSON nested too deeply to read")


def read_reply(reply: Reply | None, question: Question, form: str) -> tuple[Parsed, Citation | None]:
    """One reply read as a run reads it: parsed, then read by its evidence form (`FORMS`: the ids form's citations
    turned into the cited sentences' text, expmrc/llm/citations.py); the citation, or None for the quote form."""
    parsed = parse_one(reply, question.options if isinstance(question, ChoiceQuestion) else None)
    return FORMS.lookup(form).read(parsed, reply.text if reply is not None and not reply.error else None, question)


def parse_requests(questions: list[Question], samples: int, form: str, replies: dict[str, Reply]
                   ) -> tuple[dict[str, Parsed], dict[str, Citation]]:
    """Every request's parsed reply (`samples` per question), by request id, and (ids form) its citation; a
    request without a reply (absent from a Batch file) fails."""
    parsed, cited = {}, {}
    for question in questions:
        for rid in request_ids(question.qid, samples):
            parsed[rid], citation = read_reply(replies.get(rid), question, form)
            if citation is not None:
                cited[rid] = citation
    return parsed, cited


def parse_counts(parsed: dict[str, Parsed]) -> dict[str, int]:
    """How many replies parsed each way (see parsing.STATUSES)."""
    return {status: sum(p.status == status for p in parsed.values()) for status in STATUSES}


def submission_of(parsed: dict[str, Parsed]) -> dict[str, dict[str, str]]:
    """A complete submission: every question, an empty answer and evidence where parsing failed."""
    return {qid: {"answer": p.answer, "evidence": p.evidence} for qid, p in parsed.items()}


def ground(dataset: Dataset, submission: dict[str, Any], form: str, cited: dict[str, Citation] | None = None
           ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The grounded submission, each question's grounding details by id, and the grounding summary, grounded by
    the evidence form's grounder (`FORMS`): the ids form's evidence by its citation in `cited`, by question id."""
    result = FORMS.lookup(form).ground(dataset, submission, cited or {})
    details = {d["id"]: {k: v for k, v in d.items() if k != "id"} for d in result.details}
    return result.submission, details, result.summary()
