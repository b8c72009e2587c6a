"""Pseudo evidence for training sets, which come without evidence labels.

Each question gets the passage text most similar (the scorer's token F1) to question + gold answer
text (span subsets) or question + gold option text (multiple choice). Candidates are runs of one
to `max_sentences` consecutive sentences; a longer run wins only when it scores more than `margin`
above the best single sentence. With the defaults (3 sentences, margin 0, the `simple` sentence
rule) 5.5% of CMRC 2018 and 9.0% of C3 train labels are multi-sentence (7.4% together), close
to the ~7% of the pseudo data released with the paper.

The output is the input JSON with only `evidences` added: in each `qas` entry (SQuAD style) or one
list per question in each passage (RACE/C3 style), each list holding one string. A question that
cannot be labelled (empty passage, no token shared with any sentence, a gold label outside the
options) gets `[""]` and is reported.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tqdm import tqdm

from expmrc.data.datasets import Dataset, SpanQuestion, gold_option_text
from expmrc.evidence.baselines import best_run, prepare_passage
from expmrc.metrics.leaderboard import score_tokens


@dataclass
class PseudoReport:
    """What a labelling run did: how many questions, run lengths, and the questions left unlabelled."""

    questions: int = 0
    lengths: Counter = field(default_factory=Counter)
    unlabelled: list[tuple[str, str]] = field(default_factory=list)

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
        if self.unlabelled:
            out.append(f"{len(self.unlabelled)} question(s) could not be labelled (evidence \"\"):")
            out += [f"  {qid}: {why}" for qid, why in self.unlabelled]
        return out


def pseudo_evidence(question, max_sentences: int = 3, margin: float = 0.0,
                    rule: str = "simple") -> tuple[str | None, int, str]:
    """(evidence text or None, run length, why not labelled) for one question."""
    if isinstance(question, SpanQuestion):
        passage_text, answer = question.context, str(question.answers[0])
    else:
        passage_text, answer = question.passage, gold_option_text(question)
        if answer is None:
            return None, 0, f"gold label {question.answer!r} names none of the {len(question.options)} options"
    passage = prepare_passage(passage_text, rule)
    if not passage.sentences:
        return None, 0, "empty passage"
    evidence = best_run(passage, score_tokens(question.question) + score_tokens(answer), max_sentences, margin)
    if evidence.score == 0:
        return None, 0, "shares no token with any sentence"
    return evidence.text, evidence.last - evidence.first + 1, ""


def pseudo_label(dataset: Dataset, max_sentences: int = 3, margin: float = 0.0, rule: str = "simple",
                 progress: bool = True) -> tuple[dict[str, Any], PseudoReport]:
    """A copy of the dataset's JSON with one pseudo evidence per question, and the report."""
    report = PseudoReport(questions=len(dataset.questions))
    texts: list[str] = []
    for q in tqdm(dataset.questions, desc="pseudo evidence", unit="q", disable=not progress):
        text, length, why = pseudo_evidence(q, max_sentences, margin, rule)
        if text is None:
            report.unlabelled.append((q.qid, why))
            text = ""
        else:
            report.lengths[length] += 1
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
