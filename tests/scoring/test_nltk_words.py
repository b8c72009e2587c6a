"""The scorer imports only the parts of NLTK its tokens need (expmrc/metrics/nltk_words.py), and its tokens are
`nltk.word_tokenize`'s: on tricky English here, and on every run of text of the four dev sets (marked `data`).

Each check runs in a child process that has not imported NLTK: there the scorer loads its parts alone, tokenizes, shows
which modules it left behind, then imports NLTK whole (which must work as usual afterwards) and tokenizes again."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.common import ROOT, dev_set, environment, needs_punkt

from expmrc.data.datasets import SpanQuestion, load_dataset, passage_of
from expmrc.metrics import leaderboard, nltk_words

pytestmark = needs_punkt

CHILD = """
import json, sys
from expmrc.metrics.leaderboard import nltk_tokenizer
texts, lines_too = json.load(open(sys.argv[1], encoding="utf-8")), sys.argv[2] == "lines"
words = nltk_tokenizer()
alone = [words.word_tokenize(t) for t in texts]
lines = [words.word_tokenize(t, preserve_line=True) for t in texts if lines_too]
left = sorted(m for m in sys.modules if m.partition(".")[0] in ("nltk", "scipy", "sklearn"))
import nltk
from expmrc.metrics.leaderboard import SHIPPED_NLTK_DATA
nltk.data.path.append(str(SHIPPED_NLTK_DATA))  # last, as the scorer searches: NLTK_DATA and NLTK's folders first
whole = [nltk.word_tokenize(t) for t in texts]
whole_lines = [nltk.word_tokenize(t, preserve_line=True) for t in texts if lines_too]
differ = [t for t, a, b in zip(texts, alone, whole) if a != b] + [t for t, a, b in zip(texts, lines, whole_lines) if a != b]
print(json.dumps({"left": left, "differ": differ[:3], "compared": len(texts), "version": [words.version, nltk.__version__],
                  "whole": [nltk.tokenize.punkt.PunktTokenizer.__name__, nltk.pathsec.__name__, nltk.data.find.__name__]}))
"""

TRICKY = ["Dr. Smith moved to Washington, D.C. in 1999. He said \"it's fine\" -- then left.",
          "The U.S. Open (tennis) starts Aug. 26; e.g. Serena won in 2014... Didn't she?",
          "'Tis gonna be cannot-lemme 'em — “quoted” «fr» ‘s’ $5 50% #tag @me a&b [x] {y} <z> end.)",
          "No. 5 St. Kilda. Mr. Brown's cat, 3.5 kg! Why? Nobody knows.\n\nNew paragraph\there.", "", " ", "."]


PIECES = ["The", "U.S.", "Mr.", "dog's", "dogs'", "can't", "cannot", "Gonna", "WANNA", "gimme", "lemme", "gotta",
          "more'n", "d'ye", "'tis", "'Twas", "(x)", "[a]", "{b}", "<c>", '"q"', '"', "''", "``", "`", "end.", "end.)",
          'end."', "hi!", "what?", "--", "—", "–", "a,b", "3,000", "3.5", "x:", "y,", "e.g.", "...", "…", "«fr»", "“c”",
          "‘s’", "I'm", "you're", "we've", "she'll", "he'd", "DON'T", "naïve", "$5", "50%", "#t", "@me", "a&b", "*",
          ";", "\n", "\t", "\x1c", "\u2028", "\xa0", "word", "7"]


def tricky_texts(count: int, seed: int = 0) -> list[str]:
    """`count` texts of up to 400 pieces of English that NLTK's word rules and Punkt act on, joined by varied spaces."""
    rng = random.Random(seed)
    return ["".join(rng.choice(PIECES) + rng.choice([" ", " ", "  ", "\n", "", " \t"])
                    for _ in range(rng.randint(1, 400))) for _ in range(count)]


def compare_in_child(texts: list[str], tmp_path: Path, lines: bool) -> dict:
    """What CHILD found, comparing `word_tokenize` (and with `lines`, its `preserve_line=True` too) on `texts`."""
    path = tmp_path / "texts.json"
    path.write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", CHILD, str(path), "lines" if lines else "-"], capture_output=True, text=True, cwd=ROOT,
                          env=environment(), timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_only_nltks_tokenizer_parts_are_imported_and_nltk_imports_whole_afterwards(tmp_path):
    texts = TRICKY + tricky_texts(300)
    child = compare_in_child(texts, tmp_path, lines=True)
    assert child["left"] == [] and child["differ"] == [] and child["compared"] == len(texts)
    assert child["version"][0] == child["version"][1]
    assert child["whole"] == ["PunktTokenizer", "nltk.pathsec", "find"]  # submodules reachable as attributes


def runs_of(text: str) -> list[str]:
    """The runs of non-CJK text the leaderboard's tokenizer hands to NLTK."""
    return [part for part in leaderboard._SPLIT_CHAR.split(text.strip())[::2] if part]


@pytest.mark.data
def test_the_tokens_are_nltks_on_every_text_of_the_four_dev_sets(tmp_path):
    runs: set[str] = set()
    for subset in ("squad", "cmrc2018", "race", "c3"):
        for q in load_dataset(dev_set(subset)).questions:
            texts = [passage_of(q), q.question, *map(str, q.evidences or [])]
            texts += [str(t) for t in (q.answers if isinstance(q, SpanQuestion) else q.options)]
            runs.update(run for text in texts for run in runs_of(text))
    child = compare_in_child(sorted(runs), tmp_path, lines=False)
    assert child["differ"] == [] and child["compared"] == len(runs) > 9_000


FALLBACK = """
import sys
from contextlib import contextmanager
from expmrc.metrics import nltk_words

@contextmanager
def laid_out_otherwise():  # as if NLTK's parts could not be imported alone
    raise ImportError("cannot import name 'NLTKWordTokenizer'")
    yield

nltk_words._parts_alone = laid_out_otherwise
words = nltk_words.load(nltk_words.Path(sys.argv[1]))
import nltk
nltk.data.path.append(sys.argv[1])  # the copy the scorer was given, searched last as the scorer does
text = "Mr. Smith didn't go. He said \\"no\\"."
print(words.word_tokenize(text) == nltk.word_tokenize(text), words.version == nltk.__version__)
"""


def test_where_the_parts_cannot_be_imported_alone_nltk_is_imported_whole(tmp_path):
    done = subprocess.run([sys.executable, "-c", FALLBACK, str(leaderboard.SHIPPED_NLTK_DATA)], capture_output=True,
                          text=True, cwd=ROOT, env=environment(), timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]


def test_each_word_rule_but_the_whitespace_one_is_skipped_only_where_its_characters_are_absent():
    """NEEDS names, for every rule of the NLTK version followed, characters its pattern cannot match without (a rule
    missing from it would merely always run: this keeps the table whole)."""
    words = leaderboard.nltk_tokenizer().words
    if leaderboard.nltk_tokenizer().version not in nltk_words.FOLLOWED:
        pytest.skip("NLTK's own word tokenizer serves this NLTK version")
    rules = words.before + words.ending
    assert [pattern.pattern for pattern, _, needs in rules if needs is None] == [r"\s+"]
    for pattern, _, needs in rules:
        for sample in ("a b", "Simple words and 42 numbers", "x y z"):
            if needs is not None and not any(c in sample for c in needs):
                assert pattern.search(sample) is None, (pattern.pattern, sample)
