"""Can the evidence be trusted as passage text? What `expmrc ground` would make of each evidence, beside the scores.

The leaderboard never checks that evidence comes from the passage, so a made-up quote that shares
words with the gold evidence still earns evidence F1. These figures say how much of a submission's
evidence is not passage text (docs/grounding.md):

- `EVI_MISSING`: the share of all questions with no evidence (left out, or empty after stripping);
- `EVI_NOT_IN_PASSAGE`: the share of the evidence given that is not a verbatim passage substring;
- `EVI_VERBATIM`: the share of the evidence given whose every difference from the passage is form (`exact` +
  `normalized`: what grounding replaces by the passage text);
- `EVI_UNVERIFIED`, `EVI_ALTERED`, `EVI_REWORDED`: the shares of the evidence given that grounding cannot
  locate, locates with a number, negation or name changed, or locates with other words changed;
- `EVI_UNTRUSTWORTHY`: their sum, (unverified + altered + reworded) / evidence given.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Sequence

from expmrc.data.datasets import passage_of
from expmrc.metrics.registry import Metric, Values, register
from expmrc.text.grounding import ALTERED, MISSING, REWORDED, UNTRUSTWORTHY, UNVERIFIED, VERBATIM, ground_text
from expmrc.text.locate import Hint, occurrences

KEYS = ("EVI_MISSING", "EVI_NOT_IN_PASSAGE", "EVI_VERBATIM", "EVI_UNVERIFIED", "EVI_ALTERED", "EVI_REWORDED",
        "EVI_UNTRUSTWORTHY")


def evidence_question(question: Any, prediction: Any) -> Values:
    """Whether the (stripped) evidence is a verbatim passage substring (None for an empty evidence) and its
    grounding status."""
    evidence = str(prediction.evidence).strip()
    passage = passage_of(question)
    status = ground_text(passage, evidence, Hint(start=prediction.evidence_start)).status
    return {"evidence_in_passage": bool(occurrences(passage, evidence)) if evidence else None,
            "evidence_grounding": status}


def _statuses(values: Sequence[Values | None]) -> list[str]:
    """Each question's grounding status, `missing` for a question left out."""
    return [MISSING if v is None else v["evidence_grounding"] for v in values]


def evidence_parts(values: Sequence[Values | None]) -> dict[str, tuple[list[float], list[float]]]:
    """Each figure as per-question (numerator, denominator): over all questions for EVI_MISSING, else over the
    questions with evidence."""
    statuses = _statuses(values)
    given = [float(s != MISSING) for s in statuses]
    in_passage = [None if v is None else v["evidence_in_passage"] for v in values]
    return {
        "EVI_MISSING": ([float(s == MISSING) for s in statuses], [1.0] * len(statuses)),
        "EVI_NOT_IN_PASSAGE": ([float(x is False) for x in in_passage], [float(x is not None) for x in in_passage]),
        "EVI_VERBATIM": ([float(s in VERBATIM) for s in statuses], given),
        "EVI_UNVERIFIED": ([float(s == UNVERIFIED) for s in statuses], given),
        "EVI_ALTERED": ([float(s == ALTERED) for s in statuses], given),
        "EVI_REWORDED": ([float(s == REWORDED) for s in statuses], given),
        "EVI_UNTRUSTWORTHY": ([float(s in UNTRUSTWORTHY) for s in statuses], given),
    }


def evidence_aggregate(values: Sequence[Values | None]) -> Values:
    """100 × Σ numerators / Σ denominators of each figure (None where the denominator is 0)."""
    return {key: 100.0 * sum(num) / sum(den) if sum(den) else None
            for key, (num, den) in evidence_parts(values).items()}


GROUNDING = register(Metric(
    name="grounding",
    summary="evidence missing, not verbatim passage text, verbatim after grounding (only form differs), "
            "unverified, altered (a fact changed) or reworded, and the untrustworthy share (docs/grounding.md)",
    tasks=("span", "choice"),
    keys=KEYS,
    question=evidence_question,
    aggregate=evidence_aggregate,
    parts=evidence_parts,
))
