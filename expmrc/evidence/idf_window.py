"""`idf-window`: a better unsupervised evidence extractor (what `--method best` runs).

It scores candidate spans against a weighted bag of key terms — the question's terms and the
answer's (the chosen option's) terms — and keeps the span with the highest F-beta:

- term weights are IDF learnt from the sentences of the dataset's own passages (no labels), raised
  to `idf_power`, times the in-passage IDF (over this passage's sentences) raised to
  `local_idf_power`; English terms are Porter stems, Chinese terms the scorer's characters;
- weighted precision is the share of the candidate's weight on key terms, weighted recall the share
  of the key's weight the candidate holds; beta > 1 favours recall;
- multiple choice: option terms that no distractor option shares count `unique_answer_boost` times
  (they are what tells the correct option apart), candidates are runs of 1..`max_sentences`
  sentences anywhere in the passage, and `question_context` × the share of the question's weight
  found in the run and one sentence either side is added to the score; question terms are also
  scaled by how rare they are among the dataset's questions (`question_form_power`: "passage",
  "following", "true" are question forms, not content); a run holding a phrase the question quotes
  ("the underlined word “staring”") gains `quote_bonus`; and `dense_weight` × the cosine similarity
  of all-MiniLM-L6-v2 embeddings of question + option and the run's text is added (`expmrc.text.dense`);
- span subsets: candidates must hold the answer span; they start at the answer's sentence, one of
  up to `previous_sentences` sentences before it, or (with `clauses`) a clause boundary inside
  it, and end at the answer's sentence end or (with `clauses`) a clause boundary after the answer.
  An answer not found in the passage falls back to the free search.

Sentences are split by the `refined` rule. `SETTINGS` holds one setting per task kind and
language, chosen on the first half of each dev set (README: "A better extractor").
"""

from __future__ import annotations

import math
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import lru_cache
from collections.abc import Iterable

from nltk.stem import PorterStemmer

from expmrc.evidence.baselines import ANSWER_POLICIES, Evidence, Passage, Query, make_evidence, prepare_passage
from expmrc.metrics.leaderboard import score_tokens
from expmrc.text.dense import SentenceEncoder
from expmrc.text.locate import Hint, find
from expmrc.text.sentences import clause_cuts

RULE = "refined"


@dataclass(frozen=True)
class WindowSettings:
    """The knobs of `idf-window` (see the module docstring for what each does)."""

    question_weight: float = 1.0
    unique_answer_boost: float = 1.0
    idf_power: float = 1.0
    local_idf_power: float = 0.0
    question_context: float = 0.0
    question_form_power: float = 0.0
    quote_bonus: float = 0.0
    dense_weight: float = 0.0
    beta: float = 1.0
    max_sentences: int = 1
    previous_sentences: int = 0
    clauses: bool = False
    stem: bool = False


# (task kind, language) -> settings, chosen on the first half of each dev set.
SETTINGS: dict[tuple[str, str], WindowSettings] = {
    ("span", "en"): WindowSettings(stem=True),
    ("span", "zh"): WindowSettings(question_weight=2.0, idf_power=2.0, beta=2.0, previous_sentences=2, clauses=True),
    ("choice", "en"): WindowSettings(question_weight=0.5, unique_answer_boost=2.0, idf_power=1.0,
                                     local_idf_power=2.0, question_context=0.1, question_form_power=3.0,
                                     quote_bonus=0.5, dense_weight=0.3, beta=2.0, max_sentences=2, stem=True),
    ("choice", "zh"): WindowSettings(question_weight=0.5, unique_answer_boost=2.0, idf_power=2.0,
                                     question_context=0.1, beta=2.0, max_sentences=1),
}


_PORTER = PorterStemmer()


@lru_cache(maxsize=1 << 16)
def _stem(token: str) -> str:
    return _PORTER.stem(token)


def terms(text: str, stem: bool) -> tuple[str, ...]:
    """The terms of `text`: the scorer's tokens, Porter-stemmed when `stem`."""
    tokens = score_tokens(text)
    return tuple(_stem(t) for t in tokens) if stem else tokens


@dataclass(frozen=True)
class TermWeights:
    """IDF over the sentences of a set of passages; a term never seen there gets `unseen`."""

    idf: dict[str, float]
    unseen: float

    @classmethod
    def from_passages(cls, texts: Iterable[str], stem: bool) -> TermWeights:
        """Document frequency counted per sentence (the `refined` rule) over distinct passages."""
        df: Counter = Counter()
        n = 0
        for text in dict.fromkeys(texts):
            for sentence in prepare_passage(text, RULE).sentences:
                n += 1
                df.update(set(terms(sentence.text, stem)))
        return cls({t: math.log((n + 1) / (d + 0.5)) for t, d in df.items()}, math.log(n + 1))


def question_forms(questions: Iterable[str], stem: bool, power: float) -> dict[str, float]:
    """Question term -> (its IDF over the questions / the largest possible) ** power: near 1 for content
    words, small for the words of question forms ("Which of the following is true?")."""
    df: Counter = Counter()
    n = 0
    for question in questions:
        n += 1
        df.update(set(terms(question, stem)))
    top = math.log(n + 1) if n else 1.0
    return {t: (math.log((n + 1) / (d + 0.5)) / top) ** power for t, d in df.items()}


_QUOTED = re.compile(r"“\s*([^”“]+?)\s*”|\"\s*([^\"]+?)\s*\"")


def quoted_phrases(question: str) -> list[re.Pattern]:
    """Case-insensitive whole-word patterns for the phrases a question quotes (`“...”` or `"..."`)."""
    phrases = [(m.group(1) or m.group(2)).strip() for m in _QUOTED.finditer(question)]
    return [re.compile(r"(?<!\w)" + re.escape(p) + r"(?!\w)", re.IGNORECASE) for p in phrases
            if any(c.isalnum() for c in p)]


class IdfWindow:
    """The extractor for one dataset: its settings, the term weights of its passages and the
    question-form factors of its questions."""

    def __init__(self, settings: WindowSettings, weights: TermWeights, forms: dict[str, float] | None = None):
        self.settings = settings
        self.weights = weights
        self.forms = forms or {}
        self.encoder = SentenceEncoder() if settings.dense_weight else None
        self._passages: dict[str, tuple[list[Counter], dict[str, float], float]] = {}

    def _passage_terms(self, passage: Passage) -> tuple[list[Counter], dict[str, float], float]:
        """Each sentence's term counts, and the in-passage IDF (per sentence) with its unseen value."""
        if passage.text not in self._passages:
            sentence_terms = [Counter(terms(x.text, self.settings.stem)) for x in passage.sentences]
            frequency: Counter = Counter()
            for counts in sentence_terms:
                frequency.update(counts.keys())
            n = len(sentence_terms)
            local = {t: math.log((n + 1) / (f + 0.5)) for t, f in frequency.items()}
            self._passages = {passage.text: (sentence_terms, local, math.log(n + 1))}  # keep one passage
        return self._passages[passage.text]

    def _weigher(self, local: dict[str, float], unseen: float):
        """term -> global IDF ** idf_power × in-passage IDF ** local_idf_power (memoized per call)."""
        s, cache = self.settings, {}

        def weigh(term: str) -> float:
            if term not in cache:
                cache[term] = (self.weights.idf.get(term, self.weights.unseen) ** s.idf_power
                               * local.get(term, unseen) ** s.local_idf_power)
            return cache[term]
        return weigh

    def key(self, query: Query, weigh) -> dict[str, float]:
        """Key term -> weight: question terms × question_weight, answer terms × 1 (× the boost
        for option terms no distractor has), times the term's weight."""
        s = self.settings
        distractors = {t for i, o in enumerate(query.options) if i != query.answer_index for t in terms(o, s.stem)}
        key: defaultdict[str, float] = defaultdict(float)
        for t in terms(query.question, s.stem):
            key[t] += s.question_weight * self.forms.get(t, 1.0)
        for t in terms(query.answer_text, s.stem):
            key[t] += s.unique_answer_boost if query.options and t not in distractors else 1.0
        return {t: v * weigh(t) for t, v in key.items()}

    def score(self, candidate: Counter, key: dict[str, float], key_mass: float, weigh) -> float:
        """Weighted F-beta of a candidate's term counts against the key."""
        beta2 = self.settings.beta ** 2
        mass = on_key = hit = 0.0
        for term, count in candidate.items():
            w = weigh(term)
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
        sentence_terms, local, unseen = self._passage_terms(passage)
        weigh = self._weigher(local, unseen)
        key = self.key(query, weigh)
        key_mass = sum(key.values())
        at = None if query.options else find(passage.text, query.answer_text, ANSWER_POLICIES,
                                             Hint(start=query.answer_start))
        if at is not None:
            return self._anchored(passage, at.start, at.end, key, key_mass, weigh)
        question = {t: weigh(t) * self.forms.get(t, 1.0) for t in terms(query.question, self.settings.stem)}
        return self._free(passage, sentence_terms, key, key_mass, question, weigh, query)

    def _free(self, passage: Passage, sentence_terms: list[Counter], key: dict[str, float], key_mass: float,
              question: dict[str, float], weigh, query: Query) -> Evidence:
        """Runs of 1..max_sentences sentences anywhere, scored by F-beta plus `question_context` × the
        share of the question's weight found in the run and one sentence either side, `quote_bonus`
        when a sentence of the run holds a phrase the question quotes, and `dense_weight` × the
        cosine similarity of question + option and the run; ties go to the earliest, then the
        shortest run."""
        s = self.settings
        question_mass = sum(question.values())
        n = len(sentence_terms)
        runs = self._runs(n)
        dense = self._dense(passage, runs, query)
        quotes = quoted_phrases(query.question) if s.quote_bonus else []
        quoted = [any(p.search(x.text) for p in quotes) for x in passage.sentences]
        best = (-math.inf, 0, 0)
        for first in range(n):
            counts: Counter = Counter()
            for last in range(first, min(first + s.max_sentences, n)):
                counts.update(sentence_terms[last])
                value = self.score(counts, key, key_mass, weigh)
                if s.question_context and question_mass:
                    around = set().union(*sentence_terms[max(0, first - 1):last + 2])
                    value += s.question_context * sum(w for t, w in question.items() if t in around) / question_mass
                if any(quoted[first:last + 1]):
                    value += s.quote_bonus
                value += s.dense_weight * dense.get((first, last), 0.0)
                if value > best[0]:
                    best = (value, first, last)
        return make_evidence(passage, best[1], best[2], best[0])

    def _runs(self, n: int) -> list[tuple[int, int]]:
        """(first, last) of every run of 1..max_sentences of a passage's n sentences."""
        return [(first, last) for first in range(n) for last in range(first, min(first + self.settings.max_sentences, n))]

    @staticmethod
    def _dense_texts(passage: Passage, runs: list[tuple[int, int]], query: Query) -> list[str]:
        """The texts the dense term embeds for a question: each run's text, then question + option."""
        sentences = passage.sentences
        return [passage.text[sentences[a].start:sentences[b].end] for a, b in runs] + [
            f"{query.question} {query.answer_text}"]

    def _dense(self, passage: Passage, runs: list[tuple[int, int]], query: Query) -> dict[tuple[int, int], float]:
        """(first, last) -> cosine similarity of the run's text and question + option text (none without the
        dense term)."""
        if self.encoder is None:
            return {}
        vectors = self.encoder.encode(self._dense_texts(passage, runs, query))
        return dict(zip(runs, (vectors[:-1] @ vectors[-1]).tolist()))

    def prefetch(self, items: Iterable[tuple[Passage, Query]], progress: bool = False) -> None:
        """Embed, in one pass over all questions, every text the dense term will ask for when these
        questions are picked (batches of similar lengths across questions pad far less than one question's)."""
        if self.encoder is None:
            return
        texts: list[str] = []
        for passage, query in items:
            if passage.sentences and (query.options or find(passage.text, query.answer_text, ANSWER_POLICIES,
                                                             Hint(start=query.answer_start)) is None):
                texts.extend(self._dense_texts(passage, self._runs(len(passage.sentences)), query))
        if progress and texts:
            print(f"idf-window: embedding {len(set(texts))} texts (windows of sentences, questions with their "
                  "answers) with all-MiniLM-L6-v2 for the dense term; minutes on a CPU", file=sys.stderr)
        self.encoder.encode(texts, progress)

    def _anchored(self, passage: Passage, start: int, end: int, key: dict[str, float], key_mass: float,
                  weigh) -> Evidence:
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
                value = self.score(Counter(terms(passage.text[a:b], s.stem)), key, key_mass, weigh)
                if best is None or value > best[0]:
                    best = (value, a, b)
        assert best is not None  # the span holding the text is always a candidate
        value, a, b = best
        text = passage.text[a:b]
        a += len(text) - len(text.lstrip())  # a clause cut may leave a space before the text
        b -= len(text) - len(text.rstrip())
        covered = [i for i, x in enumerate(sentences) if x.start < b and a < x.end]
        return Evidence(passage.text[a:b], a, b, covered[0], covered[-1], value)


def idf_window_for(texts: Iterable[str], kind: str, language: str, settings: WindowSettings | None = None,
                   questions: Iterable[str] = ()) -> IdfWindow:
    """The extractor for a dataset with these passages (and questions), task kind and language."""
    settings = settings or SETTINGS[(kind, language)]
    forms = question_forms(questions, settings.stem, settings.question_form_power) if settings.question_form_power else {}
    return IdfWindow(settings, TermWeights.from_passages(texts, settings.stem), forms)
