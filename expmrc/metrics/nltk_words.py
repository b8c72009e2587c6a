"""NLTK's `word_tokenize`, the leaderboard's English tokenizer, without importing all of NLTK.

`import nltk` runs NLTK's package file, which imports every part of NLTK and through them SciPy and scikit-learn where
they are installed: about 2.5 s of CPU, as much as scoring the four dev sets takes. The leaderboard's tokens need three
of NLTK's modules: `nltk.tokenize.punkt` (Punkt's sentences), `nltk.tokenize.destructive` (the Treebank-style word rules
`word_tokenize` applies to each sentence) and `nltk.data` (NLTK's search for the Punkt tables). Where NLTK is not
imported yet, `load` imports those (and what they import) under bare stand-ins for the `nltk` and `nltk.tokenize`
packages, builds the two tokenizers, and then takes every `nltk` module it imported back out of `sys.modules`: the
process keeps no trace of them beyond the tokenizers, and a later `import nltk` imports NLTK whole as usual. Where NLTK is
imported already, its own modules serve (so a change to `nltk.data.path` counts).

Either way the tokens come from NLTK's own patterns and tables: Punkt's sentences, then each sentence through the word
rules, as `nltk.word_tokenize` composes them. Under the NLTK versions in FOLLOWED the word rules are applied by `_Rules`,
which calls the very patterns NLTK compiled, in the order NLTK's method does, without the overhead of NLTK's per-call
wrapper and time limit, and skips a rule where the text lacks every character its pattern needs to match (NEEDS);
elsewhere NLTK's method itself. tests/scoring/test_nltk_words.py checks the tokens
against `nltk.word_tokenize` on every run of text of the four dev sets and on tricky generated English.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PUNKT_RESOURCE = "tokenizers/punkt_tab/english/"
# The NLTK versions whose `NLTKWordTokenizer.tokenize` `_Rules` follows step by step (nltk/tokenize/destructive.py);
# under any other version NLTK's own method serves.
FOLLOWED = ("3.10.4",)
# `_Rules` calls NLTK's patterns without the 5-second limit NLTK puts on each call, on texts up to this long: no rule is
# worse than quadratic, so that takes milliseconds at most; a longer text goes through NLTK's own method and its limit.
DIRECT_CHARS = 2000
# The only parts of NLTK the tokens need; the packages above them are stood in for while these are imported.
PARTS = ("nltk.data", "nltk.tokenize.punkt", "nltk.tokenize.destructive")
_PACKAGES = ("nltk", "nltk.tokenize")


@dataclass(frozen=True)
class NltkWords:
    """NLTK's English word tokenizer, as `nltk.word_tokenize` builds it: Punkt's sentences, then the word rules."""

    version: str  # NLTK's version, as `nltk.__version__` gives it
    punkt: Path | None  # the folder of the English Punkt tables NLTK's search found; None: found nowhere
    sentences: Callable[[str], list[str]] | None  # Punkt's sentence split; None without the tables
    words: Callable[[str], list[str]]  # the Treebank-style rules of one sentence

    def word_tokenize(self, text: str, preserve_line: bool = False) -> list[str]:
        """`nltk.word_tokenize(text, "english", preserve_line)`: the sentences (or the text as one, with
        `preserve_line`), each split into words. Needs the Punkt tables unless `preserve_line`."""
        if preserve_line:
            return self.words(text)
        if self.sentences is None:
            raise LookupError(f"NLTK's {PUNKT_RESOURCE} was not found")
        return [token for sentence in self.sentences(text) for token in self.words(sentence)]


def load(shipped: Path) -> NltkWords:
    """NLTK's tokenizer, with the Punkt tables where NLTK's own search finds them, else in the folder `shipped` (then
    added last to that search). Imports only PARTS where NLTK is not imported yet (see the module docstring)."""
    if "nltk" not in sys.modules:
        try:
            with _parts_alone() as (modules, version):
                return _build(modules, version, shipped)
        except ImportError:  # an NLTK whose parts import otherwise: the whole of it, as `import nltk` gives
            pass
    nltk = importlib.import_module("nltk")
    return _build([importlib.import_module(name) for name in PARTS], nltk.__version__, shipped)


@contextmanager
def _parts_alone() -> Iterator[tuple[list[types.ModuleType], str]]:
    """PARTS imported under stand-ins for their packages, with NLTK's version; on leaving, every `nltk` module
    imported here is out of `sys.modules` again (the objects made meanwhile keep working: none imports at call time)."""
    spec = importlib.util.find_spec("nltk")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("No module named 'nltk'", name="nltk")
    before = set(sys.modules)
    try:
        for name in _PACKAGES:
            package_spec = spec if name == "nltk" else importlib.util.find_spec(name)
            assert package_spec is not None and package_spec.submodule_search_locations is not None
            stand_in = types.ModuleType(name)
            stand_in.__path__ = list(package_spec.submodule_search_locations)
            stand_in.__spec__ = package_spec
            sys.modules[name] = stand_in
        folder = Path(next(iter(spec.submodule_search_locations)))
        # nltk/__init__.py takes its __version__ from this file
        yield [importlib.import_module(name) for name in PARTS], (folder / "VERSION").read_text().strip()
    finally:
        for name in set(sys.modules) - before:
            if name.partition(".")[0] == "nltk":
                del sys.modules[name]


def _build(modules: list[Any], version: str, shipped: Path) -> NltkWords:
    data, punkt, destructive = modules
    folder = _find_punkt(data, shipped)
    sentences = punkt.PunktTokenizer("english").tokenize if folder is not None else None
    words = destructive.NLTKWordTokenizer().tokenize
    return NltkWords(version, folder, sentences, _Rules(destructive, words) if version in FOLLOWED else words)


# What each of NLTK 3.10.4's word rules needs in a text to change it: one of these characters, each a literal the
# pattern cannot match without. A rule whose characters are all absent from the text leaves it as it is, so `_Rules`
# does not call it (most rules act on punctuation most sentences lack). Rules not listed (`\\s+`) are always called.
NEEDS = {
    '([«“‘„]|[`]+)': '«“‘„`',
    '^\\"': '"',
    '(``)': '`',
    '([ \\(\\[{<])(\\"|\\\'{2})': '"\'',
    "(?i)(?<!\\w)(\\')(?!(?:re|ve|ll|m|t|s|d|n)\\b)(?=\\w)": "'",
    '([^\\.])(\\.)([\\]\\)}>"\\\'»”’ ]*+)\\s*$': '.',
    '([:,])([^\\d])': ':,',
    '([:,])$': ':,',
    '\\.{2,}': '.',
    '[;@#$%&]': ';@#$%&',
    '[\\u2012-\\u2015]': '‒–—―',
    '([^\\.])(\\.)([\\]\\)}>"\\\']*)\\s*$': '.',
    '[?!]': '?!',
    "([^'])' ": "'",
    '[*]': '*',
    '[\\]\\[\\(\\)\\{\\}\\<\\>]': '][(){}<>',
    '--': '-',
    '([»”’])': '»”’',
    "''": "'",
    '"': '"',
    "([^' ])('[sS]|'[mM]|'[dD]|') ": "'",
    "([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ": "'",
}
Rule = tuple[Any, str, str | None]  # a compiled pattern, its replacement, the characters it needs (None: always run)


class _Rules:
    """`NLTKWordTokenizer().tokenize` (with its defaults) as NLTK 3.10.4 runs it: the same compiled patterns and
    replacements in the same order, each called directly instead of through NLTK's timed wrapper (`nltk.redos`), whose
    per-call overhead and time limit are a large share of the tokenizer's time on short texts; a rule is skipped where
    the text lacks every character it needs (NEEDS), and the ten contraction rules where one search of their union
    finds none of them. Texts over DIRECT_CHARS go to NLTK's own method. tests/scoring/test_nltk_words.py checks the
    tokens against `nltk.word_tokenize`."""

    def __init__(self, destructive: Any, whole: Callable[[str], list[str]]) -> None:
        rules = destructive.NLTKWordTokenizer
        self.before = _rules([*rules.STARTING_QUOTES, *rules.PUNCTUATION, rules.PARENS_BRACKETS, rules.DOUBLE_DASHES])
        self.ending = _rules(rules.ENDING_QUOTES)
        contractions = [*rules.CONTRACTIONS2, *rules.CONTRACTIONS3]
        self.contractions = [(pattern, r" \1 \2 ") for pattern in contractions]
        # Their union: it finds a match in a text exactly where one of them would (each starts with `(?i)`).
        self.any_contraction = re.compile("|".join(f"(?:{p.pattern.removeprefix('(?i)')})" for p in contractions),
                                          re.IGNORECASE)
        self.whole = whole

    def __call__(self, text: str) -> list[str]:
        if len(text) > DIRECT_CHARS:
            return self.whole(text)
        text = " " + _apply(self.before, text) + " "
        text = _apply(self.ending, text)
        if self.any_contraction.search(text):
            for pattern, replacement in self.contractions:
                text = pattern.sub(replacement, text)
        return text.split()


def _rules(pairs: list[tuple[Any, str]]) -> list[Rule]:
    """NLTK's (pattern, replacement) pairs as `Rule`s: the compiled pattern inside NLTK's wrapper, and what it needs."""
    return [(getattr(pattern, "_rx", pattern), replacement, NEEDS.get(pattern.pattern)) for pattern, replacement in pairs]


def _apply(rules: list[Rule], text: str) -> str:
    for pattern, replacement, needs in rules:
        if needs is None or any(character in text for character in needs):
            text = pattern.sub(replacement, text)
    return text


def _find_punkt(data: Any, shipped: Path) -> Path | None:
    """The English Punkt folder by NLTK's search (`nltk.data.find`), else in `shipped`, then appended to the search."""
    try:
        return Path(str(data.find(PUNKT_RESOURCE).path))
    except LookupError:
        if not shipped.is_dir():
            return None
    if str(shipped) not in data.path:
        data.path.append(str(shipped))
    try:
        return Path(str(data.find(PUNKT_RESOURCE).path))
    except LookupError:
        return None
