"""Sentence splitting: English and Chinese edge cases, both rules, offsets checked against the passage."""

import pytest

from helpers.common import dev_set
from expmrc.data.datasets import SpanQuestion, load_dataset
from expmrc.text.sentences import clause_cuts, split_sentences


def texts(passage, **kwargs):
    sentences = split_sentences(passage, **kwargs)
    for s in sentences:  # every sentence maps back exactly and carries no outer whitespace
        assert passage[s.start:s.end] == s.text
        assert s.text == s.text.strip() and s.text
    assert all(a.end <= b.start for a, b in zip(sentences, sentences[1:]))
    return [s.text for s in sentences]


def test_english_decimals_stay_whole_and_final_sentence_needs_no_delimiter():
    assert texts("It cost $3.5 million. Prices rose 2.5% in 2019") == [
        "It cost $3.5 million.", "Prices rose 2.5% in 2019"]


def test_closing_quotes_and_brackets_stay_with_their_sentence():
    assert texts('He said, "Go home." Then he left.') == ['He said, "Go home."', "Then he left."]
    assert texts("(It rained all day.) We stayed in!) Fine?”  Yes.") == [
        "(It rained all day.)", "We stayed in!)", "Fine?”", "Yes."]


def test_abbreviations_split_in_simple_rule_but_not_in_refined():
    passage = "Mr. Smith met Dr. Jones in the U.S. capital. J. K. Rowling wrote it, e.g. this. It sold."
    assert texts(passage) == ["Mr.", "Smith met Dr.", "Jones in the U.S.", "capital.", "J.", "K.",
                              "Rowling wrote it, e.g.", "this.", "It sold."]
    assert texts(passage, rule="refined") == [
        "Mr. Smith met Dr. Jones in the U.S. capital.", "J. K. Rowling wrote it, e.g. this.", "It sold."]


def test_refined_rule_splits_missing_spaces_and_keeps_lowercase_continuations():
    passage = "They live near the lake.Some say it is big. “Where?” she asked. See Amazon.com now."
    assert texts(passage) == ["They live near the lake.Some say it is big.", "“Where?”", "she asked.",
                              "See Amazon.com now."]
    assert texts(passage, rule="refined") == [
        "They live near the lake.", "Some say it is big.", "“Where?” she asked.", "See Amazon.com now."]


def test_chinese_terminators_quotes_and_no_final_delimiter():
    assert texts("他说：“走吧。”我们就走了！真的吗？好") == ["他说：“走吧。”", "我们就走了！", "真的吗？", "好"]


def test_chinese_numbering_decimals_and_ascii_question_marks():
    passage = "1.由于价格上涨3.5%。2.销量下降了?是的。"
    assert texts(passage) == ["1.由于价格上涨3.5%。", "2.销量下降了?是的。"]
    assert texts(passage, rule="refined") == ["1.由于价格上涨3.5%。", "2.销量下降了?", "是的。"]


def test_semicolons_are_terminators_only_when_asked():
    assert texts("甲；乙。") == ["甲；乙。"]
    assert texts("甲；乙。A; b.", semicolons=True) == ["甲；", "乙。", "A;", "b."]


def test_line_breaks_end_sentences_and_blank_or_undelimited_passages():
    assert texts("First line\n\nSecond line") == ["First line", "Second line"]
    assert texts("") == [] and texts("  \n\t ") == []
    [only] = split_sentences("   no delimiter at all  ")
    assert (only.text, only.start, only.end) == ("no delimiter at all", 3, 22)


def test_unknown_rule_is_refused():
    with pytest.raises(ValueError, match="unknown sentence rule"):
        split_sentences("A.", rule="fancy")


def test_clause_cuts_inside_a_sentence():
    passage = "前言。成纪在战国时便设县，秦朝时属于陇西郡；县址在今天水市。"
    second = split_sentences(passage)[1]
    cuts = clause_cuts(passage, second)
    assert cuts[0] == second.start and cuts[-1] == second.end
    assert [passage[a:b] for a, b in zip(cuts, cuts[1:])] == ["成纪在战国时便设县，", "秦朝时属于陇西郡；", "县址在今天水市。"]


@pytest.mark.data
@pytest.mark.parametrize("subset", ["squad", "cmrc2018", "race", "c3"])
def test_every_dev_passage_maps_back_exactly(subset):
    dataset = load_dataset(dev_set(subset))
    passages = {q.context if isinstance(q, SpanQuestion) else q.passage for q in dataset.questions}
    for passage in passages:
        for rule in ("simple", "refined"):
            assert texts(passage, rule=rule)
