"""Span-extraction features: the tokenizer's own pair encoding of question and passage, in windows.

Built as the Hugging Face question-answering example builds them: the question first (cut to
`max_query_length` tokens at a token boundary of its own text), only the passage truncated,
overflowing windows whose starts lie `doc_stride` passage tokens apart (the tokenizer's `stride` is
the overlap, so it is set per question length), offsets and `sequence_ids` telling the passage
tokens apart. Special tokens, their order and the token types are the tokenizer's (see
`expmrc.features.windows` for windows, labels and the table).

Training labels come from the first answer (`expmrc.text.locate.locate_answer`) and the question's
evidences (`expmrc.text.locate.locate_evidence`), with these rules for bad input, each counted in the `FeatureReport`:
- `answer_start` not at the answer text: moved to the nearest occurrence (a missing one takes the
  first occurrence) — `answer_start_repaired`;
- answer text empty, not in the passage, or only characters the tokenizer drops; or an empty passage:
  the question is skipped (`answer_not_found`, `empty_passage`);
- no evidence, or evidence found nowhere: the question is kept for its answer and its evidence label
  is IGNORE, so it adds nothing to the evidence loss (`evidence_missing`, `evidence_not_found`).
Prediction needs no answers; a question with an empty passage still gets a window (with no passage
tokens), so every question is answered.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Sequence

from tqdm import tqdm

from expmrc.data.datasets import SpanQuestion
from expmrc.errors import ExpmrcError
from expmrc.features.windows import (IGNORE, FeatureReport, FeatureTable, PairTemplate, TableBuilder,
                                     char_span_to_tokens, count_unknown, max_context, window_label)
from expmrc.text.locate import locate_answer, locate_evidence


def truncated_question(text: str, tokenizer: Any, max_tokens: int) -> tuple[str, int, bool]:
    """The question text cut after its `max_tokens`-th token, its token count and whether it was cut."""
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    offsets = encoded["offset_mapping"]
    if len(offsets) <= max_tokens:
        return text, len(offsets), False
    return text[:offsets[max_tokens - 1][1]], max_tokens, True


def training_labels(question: SpanQuestion, report: FeatureReport) -> tuple[tuple[int, int], tuple[int, int] | None] | None:
    """The answer and evidence character spans of a training question, or None when it is skipped."""
    if not question.context.strip():
        report.note("empty_passage", question.qid)
        return None
    answer = str(question.answers[0])
    span, moved = locate_answer(question.context, answer, question.answer_starts[0]) if answer.strip() else (None, False)
    if span is None:
        report.note("answer_not_found", question.qid)
        return None
    if moved:
        report.note("answer_start_repaired", question.qid)
    evidence, status = locate_evidence(question.context, question.evidences, span)
    if status == "missing":
        report.note("evidence_missing", question.qid)
    elif status == "not_found":
        report.note("evidence_not_found", question.qid)
    elif status == "repaired":
        report.note("evidence_whitespace_repaired", question.qid)
    return span, evidence


def build_span_features(questions: Sequence[SpanQuestion], tokenizer: Any, max_seq_length: int, doc_stride: int,
                        max_query_length: int, is_training: bool, token_types: bool = True,
                        progress: bool = False) -> tuple[FeatureTable, FeatureReport]:
    """Windows (with labels when `is_training`) for every question, in question order; see the module docstring."""
    if not getattr(tokenizer, "is_fast", False):
        raise ExpmrcError("the tokenizer must be a fast tokenizer: character offsets are needed")
    template = PairTemplate.of(tokenizer, token_types)
    report = FeatureReport(questions=len(questions))
    texts: dict[int, str] = {}
    labels: dict[int, tuple[tuple[int, int], tuple[int, int] | None]] = {}
    groups: dict[int, list[int]] = defaultdict(list)  # question tokens -> question indices
    for index, question in enumerate(questions):
        if is_training:
            label = training_labels(question, report)
            if label is None:
                report.skipped += 1
                continue
            labels[index] = label
        text, length, cut = truncated_question(question.question.strip(), tokenizer, max_query_length)
        if cut:
            report.note("question_truncated", question.qid)
        texts[index] = text
        groups[length].append(index)

    windows: dict[int, list[dict[str, Any]]] = {}
    bar = tqdm(total=len(texts), desc="span windows", unit="question", disable=not progress, leave=False)
    for length, members in sorted(groups.items()):
        capacity = max_seq_length - length - template.specials
        if capacity < 1:
            raise ExpmrcError(f"question {questions[members[0]].qid}: its {length} question tokens leave no room for "
                              f"the passage in --max_seq_length {max_seq_length}; lower --max_query_length")
        overlap = max(0, capacity - doc_stride)
        encoded = tokenizer([texts[i] for i in members], [questions[i].context for i in members],
                            truncation="only_second", max_length=max_seq_length, stride=overlap,
                            return_overflowing_tokens=True, return_offsets_mapping=True,
                            return_token_type_ids=token_types, padding=False)
        for row, sample in enumerate(encoded["overflow_to_sample_mapping"]):
            windows.setdefault(members[sample], []).append(_window(encoded, row, overlap))
        bar.update(len(members))
    bar.close()

    builder = TableBuilder("span", token_types)
    unknown = getattr(tokenizer, "unk_token_id", None)
    for index in sorted(windows):
        _add_question(builder, report, questions[index], index, windows[index], labels.get(index), unknown)
    report.windows = len(builder.window_ptr) - 1
    return builder.build(), report


def _window(encoded: Any, row: int, overlap: int) -> dict[str, Any]:
    """One overflowing encoding as a window: its ids, types, passage positions and offsets."""
    sequence = encoded.sequence_ids(row)
    passage = [j for j, s in enumerate(sequence) if s == 1]
    question = [j for j, s in enumerate(sequence) if s == 0]
    specials = [j for j, s in enumerate(sequence) if s is None]
    ids = list(encoded["input_ids"][row])
    offsets = [encoded["offset_mapping"][row][j] for j in passage]
    types = list(encoded["token_type_ids"][row]) if "token_type_ids" in encoded else None
    return {"ids": ids, "types": types, "passage_pos": passage[0] if passage else len(ids), "offsets": offsets,
            "null_pos": specials[0] if specials else 0, "overlap": overlap,
            "content": [ids[j] for j in question + passage]}


def _add_question(builder: TableBuilder, report: FeatureReport, question: SpanQuestion, index: int,
                  windows: list[dict[str, Any]], label: tuple | None, unknown: int | None) -> None:
    """Place one question's windows, with max-context flags and labels, into the table."""
    starts, lengths = [], []
    for w, window in enumerate(windows):
        starts.append(0 if w == 0 else starts[-1] + lengths[-1] - window["overlap"])
        lengths.append(len(window["offsets"]))
    total = starts[-1] + lengths[-1]
    flags = max_context(starts, lengths, total)
    passage_offsets: list[Any] = [None] * total
    for start, window in zip(starts, windows):
        passage_offsets[start:start + len(window["offsets"])] = window["offsets"]
    answer_tokens = evidence_tokens = None
    if label is not None:
        answer_tokens = char_span_to_tokens(passage_offsets, *label[0])
        if answer_tokens is None:  # the answer is only characters the tokenizer drops
            report.note("answer_not_found", question.qid)
            report.skipped += 1
            return
        if label[1] is not None:
            evidence_tokens = char_span_to_tokens(passage_offsets, *label[1])
            if evidence_tokens is None:
                report.note("evidence_not_found", question.qid)
    if len(windows) > 1:
        report.multi_window_questions += 1
    labelled = False
    for start, length, window_flags, window in zip(starts, lengths, flags, windows):
        columns: dict[str, int] = {"question_index": index, "passage_pos": window["passage_pos"],
                                   "null_pos": window["null_pos"]}
        if label is not None:
            where = (start, start + length, window["passage_pos"], window["null_pos"])
            columns["start_positions"], columns["end_positions"] = window_label(answer_tokens, *where)
            labelled |= columns["start_positions"] != window["null_pos"]
            if evidence_tokens is not None:
                columns["evidence_start"], columns["evidence_end"] = window_label(evidence_tokens, *where)
            else:
                columns["evidence_start"] = columns["evidence_end"] = IGNORE
        count_unknown(report, window["content"], unknown)
        builder.add([(window["ids"], window["types"])], window["offsets"], window_flags, **columns)
    if label is not None and not labelled:
        report.note("answer_outside_all_windows", question.qid)
