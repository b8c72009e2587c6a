"""Model outputs back to a submission: an answer and an evidence span per question, and n-best lists.

Evidence, for both tasks, and the span answer are decoded by the one search of `decoding.spans` with
their own logits and length limits. A multiple-choice answer is the option with the highest
probability in any window (each window's option logits soft-maxed over its real options). A question
that has no window gets an empty answer and evidence, so every question of the file is answered.
Where a decoded text lies in the passage is kept beside it (`answer_start`, `evidence_start`: character
offsets the leaderboard ignores and the coupling metrics read).

The n-best record of a question holds `answer` and `evidence` candidate lists (span candidates carry
`text`, character `start`/`end` in the passage, `score` and `probability`; option candidates `label`,
`text` and `probability`) and the number of `windows`.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Mapping, Sequence

import numpy as np

from expmrc.data.datasets import LABELS, ChoiceQuestion, Question, SpanQuestion, passage_of
from expmrc.decoding.spans import best_spans, window_spans
from expmrc.features.windows import FeatureTable

HEADS = {"answer": ("start_logits", "end_logits"), "evidence": ("evidence_start_logits", "evidence_end_logits")}



def span_candidates(table: FeatureTable, windows: Sequence[int], outputs: Sequence[Mapping[str, np.ndarray]],
                    head: str, passage: str, n_best: int, max_length: int) -> list[dict[str, Any]]:
    """The n-best spans of one question for a head ("answer" or "evidence"), over its windows."""
    start_key, end_key = HEADS[head]
    found = []
    for window in windows:
        output = outputs[window]
        found.extend(window_spans(table, window, output[start_key], output[end_key], n_best, max_length,
                                  trusted_starts=head == "answer"))
    return best_spans(passage, found, n_best)


def option_candidates(question: ChoiceQuestion, windows: Sequence[int],
                      outputs: Sequence[Mapping[str, np.ndarray]]) -> list[dict[str, Any]]:
    """The options, most probable first: each keeps its highest probability over the windows."""
    count = len(question.options)
    best = np.zeros(count)
    for window in windows:
        logits = np.asarray(outputs[window]["option_logits"][:count], dtype=np.float64)
        probabilities = np.exp(logits - logits.max())
        best = np.maximum(best, probabilities / probabilities.sum())
    order = sorted(range(count), key=lambda k: (-best[k], k))
    return [{"label": LABELS[k], "text": question.options[k], "probability": round(float(best[k]), 6)} for k in order]


def decode_predictions(questions: Sequence[Question], table: FeatureTable, outputs: Sequence[Mapping[str, np.ndarray]],
                       n_best_size: int, max_answer_length: int,
                       max_evidence_length: int) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The submission `{qid: {"answer", "evidence"}}` and the n-best records, both in question order."""
    if len(outputs) != len(table):
        raise ValueError(f"{len(table)} windows but {len(outputs)} model outputs")
    by_question = table.windows_of()
    predictions: dict[str, dict[str, Any]] = {}
    nbest: dict[str, Any] = {}
    for index, question in enumerate(questions):
        windows = by_question.get(index, [])
        passage = passage_of(question)
        evidence = span_candidates(table, windows, outputs, "evidence", passage, n_best_size, max_evidence_length)
        if not windows:
            answers: list[dict[str, Any]] = []
        elif isinstance(question, SpanQuestion):
            answers = span_candidates(table, windows, outputs, "answer", passage, n_best_size, max_answer_length)
        else:
            answers = option_candidates(question, windows, outputs)
        prediction = {"answer": answers[0].get("label", answers[0]["text"]) if answers else "",
                      "evidence": evidence[0]["text"] if evidence else ""}
        if answers and "start" in answers[0]:
            prediction["answer_start"] = answers[0]["start"]
        if evidence:
            prediction["evidence_start"] = evidence[0]["start"]
        predictions[question.qid] = prediction
        nbest[question.qid] = {"answer": answers, "evidence": evidence, "windows": len(windows)}
    return predictions, nbest
