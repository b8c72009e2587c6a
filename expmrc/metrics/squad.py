"""SQuAD v1.1's answer EM and F1, as the dataset's official evaluate-v1.1.py computes them.

What the official script does, and so what this module does:

- Normalize: lowercase; delete every character of `string.punctuation` (ASCII only, so "’", "“",
  "—" and "…" stay); replace each whole word a, an or the by a space (a regex with \\b, which is
  Unicode-aware in Python 3: "théa" keeps its "a"); collapse whitespace to single spaces. Punctuation
  goes first, so "a-team" becomes "ateam" and keeps its "a", and "the." loses its "the".
- EM: the normalized prediction equals some normalized reference.
- F1: bag-of-words F1 over the normalized words (a repeated word counts as often as it appears on
  both sides); 0 when no word is shared, so an empty normalized prediction scores F1 0 even against
  a reference that normalizes to empty (say "the"), where EM is 1. Max over the references.
- Whole file: every question of the dataset counts; a missing one scores 0 and extra prediction keys
  are ignored. EM and F1 are 100 × sum / questions in file order, printed at full precision.
- The script needs strings: a number as answer stops it (it calls `.lower()`). Here a number is
  scored as its `str()`, as the leaderboard does, and a note says how many answers were numbers.

The script runs on Python 2 and 3 and scores non-ASCII text differently on each: Python 2's \\b is
ASCII-only, so an article glued to an accented letter goes ("théa" -> "thé", "éthe" -> "é"), and
Python 2 lowercases "İ" to "i" where Python 3 gives "i̇". This module follows Python 3.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from functools import lru_cache
from typing import Any
from collections.abc import Iterable, Sequence

from expmrc.data.datasets import SpanQuestion
from expmrc.metrics.leaderboard import matches_any, max_over_references, overlap_f1
from expmrc.metrics.registry import Metric, Values, percent_mean, percent_parts, register

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLE = re.compile(r"\b(a|an|the)\b")


@lru_cache(maxsize=1 << 18)
def squad_normalize(text: str) -> str:
    """Lowercase, drop ASCII punctuation and the words a/an/the, collapse whitespace (memoized)."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLE.sub(" ", text).split())


@lru_cache(maxsize=1 << 18)
def _words(text: str) -> tuple[str, ...]:
    return tuple(squad_normalize(text).split())


def _word_f1(prediction: tuple[str, ...], reference: tuple[str, ...]) -> float:
    return overlap_f1(sum((Counter(prediction) & Counter(reference)).values()), len(prediction), len(reference))


def squad_exact_match(prediction: Any, references: Iterable[Any]) -> float:
    """1.0 when the normalized prediction equals some normalized reference, else 0.0 (each as str())."""
    return matches_any(squad_normalize, prediction, references)


def squad_f1(prediction: Any, references: Iterable[Any]) -> float:
    """Max over references of the bag-of-words F1 of the normalized texts (each as str())."""
    return max_over_references(_words, _word_f1, prediction, references, "squad_f1")


def score_question(question: SpanQuestion, prediction: Any) -> Values:
    """One answered question's SQuAD EM and F1, and whether its answer was a number (not text)."""
    return {"em": squad_exact_match(prediction.answer, question.answers),
            "f1": squad_f1(prediction.answer, question.answers),
            "number": not isinstance(prediction.answer, str)}


def _notes(values: Sequence[Values | None]) -> list[str]:
    numbers = sum(1 for v in values if v is not None and v["number"])
    if not numbers:
        return []
    return [f"{numbers} answer(s) are not strings (JSON numbers or booleans), scored as their text; the official script stops on them"]


SQUAD = register(Metric(
    name="squad",
    summary="SQuAD v1.1's official answer EM and F1 (bag of words, ASCII punctuation and articles dropped)",
    tasks=("span",),
    keys=("SQUAD_EM", "SQUAD_F1"),
    question=score_question,
    aggregate=percent_mean(("em", "f1"), ("SQUAD_EM", "SQUAD_F1")),
    needs="answers",
    notes=_notes,
    parts=percent_parts(("em", "f1"), ("SQUAD_EM", "SQUAD_F1")),
))
