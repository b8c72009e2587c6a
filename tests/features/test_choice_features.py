"""Multiple-choice windows and labels, checked against offsets worked out by hand."""

from __future__ import annotations

import pytest

from helpers.choice_tiny import question, tokenizer
from expmrc.errors import ExpmrcError
from expmrc.features.choice import build_choice_features, qa_text
from expmrc.features.windows import IGNORE, WindowDataset, window_starts
from expmrc.text.locate import locate_evidence


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    return tokenizer(tmp_path_factory.mktemp("vocab"))


def ids(tok, tokens):
    return tok.convert_tokens_to_ids(tokens)


def rows(table, window):
    return [table.row_ids(r).tolist() for r in table.rows(window)]


def test_chinese_row_layout_and_evidence_positions(tok):
    passage = "我们的猫坐在上。它很好。"
    q = question("p1-0", passage, "猫在哪里？", ["上", "不对"], "A", evidences=["它很好。", "我们的猫"])
    table, report = build_choice_features([q], tok, 64, 128, 128, is_training=True)
    assert report.windows == 1 and report.multi_window_questions == 0
    p_ids, q_ids = ids(tok, list(passage)), ids(tok, list("猫在哪里？"))
    cls, sep = tok.cls_token_id, tok.sep_token_id
    assert rows(table, 0) == [[cls] + p_ids + [sep] + q_ids + ids(tok, ["上"]) + [sep],
                              [cls] + p_ids + [sep] + q_ids + ids(tok, ["不", "对"]) + [sep]]
    assert WindowDataset(table, True, 0).batch([0])["token_type_ids"][0, 1].tolist() == [0] * 14 + [1] * 8
    assert table.labels[0] == 0 and table.passage_pos[0] == 1 and table.null_pos[0] == 0
    # "它很好。" is characters 8..11, passage tokens 8..11, row positions 9..12
    assert (table.evidence_start[0], table.evidence_end[0]) == (9, 12)
    assert table.passage(0)[0][8].tolist() == [8, 9] and table.passage(0)[0][11].tolist() == [11, 12]


def test_evidence_inside_a_word_takes_whole_word_pieces(tok):
    passage = "The Cats sat on the mat. It was good."
    # "ats sat" starts inside "Cats" (pieces "cat" "##s"): the span covers both pieces of the word
    q = question("p2-1", passage, "where did the cat sit ?", ["mat", "dog", "cat", "it"], "A", evidences=["ats sat"])
    table, _ = build_choice_features([q], tok, 64, 128, 128, is_training=True)
    assert (table.evidence_start[0], table.evidence_end[0]) == (2, 4)  # cat ##s sat at positions 2, 3, 4
    assert table.passage(0)[0][1:3].tolist() == [[4, 7], [7, 8]]


@pytest.mark.parametrize("lower", [True, False])
def test_offsets_refer_to_the_original_text_both_cases(tmp_path, lower):
    tk = tokenizer(tmp_path, do_lower_case=lower)
    passage = "The Cat sat."
    q = question("p3-0", passage, "what ?", ["cat", "dog"], "A", evidences=["Cat sat"])
    table, report = build_choice_features([q], tk, 32, 128, 128, is_training=True)
    assert table.passage(0)[0].tolist() == [[0, 3], [4, 7], [8, 11], [11, 12]]
    assert (table.evidence_start[0], table.evidence_end[0]) == (2, 3)
    assert (tk.unk_token_id in rows(table, 0)[0][1:5]) == (not lower)  # an uncased vocabulary has no "The"/"Cat"
    assert (report.unknown_tokens > 0) == (not lower)


def test_blank_filling_as_the_original_release_and_truncation_keeping_the_option(tok):
    assert qa_text("The cat sat on the _ .", "mat") == "The cat sat on the mat ."
    assert qa_text("Where did the cat sit?", "mat") == "Where did the cat sit? mat"
    assert qa_text("It is __.", "a mat") == "It is a mata mat."  # each underscore, as the original replaces
    passage = " ".join(f"w{i}" for i in range(30))  # 30 passage tokens
    q = question("p4-0", passage, "w50 w51 w52 w53 w54 w55", ["w56 w57", "w58"], "B", evidences=["w22 w23 w24"])
    one, _ = build_choice_features([q], tok, 20, 5, 8, is_training=True)
    # by default one window, as the original: the passage cut from its end to 20 - 3 - 5 = 12 tokens; the
    # evidence (tokens 22..24) lies beyond the cut and points to the null position
    assert len(one) == 1 and [len(r) for r in rows(one, 0)] == [20, 20]
    assert (int(one.evidence_start[0]), int(one.evidence_end[0])) == (0, 0)
    table, report = build_choice_features([q], tok, 20, 5, 8, is_training=True, sliding_windows=True)
    # question + option cut to their last 5 tokens, so the option stays
    first = rows(table, 0)
    assert first[0][-6:] == ids(tok, ["w53", "w54", "w55", "w56", "w57", "[SEP]"])
    assert first[1][-6:] == ids(tok, ["w52", "w53", "w54", "w55", "w58", "[SEP]"])
    assert report.question_truncated == 1
    # 20 - 3 - 5 = 12 passage tokens per window, starts 8 apart: [0,12) [8,20) [16,28) [24,30)
    assert [len(table.passage(w)[0]) for w in range(len(table))] == [12, 12, 12, 6]
    assert [int(table.passage(w)[0][0][0]) for w in range(4)] == [passage.index(w) for w in ("w0", "w8", "w16", "w24")]
    assert report.multi_window_questions == 1 and report.windows == 4
    # evidence = tokens 22..24: only window [16,28) holds it wholly, at positions 1+6 .. 1+8
    assert list(zip(table.evidence_start.tolist(), table.evidence_end.tolist())) == [(0, 0), (0, 0), (7, 9), (0, 0)]
    assert set(table.labels.tolist()) == {1}
    assert all(len(row) <= 20 for w in range(4) for row in rows(table, w))


def test_evidence_longer_than_a_window_points_to_the_null_position(tok):
    passage = " ".join(f"w{i}" for i in range(30))
    q = question("p5-0", passage, "w50", ["w51", "w52"], "A", evidences=[" ".join(f"w{i}" for i in range(2, 20))])
    table, _ = build_choice_features([q], tok, 16, 4, 4, is_training=True, sliding_windows=True)
    assert len(table) > 1 and set(table.evidence_start.tolist()) == {0} and set(table.evidence_end.tolist()) == {0}


def test_windows_cover_the_passage():
    assert window_starts(0, 10, 4) == [0]
    assert window_starts(10, 10, 4) == [0]
    assert window_starts(11, 10, 4) == [0, 4]
    assert window_starts(7, 3, 5) == [0, 3, 6]  # a stride above the window leaves no gap


def test_one_policy_locates_evidence_for_both_tasks():
    passage = "First line.\nSecond   line here. Second"
    assert locate_evidence(passage, ["nope", "Second"]) == ((12, 18), "found")
    assert locate_evidence(passage, ["Second"], answer=(33, 39)) == ((32, 38), "found")  # the nearest occurrence
    assert locate_evidence(passage, ["line. Second line"]) == ((6, 25), "repaired")
    assert locate_evidence(passage, ["absent"]) == (None, "not_found")
    assert locate_evidence(passage, [" ", ""]) == (None, "missing")
    assert locate_evidence(passage, None) == (None, "missing")


def test_bad_input_is_counted_and_never_labelled_silently(tok):
    good = question("p6-0", "我们的猫坐在上。", "猫在哪里？", ["上", "不"], "A", evidences=["猫坐"])
    bad_label = question("p6-1", "我们的猫坐在上。", "猫在哪里？", ["上", "不"], "C", evidences=["猫坐"])
    lower_label = question("p6-2", "我们的猫坐在上。", "猫在哪里？", ["上", "不"], "a", evidences=["猫坐"])
    no_options = question("p6-3", "我们的猫坐在上。", "猫在哪里？", [], "A", evidences=["猫坐"])
    empty = question("p7-0", "  ", "猫在哪里？", ["上", "不"], "A", evidences=["猫坐"])
    not_found = question("p6-4", "我们的猫坐在上。", "猫在哪里？", ["上", "不"], "B", evidences=["它很好"])
    missing = question("p6-5", "我们的猫坐在上。", "猫在哪里？", ["上", "不"], "B", evidences=None)
    questions = [good, bad_label, lower_label, no_options, empty, not_found, missing]

    train, report = build_choice_features(questions, tok, 64, 128, 128, is_training=True)
    assert train.question_index.tolist() == [0, 5, 6]
    assert report.bad_answer_label == 2 and report.no_options == 1 and report.empty_passage == 1
    assert report.evidence_not_found == 1 and report.evidence_missing == 1 and report.skipped == 4
    assert list(zip(train.labels.tolist(), train.evidence_start.tolist())) == [(0, 4), (1, IGNORE), (1, IGNORE)]

    predict, report = build_choice_features(questions, tok, 64, 128, 128, is_training=False)
    assert predict.question_index.tolist() == [0, 1, 2, 4, 5, 6]
    assert predict.labels[1] == IGNORE and report.no_window == 1 and report.examples["no_options"] == ["p6-3"]
    assert len(predict.passage(3)[0]) == 0 and rows(predict, 3)[0][:2] == [tok.cls_token_id, tok.sep_token_id]
    assert "bad answer label: 2" in report.summary()


def test_settings_that_leave_no_room_are_one_clear_error(tok):
    q = question("p8-0", "我们", "猫在哪里", ["上", "不"], "A")
    with pytest.raises(ExpmrcError, match="question p8-0: question and option take 5 tokens, leaving no room"):
        build_choice_features([q], tok, 8, 128, 128, False)
    table, _ = build_choice_features([q], tok, 8, 4, 128, False, sliding_windows=True)
    assert [len(table.passage(w)[0]) for w in range(len(table))] == [1, 1]
    table, _ = build_choice_features([q], tok, 8, 4, 128, False)  # one window: the passage cut to what fits
    assert [len(table.passage(w)[0]) for w in range(len(table))] == [1]


def test_batches_pad_options_and_mask_them(tok):
    qs = [question("p9-0", "我们的猫坐在上。", "猫在哪里？", ["上", "不"], "B", evidences=["猫坐在"]),
          question("p9-1", "它很好吗？它很好。", "什么很好？", ["它", "我们", "猫", "的"], "D", evidences=["它很好。"])]
    table, _ = build_choice_features(qs, tok, 64, 128, 128, is_training=True)
    longest = max(len(r) for w in range(2) for r in rows(table, w))
    batch = WindowDataset(table, True, tok.pad_token_id, pad_multiple=8).batch([0, 1])
    assert batch["input_ids"].shape == (2, 4, -(-longest // 8) * 8)  # padded to a multiple of 8 (GPUs)
    assert WindowDataset(table, True, tok.pad_token_id, 8, max_length=longest).batch([0, 1])["input_ids"].shape[2] == longest
    batch = WindowDataset(table, True, tok.pad_token_id).batch([0, 1])
    assert batch["input_ids"].shape == (2, 4, longest)
    assert batch["option_mask"].tolist() == [[1, 1, 0, 0], [1, 1, 1, 1]]
    assert batch["attention_mask"][0, 2].sum() == 1  # a padded option attends to its first position only
    assert batch["labels"].tolist() == [1, 3]
    assert batch["evidence_start"].tolist() == [4, 6]  # 猫坐在 at passage token 3; the first 它很好 at token 5
    assert batch["passage_mask"][0].tolist()[:11] == [1] * 9 + [0, 0]  # the null position + 8 passage tokens


def test_max_query_length_keeps_the_last_tokens_of_question_and_option_joined(tok):
    passage = " ".join(f"w{i}" for i in range(10))
    blank = question("p5-0", passage, "w50 w51 _ w52 w53 w54", ["w56 w57", "w58"], "A")
    plain = question("p5-1", passage, "w50 w51 w52 w53 w54", ["w56 w57", "w58"], "A")
    table, report = build_choice_features([blank, plain], tok, 64, 3, 128, is_training=False)
    # no separate cut of the question: the blank is filled first, then the last 3 tokens are kept
    assert rows(table, 0)[0][-4:] == ids(tok, ["w52", "w53", "w54", "[SEP]"])
    assert rows(table, 1)[1][-4:] == ids(tok, ["w53", "w54", "w58", "[SEP]"])
    assert report.question_truncated == 2
    table, report = build_choice_features([blank], tok, 64, 64, 128, is_training=False)
    assert rows(table, 0)[0][-8:] == ids(tok, ["w50", "w51", "w56", "w57", "w52", "w53", "w54", "[SEP]"])
    assert report.question_truncated == 0


def original_rows(tokenizer, question, max_seq_length, max_query_length):
    """The original run_mc_mrc.py's rows, written out from its rules: the passage's whitespace words
    tokenized one by one, each option's `question.replace("_", option)` (else "question option") tokenized
    and cut to its last max_query_length tokens, the passage cut from its end to fit that row beside it,
    `[CLS] passage [SEP] question+option [SEP]`."""
    passage = [piece for word in question.passage.split() for piece in tokenizer.tokenize(word)]
    made = []
    for option in question.options:
        joined = question.question.replace("_", option) if "_" in question.question else question.question + " " + option
        ending = tokenizer.tokenize(joined)[-max_query_length:]
        context = passage[:max_seq_length - 3 - len(ending)]
        made.append(tokenizer.convert_tokens_to_ids(["[CLS]", *context, "[SEP]", *ending, "[SEP]"]))
    return made


@pytest.mark.data
@pytest.mark.parametrize("subset", ["race", "c3"])
@pytest.mark.parametrize("lengths", [(384, 64), (128, 64), (64, 16)])
def test_rows_are_the_original_releases_on_dev_questions(subset, lengths):
    from helpers.common import dev_set
    from helpers.tiny_backbones import make_tokenizer
    from expmrc.data.datasets import load_dataset

    questions = load_dataset(dev_set(subset)).questions[:: 37][:12]
    bert = make_tokenizer("bert")
    table, report = build_choice_features(questions, bert, *lengths[:1], lengths[1], 128, is_training=False)
    assert len(table) == len(questions) and report.multi_window_questions == 0
    for window, q in enumerate(questions):
        assert rows(table, window) == original_rows(bert, q, *lengths), q.qid
