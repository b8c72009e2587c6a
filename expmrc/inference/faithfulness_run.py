"""`expmrc faithfulness`'s work: edit each passage, re-predict with the model, and score the changes.

For every question the model first answers on its passage. Its facts (passage sentences, `simple`
rule) are ordered by the model's evidence score — the summed probability of its n-best evidence
candidates that overlap the sentence — and split into relevant (overlapping the predicted evidence)
and irrelevant (`metrics.faithfulness.order_facts`). Then it answers again on the passage without the
first j relevant facts and without the first j irrelevant ones (j = 1 .. min(max_k, facts)), on the
passage with the evidence cut out, and on the evidence alone. These edited questions are predicted in
batches, a chunk of questions at a time. FARM(k), comprehensiveness and sufficiency come from
`metrics.faithfulness`; the cost is the wall time and the windows run (forward passes) per question.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any
from collections.abc import Sequence

from tqdm import tqdm

from expmrc.data.datasets import Dataset, Question, SpanQuestion, passage_of
from expmrc.errors import ExpmrcError
from expmrc.inference.rerun import FineTuned
from expmrc.inference.task_predictor import Predicted
from expmrc.metrics.coupling import option_index
from expmrc.metrics.faithfulness import (Deletions, Erasure, FactOrder, answer_changed, erasure_figures,
                                         farm, order_facts, up_to)
from expmrc.metrics.leaderboard import exact_match
from expmrc.text.sentences import Sentence, split_sentences

CHUNK = 32  # questions whose edited passages are predicted together


def without_spans(passage: str, spans: Sequence[tuple[int, int]]) -> str:
    """The passage with the characters of `spans` cut out (with the whitespace that followed each), trimmed."""
    kept, at = [], 0
    for start, end in sorted(spans):
        if start < at:
            start = at
        kept.append(passage[at:start])
        at = max(at, end)
        while at < len(passage) and passage[at].isspace():
            at += 1
    kept.append(passage[at:])
    return "".join(kept).strip()


def sentence_scores(sentences: Sequence[Sentence], candidates: Sequence[dict[str, Any]]) -> list[float]:
    """Each sentence's evidence score: the summed probability of the n-best evidence spans overlapping it."""
    return [sum(c["probability"] for c in candidates if c["start"] < s.end and s.start < c["end"]) for s in sentences]


def with_passage(question: Question, qid: str, passage: str) -> Question:
    """The question under another id, asked on `passage`."""
    if isinstance(question, SpanQuestion):
        return replace(question, qid=qid, context=passage, answer_starts=[None] * len(question.answers))
    return replace(question, qid=qid, passage=passage)


def correctness(question: Question, answer: str) -> bool | None:
    """Whether the answer is right (span: exact match; choice: the gold label); None without a gold answer."""
    if isinstance(question, SpanQuestion):
        if not any(str(a).strip() for a in question.answers):
            return None
        return exact_match(answer, question.answers) == 1.0
    if option_index(question.answer, question.options) is None:
        return None
    return answer == question.answer


@dataclass
class Faithfulness:
    """The figures of one run: FARM(k) for k = 1..max_k, comprehensiveness and sufficiency, notes, cost."""

    model: str
    dataset: str
    task: str
    questions: int
    farm: list[dict[str, float]]
    erasure: dict[str, Any]
    notes: list[str]
    seconds: float
    windows: int
    passages: int
    details: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The figures as JSON (details left out)."""
        n = max(self.questions, 1)
        return {"model": self.model, "dataset": self.dataset, "task": self.task, "questions": self.questions,
                "farm": self.farm, **{k.lower(): v for k, v in self.erasure.items()}, "notes": self.notes,
                "cost": {"seconds": round(self.seconds, 3), "seconds_per_question": round(self.seconds / n, 5),
                         "forward_passes_per_question": round(self.windows / n, 3),
                         "passages_per_question": round(self.passages / n, 3)}}

    def text(self) -> str:
        """The figures as lines of text."""
        n = max(self.questions, 1)
        lines = [f"{self.dataset}: {self.questions} questions, {self.task} model {self.model}"]
        for row in self.farm:
            lines.append(f"FARM({row['k']}) {row['farm']:.4f}  c_rel {row['c_rel']:.4f}  c_irr {row['c_irr']:.4f}")

        def show(value: Any) -> str:
            return "n/a" if value is None else f"{value:.4f}"

        e = self.erasure
        lines.append(f"comprehensiveness {show(e['COMPREHENSIVENESS'])}  sufficiency {show(e['SUFFICIENCY'])}  "
                     f"({e['COUNTED']} answers)")
        for group in ("CORRECT", "WRONG"):
            lines.append(f"  {group.lower():7s} comprehensiveness {show(e['COMPREHENSIVENESS_' + group])}  "
                         f"sufficiency {show(e['SUFFICIENCY_' + group])}")
        lines += [f"note: {note}" for note in self.notes]
        lines.append(f"cost: {self.seconds / n:.4f} s, {self.windows / n:.2f} forward passes (windows) and "
                     f"{self.passages / n:.2f} passages per question")
        return "\n".join(lines)


def _question_records(question: Question, first: Predicted, edited: Predicted, variants: dict[str, str],
                      order: Any, max_k: int) -> tuple[Deletions, Erasure, dict[str, Any]]:
    """One question's deletion record, erasure record and details line from its predictions."""
    qid, kind = question.qid, ("span" if isinstance(question, SpanQuestion) else "choice")
    answer = first.predictions[qid]["answer"]
    after = {name: edited.predictions[vid]["answer"] for name, vid in variants.items()}
    changes = {group: tuple(answer_changed(answer, after[f"{group}-{j}"], kind)
                            for j in range(1, min(max_k, len(facts)) + 1))
               for group, facts in (("relevant", order.relevant), ("irrelevant", order.irrelevant))}
    deletions = Deletions(qid, len(order.relevant), changes["relevant"], len(order.irrelevant), changes["irrelevant"])
    correct = correctness(question, answer)
    full = first.answer_probability(qid, answer)
    if full is None:
        erasure = Erasure(qid, None, None, None, correct)
    else:
        erasure = Erasure(qid, full, edited.answer_probability(variants["without"], answer),
                          edited.answer_probability(variants["only"], answer), correct)
    details = {"id": qid, "answer": answer, "evidence": first.predictions[qid]["evidence"], "correct": correct,
               "relevant_facts": list(order.relevant), "irrelevant_facts": list(order.irrelevant),
               "after_relevant": [after[f"relevant-{j}"] for j in range(1, len(changes["relevant"]) + 1)],
               "after_irrelevant": [after[f"irrelevant-{j}"] for j in range(1, len(changes["irrelevant"]) + 1)],
               "changed_relevant": list(changes["relevant"]), "changed_irrelevant": list(changes["irrelevant"]),
               "p_full": full, "p_without_evidence": erasure.without_evidence,
               "p_evidence_only": erasure.evidence_only}
    return deletions, erasure, details


def _predicted(model: FineTuned, questions: Sequence[Question], dataset: Dataset) -> Predicted:
    """`model.predict(questions)`, a question the windows cannot hold named with the dataset's file."""
    try:
        return model.predict(questions)
    except ExpmrcError as exc:
        raise ExpmrcError(f"{dataset.path}: {exc}") from None


def _edited_passages(question: Question, first: Predicted, max_k: int,
                     dataset: Dataset) -> tuple[dict[str, str], FactOrder]:
    """One question's edited passages by name (`without` the predicted evidence, the evidence `only`, and without
    the first j `relevant-j` and `irrelevant-j` facts), and the order of its facts they follow."""
    passage = passage_of(question)
    sentences = split_sentences(passage)
    prediction = first.predictions[question.qid]
    evidence_start = prediction.get("evidence_start")
    span = (evidence_start, evidence_start + len(prediction["evidence"])) if evidence_start is not None \
        else (0, 0)
    scores = sentence_scores(sentences, first.nbest[question.qid]["evidence"])
    try:
        order = order_facts(sentences, scores, span)
    except ValueError as exc:
        raise ExpmrcError(f"{dataset.path}: question {question.qid}: {exc}") from None
    texts = {"without": without_spans(passage, [span]) if span[1] > span[0] else passage,
             "only": prediction["evidence"]}
    for group, facts in (("relevant", order.relevant), ("irrelevant", order.irrelevant)):
        for j in range(1, min(max_k, len(facts)) + 1):
            texts[f"{group}-{j}"] = without_spans(passage, [(sentences[i].start, sentences[i].end)
                                                            for i in up_to(facts, j)])
    return texts, order


def run_faithfulness(model: FineTuned, dataset: Dataset, max_k: int, progress: bool = True) -> Faithfulness:
    """Edit, re-predict and score every question of `dataset` (module docstring)."""
    if isinstance(max_k, bool) or not isinstance(max_k, int) or max_k < 1:
        raise ExpmrcError(f"--max-k must be a whole number of at least 1, got {max_k!r}")
    if dataset.kind != model.kind:
        raise ExpmrcError(f"{model.name}: a fine-tuned {model.kind} model; {dataset.path} is a {dataset.kind} "
                          f"({dataset.subset}) dataset")
    questions = dataset.questions
    if not questions:
        raise ExpmrcError(f"{dataset.path}: has no questions")
    deletions: list[Deletions] = []
    erasures: list[Erasure] = []
    details: list[dict[str, Any]] = []
    windows = passages = 0
    began = time.perf_counter()
    bar = tqdm(total=len(questions), desc="faithfulness", unit="question", disable=not progress, dynamic_ncols=True)
    for at in range(0, len(questions), CHUNK):
        chunk = questions[at:at + CHUNK]
        first = _predicted(model, chunk, dataset)
        edits: list[Question] = []
        plans = []
        for question in chunk:
            texts, order = _edited_passages(question, first, max_k, dataset)
            variants = {}
            for name, text in texts.items():
                variants[name] = f"edit-{len(edits)}"
                edits.append(with_passage(question, variants[name], text))
            plans.append((question, variants, order))
        edited = _predicted(model, edits, dataset)
        windows += first.windows + edited.windows
        passages += len(chunk) + len(edits)
        for question, variants, order in plans:
            record, erasure, line = _question_records(question, first, edited, variants, order, max_k)
            deletions.append(record)
            erasures.append(erasure)
            details.append(line)
        bar.update(len(chunk))
    bar.close()
    seconds = time.perf_counter() - began
    rows = []
    for k in range(1, max_k + 1):
        f = farm(deletions, k)
        rows.append({"k": k, "c_rel": f.c_rel, "c_irr": f.c_irr, "farm": f.farm})
    figures, notes = erasure_figures(erasures)
    return Faithfulness(model.name, dataset.path, model.kind, len(questions), rows, figures, notes, seconds, windows,
                        passages, details)

