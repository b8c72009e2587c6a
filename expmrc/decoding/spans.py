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

from typing import Any, Sequence

import numpy as np

from expmrc.features.windows import FeatureTable


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


def best_spans(passage: str, candidates: Sequence[tuple[float, int, int]], n_best: int) -> list[dict[str, Any]]:
    """The n-best distinct character spans of a question, best first, with their text and probability
    (a softmax over the kept scores); ties go to the earlier span."""
    by_span: dict[tuple[int, int], float] = {}
    for score, start, end in candidates:
        start, end = _trimmed(passage, start, end)
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


def _trimmed(passage: str, start: int, end: int) -> tuple[int, int]:
    """The span without the whitespace some tokenizers include in a token's offsets."""
    while start < end and passage[start].isspace():
        start += 1
    while end > start and passage[end - 1].isspace():
        end -= 1
    return start, end
