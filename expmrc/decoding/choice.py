"""Turning multiple-choice model outputs into a submission: an option label and an evidence span per question.

Windows of one question are combined: each window's option logits become probabilities (softmax over
its real options) and an option scores the highest probability any window gives it; the answer is the
best option's label. The evidence is the best start/end pair of any window (start ≤ end, at most
`max_evidence_length` tokens, passage tokens only, score = start + end logit less the window's
`[CLS]` start + end logit), cut from the original passage by character offsets.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Mapping, Sequence

import numpy as np

from expmrc.features.choice import ChoiceFeature
from expmrc.data.datasets import LABELS, ChoiceQuestion


def softmax(logits: np.ndarray) -> np.ndarray:
    """Numerically stable softmax of a 1-d array."""
    shifted = np.exp(logits - logits.max())
    return shifted / shifted.sum()


def evidence_candidates(
    start_logits: np.ndarray,
    end_logits: np.ndarray,
    offsets: Sequence[tuple[int, int]],
    max_evidence_length: int,
    n_best_size: int,
) -> list[dict[str, Any]]:
    """Best start/end pairs over one window's passage tokens as character spans with scores.

    `start_logits`/`end_logits` are over the row positions; passage token i is at position 1 + i.
    A score is start + end logit minus the window's `[CLS]` (no evidence here) start + end logit,
    so that windows are compared by how much more they believe in the span than in its absence.
    """
    count = len(offsets)
    if count == 0:
        return []
    null = float(start_logits[0]) + float(end_logits[0])  # the window's "evidence is not here" score
    starts = np.asarray(start_logits[1 : 1 + count], dtype=np.float64)
    ends = np.asarray(end_logits[1 : 1 + count], dtype=np.float64)
    top_starts = np.argsort(-starts, kind="stable")[:n_best_size]
    top_ends = np.argsort(-ends, kind="stable")[:n_best_size]
    found = []
    for s in top_starts:
        for e in top_ends:
            if e < s or e - s + 1 > max_evidence_length:
                continue
            found.append({"start": int(offsets[s][0]), "end": int(offsets[e][1]),
                          "score": float(starts[s] + ends[e] - null)})
    found.sort(key=lambda c: -c["score"])
    return found[:n_best_size]


def decode_choice_predictions(
    questions: Sequence[ChoiceQuestion],
    features: Sequence[ChoiceFeature],
    outputs: Sequence[Mapping[str, np.ndarray]],
    max_evidence_length: int = 128,
    n_best_size: int = 20,
) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, Any]]]:
    """The submission `{qid: {"answer", "evidence"}}` and an n-best record per question.

    `outputs[i]` holds the model outputs of `features[i]` (option_logits, evidence_start_logits,
    evidence_end_logits). Questions without features (skipped in feature building) get no entry.
    """
    if len(features) != len(outputs):
        raise ValueError(f"{len(features)} features but {len(outputs)} model outputs")
    by_question: dict[int, list[int]] = defaultdict(list)
    for i, feature in enumerate(features):
        by_question[feature.question_index].append(i)

    predictions: dict[str, dict[str, str]] = {}
    nbest: dict[str, dict[str, Any]] = {}
    for q_index, question in enumerate(questions):
        if q_index not in by_question:
            continue
        options = len(question.options)
        option_scores = np.zeros(options)
        candidates: list[dict[str, Any]] = []
        for i in by_question[q_index]:
            out = outputs[i]
            probs = softmax(np.asarray(out["option_logits"][:options], dtype=np.float64))
            option_scores = np.maximum(option_scores, probs)
            for c in evidence_candidates(
                out["evidence_start_logits"], out["evidence_end_logits"], features[i].passage_offsets,
                max_evidence_length, n_best_size,
            ):
                candidates.append({**c, "window": features[i].window_index})
        answer = LABELS[int(np.argmax(option_scores))]

        best: dict[tuple[int, int], dict[str, Any]] = {}
        for c in sorted(candidates, key=lambda c: -c["score"]):
            best.setdefault((c["start"], c["end"]), c)
        ranked = [
            {"text": question.passage[c["start"] : c["end"]], "start": c["start"], "end": c["end"],
             "score": round(c["score"], 6), "window": c["window"]}
            for c in list(best.values())[:n_best_size]
        ]
        evidence = ranked[0]["text"] if ranked else ""
        predictions[question.qid] = {"answer": answer, "evidence": evidence}
        nbest[question.qid] = {
            "answer": answer,
            "option_scores": {LABELS[k]: round(float(p), 6) for k, p in enumerate(option_scores)},
            "windows": len(by_question[q_index]),
            "evidence": ranked,
        }
    return predictions, nbest
