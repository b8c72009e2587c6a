"""The span feature builder as it was before batching across questions, kept as the reference the batched
builder must match byte for byte: one pair-encoding call per question-length group through the
tokenizer's own `__call__` with overflowing windows, then pure-Python windows, labels and packing.
Only the label step (`training_labels`) and the question cut (`truncated_question`) are shared with the
package; everything after the tokenizer is written out here independently."""

from __future__ import annotations

from collections import defaultdict
from typing import Any
from collections.abc import Sequence

import numpy as np

from expmrc.features.span import training_labels, truncated_question
from expmrc.features.windows import IGNORE, WINDOW_COLUMNS, FeatureReport, PairTemplate


def reference_span_features(questions: Sequence[Any], tokenizer: Any, max_seq_length: int, doc_stride: int,
                            max_query_length: int, is_training: bool,
                            token_types: bool = True) -> tuple[dict[str, np.ndarray], FeatureReport]:
    """The feature table's arrays and the report, built the old way."""
    specials = PairTemplate.of(tokenizer, token_types).specials
    report = FeatureReport(questions=len(questions))
    texts, labels, groups = {}, {}, defaultdict(list)
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
    for length, members in sorted(groups.items()):
        overlap = max(0, max_seq_length - length - specials - doc_stride)
        encoded = tokenizer([texts[i] for i in members], [questions[i].context for i in members],
                            truncation="only_second", max_length=max_seq_length, stride=overlap,
                            return_overflowing_tokens=True, return_offsets_mapping=True,
                            return_token_type_ids=token_types, padding=False)
        for row, sample in enumerate(encoded["overflow_to_sample_mapping"]):
            windows.setdefault(members[sample], []).append(_window(encoded, row, overlap))
    table = _Table(token_types)
    unknown = getattr(tokenizer, "unk_token_id", None)
    for index in sorted(windows):
        _add_question(table, report, questions[index], index, windows[index], labels.get(index), unknown)
    report.windows = len(table.window_ptr) - 1
    return table.arrays(), report


def _window(encoded: Any, row: int, overlap: int) -> dict[str, Any]:
    sequence = encoded.sequence_ids(row)
    passage = [j for j, s in enumerate(sequence) if s == 1]
    question = [j for j, s in enumerate(sequence) if s == 0]
    specials = [j for j, s in enumerate(sequence) if s is None]
    ids = list(encoded["input_ids"][row])
    return {"ids": ids, "types": list(encoded["token_type_ids"][row]) if "token_type_ids" in encoded else None,
            "passage_pos": passage[0] if passage else len(ids),
            "offsets": [tuple(encoded["offset_mapping"][row][j]) for j in passage],
            "null_pos": specials[0] if specials else 0, "overlap": overlap,
            "content": [ids[j] for j in question + passage]}


def _max_context(starts: list[int], lengths: list[int], total: int) -> list[list[bool]]:
    best = [(-1, -1)] * total
    for w, (start, length) in enumerate(zip(starts, lengths)):
        for i in range(length):
            if min(i, length - 1 - i) > best[start + i][0]:
                best[start + i] = (min(i, length - 1 - i), w)
    return [[best[start + i][1] == w for i in range(length)] for w, (start, length) in enumerate(zip(starts, lengths))]


def _tokens(offsets: list[Any], start: int, end: int) -> tuple[int, int] | None:
    hits = [i for i, (a, b) in enumerate(offsets) if b > start and a < end and b > a]
    return (hits[0], hits[-1]) if hits else None


def _label(tokens: tuple[int, int] | None, start: int, end: int, passage_pos: int, null_pos: int) -> tuple[int, int]:
    if tokens is None or tokens[0] < start or tokens[1] >= end:
        return null_pos, null_pos
    return passage_pos + tokens[0] - start, passage_pos + tokens[1] - start


def _add_question(table: _Table, report: FeatureReport, question: Any, index: int, windows: list[dict[str, Any]],
                  label: tuple | None, unknown: int | None) -> None:
    starts, lengths = [], []
    for w, window in enumerate(windows):
        starts.append(0 if w == 0 else starts[-1] + lengths[-1] - window["overlap"])
        lengths.append(len(window["offsets"]))
    total = starts[-1] + lengths[-1]
    passage_offsets: list[Any] = [None] * total
    for start, window in zip(starts, windows):
        passage_offsets[start:start + len(window["offsets"])] = window["offsets"]
    answer = evidence = None
    if label is not None:
        answer = _tokens(passage_offsets, *label[0])
        if answer is None:
            report.note("answer_not_found", question.qid)
            report.skipped += 1
            return
        if label[1] is not None:
            evidence = _tokens(passage_offsets, *label[1])
            if evidence is None:
                report.note("evidence_not_found", question.qid)
    if len(windows) > 1:
        report.multi_window_questions += 1
    labelled = False
    for start, length, flags, window in zip(starts, lengths, _max_context(starts, lengths, total), windows):
        columns = {"question_index": index, "passage_pos": window["passage_pos"], "null_pos": window["null_pos"]}
        if label is not None:
            where = (start, start + length, window["passage_pos"], window["null_pos"])
            columns["start_positions"], columns["end_positions"] = _label(answer, *where)
            labelled |= columns["start_positions"] != window["null_pos"]
            columns["evidence_start"], columns["evidence_end"] = (
                _label(evidence, *where) if evidence is not None else (IGNORE, IGNORE))
        report.tokens += len(window["content"])
        report.unknown_tokens += sum(1 for i in window["content"] if unknown is not None and i == unknown)
        table.add(window, flags, columns)
    if label is not None and not labelled:
        report.note("answer_outside_all_windows", question.qid)


class _Table:
    def __init__(self, token_types: bool) -> None:
        self.token_types = token_types
        self.ids: list[int] = []
        self.types: list[int] = []
        self.row_ptr, self.window_ptr, self.passage_ptr = [0], [0], [0]
        self.columns: dict[str, list[int]] = {name: [] for name in WINDOW_COLUMNS}
        self.offsets: list[tuple[int, int]] = []
        self.flags: list[bool] = []

    def add(self, window: dict[str, Any], flags: list[bool], columns: dict[str, int]) -> None:
        self.ids.extend(window["ids"])
        if self.token_types:
            self.types.extend(window["types"])
        self.row_ptr.append(len(self.ids))
        self.window_ptr.append(len(self.row_ptr) - 1)
        for name, default in WINDOW_COLUMNS.items():
            self.columns[name].append(columns.get(name, default))
        self.offsets.extend(window["offsets"])
        self.flags.extend(flags)
        self.passage_ptr.append(len(self.offsets))

    def arrays(self) -> dict[str, np.ndarray]:
        arrays = {"input_ids": np.asarray(self.ids, dtype=np.int32), "row_ptr": np.asarray(self.row_ptr, dtype=np.int64),
                  "window_ptr": np.asarray(self.window_ptr, dtype=np.int64),
                  "passage_ptr": np.asarray(self.passage_ptr, dtype=np.int64),
                  "offsets": np.asarray(self.offsets, dtype=np.int32).reshape(-1, 2),
                  "max_context": np.asarray(self.flags, dtype=np.bool_),
                  **{name: np.asarray(v, dtype=np.int32) for name, v in self.columns.items()}}
        if self.token_types:
            arrays["token_type_ids"] = np.asarray(self.types, dtype=np.int8)
        return arrays
