"""Feature caches: reused while tokenizer, settings and data are unchanged, rebuilt when any changes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from expmrc.data.datasets import load_dataset
from expmrc.features.cache import cache_key, cached_features, default_cache_dir, shared_cache_path
from expmrc.features.span import build_span_features
from helpers.span_data import make_span_file
from helpers.tiny_bert import tiny_tokenizer as tokenizer

ROOT = Path(__file__).resolve().parents[2]
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


BUILD_ONCE = """
import sys, time
from helpers.span_data import make_span_file
from helpers.tiny_bert import tiny_tokenizer
from expmrc.data.datasets import load_dataset
from expmrc.features.cache import cache_key, cached_features, shared_cache_path
from expmrc.features.span import build_span_features
data, cache_dir, marker, start = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
tok = tiny_tokenizer()
key = cache_key(tok, {"task": "span", "max_seq_length": 64}, data)
def build():
    with open(marker, "a") as f:
        f.write("built\\n")
    time.sleep(1.0)  # a slow build: the other process must wait for it, not build too
    return build_span_features(load_dataset(data).questions, tok, 64, 16, 16, True)
while time.time() < start:
    time.sleep(0.001)
table, _ = cached_features(shared_cache_path(cache_dir, key, "train"), key, build)
print(len(table))
"""


def test_two_processes_starting_at_once_build_the_shared_cache_once(tmp_path):
    data = make_span_file(tmp_path / "train.json", 12, seed=3)
    script = tmp_path / "build.py"
    script.write_text(BUILD_ONCE)
    marker = tmp_path / "builds.txt"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]))
    start = time.time() + 4  # both processes are past their imports by then
    procs = [subprocess.Popen([sys.executable, str(script), str(data), str(tmp_path / "cache"), str(marker),
                               str(start)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in outs]
    assert marker.read_text().splitlines() == ["built"]
    assert outs[0][0] == outs[1][0] and int(outs[0][0]) > 0
    files = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert len(files) == 2 and files[0].startswith(".train-") and files[0].endswith(".lock")


def test_shared_cache_folder_follows_the_environment_and_a_stale_key_builds_a_new_file(tmp_path, monkeypatch):
    monkeypatch.setenv("EXPMRC_CACHE", str(tmp_path / "env-cache"))
    assert default_cache_dir() == tmp_path / "env-cache"
    monkeypatch.delenv("EXPMRC_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "expmrc" / "features"
    data, calls = make_span_file(tmp_path / "train.json", 6, seed=1), []
    key = cache_key(tokenizer(), SETTINGS, str(data))
    path = shared_cache_path(None, key, "train")
    assert path.startswith(str(tmp_path / "xdg")) and key in path
    features(data, tokenizer(), SETTINGS, path, calls)
    features(data, tokenizer(), SETTINGS, path, calls)
    assert len(calls) == 1
    make_span_file(data, 7, seed=1)  # the data changed: a new key, a new file, built again
    new_key = cache_key(tokenizer(), SETTINGS, str(data))
    assert new_key != key
    features(data, tokenizer(), SETTINGS, shared_cache_path(None, new_key, "train"), calls)
    assert len(calls) == 2


def test_a_tokenizer_is_fingerprinted_once_until_its_vocabulary_grows(monkeypatch):
    from expmrc.features import cache

    tok, calls = tokenizer(), []
    real = cache._fingerprint
    monkeypatch.setattr(cache, "_fingerprint", lambda t: (calls.append(1), real(t))[1])
    first = cache.tokenizer_fingerprint(tok)
    assert cache.tokenizer_fingerprint(tok) == first == real(tok) and len(calls) == 1
    tok.add_tokens(["zzzq"])
    assert cache.tokenizer_fingerprint(tok) != first and len(calls) == 2
