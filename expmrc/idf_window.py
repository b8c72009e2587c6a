"""`idf-window`: a better unsupervised evidence extractor (what `--method best` runs).

It scores candidate spans against a weighted bag of key terms — the question's terms and the
answer's (the chosen option's) terms — and keeps the span with the highest F-beta:

- term weights are IDF learnt from the sentences of the dataset's own passages (no labels), raised
  to `idf_power`; English terms are Porter stems, Chinese terms are the scorer's characters;
- weighted precision is the share of the candidate's weight on key terms, weighted recall the share
  of the key's weight the candidate holds; beta > 1 favours recall;
- multiple choice: option terms that no distractor option shares count `unique_answer_boost` times
  (they are what tells the correct option apart), and candidates are runs of 1..`max_sentences`
  sentences anywhere in the passage;
- span subsets: candidates must hold the answer span; they start at the answer's sentence, one of
  up to `previous_sentences` sentences before it, or (with `clauses`) a clause boundary inside
  it, and end at the answer's sentence end or (with `clauses`) a clause boundary after the answer.
  An answer not found in the passage falls back to the free search.

Sentences are split by the `refined` rule. `SETTINGS` holds one setting per task kind and
language, chosen on the first half of each dev set (README: "A better extractor").
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

from nltk.stem import PorterStemmer

from expmrc.evidence import Evidence, Passage, Query, locate, make_evidence, prepare_passage, scorer_tokens
from expmrc.sentences import clause_cuts

RULE = "refined"


@dataclass(frozen=True)
class WindowSettings:
    """The knobs of `idf-window` (see the module docstring for what each does)."""

    question_weight: float = 1.0
    unique_answer_boost: float = 1.0
    idf_power: float = 1.0
    beta: float = 1.0
    max_sentences: int = 1
    previous_sentences: int = 0
    clauses: bool = False
    stem: bool = False


# (task kind, language) -> settings, chosen on the first half of each dev set.
SETTINGS: dict[tuple[str, str], WindowSettings] = {
    ("span", "en"): WindowSettings(stem=True),
    ("span", "zh"): WindowSettings(question_weight=2.0, idf_power=2.0, beta=2.0, previous_sentences=2, clauses=True),
    ("choice", "en"): WindowSettings(question_weight=0.5, unique_answer_boost=2.0, idf_power=2.0, beta=2.0,
                                     max_sentences=2, stem=True),
    ("choice", "zh"): WindowSettings(question_weight=0.5, unique_answer_boost=2.0, idf_power=2.0, beta=2.0,
                                     max_sentences=1),
}


_PORTER = PorterStemmer()


@lru_cache(maxsize=1 << 16)
def _stem(token: str) -> str:
    return _PORTER.stem(token)


def terms(text: str, stem: bool) -> tuple[str, ...]:
    """The terms of `text`: the scorer's tokens, Porter-stemmed when `stem`."""
    tokens = scorer_tokens(text)
    return tuple(_stem(t) for t in tokens) if stem else tokens


@dataclass(frozen=True)
class TermWeights:
    """IDF over the sentences of a set of passages; a term never seen there gets `unseen`."""

    idf: dict[str, float]
    unseen: float

    @classmethod
    def from_passages(cls, texts: Iterable[str], stem: bool) -> "TermWeights":
        """Document frequency counted per sentence (the `refined` rule) over distinct passages."""
        df: Counter = Counter()
        n = 0
        for text in dict.fromkeys(texts):
            for sentence in prepare_passage(text, RULE).sentences:
                n += 1
                df.update(set(terms(sentence.text, stem)))
        return cls({t: math.log((n + 1) / (d + 0.5)) for t, d in df.items()}, math.log(n + 1))

    def weight(self, term: str, power: float) -> float:
        return self.idf.get(term, self.unseen) ** power


class IdfWindow:
    """The extractor for one dataset: its settings and the term weights of its passages."""

    def __init__(self, settings: WindowSettings, weights: TermWeights):
        self.settings = settings
        self.weights = weights

    def key(self, query: Query) -> dict[str, float]:
        """Key term -> weight: question terms × question_weight, answer terms × 1 (× the boost
        for option terms no distractor has)."""
        s = self.settings
        distractors = {t for i, o in enumerate(query.options) if i != query.answer_index for t in terms(o, s.stem)}
        key: Counter = Counter()
        for t in terms(query.question, s.stem):
            key[t] += s.question_weight
        for t in terms(query.answer_text, s.stem):
            boost = s.unique_answer_boost if query.options and t not in distractors else 1.0
            key[t] += boost
        return {t: v * self.weights.weight(t, s.idf_power) for t, v in key.items()}

    def score(self, candidate: Counter, key: dict[str, float], key_mass: float) -> float:
        """Weighted F-beta of a candidate's term counts against the key."""
        power, beta2 = self.settings.idf_power, self.settings.beta ** 2
        mass = on_key = hit = 0.0
        for term, count in candidate.items():
            w = self.weights.weight(term, power)
            mass += count * w
            if term in key:
                on_key += count * w
                hit += key[term]
        precision = on_key / mass if mass else 0.0
        recall = hit / key_mass if key_mass else 0.0
        if precision + recall == 0:
            return 0.0
        return (1 + beta2) * precision * recall / (beta2 * precision + recall)

    def __call__(self, passage: Passage, query: Query) -> Evidence | None:
        if not passage.sentences:
            return None
        key = self.key(query)
        key_mass = sum(key.values())
        at = None if query.options else locate(passage, query.answer_text, query.answer_start)
        if at is not None:
            return self._anchored(passage, at, at + len(query.answer_text), key, key_mass)
        return self._free(passage, key, key_mass)

    def _free(self, passage: Passage, key: dict[str, float], key_mass: float) -> Evidence:
        """Runs of 1..max_sentences sentences anywhere; ties go to the earliest, then shortest."""
        stem = self.settings.stem
        sentence_terms = [Counter(terms(s.text, stem)) for s in passage.sentences]
        best = (-1.0, 0, 0)
        n = len(passage.sentences)
        for first in range(n):
            counts: Counter = Counter()
            for last in range(first, min(first + self.settings.max_sentences, n)):
                counts.update(sentence_terms[last])
                value = self.score(counts, key, key_mass)
                if value > best[0]:
                    best = (value, first, last)
        return make_evidence(passage, best[1], best[2], best[0])

    def _anchored(self, passage: Passage, start: int, end: int, key: dict[str, float], key_mass: float) -> Evidence:
        """Spans holding passage[start:end]; ties go to the earliest start, then the shortest."""
        s = self.settings
        sentences = passage.sentences
        inside = [i for i, x in enumerate(sentences) if x.start < end and start < x.end]
        first, last = inside[0], inside[-1]
        starts = {sentences[first].start}
        starts.update(sentences[i].start for i in range(max(0, first - s.previous_sentences), first))
        ends = {sentences[last].end}
        if s.clauses:
            starts.update(c for c in clause_cuts(passage.text, sentences[first])[:-1] if c <= start)
            ends.update(c for c in clause_cuts(passage.text, sentences[last])[1:] if c >= end)
        best = None
        for a in sorted(starts):
            for b in sorted(ends):
                value = self.score(Counter(terms(passage.text[a:b], s.stem)), key, key_mass)
                if best is None or value > best[0]:
                    best = (value, a, b)
        value, a, b = best
        text = passage.text[a:b]
        a += len(text) - len(text.lstrip())  # a clause cut may leave a space before the text
        b -= len(text) - len(text.rstrip())
        covered = [i for i, x in enumerate(sentences) if x.start < b and a < x.end]
        return Evidence(passage.text[a:b], a, b, covered[0], covered[-1], value)


def idf_window_for(texts: Iterable[str], kind: str, language: str,
                   settings: WindowSettings | None = None) -> IdfWindow:
    """The extractor for a dataset with these passages, task kind and language."""
    settings = settings or SETTINGS[(kind, language)]
    return IdfWindow(settings, TermWeights.from_passages(texts, settings.stem))
