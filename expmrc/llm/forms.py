"""Evidence forms, one registry (`FORMS`): how a template asks a model for its evidence, and how the reply's
evidence is then read and grounded.

- `quote`: the supporting sentences copied from the passage, grounded as any quote is (expmrc/text/grounding.py).
- `ids`: the passage shown one numbered sentence a line, the evidence cited by number; the citations become the
  cited sentences' passage text and are grounded by what they cite (expmrc/llm/citations.py).

Each entry holds everything that differs between forms: its summary for --help and the docs, the phrase a help page
or report uses, the JSON schema of the reply's `evidence`, whether the prompt numbers the passage's sentences, a
solved example's evidence as the form asks for it, the reader of a parsed reply and the grounder of a submission.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from expmrc.data.datasets import Dataset, Question
from expmrc.llm.citations import Citation, cite, ground_cited, sentence_numbers
from expmrc.llm.parsing import Parsed
from expmrc.registry import Registry
from expmrc.text.grounding import Grounded, ground_submission

DEFAULT_FORM = "quote"  # a template's form unless it says otherwise, and a run's unless --evidence-form or --template


@dataclass(frozen=True)
class EvidenceForm:
    """A registered evidence form (see the module docstring)."""

    summary: str  # one line for --help and the docs
    phrase: str  # how a page says the evidence was given: `evidence <phrase>`
    schema: dict[str, Any]  # the JSON schema of a reply's `evidence`
    numbered: bool  # the prompt shows the passage one numbered sentence a line (the template variable `sentences`)
    example: Callable[[str, str], str | list[int]]  # (passage, evidence) -> a solved example's evidence as asked
    read: Callable[[Parsed, str | None, Question], tuple[Parsed, Citation | None]]  # (parsed, reply text, question)
    ground: Callable[[Dataset, dict[str, Any], dict[str, Citation]], Grounded]  # (dataset, submission, citations)

    def evidence_schema(self) -> dict[str, Any]:
        """A copy of the evidence's JSON schema, for a reply schema to hold."""
        return copy.deepcopy(self.schema)


def _quoted(parsed: Parsed, reply: str | None, question: Question) -> tuple[Parsed, Citation | None]:
    """A quote is read as parsed, and cites nothing."""
    return parsed, None


def _ground_quotes(dataset: Dataset, submission: dict[str, Any], cited: dict[str, Citation]) -> Grounded:
    return ground_submission(dataset, submission)


FORMS: Registry[EvidenceForm] = Registry.of("evidence form", {
    "quote": EvidenceForm("the evidence copied from the passage", "quoted", {"type": "string"}, numbered=False,
                          example=lambda passage, evidence: evidence, read=_quoted, ground=_ground_quotes),
    "ids": EvidenceForm("the passage's sentences numbered, the evidence cited by number", "cited by sentence number",
                        {"type": "array", "items": {"type": "integer"}}, numbered=True, example=sentence_numbers,
                        read=cite, ground=ground_cited),
})
