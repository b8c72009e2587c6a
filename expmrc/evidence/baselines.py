"""Sentence-level evidence baselines and oracles: pick the passage span that best explains an answer.

Every method looks at a `Passage` (sentences with offsets and their scorer tokens, computed once
per passage) and a `Query` (the question, the answer being explained, and for the oracles the gold
fields), and returns an `Evidence`: a run of consecutive sentences with its exact character span.
Similarity is the leaderboard's bag-of-tokens F1 (`expmrc.metrics.leaderboard`), so "most similar" means
"would score best". Ties go to the earliest, then the shortest, candidate.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from collections.abc import Callable

from expmrc.data.datasets import LABELS, ChoiceQuestion, Question, SpanQuestion, gold_option_text
from expmrc.metrics.leaderboard import score_tokens
from expmrc.text.locate import Hint, find
from expmrc.text.sentences import Sentence, split_sentences

ANSWER_POLICIES = ("offset", "verbatim")  # an answer at its `answer_start` when it is there, else its first occurrence

@dataclass(frozen=True)
class Passage:
    """A passage split into sentences, with each sentence's scorer tokens and their counts."""

    text: str
    sentences: tuple[Sentence, ...]
    tokens: tuple[tuple[str, ...], ...]
    counts: tuple[Counter, ...]


@lru_cache(maxsize=512)
def prepare_passage(text: str, rule: str = "simple", semicolons: bool = False) -> Passage:
    """Split (by sentence `rule`) and tokenize a passage once; questions on it reuse the result."""
    sentences = tuple(split_sentences(text, rule=rule, semicolons=semicolons))
    tokens = tuple(score_tokens(s.text) for s in sentences)
    return Passage(text, sentences, tokens, tuple(Counter(t) for t in tokens))


@dataclass(frozen=True)
class Evidence:
    """A span of a passage: sentences `first..last` (inclusive), its text and character offsets."""

    text: str
    start: int
    end: int
    first: int
    last: int
    score: float


@dataclass(frozen=True)
class Query:
    """What a method may look at: the question, the answer to explain, and gold fields for oracles.

    `answer_text` is the answer span (span subsets) or the chosen option's text (multiple choice),
    `answer_start` its character offset when known; `options`/`answer_index` are for multiple
    choice only. The `gold_*` fields are read by the oracles alone.
    """

    qid: str
    question: str
    answer_text: str
    answer_start: int | None = None
    options: tuple[str, ...] = ()
    answer_index: int | None = None
    gold_answers: tuple[str, ...] = ()
    gold_evidences: tuple[str, ...] = ()


def label_index(label: str, options: list[str] | tuple[str, ...]) -> int | None:
    """The option index a label letter names, or None when it names no option in the list."""
    index = LABELS.find(label) if isinstance(label, str) and len(label) == 1 else -1
    return index if 0 <= index < len(options) else None


def make_query(question: Question, answer: str | None = None, answer_start: int | None = None) -> Query:
    """The query for `question` explaining `answer` (a span, or an option label); None = the gold answer.

    Raises ValueError when a label names no option (the caller reports it with the file and id).
    """
    evidences = tuple(str(e) for e in (question.evidences or ()))
    if isinstance(question, SpanQuestion):
        if answer is None:
            answer, answer_start = str(question.answers[0]), question.answer_starts[0]
        return Query(question.qid, question.question, str(answer), answer_start,
                     gold_answers=tuple(str(a) for a in question.answers), gold_evidences=evidences)
    assert isinstance(question, ChoiceQuestion)
    label = question.answer if answer is None else answer
    index = label_index(label, question.options)
    if index is None:
        raise ValueError(f"answer label {label!r} names none of the {len(question.options)} options")
    gold = gold_option_text(question)
    return Query(question.qid, question.question, question.options[index], None,
                 options=tuple(question.options), answer_index=index,
                 gold_answers=() if gold is None else (gold,), gold_evidences=evidences)


def f1_counts(a: Counter, a_len: int, b: Counter, b_len: int) -> float:
    """Token F1 of two bags given as counts and sizes (equal to `metric.token_f1` on the token lists)."""
    if a_len == 0 or b_len == 0:
        return float(a_len == b_len)
    if len(a) > len(b):
        a, b = b, a
    same = 0
    for token, count in a.items():
        other = b.get(token)
        if other:
            same += count if count < other else other
    return 2.0 * same / (a_len + b_len)


def make_evidence(passage: Passage, first: int, last: int, score: float) -> Evidence:
    """The evidence covering sentences first..last of `passage`."""
    start, end = passage.sentences[first].start, passage.sentences[last].end
    return Evidence(passage.text[start:end], start, end, first, last, score)


def best_run(passage: Passage, key: tuple[str, ...], max_sentences: int = 1, margin: float = 0.0) -> Evidence | None:
    """The run of 1..max_sentences consecutive sentences whose tokens have the highest F1 to `key`.

    A run of two or more replaces the best single sentence only when it scores more than `margin`
    above it; ties go to the earliest, then the shortest run. None when the passage has no sentence.
    """
    if not passage.sentences:
        return None
    key_counts, key_len = Counter(key), len(key)
    # per sentence, the counts of key tokens only: a run's overlap with the key grows incrementally
    hits = [{t: c[t] for t in key_counts if t in c} for c in passage.counts]
    best_single, best_long = (-1.0, 0, 0), (-1.0, 0, 0)
    n = len(passage.sentences)
    for first in range(n):
        run: dict[str, int] = {}
        same = length = 0
        for last in range(first, min(first + max_sentences, n)):
            for token, count in hits[last].items():
                before, cap = run.get(token, 0), key_counts[token]
                run[token] = before + count
                if before < cap:
                    same += min(before + count, cap) - before
            length += len(passage.tokens[last])
            if key_len == 0 or length == 0:
                score = float(key_len == length)
            else:
                score = 2.0 * same / (key_len + length)
            if last == first:
                if score > best_single[0]:
                    best_single = (score, first, last)
            elif score > best_long[0]:
                best_long = (score, first, last)
    choice = best_long if best_long[0] > best_single[0] + margin else best_single
    return make_evidence(passage, choice[1], choice[2], choice[0])


def containing_run(passage: Passage, start: int, end: int) -> Evidence | None:
    """The shortest run of sentences that holds the characters passage[start:end]."""
    inside = [i for i, s in enumerate(passage.sentences) if s.start < end and start < s.end]
    if not inside:
        return None
    return make_evidence(passage, inside[0], inside[-1], 1.0)


# --- the methods ---------------------------------------------------------------------------------


def most_similar(passage: Passage, query: Query) -> Evidence | None:
    """The sentence with the highest token F1 to the answer text (the chosen option's for choice)."""
    return best_run(passage, score_tokens(query.answer_text))


def most_similar_question(passage: Passage, query: Query) -> Evidence | None:
    """The sentence with the highest token F1 to question + answer text."""
    return best_run(passage, score_tokens(query.question) + score_tokens(query.answer_text))


def answer_sentence(passage: Passage, query: Query) -> Evidence | None:
    """The sentence holding the answer span (at its offset when known); None when it is not found."""
    at = find(passage.text, query.answer_text, ANSWER_POLICIES, Hint(start=query.answer_start))
    return None if at is None else containing_run(passage, at.start, at.end)


def gold_answer_sentence(passage: Passage, query: Query) -> Evidence | None:
    """Oracle: the sentence holding the first occurrence of the first gold answer found in the passage;
    for multiple choice, the sentence most similar to question + gold option (README: Table 4)."""
    if query.answer_index is not None:
        if not query.gold_answers:
            return None
        return best_run(passage, score_tokens(query.question) + score_tokens(query.gold_answers[0]))
    for text in query.gold_answers:
        at = find(passage.text, text, ("verbatim",))
        if at is not None:
            return containing_run(passage, at.start, at.end)
    return None


def gold_evidence_sentence(passage: Passage, query: Query, max_sentences: int = 1) -> Evidence | None:
    """Oracle: the sentence (or run of up to `max_sentences`) covering the largest share of some gold
    evidence's tokens; ties go to the fewest tokens, then the earliest (README: Table 4)."""
    if not passage.sentences or not query.gold_evidences:
        return None
    references = [Counter(score_tokens(e)) for e in query.gold_evidences]
    sizes = [sum(r.values()) for r in references]
    best: tuple[float, int] | None = None
    where = (0, 0)
    for first in range(len(passage.sentences)):
        counts: Counter[str] = Counter()
        length = 0
        for last in range(first, min(first + max_sentences, len(passage.sentences))):
            counts.update(passage.counts[last])
            length += len(passage.tokens[last])
            recall = max(sum((r & counts).values()) / n if n else float(length == 0)
                         for r, n in zip(references, sizes))
            if best is None or (recall, -length) > best:
                best, where = (recall, -length), (first, last)
    assert best is not None  # there is a sentence (checked above), so the loop set it
    return make_evidence(passage, where[0], where[1], best[0])


Pick = Callable[[Passage, Query], "Evidence | None"]
