"""Feature caches: reused while tokenizer, settings and data are unchanged, rebuilt when any changes."""

from __future__ import annotations

import numpy as np

from expmrc.data.datasets import load_dataset
from expmrc.features.cache import cache_key, cached_features
from expmrc.features.span import build_span_features
from helpers.span_data import make_span_file
from helpers.tiny_bert import tiny_tokenizer as tokenizer

SETTINGS = {"task": "span", "max_seq_length": 64, "doc_stride": 16, "max_query_length": 16, "is_training": True}


def features(data_file, tok, settings, cache, calls):
    def build():
        calls.append(1)
        questions = load_dataset(str(data_file)).questions
        return build_span_features(questions, tok, settings["max_seq_length"], settings["doc_stride"],
                                   settings["max_query_length"], True)

    return cached_features(str(cache), cache_key(tok, settings, str(data_file)), build)


def test_cache_is_reused_and_rebuilt_when_anything_it_depends_on_changes(tmp_path):
    data, cache, calls = make_span_file(tmp_path / "train.json", 20, seed=1), tmp_path / "cache.safetensors", []
    first, report = features(data, tokenizer(), SETTINGS, cache, calls)
    assert cache.is_file() and len(calls) == 1
    again, report_again = features(data, tokenizer(), SETTINGS, cache, calls)
    assert len(calls) == 1 and report_again == report and again.task == first.task == "span"
    assert set(again.arrays) == set(first.arrays)
    for name, array in first.arrays.items():  # every column survives the round trip, dtype included
        assert np.array_equal(again.arrays[name], array) and again.arrays[name].dtype == array.dtype, name

    features(data, tokenizer(), dict(SETTINGS, doc_stride=8), cache, calls)
    features(data, tokenizer(cased=True), dict(SETTINGS, doc_stride=8), cache, calls)
    make_span_file(data, 21, seed=1)  # the data file changes
    features(data, tokenizer(cased=True), dict(SETTINGS, doc_stride=8), cache, calls)
    assert len(calls) == 4


def test_damaged_cache_is_rebuilt(tmp_path):
    data, cache, calls = make_span_file(tmp_path / "train.json", 5, seed=1), tmp_path / "cache.safetensors", []
    features(data, tokenizer(), SETTINGS, cache, calls)
    cache.write_bytes(cache.read_bytes()[:100])
    features(data, tokenizer(), SETTINGS, cache, calls)
    assert len(calls) == 2 and not list(tmp_path.glob(".cache.safetensors.*tmp*"))
