"""The one span search both tasks decode with: from start/end logits over windows to passage character spans.

In each window, the `n_best` highest start logits among its passage tokens and the `n_best` highest end
logits make candidate pairs with start ≤ end < start + `max_length`. For answers, a start counts only
in the window where that token has the most context (`trusted_starts`), as BERT's decoding has it;
evidence, often as long as a good part of a window and labelled only where it lies wholly inside one,
may start anywhere. A candidate scores start + end logit less the window's
null score (start + end logit at its null position, "not in this window"), so that windows are
compared by how much more they believe in the span than in its absence. Over all windows of a
question, one character span counts once with its best score; the text is cut from the original
passage by character offsets (surrounding whitespace trimmed), never rebuilt from tokens.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any
from collections.abc import Mapping, Sequence

import numpy as np

from expmrc.features.windows import FeatureTable
from expmrc.text.locate import trim
from expmrc.metrics.leaderboard import score_tokens


def window_spans(table: FeatureTable, window: int, start_logits: np.ndarray, end_logits: np.ndarray,
                 n_best: int, max_length: int, trusted_starts: bool = True) -> list[tuple[float, int, int]]:
    """(score, first character, end character) of the allowed spans among one window's top starts and ends."""
    offsets, trusted = table.passage(window)
    count = len(offsets)
    if count == 0:
        return []
    first, null = int(table.passage_pos[window]), int(table.null_pos[window])
    starts = np.asarray(start_logits[first:first + count], dtype=np.float64)
    ends = np.asarray(end_logits[first:first + count], dtype=np.float64)
    null_score = float(start_logits[null]) + float(end_logits[null])
    allowed = np.flatnonzero(trusted) if trusted_starts else np.arange(count)
    top_starts = allowed[np.argsort(-starts[allowed], kind="stable")[:n_best]]
    top_ends = np.argsort(-ends, kind="stable")[:n_best]
    found = []
    for s in top_starts:
        for e in top_ends:
            if s <= e < s + max_length:
                found.append((float(starts[s] + ends[e]) - null_score, int(offsets[s][0]), int(offsets[e][1])))
    return found


PROBABILITY_FLOOR = 1e-15  # spans less probable than this are not looked at: all of a window's add < 1e-10
# Letters the leaderboard's normalization can drop from a text: those of the articles "a", "an", "the".
_ARTICLE_LETTERS = frozenset("anthe")


def _softmax(logits: np.ndarray) -> np.ndarray:
    """The softmax of one window's logits over its whole row (masked positions get ~0)."""
    values = np.asarray(logits, dtype=np.float64)
    values = np.exp(values - values.max())
    return values / values.sum()


def _skeleton(char: str) -> str:
    """What one character keeps through `skeleton`: its case-folded letters and digits, less article letters."""
    return "".join(c for c in char.casefold() if c.isalnum() and c not in _ARTICLE_LETTERS)


@lru_cache(maxsize=64)
def skeleton_index(text: str) -> tuple[str, np.ndarray]:
    """The skeleton of `text` and, for each character offset i, the length of the skeleton of text[:i], so that
    the skeleton of text[a:b] is skeleton[where[a]:where[b]]."""
    pieces = [_skeleton(c) for c in text]
    where = np.zeros(len(text) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in pieces], out=where[1:])
    return "".join(pieces), where


def span_probability(table: FeatureTable, windows: Sequence[int], outputs: Sequence[Mapping[str, np.ndarray]],
                     passage: str, answer_key: tuple[str, ...], max_length: int) -> float:
    """p(ŷ) of a span answer: the model's probability that the answer is a span whose normalized text
    (`score_tokens`) is `answer_key`, ŷ's own.

    In each window, p_start and p_end are soft-maxed over the window's own row, and p_start(s)·p_end(e) is
    summed over every passage span s ≤ e < s + `max_length` whose text matches; never renormalized over
    the n-best. A question's p(ŷ) is its most confident window's sum (a span two windows share is not
    counted twice). Spans below `PROBABILITY_FLOOR` are skipped.

    Only spans with ŷ's skeleton are tokenized: tokenization keeps every letter and digit and normalization
    drops only punctuation and the articles, so a matching text has ŷ's letters and digits (case-folded)
    once the letters of "a", "an" and "the" are set aside on both sides. Same sum, a few tokenizer calls.
    """
    target = "".join(_skeleton(c) for token in answer_key for c in token)
    skeleton, where = skeleton_index(passage)
    best = 0.0
    for window in windows:
        offsets, _ = table.passage(window)
        count, first = len(offsets), int(table.passage_pos[window])
        if count == 0:
            continue
        p_start = _softmax(outputs[window]["start_logits"])[first:first + count]
        p_end = _softmax(outputs[window]["end_logits"])[first:first + count]
        bounds = np.asarray(offsets, dtype=np.int64).reshape(count, 2)
        probability = np.outer(p_start, p_end)
        gap = np.arange(count)[None, :] - np.arange(count)[:, None]  # e - s
        length = where[bounds[:, 1]][None, :] - where[bounds[:, 0]][:, None]
        look = (gap >= 0) & (gap < max_length) & (probability >= PROBABILITY_FLOOR) & (length == len(target))
        total = 0.0
        for s, e in zip(*np.nonzero(look)):
            begin, end = int(bounds[s, 0]), int(bounds[e, 1])
            if skeleton[where[begin]:where[end]] != target:
                continue
            begin, end = trim(passage, (begin, end))
            if end > begin and score_tokens(passage[begin:end]) == answer_key:
                total += float(probability[s, e])
        best = max(best, total)
    return best


def best_spans(passage: str, candidates: Sequence[tuple[float, int, int]], n_best: int) -> list[dict[str, Any]]:
    """The n-best distinct character spans of a question, best first, with their text and probability
    (a softmax over the kept scores: how they compare, not the model's probability of a span, which is
    `span_probability`); ties go to the earlier span."""
    by_span: dict[tuple[int, int], float] = {}
    for score, start, end in candidates:
        start, end = trim(passage, (start, end))
        if end > start and ((start, end) not in by_span or score > by_span[(start, end)]):
            by_span[(start, end)] = score
    ranked = sorted(by_span.items(), key=lambda item: (-item[1], item[0]))[:n_best]
    if not ranked:
        return []
    scores = np.array([score for _, score in ranked])
    probabilities = np.exp(scores - scores.max())
    probabilities /= probabilities.sum()
    return [{"text": passage[start:end], "start": start, "end": end, "score": round(score, 5),
             "probability": round(float(p), 6)} for ((start, end), score), p in zip(ranked, probabilities)]
