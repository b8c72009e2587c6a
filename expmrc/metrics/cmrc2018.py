"""CMRC 2018's answer EM and F1, as the dataset's official evaluation script computes them.

The reference is cmrc2018_evaluate.py in the CMRC 2018 repository (v5 for Python 2, v6 for Python 3;
the scoring is the same in both). What it does, and so what this module does:

- Text: a prediction that is not a string is scored as `str(value)` (JSON 2018 -> "2018", 1.0 ->
  "1.0", true -> "True"); then lowercased and stripped of surrounding whitespace. There is no
  Unicode normalization: full-width "ＡＢＣ" becomes "ａｂｃ", which never equals "abc".
- Punctuation is only the characters in PUNCTUATION: ASCII - : _ * ^ / \\ ~ ` + = and full-width
  ，。：？！“”；’《》·、「」（）－～『』. The script's list also holds the two-character "……", which
  never equals a single character, so "…" is kept, as are ASCII , . ? ! ' " ( ) % and "‘" (only the
  closing quote "’" is listed), 【】 and the em dash.
- EM: the lowercased, stripped text with that punctuation deleted equals that of some reference.
  Whitespace inside counts: "北 京" does not match "北京". A prediction that is empty, or only
  punctuation, matches a reference that is only punctuation.
- F1: the text is segmented with the punctuation skipped (a skipped character does not end a run,
  so "ω-force" is one token "ωforce"): each CJK character U+4E00-U+9FA5 is a token, each run of
  other characters goes through NLTK's word_tokenize (whitespace between CJK characters vanishes).
  Precision and recall come from the longest common *contiguous* run of tokens; when it is empty
  the F1 is 0, so an empty or punctuation-only side always scores 0 (even where EM is 1). The
  maximum over the references is taken.
- Whole file: every question of the dataset counts; a question missing from the predictions scores
  0 (the script counts it in SKIP); extra prediction keys are ignored. EM and F1 are 100 × sum /
  questions in file order, AVERAGE is (EM + F1) × 0.5, and the script prints the three with "%.3f".

This module follows the Python 3 script. The Python 2 script (v5) gives other figures for
non-string predictions (str() of a float keeps 12 significant digits) and lowercases "İ" to "i"
(Python 3: "i̇"). F1 also depends on the NLTK version: NLTK 3.4.5, the last for Python 2, splits
some runs with quotes and dashes differently ("'single'" gives "'single", "'" rather than "'",
"single", "'"). v5 strips whitespace around question ids before looking them up; v6, like the
scorer here, does not.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any
from collections.abc import Iterable, Sequence

from expmrc.data.datasets import SpanQuestion
from expmrc.metrics.leaderboard import SPECIAL_TOKENS, matches_any, max_over_references, overlap_f1, word_tokens
from expmrc.metrics.registry import Metric, Values, percent_mean, percent_parts, register

PUNCTUATION = frozenset(t for t in SPECIAL_TOKENS if len(t) == 1)


def _is_cjk(ch: str) -> bool:
    return "\u4e00" <= ch <= "\u9fa5"


@lru_cache(maxsize=1 << 18)
def cmrc2018_normalize(text: str) -> str:
    """The string EM compares: lowercased, stripped, with PUNCTUATION characters deleted (memoized)."""
    return "".join(ch for ch in text.lower().strip() if ch not in PUNCTUATION)


@lru_cache(maxsize=1 << 18)
def cmrc2018_segments(text: str) -> tuple[str, ...]:
    """The tokens F1 compares: CJK characters alone, other runs through NLTK (the leaderboard's cached
    `word_tokens`), punctuation skipped (memoized)."""
    tokens: list[str] = []
    run: list[str] = []
    for ch in text.lower().strip():
        if ch in PUNCTUATION:
            continue
        if _is_cjk(ch):
            if run:
                tokens.extend(word_tokens("".join(run)))
                run = []
            tokens.append(ch)
        else:
            run.append(ch)
    if run:
        tokens.extend(word_tokens("".join(run)))
    return tuple(tokens)


def longest_common_run(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest contiguous token sequence found in both `a` and `b`."""
    best = 0
    above = [0] * (len(b) + 1)
    for x in a:
        row = [0] * (len(b) + 1)
        for j, y in enumerate(b, 1):
            if x == y:
                row[j] = above[j - 1] + 1
                if row[j] > best:
                    best = row[j]
        above = row
    return best


def _segment_f1(prediction: tuple[str, ...], reference: tuple[str, ...]) -> float:
    return overlap_f1(longest_common_run(reference, prediction), len(prediction), len(reference))


def cmrc2018_exact_match(prediction: Any, references: Iterable[Any]) -> float:
    """1.0 when the normalized prediction equals some normalized reference, else 0.0 (also with none)."""
    return matches_any(cmrc2018_normalize, prediction, references)


def cmrc2018_f1(prediction: Any, references: Iterable[Any]) -> float:
    """Max over references of the longest-common-run F1 of the segmented texts."""
    return max_over_references(cmrc2018_segments, _segment_f1, prediction, references, "cmrc2018_f1")


def score_question(question: SpanQuestion, prediction: Any) -> Values:
    """One answered question's CMRC 2018 EM and F1 against its gold answers."""
    return {"em": cmrc2018_exact_match(prediction.answer, question.answers),
            "f1": cmrc2018_f1(prediction.answer, question.answers)}


_means = percent_mean(("em", "f1"), ("CMRC2018_EM", "CMRC2018_F1"))


def aggregate(values: Sequence[Values | None]) -> Values:
    """EM and F1 as 100 × sum / questions (a left-out question counts 0) and AVERAGE = (EM + F1) × 0.5."""
    figures = _means(values)
    figures["CMRC2018_AVERAGE"] = (figures["CMRC2018_EM"] + figures["CMRC2018_F1"]) * 0.5
    return figures


def parts(values: Sequence[Values | None]) -> dict[str, tuple[list[float], list[float]]]:
    """EM, F1 and their average as per-question ratios over 1 (for intervals and paired tests)."""
    figures = percent_parts(("em", "f1"), ("CMRC2018_EM", "CMRC2018_F1"))(values)
    (em, ones), (f1, _) = figures["CMRC2018_EM"], figures["CMRC2018_F1"]
    figures["CMRC2018_AVERAGE"] = ([(a + b) * 0.5 for a, b in zip(em, f1)], ones)
    return figures


CMRC2018 = register(Metric(
    name="cmrc2018",
    summary="CMRC 2018's official answer EM, F1 (longest common run) and their average",
    tasks=("span",),
    keys=("CMRC2018_EM", "CMRC2018_F1", "CMRC2018_AVERAGE"),
    question=score_question,
    aggregate=aggregate,
    needs="answers",
    parts=parts,
))
