"""NLTK's English Punkt tables ship inside the package: without NLTK_DATA (a fresh clone, `pip install expmrc`) the
scorer reads that copy, with the very tokens and signature NLTK's own copy gives; so the test command needs no
NLTK_DATA, and no test skips or fails for want of Punkt."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.common import ROOT, SPAN_DATA, environment

from expmrc.metrics.leaderboard import PUNKT_RESOURCE, SHIPPED_NLTK_DATA, punkt_hash, tokenize

TEXTS = ["Dr. Smith moved to Washington, D.C. in 1999. He said \"it's fine\" -- then left.",
         "The U.S. Open (tennis) starts Aug. 26; e.g. Serena won in 2014.",
         "Mr. Brown's cat didn't eat the 3.5 kg fish... It ran away! Why? Nobody knows.",
         "1990年 Melbourne's population was 3.1 million people. St. Kilda is nearby."]

# Run in a child without NLTK_DATA and with NLTK's search emptied of every folder holding Punkt (as on a machine
# that never downloaded it): what the scorer then reads, its tokens and the signature's hash.
CHILD = """
import json, os, sys
import nltk
nltk.data.path[:] = [p for p in nltk.data.path if not os.path.isdir(os.path.join(p, "tokenizers", "punkt_tab"))]
from expmrc.metrics.leaderboard import find_punkt, punkt_hash, tokenize
print(json.dumps({"folder": str(find_punkt()), "hash": punkt_hash(),
                  "tokens": [tokenize(text) for text in json.loads(sys.argv[1])]}))
"""


def without_nltk_data(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in environment().items() if k != "NLTK_DATA"}
    return dict(env, HOME=str(tmp_path))  # no ~/nltk_data either


def test_without_nltk_data_the_scorer_reads_the_shipped_tables_with_the_same_tokens(tmp_path):
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(TEXTS)], capture_output=True, text=True,
                          env=without_nltk_data(tmp_path), cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    child = json.loads(done.stdout)
    assert Path(child["folder"]) == SHIPPED_NLTK_DATA / PUNKT_RESOURCE
    assert child["tokens"] == [tokenize(text) for text in TEXTS]  # here: NLTK_DATA's copy where it is set
    assert child["hash"] == punkt_hash() != "missing"


def test_the_shipped_tables_are_nltks_files_with_their_licence():
    shipped = SHIPPED_NLTK_DATA / PUNKT_RESOURCE
    names = sorted(p.name for p in shipped.iterdir())
    assert names == ["abbrev_types.txt", "collocations.tab", "ortho_context.tab", "sent_starters.txt"]
    assert "Apache License" in (SHIPPED_NLTK_DATA / "LICENSE.txt").read_text(encoding="utf-8")
    assert "punkt_tab" in (SHIPPED_NLTK_DATA / "NOTICE.md").read_text(encoding="utf-8")


def test_the_shipped_tables_are_byte_for_byte_those_of_nltk_data():
    shipped, own = SHIPPED_NLTK_DATA / PUNKT_RESOURCE, Path(os.environ.get("NLTK_DATA", "")) / PUNKT_RESOURCE
    if not os.environ.get("NLTK_DATA") or not own.is_dir():
        pytest.skip("no NLTK_DATA copy of Punkt to compare the shipped files with (set NLTK_DATA)")
    names = sorted(p.name for p in own.iterdir())
    assert names == sorted(p.name for p in shipped.iterdir())
    for name in names:
        assert (shipped / name).read_bytes() == (own / name).read_bytes(), name


def test_a_command_scores_english_without_nltk_data(tmp_path):
    data, predictions = tmp_path / "dev.json", tmp_path / "pred.json"
    data.write_text(json.dumps(SPAN_DATA), encoding="utf-8")
    predictions.write_text(json.dumps({"q1": {"answer": "Melbourne", "evidence": "Melbourne is the sporting capital."},
                                       "q2": {"answer": "Sydney", "evidence": "Sydney is larger."}}), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "expmrc.cli", "evaluate", str(data), str(predictions), "--json"],
                          capture_output=True, text=True, env=without_nltk_data(tmp_path), cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["results"][0]["ANS_F1"] == pytest.approx(200 / 3, abs=1e-3)
    assert f"|punkt:{punkt_hash()}|" in printed["signature"]  # the same tables as this process reads
