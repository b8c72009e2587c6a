"""Few-shot examples: drawn (seeded) from a labelled file, such as `expmrc pseudo` output on training data.

Examples from the dev set being scored are refused unless the user allows them, because the leaderboard
asks that any use of the dev set be declared; a run that uses them is marked in its record and tables.
"""

from __future__ import annotations

import os
import random

from expmrc.data.datasets import (
    LABELS,
    Dataset,
    Question,
    SpanQuestion,
    load_dataset,
    passage_of,
)
from expmrc.errors import ExpmrcError

Shot = tuple[Question, str, str]  # the question, its answer, its evidence


def labelled(question: Question) -> Shot | None:
    """A question with its gold answer and first evidence, or None when it lacks either."""
    evidence = next((e for e in (question.evidences or []) if isinstance(e, str) and e.strip()), None)
    if isinstance(question, SpanQuestion):
        answer = next((a for a in question.answers if isinstance(a, str) and a.strip()), None)
    else:
        answer = question.answer if question.answer in LABELS[:len(question.options)] else None
    return (question, answer, evidence) if answer and evidence else None


def dev_overlap(pool: Dataset, scored: Dataset) -> list[str]:
    """The ids of `pool` questions that are questions of the scored dataset (same passage and question)."""
    if os.path.realpath(pool.path) == os.path.realpath(scored.path):
        return [q.qid for q in pool.questions]
    asked = {(passage_of(q), q.question) for q in scored.questions}
    return [q.qid for q in pool.questions if (passage_of(q), q.question) in asked]


def draw_shots(path: str, k: int, seed: int, scored: Dataset, allow_dev: bool) -> tuple[list[Shot], bool]:
    """`k` labelled examples from `path`, drawn with `seed`; also whether any comes from the scored set."""
    pool = load_dataset(path, scored.subset)
    overlap = dev_overlap(pool, scored)
    if overlap and not allow_dev:
        raise ExpmrcError(f"{path}: {len(overlap)} of its questions (e.g. {overlap[0]}) are in the dev set being "
                          "scored; few-shot examples from it are refused unless --allow-dev-shots (the run is then "
                          "marked as using the dev set)")
    candidates = [shot for q in pool.questions if (shot := labelled(q)) is not None]
    if len(candidates) < k:
        raise ExpmrcError(f"{path}: {len(candidates)} questions with an answer and an evidence, --shots asks for {k}")
    chosen = random.Random(seed).sample(candidates, k)
    return chosen, bool(overlap)  # drawn from a pool holding dev questions: declared, whichever were drawn
