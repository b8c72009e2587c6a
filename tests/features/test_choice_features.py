"""Multiple-choice features, model heads and decoding, checked against offsets worked out by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from helpers.choice_tiny import question, tiny_encoder, tokenizer
from expmrc.data.submissions import write_predictions
from expmrc.decoding.choice import decode_choice_predictions
from expmrc.features.choice import (
    IGNORE,
    build_choice_features,
    collate_choice,
    feature_tensors,
    find_evidence,
    passage_windows,
    truncate_pair,
)
from expmrc.models.choice import MASKED, ChoiceModel
from expmrc.errors import ExpmrcError


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    return tokenizer(tmp_path_factory.mktemp("vocab"))


def ids(tok, tokens):
    return tok.convert_tokens_to_ids(tokens)


def test_chinese_row_layout_and_evidence_positions(tok):
    passage = "我们的猫坐在上。它很好。"
    q = question("p1-0", passage, "猫在哪里？", ["上", "不对"], "A", evidences=["它很好。", "我们的猫"])
    features, report = build_choice_features([q], tok, max_seq_length=64, is_training=True)
    assert report.features == 1 and report.multi_window_questions == 0
    f = features[0]
    p_ids = ids(tok, list(passage))
    q_ids = ids(tok, list("猫在哪里？"))
    cls, sep = tok.cls_token_id, tok.sep_token_id
    assert f.input_ids[0] == [cls] + p_ids + [sep] + q_ids + ids(tok, ["上"]) + [sep]
    assert f.input_ids[1] == [cls] + p_ids + [sep] + q_ids + ids(tok, ["不", "对"]) + [sep]
    assert f.token_type_ids[1] == [0] * 14 + [1] * 8
    assert f.label == 0
    # "它很好。" is characters 8..11, passage tokens 8..11, row positions 9..12
    assert (f.evidence_start, f.evidence_end) == (9, 12)
    assert f.passage_offsets[8] == (8, 9) and f.passage_offsets[11] == (11, 12)


def test_evidence_inside_a_word_takes_whole_word_pieces(tok):
    passage = "The Cats sat on the mat. It was good."
    # "ats sat" starts inside "Cats" (pieces "cat" "##s"): the span covers both pieces of the word
    q = question("p2-1", passage, "where did the cat sit ?", ["mat", "dog", "cat", "it"], "A", evidences=["ats sat"])
    (f,), _ = build_choice_features([q], tok, max_seq_length=64, is_training=True)
    assert (f.evidence_start, f.evidence_end) == (2, 4)  # cat ##s sat at positions 2, 3, 4
    assert f.passage_offsets[1] == (4, 7) and f.passage_offsets[2] == (7, 8)


@pytest.mark.parametrize("lower", [True, False])
def test_offsets_refer_to_the_original_text_both_cases(tmp_path, lower):
    tk = tokenizer(tmp_path, do_lower_case=lower)
    passage = "The Cat sat."
    q = question("p3-0", passage, "what ?", ["cat", "dog"], "A", evidences=["Cat sat"])
    (f,), _ = build_choice_features([q], tk, max_seq_length=32, is_training=True)
    assert f.passage_offsets == [(0, 3), (4, 7), (8, 11), (11, 12)]
    assert (f.evidence_start, f.evidence_end) == (2, 3)
    unk = tk.unk_token_id
    first_row = f.input_ids[0][1:5]
    assert (unk in first_row) == (not lower)  # an uncased vocabulary has no "The"/"Cat"


def test_qa_truncation_and_windows_with_evidence_in_the_second_window(tok):
    passage = " ".join(f"w{i}" for i in range(30))  # 30 passage tokens
    q = question("p4-0", passage, "w50 w51 w52 w53 w54 w55", ["w56 w57", "w58"], "B", evidences=["w22 w23 w24"])
    features, report = build_choice_features(
        [q], tok, max_seq_length=20, max_qa_length=5, doc_stride=8, is_training=True
    )
    # question+option cut to 5 (longest first off the end): "w50 w51 w52 w56 w57" and "w50 w51 w52 w53 w58"
    first = features[0]
    assert first.input_ids[0][-6:] == ids(tok, ["w50", "w51", "w52", "w56", "w57", "[SEP]"])
    assert first.input_ids[1][-6:] == ids(tok, ["w50", "w51", "w52", "w53", "w58", "[SEP]"])
    assert report.qa_truncated == 1
    # budget 20 - 3 - 5 = 12 passage tokens per window, starts 8 apart: [0,12) [8,20) [16,28) [24,30)
    assert [f.num_passage_tokens for f in features] == [12, 12, 12, 6]
    assert [f.passage_offsets[0][0] for f in features] == [passage.index(w) for w in ("w0", "w8", "w16", "w24")]
    assert report.multi_window_questions == 1 and report.features == 4
    # evidence = tokens 22..24: only window [16,28) holds it wholly, at positions 1+6 .. 1+8
    assert [(f.evidence_start, f.evidence_end) for f in features] == [(0, 0), (0, 0), (7, 9), (0, 0)]
    assert {f.label for f in features} == {1}
    assert all(len(row) <= 20 for f in features for row in f.input_ids)


def test_evidence_longer_than_a_window_points_to_cls(tok):
    passage = " ".join(f"w{i}" for i in range(30))
    q = question("p5-0", passage, "w50", ["w51", "w52"], "A", evidences=[" ".join(f"w{i}" for i in range(2, 20))])
    features, _ = build_choice_features([q], tok, max_seq_length=16, max_qa_length=4, doc_stride=4, is_training=True)
    assert len(features) > 1
    assert all((f.evidence_start, f.evidence_end) == (0, 0) for f in features)


def test_windows_cover_the_passage():
    assert passage_windows(0, 10, 4) == [(0, 0)]
    assert passage_windows(10, 10, 4) == [(0, 10)]
    assert passage_windows(11, 10, 4) == [(0, 10), (4, 11)]
    assert passage_windows(7, 3, 5) == [(0, 3), (3, 6), (6, 7)]  # a stride above the budget leaves no gap


def test_truncate_pair_longest_first():
    assert truncate_pair([1, 2, 3, 4], [5, 6], 4) == ([1, 2], [5, 6])
    assert truncate_pair([1], [5, 6, 7, 8], 3) == ([1], [5, 6])


def test_find_evidence_rules():
    passage = "First line.\nSecond   line here."
    assert find_evidence(passage, ["nope", "Second"]) == ((12, 18), "found")
    assert find_evidence(passage, ["line. Second line"]) == ((6, 25), "repaired")
    assert find_evidence(passage, ["absent"]) == (None, "not_found")
    assert find_evidence(passage, [" ", ""]) == (None, "missing")
    assert find_evidence(passage, None) == (None, "missing")


def test_bad_input_is_counted_and_never_labelled_silently(tok):
    good = question("p6-0", "我们的猫坐在上。", "猫在哪里？", ["上", "不"], "A", evidences=["猫坐"])
    bad_label = question("p6-1", "我们的猫坐在上。", "猫在哪里？", ["上", "不"], "C", evidences=["猫坐"])
    lower_label = question("p6-2", "我们的猫坐在上。", "猫在哪里？", ["上", "不"], "a", evidences=["猫坐"])
    no_options = question("p6-3", "我们的猫坐在上。", "猫在哪里？", [], "A", evidences=["猫坐"])
    empty = question("p7-0", "  ", "猫在哪里？", ["上", "不"], "A", evidences=["猫坐"])
    not_found = question("p6-4", "我们的猫坐在上。", "猫在哪里？", ["上", "不"], "B", evidences=["它很好"])
    missing = question("p6-5", "我们的猫坐在上。", "猫在哪里？", ["上", "不"], "B", evidences=None)
    all_q = [good, bad_label, lower_label, no_options, empty, not_found, missing]

    train, report = build_choice_features(all_q, tok, max_seq_length=64, is_training=True)
    assert [f.qid for f in train] == ["p6-0", "p6-4", "p6-5"]
    assert report.bad_answer_label == 2 and report.skipped_no_options == 1 and report.empty_passage == 1
    assert report.evidence_not_found == 1 and report.evidence_missing == 1
    assert report.skipped_questions == ["p6-1", "p6-2", "p6-3", "p7-0"]
    assert [(f.label, f.evidence_start) for f in train] == [(0, 4), (1, IGNORE), (1, IGNORE)]

    predict, report = build_choice_features(all_q, tok, max_seq_length=64, is_training=False)
    assert [f.qid for f in predict] == ["p6-0", "p6-1", "p6-2", "p7-0", "p6-4", "p6-5"]
    assert predict[1].label == IGNORE
    assert predict[3].num_passage_tokens == 0 and predict[3].input_ids[0][:2] == [tok.cls_token_id, tok.sep_token_id]
    assert report.skipped_questions == ["p6-3"]
    assert "bad_answer_label=2" in report.summary()


def test_settings_that_leave_no_room_are_one_clear_error(tok):
    q = question("p8-0", "我们", "猫在哪里", ["上", "不"], "A")
    with pytest.raises(ExpmrcError, match="question p8-0: question and option take 5 tokens, leaving no room"):
        build_choice_features([q], tok, max_seq_length=8, max_qa_length=128)
    features, _ = build_choice_features([q], tok, max_seq_length=8, max_qa_length=4)
    assert [f.num_passage_tokens for f in features] == [1, 1]


def two_and_four_option_batch(tok):
    qs = [
        question("p9-0", "我们的猫坐在上。", "猫在哪里？", ["上", "不"], "B", evidences=["猫坐在"]),
        question("p9-1", "它很好吗？它很好。", "什么很好？", ["它", "我们", "猫", "的"], "D", evidences=["它很好。"]),
    ]
    features, _ = build_choice_features(qs, tok, max_seq_length=64, is_training=True)
    return qs, features, collate_choice([feature_tensors(f) for f in features], tok.pad_token_id)


def test_collate_pads_options_and_masks_them(tok):
    _, features, batch = two_and_four_option_batch(tok)
    longest = max(len(r) for f in features for r in f.input_ids)
    assert batch["input_ids"].shape == (2, 4, longest)
    assert batch["option_mask"].tolist() == [[1, 1, 0, 0], [1, 1, 1, 1]]
    assert batch["attention_mask"][0, 2].sum() == 1  # a padded option attends to its first position only
    assert batch["labels"].tolist() == [1, 3]
    assert batch["evidence_start"].tolist() == [4, 6]  # 猫坐在 at passage token 3; the first 它很好 at token 5
    assert batch["evidence_mask"][0].tolist()[:11] == [1] * 9 + [0, 0]  # [CLS] + 8 passage tokens


def test_model_masks_padded_options_and_computes_the_weighted_loss(tok):
    torch.manual_seed(0)
    _, _, batch = two_and_four_option_batch(tok)
    model = ChoiceModel(tiny_encoder(len(tok)), loss_lambda=0.3).eval()
    with torch.no_grad():
        out = model(**batch)
        assert out["option_logits"].shape == (2, 4)
        assert out["option_logits"][0, 2:].tolist() == [MASKED, MASKED]
        assert (out["evidence_start_logits"][0, 9:] == MASKED).all()
        answer = F.cross_entropy(out["option_logits"], batch["labels"])
        evidence = (F.cross_entropy(out["evidence_start_logits"], batch["evidence_start"])
                    + F.cross_entropy(out["evidence_end_logits"], batch["evidence_end"])) / 2
        assert out["loss"].item() == pytest.approx((answer + 0.3 * evidence).item(), rel=1e-5)

        # what sits in a padded option changes nothing for the real ones
        changed = {k: v.clone() for k, v in batch.items()}
        changed["input_ids"][0, 2:, :5] = 7
        changed["attention_mask"][0, 2:, :5] = 1
        again = model(**changed)
        assert torch.allclose(again["option_logits"], out["option_logits"], atol=1e-6)
        assert torch.allclose(again["evidence_start_logits"], out["evidence_start_logits"], atol=1e-6)

        # evidence labels marked IGNORE drop out of the loss instead of producing NaN
        ignored = {**batch, "evidence_start": torch.full((2,), IGNORE), "evidence_end": torch.full((2,), IGNORE)}
        assert model(**ignored)["loss"].item() == pytest.approx(answer.item(), rel=1e-5)


def fake_outputs(feature, option_logits, start_at, end_at, length=64):
    start = np.full(length, MASKED, dtype=np.float32)
    end = np.full(length, MASKED, dtype=np.float32)
    start[: 1 + feature.num_passage_tokens] = 0.0
    end[: 1 + feature.num_passage_tokens] = 0.0
    start[start_at] = 5.0
    end[end_at] = 5.0
    return {"option_logits": np.asarray(option_logits, dtype=np.float32),
            "evidence_start_logits": start, "evidence_end_logits": end}


def test_decoding_combines_windows_and_cuts_evidence_from_the_original_text(tok, tmp_path):
    passage = "The Cats sat on the mat. It was good. A dog ran."
    q = question("p10-0", passage, "what ran ?", ["cat", "dog", "mat"], "B", evidences=["A dog ran."])
    features, _ = build_choice_features([q], tok, max_seq_length=16, max_qa_length=5, doc_stride=4)
    assert len(features) >= 2
    outputs = [fake_outputs(f, [0.0, 0.0, 0.0], 0, 0) for f in features]
    # the last window is sure of option B and marks "A dog ran." (its last four tokens)
    last = features[-1]
    n = last.num_passage_tokens
    outputs[-1] = fake_outputs(last, [0.0, 4.0, 0.0], n - 3, n)
    predictions, nbest = decode_choice_predictions([q], features, outputs, max_evidence_length=10)
    assert predictions == {"p10-0": {"answer": "B", "evidence": "A dog ran."}}
    assert nbest["p10-0"]["windows"] == len(features)
    assert nbest["p10-0"]["evidence"][0]["start"] == passage.index("A dog")
    # a length limit below the marked span forbids it
    short, _ = decode_choice_predictions([q], features, outputs, max_evidence_length=2)
    assert short["p10-0"]["evidence"] != "A dog ran."

    write_predictions(str(tmp_path), predictions, nbest)
    assert json.loads((tmp_path / "dev_predictions.json").read_text(encoding="utf-8")) == predictions
    assert set(json.loads((tmp_path / "dev_nbest.json").read_text(encoding="utf-8"))) == {"p10-0"}


def test_decoding_keeps_original_case_and_padded_options_never_win(tok):
    passage = "The Cat sat."
    q = question("p11-0", passage, "what ?", ["cat", "dog"], "A")
    (f,), _ = build_choice_features([q], tok, max_seq_length=32)
    out = fake_outputs(f, [0.0, 1.0, MASKED, MASKED], 1, 3)  # batch padded to four options
    predictions, nbest = decode_choice_predictions([q], [f], [out])
    assert predictions["p11-0"] == {"answer": "B", "evidence": "The Cat sat"}
    assert list(nbest["p11-0"]["option_scores"]) == ["A", "B"]
