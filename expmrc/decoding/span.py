"""Decoding span predictions: from per-window start/end logits to answer and evidence texts.

For each question, every window proposes its `n_best_size` best start and end positions; a pair is
a candidate when both are passage tokens, end >= start, the span is at most `max_length` tokens, and
the start token has its most context in this window (so each start is judged where the model saw
most around it). Candidates are ranked by start + end logit across all windows, the same character
span from two windows counts once, and the text is cut from the original passage by character
offsets, never rebuilt from word pieces. Answer and evidence are decoded the same way with their
own logits and length limits.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from expmrc.data.datasets import SpanQuestion
from expmrc.features.span import SpanFeature

HEADS = {"answer": ("start_logits", "end_logits"), "evidence": ("evidence_start_logits", "evidence_end_logits")}


def window_candidates(feature: SpanFeature, start_logits: np.ndarray, end_logits: np.ndarray, n_best: int,
                      max_length: int) -> list[tuple[float, int, int]]:
    """(score, first token, last token) of the allowed spans among one window's top starts and ends.

    Token indices are positions among the window's passage tokens.
    """
    first, count = feature.context_start, feature.context_length
    if count == 0:
        return []
    starts_logits = np.asarray(start_logits[first:first + count], dtype=np.float64)
    ends_logits = np.asarray(end_logits[first:first + count], dtype=np.float64)
    trusted = np.flatnonzero(feature.max_context)
    top_starts = trusted[np.argsort(-starts_logits[trusted], kind="stable")[:n_best]]
    top_ends = np.argsort(-ends_logits, kind="stable")[:n_best]
    candidates = []
    for s in top_starts:
        for e in top_ends:
            if s <= e < s + max_length:
                candidates.append((float(starts_logits[s] + ends_logits[e]), int(s), int(e)))
    return candidates


def best_spans(question: SpanQuestion, features: Sequence[SpanFeature], outputs: Sequence[dict[str, np.ndarray]],
               head: str, n_best: int, max_length: int) -> list[dict[str, Any]]:
    """The n-best spans of one question for `head` (answer or evidence), best first, with probabilities."""
    start_key, end_key = HEADS[head]
    by_span: dict[tuple[int, int], float] = {}
    for feature, output in zip(features, outputs):
        for score, s, e in window_candidates(feature, output[start_key], output[end_key], n_best, max_length):
            span = (feature.offsets[s][0], feature.offsets[e][1])
            if span not in by_span or score > by_span[span]:
                by_span[span] = score
    ranked = sorted(by_span.items(), key=lambda item: (-item[1], item[0]))[:n_best]
    if not ranked:
        return []
    scores = np.array([score for _, score in ranked])
    probabilities = np.exp(scores - scores.max())
    probabilities /= probabilities.sum()
    return [{"text": question.context[start:end], "start": start, "end": end, "score": round(score, 5),
             "probability": round(float(p), 6)}
            for ((start, end), score), p in zip(ranked, probabilities)]


def decode_span_predictions(questions: Sequence[SpanQuestion], features: Sequence[SpanFeature],
                            outputs: Sequence[dict[str, np.ndarray]], n_best_size: int, max_answer_length: int,
                            max_evidence_length: int) -> tuple[dict[str, dict[str, str]], dict[str, Any]]:
    """The submission `{qid: {"answer", "evidence"}}` and the n-best lists, both in question order.

    A question with no passage tokens gets empty strings and empty n-best lists.
    """
    by_question: dict[int, list[int]] = {}
    for index, feature in enumerate(features):
        by_question.setdefault(feature.question_index, []).append(index)
    predictions: dict[str, dict[str, str]] = {}
    nbest: dict[str, Any] = {}
    limits = {"answer": max_answer_length, "evidence": max_evidence_length}
    for q_index, question in enumerate(questions):
        indices = by_question.get(q_index, [])
        window_features = [features[i] for i in indices]
        window_outputs = [outputs[i] for i in indices]
        entry = {head: best_spans(question, window_features, window_outputs, head, n_best_size, limit)
                 for head, limit in limits.items()}
        nbest[question.qid] = entry
        predictions[question.qid] = {head: (spans[0]["text"] if spans else "") for head, spans in entry.items()}
    return predictions, nbest
