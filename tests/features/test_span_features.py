"""Span windows and labels on hard offsets: window borders, long evidence, Chinese, multi-piece words, casing."""

from __future__ import annotations

import pytest
import torch

from expmrc.data.datasets import SpanQuestion
from expmrc.features.span import (IGNORE, FeatureReport, SpanDataset, build_span_features, collate_span,
                                  locate_labels, max_context_flags, window_starts)
from helpers.tiny_bert import tiny_tokenizer as tokenizer, tiny_vocab



FIRST = object()  # answer_start: the first occurrence of the answer


def question(context, answer, evidence=None, start=FIRST, text="what ?", qid="q"):
    if start is FIRST:
        start = context.index(answer) if answer in context else 0
    return SpanQuestion(qid=qid, question=text, context=context, answers=[answer], answer_starts=[start],
                        evidences=None if evidence is None else [evidence])


def label_text(q, feature, which="answer"):
    """The passage text a window's label points at, via its character offsets (None for [CLS])."""
    start, end = ((feature.start_position, feature.end_position) if which == "answer"
                  else (feature.evidence_start, feature.evidence_end))
    if start in (0, IGNORE):
        return None
    first, last = start - feature.context_start, end - feature.context_start
    return q.context[feature.offsets[first][0]:feature.offsets[last][1]]


LETTERS = " ".join("abcdefghijklmnopqrst")  # 20 one-piece tokens: a=0, b=1, ... t=19


def build(questions, tok=None, max_seq_length=13, doc_stride=4, max_query_length=16, is_training=True):
    return build_span_features(questions, tok or tokenizer(), max_seq_length, doc_stride, max_query_length,
                               is_training, show_progress=False)


def test_windows_step_by_doc_stride_and_cover_the_passage():
    # "what ?" is 2 tokens, so 13 - 2 - 3 = 8 passage tokens per window
    features, report = build([question(LETTERS, "c")])
    assert [f.offsets[0][0] for f in features] == [LETTERS.index(c) for c in "aeim"]
    assert features[-1].offsets[-1][1] == len(LETTERS) and report.windows == 4
    assert window_starts(20, 8, 4) == [0, 4, 8, 12] and window_starts(8, 8, 4) == [0]
    first = features[0]
    assert first.input_ids[0] == tokenizer().cls_token_id and first.context_start == 4
    item = SpanDataset(features, with_labels=True)[0]
    assert item["token_type_ids"].tolist() == [0] * 4 + [1] * 9


def test_answer_on_a_window_border():
    # h is token 7: the last token of window 0 (a..h) and inside window 1 (e..l)
    q = question(LETTERS, "h")
    features, _ = build([q])
    assert [label_text(q, f) for f in features] == ["h", "h", None, None]
    assert features[0].end_position == features[0].context_start + 7
    # g h i crosses the end of window 0: only windows wholly holding it are labelled
    q = question(LETTERS, "g h i")
    assert [label_text(q, f) for f in build([q])[0]] == [None, "g h i", None, None]


def test_evidence_longer_than_a_window_is_cls_everywhere_while_the_answer_is_kept():
    q = question(LETTERS, "f", evidence="c d e f g h i j k")  # 9 tokens, windows hold 8
    features, report = build([q])
    assert all((f.evidence_start, f.evidence_end) == (0, 0) for f in features)
    assert [label_text(q, f) for f in features] == ["f", "f", None, None]
    q = question(LETTERS, "f", evidence="e f g")
    assert [label_text(q, f, "evidence") for f in build([q])[0]] == ["e f g", "e f g", None, None]


def test_each_token_is_trusted_in_exactly_one_window():
    starts = window_starts(20, 8, 4)
    flags = max_context_flags(starts, 8, 20)
    for token in range(20):
        owners = [w for w, s in enumerate(starts) if s <= token < s + len(flags[w]) and flags[w][token - s]]
        assert len(owners) == 1
    # token 6 sits 6 from the start of window 0 but in the middle of window 1 (e..l): window 1 owns it
    assert flags[1][6 - 4] and not flags[0][6]


def test_chinese_passage_offsets_are_characters():
    context = "北京是中国的首都。上海是城市。"
    q = question(context, "首都", evidence="北京是中国的首都。", text="什么是北京？")
    features, report = build([q], max_seq_length=64)
    (feature,) = features
    assert label_text(q, feature) == "首都" and label_text(q, feature, "evidence") == "北京是中国的首都。"
    assert feature.offsets[:3] == [(0, 1), (1, 2), (2, 3)]


def test_words_of_several_pieces_and_answers_inside_a_word():
    context = "the king is xyzzy of paris"
    q = question(context, "xyzzy")
    (feature,), _ = build([q], max_seq_length=64)
    assert feature.end_position - feature.start_position == 4  # x ##y ##z ##z ##y
    assert label_text(q, feature) == "xyzzy"
    q = question(context, "zz", start=context.index("zz"))  # starts and ends inside the word
    (feature,), _ = build([q], max_seq_length=64)
    assert label_text(q, feature) == "zz"


@pytest.mark.parametrize("cased", [False, True])
def test_do_lower_case_both_ways_keeps_original_text(cased):
    context = "The capital of France is PARIS and Paris ."
    q = question(context, "PARIS")
    (feature,), _ = build([q], tok=tokenizer(cased), max_seq_length=64)
    assert label_text(q, feature) == "PARIS"  # the passage's own casing, never the lowered pieces
    pieces = feature.end_position - feature.start_position + 1
    assert pieces == (5 if cased else 1)  # cased vocab has Paris but not PARIS
    q = question(context, "Paris")
    (feature,), _ = build([q], tok=tokenizer(cased), max_seq_length=64)
    assert label_text(q, feature) == "Paris" and feature.end_position == feature.start_position


def test_accented_characters_map_back_to_the_original():
    context = "the café is naïve"
    q = question(context, "naïve")
    (feature,), _ = build([q], max_seq_length=64)
    assert label_text(q, feature) == "naïve"


def test_question_truncated_to_max_query_length():
    long_question = " ".join(["what"] * 40)
    (feature,), _ = build([question(LETTERS, "c", text=long_question)], max_seq_length=64, max_query_length=5)
    assert feature.context_start == 7  # [CLS] + 5 question tokens + [SEP]


def test_bad_training_input_is_repaired_or_skipped_and_counted():
    report = FeatureReport()
    context = "the king is bo . the king is bo ."
    evidence = "the king is bo ."
    exact = locate_labels(question(context, "bo", evidence, start=29), report)
    assert exact.answer == (29, 31) and exact.evidence == (17, 33) and report.answer_start_repaired == 0
    near_second = locate_labels(question(context, "bo", evidence, start=25), report)  # real starts: 12 and 29
    assert near_second.answer == (29, 31) and report.answer_start_repaired == 1
    assert locate_labels(question(context, "bo", evidence, start=None), report).answer == (12, 14)
    assert locate_labels(question(context, "zz", evidence, start=0, qid="missing"), report) is None
    assert locate_labels(question("", "zz", evidence, start=0, qid="empty"), report) is None
    no_evidence = locate_labels(question(context, "bo", evidence="not here", qid="noev"), report)
    assert no_evidence.answer == (12, 14) and no_evidence.evidence is None
    assert locate_labels(question(context, "bo", qid="nofield"), report).evidence is None
    assert (report.answer_start_repaired, report.answer_skipped, report.empty_context, report.evidence_missing) == (2, 1, 1, 2)
    assert report.examples["answer_skipped"] == ["missing"]
    assert "answer skipped: 1 (e.g. missing)" in report.summary()


def test_repeated_evidence_takes_the_occurrence_holding_the_answer():
    context = "the king is bo . the capital is bo . the king is bo ."
    label = locate_labels(question(context, "bo", evidence="is bo .", start=context.rindex("bo")), FeatureReport())
    assert label.evidence == (context.rindex("is bo ."), len(context))


def test_skipped_questions_make_no_windows_and_unlabelled_evidence_is_ignored():
    good = question("a b c", "b", evidence="a b c", qid="good")
    bad = question("a b c", "zz", start=0, qid="bad")
    no_evidence = question("a b c", "c", qid="noev")
    features, report = build([good, bad, no_evidence], max_seq_length=64)
    assert [f.question_index for f in features] == [0, 2]
    assert (features[1].evidence_start, features[1].evidence_end) == (IGNORE, IGNORE)
    assert report.summary().startswith("3 questions -> 2 windows")


def test_prediction_features_need_no_answers():
    features, report = build([question(LETTERS, "zz", start=0)], is_training=False)
    assert len(features) == 4 and report.answer_skipped == 0


def test_collate_pads_with_an_attention_mask():
    features, _ = build([question("a b c", "b"), question(LETTERS, "c")], max_seq_length=64)
    batch = collate_span([SpanDataset(features, True)[i] for i in range(2)])
    assert batch["input_ids"].shape == (2, 25)
    assert batch["attention_mask"][0].tolist() == [1] * 8 + [0] * 17
    assert batch["start_positions"].tolist() == [5, 6] and batch["input_ids"].dtype == torch.long
