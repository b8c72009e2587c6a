"""Pseudo evidence for training sets, which come without evidence labels.

Each question gets the passage text most similar (token F1) to its question text followed by the
gold answer text (span subsets) or the gold option text (multiple choice). How sentences are cut,
which tokens are compared, which runs of sentences compete and which wins is a `Preset`:

- `release` (the default) is the rule behind the pseudo data released with the paper: cut after
  every `。！？?!` (`.!?` in English) with nothing attached, the scorer's tokens WITHOUT its
  normalization (punctuation and articles count, case kept), key = question + answer with no
  separator, runs of 1-3 sentences for span subsets and single sentences for multiple choice, the
  highest F1 wins and ties go to the earliest run (then the shorter).
- `normalized` is expmrc's earlier rule: the scorer's normalized tokens, `simple` sentences (closing
  quotes stay with their sentence), runs of 1-3 sentences for every subset, and a run of two or more
  wins only when it beats the best single sentence by more than a margin.

The output is the input JSON with only `evidences` added: in each `qas` entry (SQuAD style) or one
list per question in each passage (RACE/C3 style), each list holding one string. A question that
cannot be labelled (empty passage, no token shared with any sentence, a gold label outside the
options) gets `[""]` and is reported.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from tqdm import tqdm

from expmrc.data.datasets import Dataset, Question, SpanQuestion, gold_option_text
from expmrc.errors import ExpmrcError
from expmrc.evidence.baselines import Evidence, Passage, best_run, prepare_passage
from expmrc.metrics.leaderboard import score_tokens, tokenize
from expmrc.registry import Registry
from expmrc.text.sentences import RELEASE_DELIMITERS, Sentence, split_at_delimiters, split_sentences

SENTENCE_RULES = ("release", "simple", "refined")


@dataclass(frozen=True)
class Preset:
    """One way to build pseudo evidence: sentence rule, tokens, candidate runs and how the winner is picked."""

    summary: str          # one line for `expmrc pseudo --help`
    sentences: str        # one of SENTENCE_RULES
    normalized: bool      # the scorer's normalized tokens (True) or its raw tokens (False)
    span_sentences: int   # longest run of sentences for span subsets
    choice_sentences: int  # longest run for multiple choice
    margin: float | None  # a longer run must beat the best single sentence by more; None: best of all, earliest on ties


PRESETS: Registry[Preset] = Registry.of("preset", {
    "release": Preset("the paper's released data: raw-token F1, cut after every 。！？?! (English .!?), 1-3 sentences "
                      "(span) or 1 (choice)",
                      "release", False, 3, 1, None),
    "normalized": Preset("normalized F1, sentences keep closing quotes, 1-3 sentences, longer wins by > --margin",
                         "simple", True, 3, 3, 0.0),
})
DEFAULT_PRESET = "release"


@dataclass(frozen=True)
class Settings:
    """A preset resolved for one task kind, with the command line's overrides applied."""

    sentences: str
    normalized: bool
    max_sentences: int
    margin: float | None


def resolve(preset: str, kind: str, max_sentences: int | None = None, margin: float | None = None,
            sentences: str | None = None) -> Settings:
    """The settings of `preset` for `kind` (`span`/`choice`); given overrides replace the preset's values."""
    p = PRESETS.lookup(preset, "--preset: ")
    if margin is not None and p.margin is None:
        raise ExpmrcError(f"--margin: preset {preset!r} picks the best run outright (ties to the earliest); "
                          "--margin applies to --preset normalized")
    if sentences is not None and sentences not in SENTENCE_RULES:
        raise ExpmrcError(f"--sentences: unknown rule {sentences!r}; choose one of {', '.join(SENTENCE_RULES)}")
    longest = p.span_sentences if kind == "span" else p.choice_sentences
    return Settings(sentences or p.sentences, p.normalized, max_sentences or longest,
                    p.margin if margin is None else margin)


@dataclass
class PseudoReport:
    """What a labelling run did: how many questions, run lengths, and the questions left unlabelled."""

    questions: int = 0
    lengths: Counter = field(default_factory=Counter)
    unlabelled: list[tuple[str, str]] = field(default_factory=list)
    no_overlap: list[str] = field(default_factory=list)  # labelled with the first sentence: every F1 was 0

    @property
    def multi_sentence(self) -> int:
        return sum(n for length, n in self.lengths.items() if length > 1)

    def lines(self) -> list[str]:
        """A human summary: counts, the share of multi-sentence labels, the unlabelled questions."""
        labelled = sum(self.lengths.values())
        share = 100.0 * self.multi_sentence / labelled if labelled else 0.0
        runs = ", ".join(f"{k} sentence{'s' if k > 1 else ''}: {v}" for k, v in sorted(self.lengths.items()))
        out = [f"{self.questions} questions, {labelled} labelled ({runs}); "
               f"{self.multi_sentence} multi-sentence ({share:.1f}%)"]
        if self.no_overlap:
            out.append(f"{len(self.no_overlap)} question(s) share no token with any sentence and get the first "
                       f"(every F1 is 0, ties go to the earliest): {', '.join(self.no_overlap[:5])}"
                       + (" ..." if len(self.no_overlap) > 5 else ""))
        if self.unlabelled:
            out.append(f"{len(self.unlabelled)} question(s) could not be labelled (evidence \"\"):")
            out += [f"  {qid}: {why}" for qid, why in self.unlabelled]
        return out


def _sentences(text: str, rule: str, language: str) -> list[Sentence]:
    if rule == "release":
        return split_at_delimiters(text, RELEASE_DELIMITERS[language])
    return split_sentences(text, rule)


@lru_cache(maxsize=256)
def _normalized_passage(text: str, rule: str, language: str) -> Passage:
    """The passage split by `rule` with each sentence's normalized scorer tokens, as the sentence baselines use."""
    if rule != "release":
        return prepare_passage(text, rule)
    sentences = tuple(_sentences(text, rule, language))
    tokens = tuple(score_tokens(s.text) for s in sentences)
    return Passage(text, sentences, tokens, tuple(Counter(t) for t in tokens))


@lru_cache(maxsize=256)
def _raw_runs(text: str, rule: str, language: str, max_sentences: int) -> tuple[tuple[Sentence, ...], tuple]:
    """A passage's sentences and, per run of 1..max_sentences (earliest first, then shorter), its raw token counts.

    Each run's tokens are those of the passage text it covers, so the F1 is exactly that of the run's text.
    """
    sentences = tuple(_sentences(text, rule, language))
    runs = []
    for first in range(len(sentences)):
        for last in range(first, min(first + max_sentences, len(sentences))):
            tokens = tokenize(text[sentences[first].start:sentences[last].end])
            runs.append((first, last, Counter(tokens), len(tokens)))
    return sentences, tuple(runs)


def earliest_best_run(text: str, key: list[str] | tuple[str, ...], rule: str, language: str,
                      max_sentences: int) -> Evidence | None:
    """The run with the highest raw-token F1 to `key`, ties to the earliest (then shorter); None without sentences."""
    sentences, runs = _raw_runs(text, rule, language, max_sentences)
    if not sentences:
        return None
    key_counts, key_len = Counter(key), len(key)
    best, best_first, best_last = -1.0, 0, 0
    for first, last, counts, length in runs:
        if key_len == 0 or length == 0:
            score = float(key_len == length)
        else:
            same = sum(min(c, counts[t]) for t, c in key_counts.items() if t in counts)
            score = 2.0 * same / (key_len + length)
        if score > best:
            best, best_first, best_last = score, first, last
    start, end = sentences[best_first].start, sentences[best_last].end
    return Evidence(text[start:end], start, end, best_first, best_last, best)


NO_OVERLAP = "shares no token with any sentence"


def pseudo_evidence(question: Question, settings: Settings, language: str) -> tuple[str | None, int, str]:
    """(evidence text or None, run length, why not labelled or NO_OVERLAP when the first sentence is given)."""
    answer: str | None
    if isinstance(question, SpanQuestion):
        passage_text, answer = question.context, str(question.answers[0])
    else:
        passage_text, answer = question.passage, gold_option_text(question)
        if answer is None:
            return None, 0, f"gold label {question.answer!r} names none of the {len(question.options)} options"
    if settings.normalized:
        passage = _normalized_passage(passage_text, settings.sentences, language)
        evidence = best_run(passage, score_tokens(question.question) + score_tokens(answer),
                            settings.max_sentences, settings.margin or 0.0)
        if evidence is None:  # the passage has no sentence
            return None, 0, "empty passage"
    else:
        evidence = earliest_best_run(passage_text, tokenize(question.question + answer), settings.sentences,
                                     language, settings.max_sentences)
        if evidence is None:
            return None, 0, "empty passage"
        if evidence.score == 0:
            return evidence.text, 1, NO_OVERLAP
    if evidence.score == 0:
        return None, 0, "shares no token with any sentence"
    return evidence.text, evidence.last - evidence.first + 1, ""


def pseudo_label(dataset: Dataset, preset: str = DEFAULT_PRESET, max_sentences: int | None = None,
                 margin: float | None = None, sentences: str | None = None,
                 progress: bool = True) -> tuple[dict[str, Any], PseudoReport]:
    """A copy of the dataset's JSON with one pseudo evidence per question (by `preset` and overrides), and the report."""
    settings = resolve(preset, dataset.kind, max_sentences, margin, sentences)
    report = PseudoReport(questions=len(dataset.questions))
    texts: list[str] = []
    for q in tqdm(dataset.questions, desc="pseudo evidence", unit="q", disable=not progress):
        text, length, why = pseudo_evidence(q, settings, dataset.language)
        if text is None:
            report.unlabelled.append((q.qid, why))
            text = ""
        else:
            report.lengths[length] += 1
            if why == NO_OVERLAP:
                report.no_overlap.append(q.qid)
        texts.append(text)
    return _with_evidences(dataset, texts), report


def _with_evidences(dataset: Dataset, texts: list[str]) -> dict[str, Any]:
    """The raw JSON with `evidences` set, walking it in the order `load_dataset` read the questions."""
    doc = copy.deepcopy(dataset.raw)
    ordered = iter(texts)
    if dataset.kind == "span":
        for article in doc["data"]:
            for paragraph in article["paragraphs"]:
                for qa in paragraph["qas"]:
                    qa["evidences"] = [next(ordered)]
    else:
        for sample in doc["data"]:
            sample["evidences"] = [[next(ordered)] for _ in sample["answers"]]
    return doc
