"""Feature caches: reused while tokenizer, settings and data are unchanged, rebuilt when any changes."""

from __future__ import annotations

from expmrc.features.cache import cache_key, cached
from expmrc.features.span import build_span_features, features_from_payload, features_to_payload
from expmrc.data.datasets import load_dataset
from helpers.span_data import make_span_file
from helpers.tiny_bert import tiny_tokenizer as tokenizer

SETTINGS = {"task": "span", "max_seq_length": 64, "doc_stride": 16, "max_query_length": 16, "is_training": True}


def features(data_file, tok, settings, cache, calls):
    def build():
        calls.append(1)
        questions = load_dataset(str(data_file)).questions
        return build_span_features(questions, tok, settings["max_seq_length"], settings["doc_stride"],
                                   settings["max_query_length"], True, show_progress=False)

    (built, report), status = cached(str(cache), cache_key(tok, settings, str(data_file)), build, None,
                                     features_to_payload, features_from_payload)
    return built, report, status


def test_cache_is_reused_and_rebuilt_when_anything_it_depends_on_changes(tmp_path):
    data, cache, calls = make_span_file(tmp_path / "train.json", 20, seed=1), tmp_path / "cache.pt", []
    first, report, status = features(data, tokenizer(), SETTINGS, cache, calls)
    assert status == "built" and cache.is_file()
    again, report_again, status = features(data, tokenizer(), SETTINGS, cache, calls)
    assert status == "reused" and len(calls) == 1
    assert again == first and report_again == report  # every field of every window survives the round trip

    assert features(data, tokenizer(), dict(SETTINGS, doc_stride=8), cache, calls)[2] == "built"
    assert features(data, tokenizer(cased=True), dict(SETTINGS, doc_stride=8), cache, calls)[2] == "built"
    make_span_file(data, 21, seed=1)  # the data file changes
    assert features(data, tokenizer(cased=True), dict(SETTINGS, doc_stride=8), cache, calls)[2] == "built"
    assert len(calls) == 4


def test_damaged_cache_is_rebuilt(tmp_path):
    data, cache, calls = make_span_file(tmp_path / "train.json", 5, seed=1), tmp_path / "cache.pt", []
    features(data, tokenizer(), SETTINGS, cache, calls)
    cache.write_bytes(cache.read_bytes()[:100])
    assert features(data, tokenizer(), SETTINGS, cache, calls)[2] == "built"
    assert not list(tmp_path.glob(".cache.pt.tmp*"))
