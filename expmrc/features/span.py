"""Span-extraction features: the tokenizer's own pair encoding of question and passage, in windows.

Laid out as the Hugging Face question-answering example lays them out: the question first (cut to
`max_query_length` tokens at a token boundary of its own text), only the passage cut into windows whose
starts lie `doc_stride` passage tokens apart (the original release's step; the example's `stride` is
the overlap instead), the tokenizer's own special tokens, order and token types, offsets into the
passage. Built from batched calls to the tokenizer's Rust backend over all questions and all distinct
passages at once (each passage tokenized once however many questions share it): the passage tokens of
a window are exactly those the tokenizer's overflowing pair encoding gives, since it truncates the
passage's own encoding (see `expmrc.features.windows` for windows, labels and the table).

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

from typing import TYPE_CHECKING
from collections.abc import Sequence

import numpy as np
from tqdm import tqdm

from expmrc.data.datasets import SpanQuestion
from expmrc.errors import ExpmrcError
from expmrc.features.windows import (IGNORE, FeatureReport, FeatureTable, PairTemplate, TableBuilder,
                                     char_span_to_tokens, encode_texts, max_context_flags,
                                     window_label, window_starts, tokenizer_name)
from expmrc.text.locate import locate_answer, locate_evidence

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast


def truncated_question(text: str, tokenizer: PreTrainedTokenizerFast, max_tokens: int) -> tuple[str, int, bool]:
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


def build_span_features(questions: Sequence[SpanQuestion], tokenizer: PreTrainedTokenizerFast, max_seq_length: int,
                        doc_stride: int, max_query_length: int, is_training: bool, token_types: bool = True,
                        progress: bool = False) -> tuple[FeatureTable, FeatureReport]:
    """Windows (with labels when `is_training`) for every question, in question order; see the module docstring."""
    if not getattr(tokenizer, "is_fast", False):
        raise ExpmrcError(f"{tokenizer_name(tokenizer)}: the tokenizer must be a fast tokenizer: character offsets "
                          "are needed")
    if doc_stride < 1:
        raise ExpmrcError(f"--doc_stride must be at least 1 token (got {doc_stride})")
    template = PairTemplate.of(tokenizer, token_types)
    report = FeatureReport(questions=len(questions))
    labels: dict[int, tuple[tuple[int, int], tuple[int, int] | None]] = {}
    kept: list[int] = []
    for index, question in enumerate(questions):
        if is_training:
            label = training_labels(question, report)
            if label is None:
                report.skipped += 1
                continue
            labels[index] = label
        kept.append(index)
    asked = question_tokens(tokenizer, [questions[i] for i in kept], max_query_length, report)
    passages = passage_tokens(tokenizer, [questions[i].context for i in kept])
    builder = TableBuilder("span", token_types)
    unknown = getattr(tokenizer, "unk_token_id", None)
    for index, (ids, length) in zip(tqdm(kept, desc="span windows", unit="question", disable=not progress,
                                         leave=False), asked):
        capacity = max_seq_length - length - template.specials
        room = max_seq_length - len(ids) - template.specials  # the passage tokens the pair encoding keeps
        if min(capacity, room) < 1:
            raise ExpmrcError(f"question {questions[index].qid}: its {length} question tokens leave no room for "
                              f"the passage in --max_seq_length {max_seq_length}; lower --max_query_length")
        windows = Windows(template, ids, *passages[questions[index].context], room, max(0, capacity - doc_stride))
        _add_question(builder, report, questions[index].qid, index, windows, labels.get(index), unknown)
    report.windows = len(builder.window_ptr) - 1
    return builder.build(), report


def question_tokens(tokenizer: PreTrainedTokenizerFast, questions: Sequence[SpanQuestion], max_tokens: int,
                    report: FeatureReport) -> list[tuple[np.ndarray, int]]:
    """Each stripped question's token ids as the pair encoding sees them, and its token count for the window
    step: a question longer than `max_tokens` is cut after that token (`truncated_question`) and its cut text
    re-tokenized, all in two batched calls."""
    texts = [q.question.strip() for q in questions]
    encodings = encode_texts(tokenizer, texts)
    cut = {i: texts[i][:e.offsets[max_tokens - 1][1]] for i, e in enumerate(encodings) if len(e.ids) > max_tokens}
    recut = dict(zip(cut, encode_texts(tokenizer, list(cut.values())))) if cut else {}
    tokens = []
    for i, encoding in enumerate(encodings):
        if i in cut:
            report.note("question_truncated", questions[i].qid)
        tokens.append((np.asarray(recut.get(i, encoding).ids, dtype=np.int32), min(len(encoding.ids), max_tokens)))
    return tokens


def passage_tokens(tokenizer: PreTrainedTokenizerFast,
                   passages: Sequence[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Token ids and character offsets ([n, 2]) of each distinct passage, from one batched call."""
    distinct = list(dict.fromkeys(passages))
    return {text: (np.asarray(e.ids, dtype=np.int32), np.asarray(e.offsets, dtype=np.int32).reshape(-1, 2))
            for text, e in zip(distinct, encode_texts(tokenizer, distinct))}


class Windows:
    """One question's windows: the passage cut into `room`-token pieces overlapping by `overlap` tokens (the
    original `doc_stride` step), each laid out after the question by the pair template."""

    def __init__(self, template: PairTemplate, question: np.ndarray, ids: np.ndarray, offsets: np.ndarray,
                 room: int, overlap: int) -> None:
        self.question, self.ids, self.offsets = question, ids, offsets
        self.starts = window_starts(len(ids), room, room - overlap)
        self.lengths = [min(room, len(ids) - start) for start in self.starts]
        self.flags = max_context_flags(self.starts, self.lengths, len(ids))  # window after window
        self.flag_ptr = np.cumsum([0, *self.lengths]).tolist()
        self.prefix = np.asarray([*template.before, *question.tolist(), *template.between], dtype=np.int32)
        self.after = np.asarray(template.after, dtype=np.int32)
        self.template = template
        # the first special token of a row: before the question, else between the texts, else after the passage
        self.first_special = 0 if template.before else len(question) if template.between else None

    def row(self, w: int) -> tuple[np.ndarray, np.ndarray | None, int, int]:
        """Window `w`'s token ids, token types, first passage position and null position."""
        start, length = self.starts[w], self.lengths[w]
        ids = np.concatenate([self.prefix, self.ids[start:start + length], self.after])
        t = self.template
        types = None if t.types is None else np.repeat(np.asarray(t.types, dtype=np.int8), [
            len(t.before), len(self.question), len(t.between), length, len(t.after)])
        null = self.first_special if self.first_special is not None else (len(self.prefix) + length if t.after else 0)
        return ids, types, len(self.prefix) if length else len(ids), null


def _add_question(builder: TableBuilder, report: FeatureReport, qid: str, index: int, windows: Windows,
                  label: tuple | None, unknown: int | None) -> None:
    """Place one question's windows, with max-context flags and labels, into the table."""
    answer_tokens = evidence_tokens = None
    if label is not None:
        answer_tokens = char_span_to_tokens(windows.offsets, *label[0])
        if answer_tokens is None:  # the answer is only characters the tokenizer drops
            report.note("answer_not_found", qid)
            report.skipped += 1
            return
        if label[1] is not None:
            evidence_tokens = char_span_to_tokens(windows.offsets, *label[1])
            if evidence_tokens is None:
                report.note("evidence_not_found", qid)
    if len(windows.starts) > 1:
        report.multi_window_questions += 1
    question_unknown = int(np.count_nonzero(windows.question == unknown)) if unknown is not None else 0
    labelled = False
    for w, (start, length) in enumerate(zip(windows.starts, windows.lengths)):
        ids, types, passage_pos, null_pos = windows.row(w)
        columns: dict[str, int] = {"question_index": index, "passage_pos": passage_pos, "null_pos": null_pos}
        if label is not None:
            where = (start, start + length, passage_pos, null_pos)
            columns["start_positions"], columns["end_positions"] = window_label(answer_tokens, *where)
            labelled |= columns["start_positions"] != null_pos
            columns["evidence_start"], columns["evidence_end"] = (
                window_label(evidence_tokens, *where) if evidence_tokens is not None else (IGNORE, IGNORE))
        report.tokens += len(windows.question) + length
        if unknown is not None:
            report.unknown_tokens += question_unknown + int(np.count_nonzero(windows.ids[start:start + length] == unknown))
        builder.add([(ids, types)], windows.offsets[start:start + length], windows.flags[windows.flag_ptr[w]:windows.flag_ptr[w + 1]],
                    **columns)
    if label is not None and not labelled:
        report.note("answer_outside_all_windows", qid)
