"""Long texts are tokenized in pieces that give exactly NLTK's tokens of the whole text, so a 5 MB answer,
evidence or passage never reaches NLTK 3.10's regex time limit and every score stays the leaderboard's."""

import json
import random
import subprocess
import sys

import pytest
from helpers.common import ROOT, SPAN_DATA, dev_set, environment, needs_punkt, whole_nltk

from expmrc.data.datasets import SpanQuestion, load_dataset, passage_of
from expmrc.metrics import leaderboard

pytestmark = needs_punkt

_RUN_SPLIT = leaderboard._is_split_char


def runs(text: str) -> list[str]:
    """The runs of non-CJK text the leaderboard's tokenizer hands to NLTK."""
    out, current = [], []
    for ch in text.strip():
        if _RUN_SPLIT(ch):
            if current:
                out.append("".join(current))
            current = []
        else:
            current.append(ch)
    if current:
        out.append("".join(current))
    return out


def pieced(run: str) -> list[str]:
    """NLTK's tokens of `run` cut at every safe point (size 1: the most cuts there can be)."""
    nltk = whole_nltk()

    return [t for piece in leaderboard.safe_pieces(run, size=1) for t in nltk.word_tokenize(piece)]


def assert_same_tokens(text: str) -> None:
    nltk = whole_nltk()

    for run in runs(text):
        assert pieced(run) == nltk.word_tokenize(run), run[:200]


@pytest.mark.data
@pytest.mark.parametrize("subset", ["squad", "cmrc2018", "race", "c3"])
def test_pieces_give_nltks_tokens_on_the_dev_sets(subset):
    dataset = load_dataset(dev_set(subset))
    texts = {passage_of(q) for q in dataset.questions}
    for q in dataset.questions:
        texts.update(str(t) for t in q.evidences or [])
        texts.update(str(t) for t in (q.answers if isinstance(q, SpanQuestion) else q.options))
    for text in texts:
        assert_same_tokens(text)


TRICKY = ["The", "U.S.", "Mr.", "Dr.", "dog's", "dogs'", "can't", "cannot", "gonna", "wanna", "'tis", "(x)",
          "[a]", "{b}", "<c>", '"quoted"', "\"", "''", "``", "end.", "end.)", 'end."', "hello!", "what?", "--",
          "a,b", "3.5", "3,000", "x:", "y,", "e.g.", "i.e.", "...", "…", "«fr»", "“cur”", "‘s’", "naïve",
          "Ünïcode", "x1", "42", "$5", "50%", "#tag", "@me", "a&b", "—", "\n", "\n\n", "\t", "A.", "No.", "St."]


@pytest.mark.parametrize("seed", range(6))
def test_pieces_give_nltks_tokens_on_long_synthetic_texts(seed):
    rng = random.Random(seed)
    words = [rng.choice(TRICKY if rng.random() < 0.6 else ["word", "Word", "alpha", "Beta", "7"])
             for _ in range(4000)]
    text = "".join(w + rng.choice([" ", " ", "  ", "\n", " \t"]) for w in words)
    assert len(leaderboard.safe_pieces(text, size=1)) > 100  # the check below really cuts the text
    assert_same_tokens(text)


def test_word_tokens_cuts_long_runs_and_keeps_short_ones_whole(monkeypatch):
    nltk = whole_nltk()

    text = " ".join(["Mr. Smith went to Washington. He said \"hi\" and left."] * 300)
    leaderboard.clear_caches()
    monkeypatch.setattr(leaderboard, "PIECE_CHARS", 500)
    assert len(leaderboard.safe_pieces(text)) > 10
    assert list(leaderboard.word_tokens(text)) == nltk.word_tokenize(text)
    leaderboard.clear_caches()


def test_nltk_time_limit_falls_back_without_a_traceback(monkeypatch):
    """Where NLTK itself gives up (the official script crashes there), whitespace-cut slices are used."""
    calls = []

    def timing_out(text, preserve_line=False):
        calls.append(preserve_line)
        if not preserve_line:
            raise TimeoutError("regular-expression match exceeded its 5.0s time limit")
        return text.split()

    monkeypatch.setattr(leaderboard, "_word_tokenize", timing_out)
    leaderboard.clear_caches()
    try:
        text = ". " * 3000
        assert leaderboard.word_tokens(text) == tuple(["."] * 3000)
        assert True in calls
    finally:
        leaderboard.clear_caches()


@pytest.mark.slow
def test_five_megabyte_answer_evidence_and_passage_are_scored(tmp_path):
    """eval_expmrc.py on a 5 MB passage, answer and evidence: the leaderboard's JSON line, no time limit hit."""
    big = " ".join(f"word{i % 97} is here." if i % 7 == 0 else f"token{i % 13}" for i in range(600_000))
    data = json.loads(json.dumps(SPAN_DATA))
    para = data["data"][0]["paragraphs"][0]
    para["context"] = big
    for qa in para["qas"]:
        qa["answers"] = [{"text": big[:100], "answer_start": 0}]
    dataset = tmp_path / "dev.json"
    dataset.write_text(json.dumps(data), encoding="utf-8")
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps({qa["id"]: {"answer": big, "evidence": big} for qa in para["qas"]}),
                     encoding="utf-8")
    out = subprocess.run([sys.executable, str(ROOT / "eval_expmrc.py"), str(dataset), str(preds)],
                         check=False, capture_output=True, text=True, env=environment(), timeout=600)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr and "time limit" not in out.stderr
    assert json.loads(out.stdout)["TOTAL"] == len(para["qas"])
