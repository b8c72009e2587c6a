"""The pure parts of the model-in-the-loop coupling figures: fact order, FARM(k), comprehensiveness, sufficiency."""

import math

import pytest

from helpers.common import needs_punkt
from expmrc.errors import ExpmrcError
from expmrc.metrics.faithfulness import (Deletions, Erasure, answer_changed, erasure_figures,
                                         farm, order_facts, up_to)
from expmrc.text.sentences import split_sentences

PASSAGE = "Tom lives in Paris. He likes tea. Ann likes jam. She lives in Rome."
SENTENCES = split_sentences(PASSAGE)   # starts 0, 20, 34, 49


def test_relevant_facts_overlap_the_evidence_and_both_groups_go_by_score():
    # the evidence runs from inside sentence 1 into sentence 2 (it straddles their boundary)
    order = order_facts(SENTENCES, [0.1, 0.5, 0.9, 0.3], (23, 40))
    assert (order.relevant, order.irrelevant) == ((2, 1), (3, 0))
    order = order_facts(SENTENCES, [0.2, 0.2, 0.7, 0.2], (0, len(PASSAGE)))
    assert (order.relevant, order.irrelevant) == ((2, 0, 1, 3), ())        # ties: the earlier sentence first


def test_an_empty_evidence_leaves_every_fact_irrelevant_and_touching_is_not_overlapping():
    assert order_facts(SENTENCES, [0.1, 0.2, 0.3, 0.4], (5, 5)).relevant == ()
    assert order_facts(SENTENCES, [0.1, 0.2, 0.3, 0.4], (19, 20)).relevant == ()   # only the space between


def test_a_single_sentence_passage_is_one_fact():
    one = split_sentences("Paris is big")
    order = order_facts(one, [0.4], (0, 5))
    assert (order.relevant, order.irrelevant) == ((0,), ())
    assert up_to(order.relevant, 3) == (0,) and up_to(order.irrelevant, 3) == ()


def test_up_to_k_takes_all_facts_when_there_are_k_or_fewer_and_refuses_k_below_1():
    assert up_to((2, 0, 1), 2) == (2, 0) and up_to((2, 0, 1), 7) == (2, 0, 1)
    for k in (0, -1, 1.5, True):
        with pytest.raises(ExpmrcError, match="k must be a whole number of facts, at least 1"):
            up_to((2, 0, 1), k)


@pytest.mark.parametrize("scores, message", [([0.1, 0.2], "2 evidence scores for 4 sentences"),
                                             ([0.1, math.nan, 0.2, 0.3], "sentence 1's evidence score is nan")])
def test_fact_scores_must_be_one_finite_number_per_sentence(scores, message):
    with pytest.raises(ValueError, match=message):
        order_facts(SENTENCES, scores, (0, 10))


@needs_punkt
@pytest.mark.parametrize("before, after, changed", [
    ("Paris", "paris.", False), ("Paris", "Rome", True), ("", ".", False), ("", "Paris", True),
])
def test_a_span_answer_changes_when_its_normalized_text_does(before, after, changed):
    assert answer_changed(before, after, "span") is changed


def test_a_choice_answer_changes_when_its_label_does():
    assert answer_changed("A", "A", "choice") is False and answer_changed("A", "C", "choice") is True


RECORDS = [
    Deletions("q1", relevant_facts=2, relevant=(False, True), irrelevant_facts=3, irrelevant=(False, False, False)),
    Deletions("q2", relevant_facts=1, relevant=(True,), irrelevant_facts=0, irrelevant=()),
    Deletions("q3", relevant_facts=0, relevant=(), irrelevant_facts=2, irrelevant=(True, True)),
    Deletions("q4", relevant_facts=5, relevant=(False, False, False, False), irrelevant_facts=1, irrelevant=(False,)),
]


@pytest.mark.parametrize("k, c_rel, c_irr", [(1, 1 / 4, 1 / 4), (2, 2 / 4, 1 / 4), (4, 2 / 4, 1 / 4)])
def test_farm_is_c_rel_over_one_plus_c_irr_with_shares_of_all_questions(k, c_rel, c_irr):
    # q2 has one relevant fact: from k = 1 on it is deleted, and the answer changed; q3 has none to delete
    result = farm(RECORDS, k)
    assert (result.k, result.c_rel, result.c_irr) == (k, c_rel, c_irr)
    assert result.farm == pytest.approx(c_rel / (1 + c_irr))


def test_farm_refuses_k_below_1_a_record_that_stops_too_early_and_no_questions():
    with pytest.raises(ExpmrcError, match="k must be a whole number"):
        farm(RECORDS, 0)
    with pytest.raises(ExpmrcError, match="question q4: FARM\\(5\\) needs the answer after deleting 5 relevant"):
        farm(RECORDS, 5)
    with pytest.raises(ExpmrcError, match="at least one question"):
        farm([], 1)
    with pytest.raises(ExpmrcError, match="question q9: 2 relevant deletions recorded for 1 relevant facts"):
        Deletions("q9", 1, (False, True), 0, ())


def test_comprehensiveness_and_sufficiency_are_mean_drops_split_by_correctness():
    records = [Erasure("q1", 0.9, 0.2, 0.8, True), Erasure("q2", 0.6, 0.5, 0.1, False),
               Erasure("q3", 0.5, 0.1, 0.5, True), Erasure("q4", None, None, None, False)]
    figures, notes = erasure_figures(records)
    assert figures["COUNTED"] == 3
    assert figures["COMPREHENSIVENESS"] == pytest.approx((0.7 + 0.1 + 0.4) / 3)
    assert figures["SUFFICIENCY"] == pytest.approx((0.1 + 0.5 + 0.0) / 3)
    assert figures["COMPREHENSIVENESS_CORRECT"] == pytest.approx(0.55)
    assert figures["SUFFICIENCY_WRONG"] == pytest.approx(0.5)
    assert notes == ["1 question(s) with an empty answer are left out"]


def test_without_gold_answers_the_split_is_omitted_with_a_note():
    figures, notes = erasure_figures([Erasure("q1", 0.9, 0.2, 0.8), Erasure("q2", 0.6, 0.5, 0.1, False)])
    assert figures["COMPREHENSIVENESS"] == pytest.approx(0.4)
    assert figures["COMPREHENSIVENESS_CORRECT"] is figures["SUFFICIENCY_WRONG"] is None
    assert notes == ["the split by correct / wrong answers is omitted: 1 question(s) have no gold answer"]


@pytest.mark.parametrize("values, message", [((0.5, math.nan, 0.1), "without_evidence is nan, not a number in"),
                                             ((1.5, 0.1, 0.1), "full is 1.5, not a number in"),
                                             ((0.5, None, 0.1), "give all three probabilities")])
def test_probabilities_must_be_finite_and_complete(values, message):
    with pytest.raises(ExpmrcError, match=f"question q1: .*{message}"):
        Erasure("q1", *values)
