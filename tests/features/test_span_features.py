"""Span windows and labels on hard offsets: window borders, long evidence, Chinese, multi-piece words, casing."""

from __future__ import annotations

import pytest
import torch

from expmrc.data.datasets import SpanQuestion
from expmrc.features.span import build_span_features, training_labels
from expmrc.features.windows import IGNORE, FeatureReport, WindowDataset, max_context, window_starts
from helpers.tiny_bert import tiny_tokenizer as tokenizer

FIRST = object()  # answer_start: the first occurrence of the answer


def question(context, answer, evidence=None, start=FIRST, text="what ?", qid="q"):
    if start is FIRST:
        start = context.index(answer) if answer in context else 0
    return SpanQuestion(qid=qid, question=text, context=context, answers=[answer], answer_starts=[start],
                        evidences=None if evidence is None else [evidence])


def label_text(q, table, window, which="answer"):
    """The passage text a window's label points at, via its character offsets (None for the null position)."""
    names = ("start_positions", "end_positions") if which == "answer" else ("evidence_start", "evidence_end")
    start, end = (int(getattr(table, name)[window]) for name in names)
    if start in (int(table.null_pos[window]), IGNORE):
        return None
    offsets, _ = table.passage(window)
    first = int(table.passage_pos[window])
    return q.context[offsets[start - first][0]:offsets[end - first][1]]


def first_chars(table):
    return [int(table.passage(w)[0][0][0]) for w in range(len(table))]


LETTERS = " ".join("abcdefghijklmnopqrst")  # 20 one-piece tokens: a=0, b=1, ... t=19


def build(questions, tok=None, max_seq_length=13, doc_stride=4, max_query_length=16, is_training=True):
    return build_span_features(questions, tok or tokenizer(), max_seq_length, doc_stride, max_query_length,
                               is_training)


def test_windows_step_by_doc_stride_and_cover_the_passage():
    # "what ?" is 2 tokens, so 13 - 2 - 3 = 8 passage tokens per window
    table, report = build([question(LETTERS, "c")])
    assert first_chars(table) == [LETTERS.index(c) for c in "aeim"]
    assert int(table.passage(3)[0][-1][1]) == len(LETTERS) and report.windows == 4
    assert window_starts(20, 8, 4) == [0, 4, 8, 12] and window_starts(8, 8, 4) == [0]
    assert table.row_ids(0)[0] == tokenizer().cls_token_id and table.passage_pos[0] == 4 and table.null_pos[0] == 0
    batch = WindowDataset(table, True, 0).batch([0])
    assert batch["token_type_ids"][0].tolist() == [0] * 4 + [1] * 9
    assert batch["passage_mask"][0].tolist() == [1, 0, 0, 0] + [1] * 8 + [0]


def test_answer_on_a_window_border():
    # h is token 7: the last token of window 0 (a..h) and inside window 1 (e..l)
    q = question(LETTERS, "h")
    table, _ = build([q])
    assert [label_text(q, table, w) for w in range(4)] == ["h", "h", None, None]
    assert table.end_positions[0] == table.passage_pos[0] + 7
    # g h i crosses the end of window 0: only windows wholly holding it are labelled
    q = question(LETTERS, "g h i")
    table, _ = build([q])
    assert [label_text(q, table, w) for w in range(4)] == [None, "g h i", None, None]


def test_evidence_longer_than_a_window_is_null_everywhere_while_the_answer_is_kept():
    q = question(LETTERS, "f", evidence="c d e f g h i j k")  # 9 tokens, windows hold 8
    table, _ = build([q])
    assert all(table.evidence_start[w] == table.null_pos[w] == table.evidence_end[w] for w in range(4))
    assert [label_text(q, table, w) for w in range(4)] == ["f", "f", None, None]
    q = question(LETTERS, "f", evidence="e f g")
    table, _ = build([q])
    assert [label_text(q, table, w, "evidence") for w in range(4)] == ["e f g", "e f g", None, None]


def test_each_token_is_trusted_in_exactly_one_window():
    starts = window_starts(20, 8, 4)
    flags = max_context(starts, [8, 8, 8, 8], 20)
    for token in range(20):
        owners = [w for w, s in enumerate(starts) if s <= token < s + 8 and flags[w][token - s]]
        assert len(owners) == 1
    # token 6 sits 6 from the start of window 0 but in the middle of window 1 (e..l): window 1 owns it
    assert flags[1][6 - 4] and not flags[0][6]
    table, _ = build([question(LETTERS, "c")])
    assert [list(table.passage(w)[1]) for w in range(4)] == flags


def test_chinese_passage_offsets_are_characters():
    context = "北京是中国的首都。上海是城市。"
    q = question(context, "首都", evidence="北京是中国的首都。", text="什么是北京？")
    table, _ = build([q], max_seq_length=64)
    assert len(table) == 1
    assert label_text(q, table, 0) == "首都" and label_text(q, table, 0, "evidence") == "北京是中国的首都。"
    assert table.passage(0)[0][:3].tolist() == [[0, 1], [1, 2], [2, 3]]


def test_words_of_several_pieces_and_answers_inside_a_word():
    context = "the king is xyzzy of paris"
    q = question(context, "xyzzy")
    table, _ = build([q], max_seq_length=64)
    assert table.end_positions[0] - table.start_positions[0] == 4  # x ##y ##z ##z ##y
    assert label_text(q, table, 0) == "xyzzy"
    q = question(context, "zz", start=context.index("zz"))  # starts and ends inside the word
    table, _ = build([q], max_seq_length=64)
    assert label_text(q, table, 0) == "zz"


@pytest.mark.parametrize("cased", [False, True])
def test_casing_both_ways_keeps_original_text(cased):
    context = "The capital of France is PARIS and Paris ."
    q = question(context, "PARIS")
    table, _ = build([q], tok=tokenizer(cased), max_seq_length=64)
    assert label_text(q, table, 0) == "PARIS"  # the passage's own casing, never the lowered pieces
    assert table.end_positions[0] - table.start_positions[0] + 1 == (5 if cased else 1)  # cased has Paris, not PARIS
    q = question(context, "Paris")
    table, _ = build([q], tok=tokenizer(cased), max_seq_length=64)
    assert label_text(q, table, 0) == "Paris" and table.end_positions[0] == table.start_positions[0]


def test_accented_characters_map_back_to_the_original():
    context = "the café is naïve"
    q = question(context, "naïve")
    table, _ = build([q], max_seq_length=64)
    assert label_text(q, table, 0) == "naïve"


def test_question_truncated_to_max_query_length():
    long_question = " ".join(["what"] * 40)
    table, report = build([question(LETTERS, "c", text=long_question, qid="long")], max_seq_length=64,
                          max_query_length=5)
    assert table.passage_pos[0] == 7  # [CLS] + 5 question tokens + [SEP]
    assert report.question_truncated == 1 and report.examples["question_truncated"] == ["long"]


def test_bad_training_input_is_repaired_or_skipped_and_counted():
    report = FeatureReport()
    context = "the king is bo . the king is bo ."
    evidence = "the king is bo ."
    assert training_labels(question(context, "bo", evidence, start=29), report) == ((29, 31), (17, 33))
    assert report.answer_start_repaired == 0
    near_second = training_labels(question(context, "bo", evidence, start=25), report)  # real starts: 12 and 29
    assert near_second[0] == (29, 31) and report.answer_start_repaired == 1
    assert training_labels(question(context, "bo", evidence, start=None), report)[0] == (12, 14)
    assert training_labels(question(context, "zz", evidence, start=0, qid="missing"), report) is None
    assert training_labels(question("", "zz", evidence, start=0, qid="empty"), report) is None
    assert training_labels(question(context, "bo", evidence="not here", qid="noev"), report) == ((12, 14), None)
    assert training_labels(question(context, "bo", qid="nofield"), report)[1] is None
    assert (report.answer_start_repaired, report.answer_not_found, report.empty_passage,
            report.evidence_not_found, report.evidence_missing) == (2, 1, 1, 1, 1)
    assert report.examples["answer_not_found"] == ["missing"]
    assert "answer not found: 1 (e.g. missing)" in report.summary()


def test_repeated_evidence_takes_the_occurrence_holding_the_answer():
    context = "the king is bo . the capital is bo . the king is bo ."
    _, evidence = training_labels(question(context, "bo", evidence="is bo .", start=context.rindex("bo")),
                                  FeatureReport())
    assert evidence == (context.rindex("is bo ."), len(context))


def test_evidence_whose_spacing_differs_is_found_and_counted():
    context = "the king  is bo .\nthe end"
    report = FeatureReport()
    _, evidence = training_labels(question(context, "bo", evidence="the king is bo ."), report)
    assert context[evidence[0]:evidence[1]] == "the king  is bo ." and report.evidence_whitespace_repaired == 1


def test_skipped_questions_make_no_windows_and_unlabelled_evidence_is_ignored():
    good = question("a b c", "b", evidence="a b c", qid="good")
    bad = question("a b c", "zz", start=0, qid="bad")
    no_evidence = question("a b c", "c", qid="noev")
    table, report = build([good, bad, no_evidence], max_seq_length=64)
    assert table.question_index.tolist() == [0, 2]
    assert (table.evidence_start[1], table.evidence_end[1]) == (IGNORE, IGNORE)
    assert report.summary().startswith("3 questions -> 2 windows") and report.skipped == 1


def test_prediction_needs_no_answers_and_an_empty_passage_still_gets_a_window():
    table, report = build([question(LETTERS, "zz", start=0), question("", "x", start=0)], is_training=False)
    assert len(table) == 5 and report.skipped == 0 and report.answer_not_found == 0
    assert table.question_index.tolist() == [0, 0, 0, 0, 1] and len(table.passage(4)[0]) == 0
    assert table.start_positions.tolist() == [IGNORE] * 5


def test_batches_pad_with_an_attention_mask_and_count_unknown_tokens():
    table, report = build([question("a b c", "b"), question(LETTERS, "c"), question("a ☃ c", "c")], max_seq_length=64)
    assert WindowDataset(table, True, pad_id=0, pad_multiple=8).batch([0, 1])["input_ids"].shape == (2, 32)
    batch = WindowDataset(table, True, pad_id=0).batch([0, 1])
    assert batch["input_ids"].shape == (2, 25) and batch["input_ids"].dtype == torch.long
    assert batch["attention_mask"][0].tolist() == [1] * 8 + [0] * 17
    assert batch["start_positions"].tolist() == [5, 6]
    assert report.unknown_tokens == 1 and report.tokens == 3 * 2 + 3 + 20 + 3
