"""Multiple-choice features: one `[CLS] passage [SEP] question option [SEP]` row per option, over passage windows.

All options of a window share the same passage tokens at the same positions (the passage budget is set
by the longest question+option), so the evidence head can read one start/end distribution over them.

Long passages are cut into strided windows (`doc_stride` tokens apart). Every window is a feature with
the question's answer label; its evidence label is the start/end of the evidence when the evidence lies
wholly inside the window, else the `[CLS]` position 0. At prediction time `choice_decoding` combines the
windows of a question. Bad input is counted in a `FeatureReport` and handled by the rules in
`build_choice_features`.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch
from tqdm import tqdm

from expmrc.data.datasets import LABELS, ChoiceQuestion
from expmrc.errors import ExpmrcError

IGNORE = -100  # label value that the losses skip


@dataclass
class ChoiceFeature:
    """One passage window of one question: token ids per option, labels and passage character offsets."""

    qid: str
    question_index: int  # index of the question in the list given to build_choice_features
    window_index: int
    passage_part: list[int]  # [CLS] window passage tokens [SEP], shared by every option's row
    qa_parts: list[list[int]]  # per option: question + option tokens [SEP]
    passage_offsets: list[tuple[int, int]]  # character span in the passage of each window passage token
    label: int  # gold option index, or IGNORE when unknown
    evidence_start: int  # position in the row (1.. for passage tokens, 0 = [CLS]: not in this window), or IGNORE
    evidence_end: int

    @property
    def num_passage_tokens(self) -> int:
        """Passage tokens in this window; they sit at positions 1..num_passage_tokens of every row."""
        return len(self.passage_offsets)

    @property
    def input_ids(self) -> list[list[int]]:
        """One unpadded row per option: `[CLS] passage [SEP] question option [SEP]`."""
        return [self.passage_part + qa for qa in self.qa_parts]

    @property
    def token_type_ids(self) -> list[list[int]]:
        """Segment 0 for `[CLS] passage [SEP]`, 1 for the rest, per option."""
        return [[0] * len(self.passage_part) + [1] * len(qa) for qa in self.qa_parts]


@dataclass
class FeatureReport:
    """Counts of what feature building met, for the log and `run_info.json`."""

    questions: int = 0
    features: int = 0
    multi_window_questions: int = 0  # passages longer than one window
    qa_truncated: int = 0  # questions where some question+option was cut to max_qa_length
    skipped_no_options: int = 0
    bad_answer_label: int = 0
    empty_passage: int = 0
    evidence_missing: int = 0  # no evidence strings given
    evidence_not_found: int = 0  # evidence given but in no form found in the passage
    evidence_whitespace_repaired: int = 0  # found only after letting any run of spaces match any other
    skipped_questions: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line with every non-zero count."""
        parts = [f"{name}={value}" for name, value in vars(self).items() if name != "skipped_questions" and value]
        return ", ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        """The counts (and the first skipped ids) as plain JSON-ready values."""
        out: dict[str, Any] = {k: v for k, v in vars(self).items() if k != "skipped_questions"}
        out["skipped_questions"] = self.skipped_questions[:20]
        return out


def answer_index(question: ChoiceQuestion) -> int | None:
    """Index of the gold label among the options, or None when the label is not one of them."""
    label = question.answer.strip()
    index = LABELS.find(label) if len(label) == 1 else -1
    return index if 0 <= index < len(question.options) else None


def find_evidence(passage: str, evidences: Sequence[Any] | None) -> tuple[tuple[int, int] | None, str]:
    """Character span of the first evidence string found in the passage, and how it was found.

    Tried in order: each evidence verbatim (stripped), then each with every run of whitespace allowed
    to match any run of whitespace. The status is 'found', 'repaired', 'not_found' or 'missing'.
    """
    texts = [str(e).strip() for e in evidences or [] if str(e).strip()]
    if not texts:
        return None, "missing"
    for text in texts:
        at = passage.find(text)
        if at >= 0:
            return (at, at + len(text)), "found"
    for text in texts:
        pattern = r"\s+".join(re.escape(piece) for piece in text.split())
        match = re.search(pattern, passage)
        if match:
            return (match.start(), match.end()), "repaired"
    return None, "not_found"


def char_span_to_tokens(offsets: Sequence[tuple[int, int]], start: int, end: int) -> tuple[int, int] | None:
    """First and last token overlapping the character span [start, end), or None when none does."""
    first = last = None
    for i, (a, b) in enumerate(offsets):
        if b > start and a < end and b > a:
            if first is None:
                first = i
            last = i
    return None if first is None else (first, last)


def truncate_pair(question: list[int], option: list[int], limit: int) -> tuple[list[int], list[int]]:
    """Cut question and option tokens to at most `limit` together, one token at a time off the end
    of whichever is longer (the question on a tie), as BERT's pair truncation does."""
    question, option = list(question), list(option)
    while len(question) + len(option) > limit:
        if len(question) >= len(option):
            question.pop()
        else:
            option.pop()
    return question, option


def passage_windows(num_tokens: int, budget: int, stride: int) -> list[tuple[int, int]]:
    """Token ranges [start, end) covering the passage, each at most `budget` long, starts `stride` apart."""
    windows = []
    start = 0
    while True:
        end = min(start + budget, num_tokens)
        windows.append((start, end))
        if end >= num_tokens:
            return windows
        start += min(stride, end - start)


def build_choice_features(
    questions: Sequence[ChoiceQuestion],
    tokenizer: Any,
    max_seq_length: int = 512,
    max_qa_length: int = 128,
    doc_stride: int = 128,
    is_training: bool = False,
    progress: bool = False,
) -> tuple[list[ChoiceFeature], FeatureReport]:
    """Tokenize questions into window features with answer and evidence labels.

    Rules for bad input (each counted in the report):
    - no options: the question is skipped (it cannot be answered);
    - answer label not among the options: skipped when training, label IGNORE when predicting;
    - empty passage: skipped when training; when predicting the question is kept with no passage
      tokens (answered from question and options) and its evidence will be empty;
    - evidence missing or not found in the passage: the answer is still trained, the evidence loss is
      masked (IGNORE) for that question — a label is never guessed.
    """
    if not getattr(tokenizer, "is_fast", False):
        raise ExpmrcError("the tokenizer must be a fast (Rust) tokenizer: character offsets are needed")
    if doc_stride < 1:
        raise ExpmrcError(f"doc_stride must be positive, got {doc_stride}")
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    report = FeatureReport()
    features: list[ChoiceFeature] = []
    passage_cache: dict[str, tuple[list[int], list[tuple[int, int]]]] = {}

    bar = tqdm(questions, desc="features", unit="question", file=sys.stderr, disable=not progress, dynamic_ncols=True)
    for q_index, question in enumerate(bar):
        report.questions += 1
        if not question.options:
            report.skipped_no_options += 1
            report.skipped_questions.append(question.qid)
            continue
        label = answer_index(question)
        if label is None:
            report.bad_answer_label += 1
            if is_training:
                report.skipped_questions.append(question.qid)
                continue
        if not question.passage.strip():
            report.empty_passage += 1
            if is_training:
                report.skipped_questions.append(question.qid)
                continue

        if question.passage not in passage_cache:
            encoded = tokenizer(question.passage, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
            passage_cache[question.passage] = (encoded["input_ids"], [tuple(o) for o in encoded["offset_mapping"]])
        passage_ids, passage_offsets = passage_cache[question.passage]

        question_ids = _ids(tokenizer, question.question)
        qa_rows = []
        truncated = False
        for option in question.options:
            option_ids = _ids(tokenizer, option)
            q_ids, o_ids = truncate_pair(question_ids, option_ids, max_qa_length)
            truncated |= len(q_ids) + len(o_ids) < len(question_ids) + len(option_ids)
            qa_rows.append(q_ids + o_ids)
        report.qa_truncated += truncated

        evidence_tokens, status = _evidence_tokens(question, passage_offsets)
        if status == "missing":
            report.evidence_missing += 1
        elif status == "not_found":
            report.evidence_not_found += 1
        elif status == "repaired":
            report.evidence_whitespace_repaired += 1

        budget = max_seq_length - 3 - max(len(r) for r in qa_rows)
        if budget < 1:
            raise ExpmrcError(
                f"question {question.qid}: question and option take {max(len(r) for r in qa_rows)} tokens, "
                f"leaving no room for the passage in max_seq_length {max_seq_length}; lower max_qa_length"
            )
        qa_parts = [qa + [sep_id] for qa in qa_rows]  # the same lists serve every window of the question
        windows = passage_windows(len(passage_ids), budget, doc_stride)
        if len(windows) > 1:
            report.multi_window_questions += 1
        for w_index, (w_start, w_end) in enumerate(windows):
            if evidence_tokens is None:
                ev_start = ev_end = IGNORE
            elif w_start <= evidence_tokens[0] and evidence_tokens[1] < w_end:
                ev_start, ev_end = 1 + evidence_tokens[0] - w_start, 1 + evidence_tokens[1] - w_start
            else:
                ev_start = ev_end = 0
            features.append(
                ChoiceFeature(
                    qid=question.qid,
                    question_index=q_index,
                    window_index=w_index,
                    passage_part=[cls_id] + passage_ids[w_start:w_end] + [sep_id],
                    qa_parts=qa_parts,
                    passage_offsets=passage_offsets[w_start:w_end],
                    label=IGNORE if label is None else label,
                    evidence_start=ev_start,
                    evidence_end=ev_end,
                )
            )
            report.features += 1
    return features, report


def _ids(tokenizer: Any, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]


def _evidence_tokens(question: ChoiceQuestion, offsets: Sequence[tuple[int, int]]) -> tuple[tuple[int, int] | None, str]:
    span, status = find_evidence(question.passage, question.evidences)
    if span is None:
        return None, status
    tokens = char_span_to_tokens(offsets, *span)
    if tokens is None:  # the evidence covers no token (e.g. only characters the tokenizer drops)
        return None, "not_found"
    return tokens, status


LABEL_KEYS = ("labels", "evidence_start", "evidence_end")


def feature_tensors(feature: ChoiceFeature, with_labels: bool = True) -> dict[str, torch.Tensor]:
    """A feature as tensors [options, length] (plus its labels); `collate_choice` pads a batch of them."""
    passage = len(feature.passage_part)
    length = passage + max(len(qa) for qa in feature.qa_parts)
    options = len(feature.qa_parts)
    input_ids = torch.zeros(options, length, dtype=torch.long)
    token_type_ids = torch.zeros(options, length, dtype=torch.long)
    attention_mask = torch.zeros(options, length, dtype=torch.long)
    input_ids[:, :passage] = torch.tensor(feature.passage_part)
    for i, qa in enumerate(feature.qa_parts):
        input_ids[i, passage : passage + len(qa)] = torch.tensor(qa)
        token_type_ids[i, passage : passage + len(qa)] = 1
        attention_mask[i, : passage + len(qa)] = 1
    evidence_mask = torch.zeros(length, dtype=torch.long)
    evidence_mask[: 1 + feature.num_passage_tokens] = 1  # [CLS] and the passage tokens
    item = {
        "input_ids": input_ids,
        "token_type_ids": token_type_ids,
        "attention_mask": attention_mask,
        "option_mask": torch.ones(options, dtype=torch.long),
        "evidence_mask": evidence_mask,
    }
    if with_labels:
        item["labels"] = torch.tensor(feature.label, dtype=torch.long)
        item["evidence_start"] = torch.tensor(feature.evidence_start, dtype=torch.long)
        item["evidence_end"] = torch.tensor(feature.evidence_end, dtype=torch.long)
    return item


class ChoiceDataset:
    """Features as the model's tensors, one dict per window, built on access (labels for training)."""

    def __init__(self, features: Sequence[ChoiceFeature], with_labels: bool) -> None:
        self.features = features
        self.with_labels = with_labels

    def __len__(self) -> int:
        return len(self.features)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return feature_tensors(self.features[index], self.with_labels)


def collate_choice(items: Sequence[dict[str, torch.Tensor]], pad_token_id: int = 0) -> dict[str, torch.Tensor]:
    """Stack feature tensors, padding options and length to the batch maximum.

    A padded option gets only a first-position attention (never an all-masked row) and option_mask 0.
    """
    options = max(item["input_ids"].shape[0] for item in items)
    length = max(item["input_ids"].shape[1] for item in items)
    batch = len(items)
    input_ids = torch.full((batch, options, length), pad_token_id, dtype=torch.long)
    token_type_ids = torch.zeros(batch, options, length, dtype=torch.long)
    attention_mask = torch.zeros(batch, options, length, dtype=torch.long)
    attention_mask[:, :, 0] = 1
    option_mask = torch.zeros(batch, options, dtype=torch.long)
    evidence_mask = torch.zeros(batch, length, dtype=torch.long)
    for b, item in enumerate(items):
        n, l = item["input_ids"].shape
        input_ids[b, :n, :l] = item["input_ids"]
        input_ids[b, n:, 0] = item["input_ids"][0, 0]
        token_type_ids[b, :n, :l] = item["token_type_ids"]
        attention_mask[b, :n, :l] = item["attention_mask"]
        option_mask[b, :n] = item["option_mask"]
        evidence_mask[b, :l] = item["evidence_mask"]
    collated = {
        "input_ids": input_ids,
        "token_type_ids": token_type_ids,
        "attention_mask": attention_mask,
        "option_mask": option_mask,
        "evidence_mask": evidence_mask,
    }
    for key in LABEL_KEYS:
        if key in items[0]:
            collated[key] = torch.stack([item[key] for item in items])
    return collated


_COLUMNS = ("qid", "question_index", "window_index", "passage_part", "qa_parts", "passage_offsets", "label",
            "evidence_start", "evidence_end")


def features_to_payload(built: tuple[list[ChoiceFeature], FeatureReport]) -> dict[str, Any]:
    """Features and report as plain lists and dicts, for a feature cache."""
    features, report = built
    columns = {name: [getattr(f, name) for f in features] for name in _COLUMNS}
    columns["passage_offsets"] = [[list(o) for o in offsets] for offsets in columns["passage_offsets"]]
    return {"columns": columns, "report": vars(report)}


def features_from_payload(payload: dict[str, Any]) -> tuple[list[ChoiceFeature], FeatureReport]:
    """The inverse of `features_to_payload`."""
    columns = payload["columns"]
    features = []
    for i in range(len(columns["qid"])):
        values = {name: columns[name][i] for name in _COLUMNS}
        values["passage_offsets"] = [tuple(o) for o in values["passage_offsets"]]
        features.append(ChoiceFeature(**values))
    return features, FeatureReport(**payload["report"])
