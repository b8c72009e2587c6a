"""Decoding: the one span search over windows (null-relative scores, length limits, passage only,
max context, text from offsets) and the answers of both tasks."""

from __future__ import annotations

import re

import numpy as np
import pytest

from expmrc.data.datasets import ChoiceQuestion, SpanQuestion
from expmrc.decoding.predictions import decode_predictions
from expmrc.decoding.spans import best_spans, span_probability, window_spans
from expmrc.metrics.leaderboard import score_tokens
from helpers.common import needs_punkt
from expmrc.features.windows import TableBuilder

CONTEXT = "Naïve  Café,  ropu est là."
# passage tokens: Naïve | Café | , | ropu | est | là | .   (note the double spaces: text comes from offsets)
OFFSETS = [(0, 5), (7, 11), (11, 12), (14, 18), (19, 22), (23, 25), (25, 26)]
FIRST = 3  # passage tokens start at row position 3; the null position is 0


def span_q(qid="q1", context=CONTEXT):
    return SpanQuestion(qid=qid, question="?", context=context, answers=["x"], answer_starts=[0], evidences=["x"])


def table(*windows, task="span", options=1):
    """A table of windows given as (token range, trusted flags or None, question index)."""
    builder = TableBuilder(task, token_types=False)
    for (first, last), trusted, question in windows:
        count = last - first
        row = ([0] * (FIRST + count + 1), None)
        builder.add([row] * options, OFFSETS[first:last], trusted or [True] * count, question_index=question,
                    passage_pos=FIRST, null_pos=0)
    return builder.build()


def logits(count, start=None, end=None, base=0.0, null=0.0, question_spike=False):
    """Start/end logits over a row of `count` passage tokens; `start`/`end` map token -> logit."""
    size = FIRST + count + 1
    s, e = np.full(size, base, dtype=np.float32), np.full(size, base, dtype=np.float32)
    s[0] = e[0] = null
    for token, value in (start or {}).items():
        s[FIRST + token] = value
    for token, value in (end or {}).items():
        e[FIRST + token] = value
    if question_spike:  # question positions score highest: they must never be chosen
        s[1:FIRST] = e[1:FIRST] = 100.0
    return {"start_logits": s, "end_logits": e, "evidence_start_logits": s.copy(), "evidence_end_logits": e.copy()}


def search(tbl, outs, n_best=5, max_length=30, head="start_logits"):
    end = head.replace("start", "end")
    found = [c for w, out in enumerate(outs) for c in window_spans(tbl, w, out[head], out[end], n_best, max_length)]
    return best_spans(CONTEXT, found, n_best)


def test_best_pair_text_comes_from_character_offsets():
    spans = search(table(((0, 7), None, 0)), [logits(7, {0: 5.0}, {1: 4.0}, question_spike=True)])
    assert spans[0]["text"] == "Naïve  Café" and (spans[0]["start"], spans[0]["end"]) == (0, 11)
    assert spans[0]["score"] == 9.0
    assert sum(s["probability"] for s in spans) == pytest.approx(1.0, abs=1e-5)
    assert [s["score"] for s in spans] == sorted((s["score"] for s in spans), reverse=True)


def test_end_before_start_and_length_limit_are_excluded():
    tbl, out = table(((0, 7), None, 0)), logits(7, {3: 5.0, 0: 1.0}, {1: 6.0, 5: 2.0})
    spans = search(tbl, [out], n_best=20)
    assert spans[0]["text"] == "Naïve  Café"  # 1 + 6: the higher end at token 1 cannot pair with start 3
    assert ("ropu est là", 7.0) in [(s["text"], s["score"]) for s in spans]  # 3 tokens: allowed at 30
    two = search(tbl, [out], n_best=20, max_length=2)
    assert "ropu est là" not in [s["text"] for s in two] and two[0]["text"] == "Naïve  Café"
    one = search(tbl, [out], n_best=20, max_length=1)
    assert (one[0]["text"], one[0]["score"]) == ("Café", 6.0)


def test_a_window_is_trusted_only_for_the_starts_it_holds_best():
    # two windows over tokens 0-4 and 2-6; token 3 ("ropu") is trusted only in the second
    tbl = table(((0, 5), [True, True, True, False, False], 0), ((2, 7), [False, True, True, True, True], 0))
    outs = [logits(5, {3: 9.0}, {3: 9.0}, base=-10.0), logits(5, {1: 4.0}, {1: 4.0}, base=-10.0)]
    spans = search(tbl, outs)
    assert spans[0]["text"] == "ropu" and spans[0]["score"] == 8.0  # the second window's view of it


def test_windows_are_compared_by_how_much_more_they_believe_the_span_than_its_absence():
    tbl = table(((0, 5), None, 0), ((2, 7), None, 0))
    # the first window gives "Naïve" 6 but is sure the evidence is not here (null 10); the second gives "là" 4
    outs = [logits(5, {0: 3.0}, {0: 3.0}, null=5.0), logits(5, {3: 2.0}, {3: 2.0}, null=-1.0)]
    assert search(tbl, outs)[0]["text"] == "là"


def test_same_span_from_two_windows_counts_once_with_its_best_score():
    tbl = table(((0, 5), None, 0), ((2, 7), None, 0))
    outs = [logits(5, {3: 2.0}, {3: 2.0}), logits(5, {1: 3.0}, {1: 3.0})]
    spans = search(tbl, outs, n_best=20)
    ropu = [s for s in spans if s["text"] == "ropu"]
    assert len(ropu) == 1 and ropu[0]["score"] == 6.0
    assert len({(s["start"], s["end"]) for s in spans}) == len(spans)


def test_whitespace_a_tokenizer_puts_in_its_offsets_is_trimmed():
    assert best_spans("a  bc", [(1.0, 1, 5)], 3)[0] == {"text": "bc", "start": 3, "end": 5, "score": 1.0,
                                                       "probability": 1.0}


def test_span_answers_and_evidence_use_their_own_logits_and_limits():
    tbl = table(((0, 7), None, 0))
    out = logits(7, {0: 1.0}, {6: 1.0})
    out["start_logits"][FIRST + 3] = out["end_logits"][FIRST + 3] = 5.0  # answer: "ropu"
    questions = [span_q("q1"), span_q("q2", context="")]
    predictions, nbest = decode_predictions(questions, tbl, [out], n_best_size=3, max_answer_length=3,
                                            max_evidence_length=30)
    assert predictions["q1"] == {"answer": "ropu", "evidence": "Naïve  Café,  ropu est là.", "answer_start": 14,
                                 "evidence_start": 0}
    assert predictions["q2"] == {"answer": "", "evidence": ""}  # a question without windows
    assert nbest["q2"] == {"answer": [], "evidence": [], "windows": 0}
    assert list(predictions) == ["q1", "q2"] and len(nbest["q1"]["answer"]) == 3
    assert set(nbest["q1"]["evidence"][0]) == {"text", "start", "end", "score", "probability"}


def test_an_option_keeps_its_most_probable_window_and_padded_options_never_win():
    q = ChoiceQuestion(qid="p-0", passage_id="p", index=0, passage=CONTEXT, question="?", options=["x", "y", "z"],
                       answer="B", evidences=None)
    tbl = table(((0, 5), None, 0), ((2, 7), None, 0), task="choice", options=3)
    outs = [logits(5, {3: 2.0}, {3: 2.0}), logits(5, {1: 3.0}, {1: 3.0})]
    outs[0]["option_logits"] = np.array([0.0, 0.0, 0.0, 50.0], dtype=np.float32)  # a fourth, padded option
    outs[1]["option_logits"] = np.array([0.0, 4.0, 0.0, 50.0], dtype=np.float32)
    predictions, nbest = decode_predictions([q], tbl, outs, 5, 30, 30)
    assert predictions["p-0"] == {"answer": "B", "evidence": "ropu", "evidence_start": 14}
    assert [c["label"] for c in nbest["p-0"]["answer"]] == ["B", "A", "C"] and nbest["p-0"]["windows"] == 2
    assert nbest["p-0"]["answer"][1]["probability"] == pytest.approx(1 / 3, abs=1e-6)  # A's best: the first window


def test_evidence_may_start_where_its_window_is_not_the_most_trusted_one():
    tbl = table(((0, 5), [True, True, True, False, False], 0))
    out = logits(5, {3: 9.0}, {4: 9.0}, base=-10.0)
    answer = window_spans(tbl, 0, out["start_logits"], out["end_logits"], 5, 30)
    assert all(start != 14 for _, start, _ in answer)
    evidence = window_spans(tbl, 0, out["start_logits"], out["end_logits"], 5, 30, trusted_starts=False)
    assert max(evidence)[1:] == (14, 22)  # "ropu est"


def same_text(answer):
    return score_tokens(answer)


@needs_punkt
def test_span_probability_is_the_models_not_a_softmax_over_the_nbest():
    """One candidate left does not make p(ŷ) 1: the null position takes e^20 times the answer's start mass."""
    tbl = table(((0, 7), None, 0))
    out = logits(7, {3: 0.0}, {3: 0.0}, base=-10000.0, null=20.0)
    out["end_logits"][0] = -10000.0  # every end on "ropu"
    found = window_spans(tbl, 0, out["start_logits"], out["end_logits"], 20, 30)
    assert best_spans(CONTEXT, found, 20)[0]["probability"] == 1.0  # the n-best softmax: how spans compare
    p = span_probability(tbl, [0], [out], CONTEXT, same_text("ropu"), 30)
    assert p == pytest.approx(np.exp(-20.0), rel=1e-6)


@needs_punkt
def test_span_probability_sums_every_span_whose_text_normalizes_to_the_answer():
    tbl = table(((0, 7), None, 0))
    out = logits(7, {1: 0.0}, {1: 0.0, 2: 0.0}, base=-10000.0, null=-10000.0)  # "Café" and "Café," share p_end
    assert span_probability(tbl, [0], [out], CONTEXT, same_text("café"), 30) == pytest.approx(1.0, abs=1e-9)
    assert span_probability(tbl, [0], [out], CONTEXT, same_text("ropu"), 30) == pytest.approx(0.0, abs=1e-12)
    assert span_probability(tbl, [0], [out], CONTEXT, same_text("café"), 1) == pytest.approx(0.5, abs=1e-9)
    # two windows seeing the same span: the most confident window's sum, never counted twice
    two = table(((0, 7), None, 0), ((0, 7), None, 0))
    half = logits(7, {1: 0.0}, {1: 0.0, 3: 0.0}, base=-10000.0, null=-10000.0)
    assert span_probability(two, [0, 1], [out, half], CONTEXT, same_text("café"), 30) == pytest.approx(1.0, abs=1e-9)


def every_span_probability(tbl, windows, outputs, passage, key, max_length):
    """p(ŷ) the slow way, for reference: every span within `max_length` tokenized and compared."""
    best = 0.0
    for window in windows:
        offsets, _ = tbl.passage(window)
        first = int(tbl.passage_pos[window])
        p_start, p_end = (np.exp(x - x.max()) for x in (outputs[window][k].astype(np.float64)
                                                         for k in ("start_logits", "end_logits")))
        p_start, p_end = p_start / p_start.sum(), p_end / p_end.sum()
        total = 0.0
        for s in range(len(offsets)):
            for e in range(s, min(s + max_length, len(offsets))):
                text = passage[offsets[s][0]:offsets[e][1]].strip()
                probability = float(p_start[first + s] * p_end[first + e])
                if probability >= 1e-15 and text and score_tokens(text) == key:
                    total += probability
        best = max(best, total)
    return best


TRICKY = ('The "Theatre" an ant can\'t see: ΟΔΟΣ, İstanbul and Straße (STRASSE) at 5 a.m. — the 1,500 '
          'THE-an "a" 北京大学 isn\'t ain\'t cannot naïve NAÏVE ‘Tea’… then')


@needs_punkt
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_span_probability_tokenizes_only_spans_that_can_match_and_sums_the_same(seed):
    """Spans whose letters and digits differ from ŷ's (article letters aside) are skipped untokenized; the
    sum is bit for bit the one that tokenizes every span, for every span text of the passage as ŷ."""
    offsets = [(m.start(), m.end()) for m in re.finditer(r"\w+|[^\w\s]", TRICKY)]
    builder = TableBuilder("span", token_types=False)
    for first in (0, 10):  # two overlapping windows
        span = offsets[first:first + 30]
        builder.add([([0] * (FIRST + len(span) + 1), None)], span, [True] * len(span), question_index=0,
                    passage_pos=FIRST, null_pos=0)
    tbl = builder.build()
    rng = np.random.default_rng(seed)
    outputs = [{"start_logits": rng.normal(0, 3, FIRST + 31).astype(np.float32),
                "end_logits": rng.normal(0, 3, FIRST + 31).astype(np.float32)} for _ in range(2)]
    keys = {score_tokens(TRICKY[offsets[s][0]:offsets[e][1]]) for s in range(len(offsets))
            for e in range(s, min(s + 4, len(offsets)))} - {()}
    assert len(keys) > 80
    for key in sorted(keys):
        expected = every_span_probability(tbl, [0, 1], outputs, TRICKY, key, 6)
        assert span_probability(tbl, [0, 1], outputs, TRICKY, key, 6) == expected, key
