"""Span-extraction features: `[CLS] question [SEP] passage window [SEP]` windows with answer and evidence labels.

The passage is tokenized once with the fast tokenizer, which gives every word piece its character
span in the original passage; windows of `max_seq_length - question - 3` passage tokens start every
`doc_stride` tokens until the passage is covered. A window's answer (or evidence) label is the
start/end token of the span when the span lies wholly inside the window, else the `[CLS]` position
0. Every passage token is marked in the one window where it has the most context on both sides,
which is the window decoding trusts for it.

Training labels come from the first answer and the first evidence of a question, with these rules
for bad input (each counted in `FeatureReport`, never a silent wrong label):
- `answer_start` not matching the answer text: moved to the occurrence of the text nearest to it
  (repaired); a missing `answer_start` takes the first occurrence (repaired);
- answer text not in the passage, empty answer, or empty passage: the question is skipped;
- evidence text not in the passage (or no `evidences` field): the question is kept with its answer
  label and its evidence label set to IGNORE, so it adds nothing to the evidence loss. When the
  evidence occurs several times, the occurrence that covers the answer, else the nearest, is used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import torch

from expmrc.data.datasets import SpanQuestion
from expmrc.errors import ExpmrcError

IGNORE = -100  # label value cross-entropy skips


@dataclass
class SpanFeature:
    """One window of one question, ready for the model and for decoding back to passage text."""

    question_index: int  # position of the question in the list the features were built from
    input_ids: list[int]
    context_start: int  # index in input_ids of the window's first passage token
    offsets: list[tuple[int, int]]  # character span in the passage of each window passage token
    max_context: list[bool]  # whether this window is the one where each passage token has most context
    start_position: int = 0
    end_position: int = 0
    evidence_start: int = IGNORE
    evidence_end: int = IGNORE

    @property
    def context_length(self) -> int:
        """Passage tokens in this window."""
        return len(self.offsets)


@dataclass
class FeatureReport:
    """Counts of what building features met, and example question ids for each problem."""

    questions: int = 0
    windows: int = 0
    answer_start_repaired: int = 0
    answer_skipped: int = 0  # answer text not in the passage (or empty): question skipped
    empty_context: int = 0
    evidence_missing: int = 0  # no `evidences` field, or evidence text not in the passage
    answer_outside_all_windows: int = 0  # answer longer than a window: only [CLS] labels
    examples: dict[str, list[str]] = field(default_factory=dict)

    def note(self, problem: str, qid: str) -> None:
        """Count one question under `problem`, keeping the first few ids as examples."""
        setattr(self, problem, getattr(self, problem) + 1)
        ids = self.examples.setdefault(problem, [])
        if len(ids) < 5:
            ids.append(qid)

    def summary(self) -> str:
        """One line: questions, windows, and every non-zero problem with example ids."""
        text = f"{self.questions} questions -> {self.windows} windows"
        for problem in ("answer_start_repaired", "answer_skipped", "empty_context", "evidence_missing",
                        "answer_outside_all_windows"):
            count = getattr(self, problem)
            if count:
                text += f"; {problem.replace('_', ' ')}: {count} (e.g. {', '.join(self.examples[problem])})"
        return text

    def as_dict(self) -> dict[str, Any]:
        """The counts, for run_info.json."""
        return {k: v for k, v in sorted(vars(self).items())}


@dataclass
class TrainingLabel:
    """Character spans of a training question's answer and evidence (None: no usable evidence)."""

    answer: tuple[int, int]
    evidence: tuple[int, int] | None


def nearest_occurrence(text: str, needle: str, near: int) -> int:
    """Start of the occurrence of `needle` in `text` closest to position `near`, or -1."""
    best, position = -1, text.find(needle)
    while position != -1:
        if best == -1 or abs(position - near) < abs(best - near):
            best = position
        position = text.find(needle, position + 1)
    return best


def locate_labels(question: SpanQuestion, report: FeatureReport) -> TrainingLabel | None:
    """The answer and evidence character spans of a training question, by the module's rules."""
    context, qid = question.context, question.qid
    if not context.strip():
        report.note("empty_context", qid)
        return None
    answer = str(question.answers[0])
    given = question.answer_starts[0]
    if not answer.strip():
        report.note("answer_skipped", qid)
        return None
    if isinstance(given, int) and not isinstance(given, bool) and context[given:given + len(answer)] == answer:
        start = given
    else:
        near = given if isinstance(given, int) and not isinstance(given, bool) else 0
        start = nearest_occurrence(context, answer, near)
        if start == -1:
            report.note("answer_skipped", qid)
            return None
        report.note("answer_start_repaired", qid)
    answer_span = (start, start + len(answer))
    evidence = str(question.evidences[0]) if question.evidences else ""
    evidence_span = None
    if evidence.strip():
        evidence_start = _evidence_occurrence(context, evidence, answer_span)
        if evidence_start != -1:
            evidence_span = (evidence_start, evidence_start + len(evidence))
    if evidence_span is None:
        report.note("evidence_missing", qid)
    return TrainingLabel(answer_span, evidence_span)


def _evidence_occurrence(context: str, evidence: str, answer: tuple[int, int]) -> int:
    """The occurrence of `evidence` covering the answer, else the one nearest to the answer."""
    position = context.find(evidence)
    while position != -1:
        if position <= answer[0] and answer[1] <= position + len(evidence):
            return position
        position = context.find(evidence, position + 1)
    return nearest_occurrence(context, evidence, answer[0])


def char_span_to_tokens(offsets: Sequence[tuple[int, int]], start: int, end: int) -> tuple[int, int] | None:
    """First and last passage token overlapping characters [start, end), or None if none does."""
    first = last = None
    for index, (token_start, token_end) in enumerate(offsets):
        if token_end > start and token_start < end and token_end > token_start:
            if first is None:
                first = index
            last = index
    return None if first is None else (first, last)


def window_starts(num_tokens: int, window: int, stride: int) -> list[int]:
    """Start token of each window: every `stride` tokens until a window reaches the passage end."""
    starts = [0]
    while starts[-1] + window < num_tokens:
        starts.append(starts[-1] + min(stride, window))
    return starts


def max_context_flags(starts: list[int], window: int, num_tokens: int) -> list[list[bool]]:
    """For each window, whether each of its tokens has more context there than in any other window.

    A token's context in a window is min(tokens before it, tokens after it) in that window; ties go
    to the earlier window, so every token is trusted in exactly one window.
    """
    best: dict[int, tuple[int, int]] = {}  # token -> (context, window index)
    for w, start in enumerate(starts):
        length = min(window, num_tokens - start)
        for i in range(length):
            context = min(i, length - 1 - i)
            if start + i not in best or context > best[start + i][0]:
                best[start + i] = (context, w)
    return [[best[start + i][1] == w for i in range(min(window, num_tokens - start))]
            for w, start in enumerate(starts)]


def build_span_features(questions: Sequence[SpanQuestion], tokenizer: Any, max_seq_length: int, doc_stride: int,
                        max_query_length: int, is_training: bool,
                        show_progress: bool = True) -> tuple[list[SpanFeature], FeatureReport]:
    """Windows with labels (when `is_training`) for every question; problems are counted in the report."""
    from tqdm import tqdm

    report = FeatureReport(questions=len(questions))
    contexts = list(dict.fromkeys(q.context for q in questions))
    encoded = tokenizer(contexts, add_special_tokens=False, return_offsets_mapping=True) if contexts else None
    context_tokens = {c: (encoded["input_ids"][i], encoded["offset_mapping"][i]) for i, c in enumerate(contexts)}
    question_ids = tokenizer([q.question for q in questions], add_special_tokens=False)["input_ids"] if questions else []
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id

    features: list[SpanFeature] = []
    for index, question in enumerate(tqdm(questions, desc="windows", unit="question", disable=not show_progress)):
        label = None
        if is_training:
            label = locate_labels(question, report)
            if label is None:
                continue
        elif not question.context.strip():
            report.note("empty_context", question.qid)
        doc_ids, doc_offsets = context_tokens[question.context]
        query = question_ids[index][:max_query_length]
        window = max_seq_length - len(query) - 3
        if window < 1:
            raise ExpmrcError(f"question {question.qid}: its {len(query)} question tokens leave no room for the "
                              f"passage in --max_seq_length {max_seq_length}; lower --max_query_length")
        starts = window_starts(len(doc_ids), window, doc_stride)
        flags = max_context_flags(starts, window, len(doc_ids))
        answer_tokens = evidence_tokens = None
        if label is not None:
            answer_tokens = char_span_to_tokens(doc_offsets, *label.answer)
            if answer_tokens is None:  # the answer is only characters the tokenizer drops
                report.note("answer_skipped", question.qid)
                continue
            if label.evidence is not None:
                evidence_tokens = char_span_to_tokens(doc_offsets, *label.evidence)
                if evidence_tokens is None:  # only characters the tokenizer drops
                    report.note("evidence_missing", question.qid)
        inside_somewhere = False
        for start, window_flags in zip(starts, flags):
            end = start + len(window_flags)  # exclusive
            feature = SpanFeature(
                question_index=index,
                input_ids=[cls_id, *query, sep_id, *doc_ids[start:end], sep_id],
                context_start=len(query) + 2,
                offsets=[tuple(o) for o in doc_offsets[start:end]],
                max_context=window_flags,
            )
            if label is not None:
                feature.start_position, feature.end_position = _window_label(answer_tokens, start, end, feature)
                inside_somewhere |= feature.start_position != 0
                if evidence_tokens is not None:
                    feature.evidence_start, feature.evidence_end = _window_label(evidence_tokens, start, end, feature)
            features.append(feature)
        if label is not None and not inside_somewhere:
            report.note("answer_outside_all_windows", question.qid)
    report.windows = len(features)
    return features, report


def _window_label(tokens: tuple[int, int] | None, start: int, end: int, feature: SpanFeature) -> tuple[int, int]:
    """Input positions of a token span wholly inside window [start, end), else (0, 0): the [CLS] token."""
    if tokens is None or tokens[0] < start or tokens[1] >= end:
        return 0, 0
    return feature.context_start + tokens[0] - start, feature.context_start + tokens[1] - start


class SpanDataset:
    """Features as the model's tensors: a sequence of dicts, labels included for training."""

    def __init__(self, features: Sequence[SpanFeature], with_labels: bool) -> None:
        self.features = features
        self.with_labels = with_labels

    def __len__(self) -> int:
        return len(self.features)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        f = self.features[index]
        item = {
            "input_ids": torch.tensor(f.input_ids, dtype=torch.long),
            "token_type_ids": torch.tensor([0] * f.context_start + [1] * (len(f.input_ids) - f.context_start),
                                           dtype=torch.long),
        }
        if self.with_labels:
            item["start_positions"] = torch.tensor(f.start_position)
            item["end_positions"] = torch.tensor(f.end_position)
            item["evidence_start_positions"] = torch.tensor(f.evidence_start)
            item["evidence_end_positions"] = torch.tensor(f.evidence_end)
        return item


def collate_span(items: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Pad a list of feature tensors to the longest in the batch, with an attention mask."""
    length = max(len(item["input_ids"]) for item in items)
    batch = {
        "input_ids": torch.zeros(len(items), length, dtype=torch.long),
        "token_type_ids": torch.zeros(len(items), length, dtype=torch.long),
        "attention_mask": torch.zeros(len(items), length, dtype=torch.long),
    }
    for row, item in enumerate(items):
        n = len(item["input_ids"])
        batch["input_ids"][row, :n] = item["input_ids"]
        batch["token_type_ids"][row, :n] = item["token_type_ids"]
        batch["attention_mask"][row, :n] = 1
    for key in items[0]:
        if key not in batch:
            batch[key] = torch.stack([item[key] for item in items])
    return batch


_COLUMNS = ("question_index", "input_ids", "context_start", "offsets", "max_context", "start_position",
            "end_position", "evidence_start", "evidence_end")


def features_to_payload(built: tuple[list[SpanFeature], FeatureReport]) -> dict[str, Any]:
    """Features and report as plain lists and dicts, for a feature cache."""
    features, report = built
    columns = {name: [getattr(f, name) for f in features] for name in _COLUMNS}
    return {"columns": columns, "report": report.as_dict()}


def features_from_payload(payload: dict[str, Any]) -> tuple[list[SpanFeature], FeatureReport]:
    """The inverse of `features_to_payload`."""
    columns = payload["columns"]
    features = [SpanFeature(**{name: columns[name][i] for name in _COLUMNS})
                for i in range(len(columns["input_ids"]))]
    return features, FeatureReport(**payload["report"])
