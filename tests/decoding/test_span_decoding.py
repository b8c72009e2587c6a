"""Decoding: best start/end pairs over windows, length limits, context only, max-context, text from offsets."""

from __future__ import annotations

import numpy as np
import pytest

from expmrc.data.datasets import SpanQuestion
from expmrc.decoding.span import best_spans, decode_span_predictions
from expmrc.features.span import SpanFeature

CONTEXT = "Naïve  Café,  ropu est là."
# passage tokens: Naïve | Café | , | ropu | est | là | .   (note the double spaces: text comes from offsets)
OFFSETS = [(0, 5), (7, 11), (11, 12), (14, 18), (19, 22), (23, 25), (25, 26)]


def q(qid="q1", context=CONTEXT):
    return SpanQuestion(qid=qid, question="?", context=context, answers=["x"], answer_starts=[0], evidences=["x"])


def feature(token_range, context_start=3, trusted=None, question_index=0):
    first, last = token_range
    offsets = OFFSETS[first:last]
    return SpanFeature(question_index=question_index, input_ids=[0] * (context_start + len(offsets) + 1),
                       context_start=context_start, offsets=offsets,
                       max_context=trusted if trusted is not None else [True] * len(offsets))


def logits(length, start=None, end=None, context_start=3, question_spike=False, base=0.0):
    """Start/end logit arrays over a window of `length` passage tokens; `start`/`end` map token -> logit."""
    size = context_start + length + 1
    s, e = np.full(size, base, dtype=np.float32), np.full(size, base, dtype=np.float32)
    for token, value in (start or {}).items():
        s[context_start + token] = value
    for token, value in (end or {}).items():
        e[context_start + token] = value
    if question_spike:  # the question and [CLS] positions score highest: they must never be chosen
        s[:context_start] = e[:context_start] = 100.0
    return {"start_logits": s, "end_logits": e, "evidence_start_logits": s.copy(), "evidence_end_logits": e.copy()}


def test_best_pair_text_comes_from_character_offsets():
    spans = best_spans(q(), [feature((0, 7))], [logits(7, {0: 5.0}, {1: 4.0}, question_spike=True)], "answer", 5, 30)
    assert spans[0]["text"] == "Naïve  Café" and (spans[0]["start"], spans[0]["end"]) == (0, 11)
    assert spans[0]["score"] == 9.0
    assert sum(s["probability"] for s in spans) == pytest.approx(1.0, abs=1e-5)
    assert [s["score"] for s in spans] == sorted((s["score"] for s in spans), reverse=True)


def test_end_before_start_and_length_limit_are_excluded():
    out = logits(7, {3: 5.0, 0: 1.0}, {1: 6.0, 5: 2.0})
    spans = best_spans(q(), [feature((0, 7))], [out], "answer", 20, 30)
    assert spans[0]["text"] == "Naïve  Café"  # 1 + 6: the higher end at token 1 cannot pair with start 3
    assert all(s["start"] <= s["end"] for s in spans)
    assert ("ropu est là", 7.0) in [(s["text"], s["score"]) for s in spans]  # 3 tokens: allowed at 30
    two = best_spans(q(), [feature((0, 7))], [out], "answer", 20, 2)
    assert "ropu est là" not in [s["text"] for s in two] and two[0]["text"] == "Naïve  Café"
    one = best_spans(q(), [feature((0, 7))], [out], "answer", 20, 1)
    assert (one[0]["text"], one[0]["score"]) == ("Café", 6.0)  # start 1 (0) + end 1 (6) beats start 3 alone (5)
    assert all(len([o for o in OFFSETS if s["start"] <= o[0] < s["end"]]) == 1 for s in one)


def test_window_without_max_context_for_a_start_is_not_trusted_for_it():
    # two windows over tokens 0-4 and 2-6; token 3 ("ropu") is trusted only in the second
    first = feature((0, 5), trusted=[True, True, True, False, False])
    second = feature((2, 7), trusted=[False, True, True, True, True])
    outs = [logits(5, {3: 9.0}, {3: 9.0}, base=-10.0), logits(5, {1: 4.0}, {1: 4.0}, base=-10.0)]
    spans = best_spans(q(), [first, second], outs, "answer", 5, 30)
    assert spans[0]["text"] == "ropu" and spans[0]["score"] == 8.0  # the second window's view of it


def test_same_span_from_two_windows_counts_once_with_its_best_score():
    first, second = feature((0, 5)), feature((2, 7))
    outs = [logits(5, {3: 2.0}, {3: 2.0}), logits(5, {1: 3.0}, {1: 3.0})]
    spans = best_spans(q(), [first, second], outs, "answer", 20, 30)
    ropu = [s for s in spans if s["text"] == "ropu"]
    assert len(ropu) == 1 and ropu[0]["score"] == 6.0
    assert len({(s["start"], s["end"]) for s in spans}) == len(spans)


def test_answer_and_evidence_use_their_own_logits_and_limits():
    out = logits(7, {0: 1.0}, {6: 1.0})
    out["start_logits"][3 + 3] = out["end_logits"][3 + 3] = 5.0  # answer: "ropu"
    questions = [q("q1"), q("q2", context="")]
    features = [feature((0, 7))]
    predictions, nbest = decode_span_predictions(questions, features, [out], n_best_size=3, max_answer_length=3,
                                                 max_evidence_length=30)
    assert predictions["q1"] == {"answer": "ropu", "evidence": "Naïve  Café,  ropu est là."}
    assert predictions["q2"] == {"answer": "", "evidence": ""} and nbest["q2"] == {"answer": [], "evidence": []}
    assert list(predictions) == ["q1", "q2"] and len(nbest["q1"]["answer"]) == 3
    assert set(nbest["q1"]["evidence"][0]) == {"text", "start", "end", "score", "probability"}
