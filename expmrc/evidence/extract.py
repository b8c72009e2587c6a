"""Running an evidence method over a whole dataset: answers in, a scorable submission out.

The answers come from a prediction file (`{qid: {"answer": ...}}` or `{qid: "answer"}`, with an
optional `answer_start`) or, when none is given, from the dataset's gold answers. Every question
that needed a fallback is counted and reported in `Extraction.notes`, never silently relabelled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable

from tqdm import tqdm

from expmrc.data import subsets
from expmrc.data.datasets import LABELS, ChoiceQuestion, Dataset, Question, SpanQuestion, passage_of
from expmrc.errors import ExpmrcError
from expmrc.evidence.baselines import (Evidence, Pick, Query, answer_sentence, gold_answer_sentence, gold_evidence_sentence,
                             label_index, make_query, most_similar, most_similar_question, prepare_passage)
from expmrc.evidence.idf_window import RULE as IDF_WINDOW_RULE, idf_window_for
from expmrc.registry import Registry
from expmrc.text.locate import locate_answer, occurrences

BEST = "idf-window"


@dataclass(frozen=True)
class EvidenceMethod:
    """A registered evidence method: one line for --help and the docs, the task kinds it serves, whether it reads
    the gold evidence (an oracle), its sentence rule, its pick function for a dataset, and what it does when it
    picks nothing."""

    summary: str
    tasks: tuple[str, ...]
    needs_evidence: bool
    rule: str
    make: Callable[[Dataset], Pick]
    fallback: Callable[[Query], Query] | None = None  # picks nothing: the sentence most similar to this key instead
    by_similarity: bool = False  # picks by token overlap, so a score of 0 means no sentence shares a token


def _idf_window(dataset: Dataset) -> Pick:
    return idf_window_for([passage_of(q) for q in dataset.questions], dataset.kind, dataset.language,
                          questions=[q.question for q in dataset.questions])


def _gold_key(query: Query) -> Query:
    """A query whose answer text is the first gold answer (for the oracle's fallback)."""
    return Query(query.qid, query.question, query.gold_answers[0] if query.gold_answers else query.answer_text)


BOTH = ("span", "choice")
METHODS: Registry[EvidenceMethod] = Registry.of("evidence method", {
    "most-similar": EvidenceMethod(
        "the sentence with the highest token F1 (the scorer's) to the answer text, or to the chosen option's text",
        BOTH, False, "simple", lambda d: most_similar, by_similarity=True),
    "most-similar-question": EvidenceMethod(
        "the same with question + answer text as the key",
        BOTH, False, "simple", lambda d: most_similar_question, by_similarity=True),
    "answer-sentence": EvidenceMethod(
        "span subsets: the sentence holding the answer, at `answer_start` when it matches there, else its first "
        "occurrence", ("span",), False, "simple", lambda d: answer_sentence, fallback=lambda q: q),
    "gold-answer-sentence": EvidenceMethod(
        "oracle: the sentence holding the first occurrence of a gold answer; multiple choice: the sentence most "
        "similar to question + gold option (the definitions that reproduce the paper's Table 4)",
        BOTH, False, "simple", lambda d: gold_answer_sentence, fallback=_gold_key),
    "gold-evidence-sentence": EvidenceMethod(
        "oracle: the sentence covering the largest share of some gold evidence's tokens, ties to the fewest tokens",
        BOTH, True, "simple", lambda d: gold_evidence_sentence),
    BEST: EvidenceMethod(
        "IDF-weighted F2 over windows of sentences and clauses, anchored on the answer for span subsets, "
        "contrasting the options for multiple choice", BOTH, False, IDF_WINDOW_RULE, _idf_window),
}, aliases={"best": BEST})


@dataclass(frozen=True)
class Method:
    """A named evidence method ready for one dataset: its sentence rule, its pick function and its fallback."""

    name: str
    rule: str
    pick: Pick
    fallback: Callable[[Query], Query] | None = None
    by_similarity: bool = False


def build_method(name: str, dataset: Dataset, rule: str | None = None) -> Method:
    """The method `name` (or an alias) for `dataset`; `rule` overrides its sentence rule."""
    spec, name = METHODS.lookup(name), METHODS.canonical(name)
    if dataset.kind not in spec.tasks:
        kinds = " or ".join(spec.tasks)
        names = ", ".join(n for kind in spec.tasks for n in subsets.names_of(kind))
        raise ExpmrcError(f"{dataset.path}: {name} needs a {kinds} subset ({names}), this is {dataset.subset}")
    if spec.needs_evidence and all(q.evidences is None for q in dataset.questions):
        raise ExpmrcError(f"{dataset.path}: {name} needs a dataset with `evidences`")
    return Method(name, rule or spec.rule, spec.make(dataset), spec.fallback, spec.by_similarity)


@dataclass
class Extraction:
    """What a run produced: per question (dataset order) the answer written and its evidence."""

    dataset: Dataset
    method: str
    answers: dict[str, str]
    evidences: dict[str, Evidence | None]
    notes: list[str] = field(default_factory=list)
    answer_starts: dict[str, int | None] = field(default_factory=dict)  # span answers whose place is known

    def submission(self) -> dict[str, dict[str, Any]]:
        """The scorable submission `{qid: {"answer", "evidence"}}` in dataset order, with the character offsets
        `evidence_start` (every evidence) and `answer_start` (a span answer whose place is known) beside them."""
        entries: dict[str, dict[str, Any]] = {}
        for qid, answer in self.answers.items():
            evidence = self.evidences[qid]
            entry: dict[str, Any] = {"answer": answer, "evidence": "" if evidence is None else evidence.text}
            if self.answer_starts.get(qid) is not None:
                entry["answer_start"] = self.answer_starts[qid]
            if evidence is not None:
                entry["evidence_start"] = evidence.start
            entries[qid] = entry
        return entries


def answer_offset(passage: str, query: Query) -> int | None:
    """Where a span answer lies when that is known: at its given offset (else the occurrence nearest it, as the
    training labels place it), or at its only occurrence; None for an option, or an answer found more than once
    (or nowhere) without an offset."""
    if query.answer_index is not None or not query.answer_text.strip():
        return None
    if query.answer_start is not None:
        span, _ = locate_answer(passage, query.answer_text, query.answer_start)
        return None if span is None else span[0]
    spans = occurrences(passage, query.answer_text)
    return spans[0][0] if len(spans) == 1 else None


def _queries(questions: list[Question], answers: dict[str, tuple[str, int | None]] | None,
             source: str) -> dict[str, Query]:
    """The query of every question; labels that name no option are gathered into one error."""
    queries, bad = {}, []
    for q in questions:
        answer, start = (None, None) if answers is None else answers[q.qid]
        if answer is not None and not isinstance(q, SpanQuestion) and label_index(answer, q.options) is None:
            bad.append(f"{q.qid} ({answer!r} of {len(q.options)} options)")
            continue
        try:
            queries[q.qid] = make_query(q, answer, start)
        except ValueError:
            assert isinstance(q, ChoiceQuestion)  # make_query refuses only a gold label that names no option
            bad.append(f"{q.qid} ({q.answer!r} of {len(q.options)} options)")
    if bad:
        raise ExpmrcError(f"{source}: {len(bad)} question(s) name an option outside their list, "
                          f"first: {bad[0]}")
    return queries


def extract(dataset: Dataset, method: Method, answers: dict[str, tuple[str, int | None]] | None = None,
            questions: list[Question] | None = None, answers_path: str = "", progress: bool = True) -> Extraction:
    """Run `method` on `questions` (default: all) with `answers` (default: the gold answers)."""
    questions = dataset.questions if questions is None else questions
    queries = _queries(questions, answers, answers_path or dataset.path)
    written: dict[str, str] = {}
    evidences: dict[str, Evidence | None] = {}
    starts: dict[str, int | None] = {}
    empty, undelimited, not_found, no_overlap, none = [], set(), [], [], []
    prefetch = getattr(method.pick, "prefetch", None)  # idf-window embeds all questions' texts at once
    if prefetch is not None:
        prefetch([(prepare_passage(passage_of(q), method.rule), queries[q.qid]) for q in questions], progress)
    for q in tqdm(questions, desc=f"evidence ({method.name})", unit="q", disable=not progress, leave=False):
        query = queries[q.qid]
        passage = prepare_passage(passage_of(q), method.rule)
        written[q.qid] = query.answer_text if query.answer_index is None else LABELS[query.answer_index]
        starts[q.qid] = answer_offset(passage.text, query)
        if not passage.sentences:
            empty.append(q.qid)
            evidences[q.qid] = None
            continue
        if len(passage.sentences) == 1:
            undelimited.add(passage.text)
        evidence = method.pick(passage, query)
        if evidence is None and method.fallback is not None:
            not_found.append(q.qid)
            evidence = most_similar(passage, method.fallback(query))
        if evidence is not None and evidence.score == 0 and method.by_similarity:
            no_overlap.append(q.qid)
        if evidence is None:
            none.append(q.qid)
        evidences[q.qid] = evidence
    notes: list[str] = []
    _note(notes, empty, "have an empty passage; their evidence is empty")
    if undelimited:
        notes.append(f"{len(undelimited)} passage(s) have no sentence delimiter; each is one sentence")
    _note(notes, not_found, "have an answer not found in the passage; their evidence is the most-similar sentence")
    _note(notes, no_overlap, "share no token with any sentence; their evidence is the first sentence")
    _note(notes, none, "got no evidence; it is empty")
    return Extraction(dataset, method.name, written, evidences, notes, starts)


def _note(notes: list[str], qids: list[str], what: str) -> None:
    if qids:
        notes.append(f"{len(qids)} question(s) {what} (first: {qids[0]})")


def split_halves(dataset: Dataset) -> tuple[list[Question], list[Question]]:
    """The questions of the first and second half of the passages, in file order (the protocol for
    choosing settings without overfitting: choose on the first, report on the second)."""
    # q.context for span questions, q.passage_id for multiple choice: the dataset's kind picks the one that exists
    key: Callable[[Any], Any] = (lambda q: q.context) if dataset.kind == "span" else (lambda q: q.passage_id)
    order = list(dict.fromkeys(key(q) for q in dataset.questions))
    first = set(order[:(len(order) + 1) // 2])
    return ([q for q in dataset.questions if key(q) in first], [q for q in dataset.questions if key(q) not in first])
