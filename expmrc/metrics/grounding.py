"""Is the evidence passage text at all? The share of answered questions whose evidence is not a passage substring.

The leaderboard never checks that evidence comes from the passage, so a made-up quote that shares
words with the gold evidence still earns evidence F1. This figure, beside the official ones, says
how much of a submission's evidence is not passage text verbatim (`expmrc ground` places it, or
flags it; docs/grounding.md). Evidence is stripped of whitespace at both ends first; an empty
evidence is not counted.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Sequence

from expmrc.data.datasets import passage_of
from expmrc.metrics.registry import Metric, Values, register
from expmrc.text.locate import occurrences


def evidence_question(question: Any, prediction: Any) -> Values:
    """Whether the (stripped) evidence is a verbatim passage substring; None for an empty evidence."""
    evidence = str(prediction.evidence).strip()
    return {"evidence_in_passage": bool(occurrences(passage_of(question), evidence)) if evidence else None}


def evidence_aggregate(values: Sequence[Values | None]) -> Values:
    """100 × the answered questions with a non-empty evidence that is not passage text / those with one."""
    counted = [v["evidence_in_passage"] for v in values if v is not None and v["evidence_in_passage"] is not None]
    return {"EVI_NOT_IN_PASSAGE": 100.0 * counted.count(False) / len(counted) if counted else None}


GROUNDING = register(Metric(
    name="grounding",
    summary="the share of non-empty evidence that is not a verbatim passage substring (docs/grounding.md)",
    tasks=("span", "choice"),
    keys=("EVI_NOT_IN_PASSAGE",),
    question=evidence_question,
    aggregate=evidence_aggregate,
))
