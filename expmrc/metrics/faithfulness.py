"""Coupling with the model in the loop: FARM(k), comprehensiveness and sufficiency, from per-question records.

These are the pure parts of `expmrc faithfulness` (docs/coupling.md): which facts to delete in which
order, whether an answer changed, the model's probability of its own answer, and the figures over a
dataset. Re-running the model is the command's business; nothing here imports torch.

- Facts are passage sentences. Relevant facts overlap the predicted evidence span, ordered by the
  model's evidence score, highest first; the others are irrelevant, ordered the same way. Deleting
  "up to k" facts deletes the first k of an order, all of them when it has k or fewer.
- FARM(k) = c_rel(k) / (1 + c_irr(k)) (Schuff et al. 2020), where c_rel(k) is the share of ALL
  questions whose answer changed once up to k relevant facts were deleted, c_irr(k) the same for
  irrelevant facts (shares as fractions, as in the paper). A question with no fact of a kind has
  nothing to delete and its answer does not change.
- Comprehensiveness = p(ŷ | passage) − p(ŷ | passage without the evidence); sufficiency =
  p(ŷ | passage) − p(ŷ | the evidence alone) (DeYoung et al. 2020), means over the questions with a
  non-empty answer, and over those answered right and wrong.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Sequence

from expmrc.errors import ExpmrcError
from expmrc.metrics.leaderboard import score_tokens
from expmrc.text.sentences import Sentence


# --- facts -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FactOrder:
    """Sentence indices in deletion order: those overlapping the evidence, then the rest."""

    relevant: tuple[int, ...]
    irrelevant: tuple[int, ...]


def order_facts(sentences: Sequence[Sentence], scores: Sequence[float], evidence: tuple[int, int]) -> FactOrder:
    """Split a passage's sentences by whether they overlap the evidence's characters [start, end), each
    group ordered by `scores` (the model's evidence score per sentence) highest first, earlier first on ties.

    An empty evidence span makes every sentence irrelevant. Raises ValueError when there is not one
    finite score per sentence (the caller names the question).
    """
    if len(scores) != len(sentences):
        raise ValueError(f"{len(scores)} evidence scores for {len(sentences)} sentences")
    bad = [i for i, value in enumerate(scores) if not math.isfinite(value)]
    if bad:
        raise ValueError(f"sentence {bad[0]}'s evidence score is {scores[bad[0]]}, not a finite number")
    start, end = evidence
    order = sorted(range(len(sentences)), key=lambda i: (-scores[i], i))
    overlaps = {i for i, s in enumerate(sentences) if start < end and s.start < end and start < s.end}
    return FactOrder(tuple(i for i in order if i in overlaps), tuple(i for i in order if i not in overlaps))


def up_to(order: Sequence[int], k: int) -> tuple[int, ...]:
    """The facts "up to k" deletes: the first k of `order`, all of them when there are k or fewer."""
    _check_k(k)
    return tuple(order[:k])


def answer_changed(before: object, after: object, kind: str) -> bool:
    """Whether a re-predicted answer differs: span answers by their normalized text (the leaderboard's
    tokens, so an empty answer stays empty), multiple choice by the option label."""
    if kind == "span":
        return score_tokens(before) != score_tokens(after)
    if kind == "choice":
        return before != after
    raise ValueError(f"unknown task kind {kind!r}; choose span or choice")


# --- FARM ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Deletions:
    """One question's answer changes as its facts are deleted in order.

    `relevant[j - 1]` says whether the answer changed once the first j relevant facts were deleted,
    for j = 1 .. len(relevant); `relevant_facts` is how many relevant facts the question has, so a
    record may stop at the largest k computed. The same for the irrelevant facts.
    """

    qid: str
    relevant_facts: int
    relevant: tuple[bool, ...]
    irrelevant_facts: int
    irrelevant: tuple[bool, ...]

    def changed(self, group: str, k: int) -> bool:
        """Whether the answer changed after deleting up to k facts of `group` (relevant or irrelevant)."""
        if group not in ("relevant", "irrelevant"):
            raise ValueError(f"unknown fact group {group!r}; choose relevant or irrelevant")
        facts, changes = ((self.relevant_facts, self.relevant) if group == "relevant"
                          else (self.irrelevant_facts, self.irrelevant))
        deleted = min(k, facts)
        if deleted == 0:
            return False
        if deleted > len(changes):
            raise ExpmrcError(f"question {self.qid}: FARM({k}) needs the answer after deleting {deleted} {group} "
                              f"facts; the record stops at {len(changes)}")
        return changes[deleted - 1]

    def __post_init__(self) -> None:
        for group, facts, changes in (("relevant", self.relevant_facts, self.relevant),
                                      ("irrelevant", self.irrelevant_facts, self.irrelevant)):
            if facts < 0 or len(changes) > facts:
                raise ExpmrcError(f"question {self.qid}: {len(changes)} {group} deletions recorded for "
                                  f"{facts} {group} facts")


@dataclass(frozen=True)
class Farm:
    """FARM(k) with its two parts, each a fraction of all questions."""

    k: int
    c_rel: float
    c_irr: float
    farm: float


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ExpmrcError(f"k must be a whole number of facts, at least 1; got {k!r}")


def farm(records: Sequence[Deletions], k: int) -> Farm:
    """FARM(k) = c_rel(k) / (1 + c_irr(k)) over `records` (one per question of the dataset)."""
    _check_k(k)
    if not records:
        raise ExpmrcError("FARM needs at least one question")
    c_rel = sum(r.changed("relevant", k) for r in records) / len(records)
    c_irr = sum(r.changed("irrelevant", k) for r in records) / len(records)
    return Farm(k, c_rel, c_irr, c_rel / (1.0 + c_irr))


# --- comprehensiveness and sufficiency -------------------------------------------------------------


@dataclass(frozen=True)
class Erasure:
    """One question's probabilities of its own answer: given the passage, the passage without the
    evidence, and the evidence alone (all None for an empty answer); `correct` is None without gold."""

    qid: str
    full: float | None
    without_evidence: float | None
    evidence_only: float | None
    correct: bool | None = None

    def __post_init__(self) -> None:
        values = (self.full, self.without_evidence, self.evidence_only)
        if any(v is None for v in values) and any(v is not None for v in values):
            raise ExpmrcError(f"question {self.qid}: give all three probabilities, or none for an empty answer")
        for name, value in zip(("full", "without_evidence", "evidence_only"), values):
            if value is not None and not (math.isfinite(value) and 0.0 <= value <= 1.0):
                raise ExpmrcError(f"question {self.qid}: probability {name} is {value}, not a number in [0, 1]")


def _means(records: Sequence[Erasure]) -> tuple[float | None, float | None]:
    if not records:
        return None, None
    # each record has all three probabilities (Erasure takes all or none; callers keep those with `full`)
    given = [(r.full, r.without_evidence, r.evidence_only) for r in records]
    comprehensiveness = sum(f - w for f, w, _ in given if f is not None and w is not None) / len(records)
    sufficiency = sum(f - e for f, _, e in given if f is not None and e is not None) / len(records)
    return comprehensiveness, sufficiency


def erasure_figures(records: Sequence[Erasure]) -> tuple[dict[str, float | int | None], list[str]]:
    """Mean comprehensiveness and sufficiency (fractions) over the questions with an answer, and over those
    answered right and wrong; the split is None, with a note, when some of them have no gold answer."""
    counted = [r for r in records if r.full is not None]
    figures: dict[str, float | int | None] = {"COUNTED": len(counted)}
    figures["COMPREHENSIVENESS"], figures["SUFFICIENCY"] = _means(counted)
    notes = []
    if len(counted) < len(records):
        notes.append(f"{len(records) - len(counted)} question(s) with an empty answer are left out")
    no_gold = sum(r.correct is None for r in counted)
    if no_gold:
        notes.append(f"the split by correct / wrong answers is omitted: {no_gold} question(s) have no gold answer")
    for name, want in (("CORRECT", True), ("WRONG", False)):
        group = [r for r in counted if r.correct is want]
        both = (None, None) if no_gold else _means(group)
        figures[f"COMPREHENSIVENESS_{name}"], figures[f"SUFFICIENCY_{name}"] = both
    return figures, notes
