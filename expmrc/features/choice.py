"""Multiple-choice features: per passage window, one row per option, `passage window` + `question and option`
laid out by the tokenizer's own pair template.

The question and an option become one text as the original release built it: every `_` of the
question is replaced by the option (`question.replace("_", option)`, so a blank written as a run of
underscores repeats the option, as there), and a question without one is followed by the option after
a space (`qa_text`). The question is first cut after its `max_query_length`-th token (its start
kept, as the span features cut it; a blank after the cut is lost and the option then follows the
cut question), and the joined tokens are cut to `max_qa_length` by dropping tokens from their start,
so the option is kept. The
passage is tokenized once; windows of `max_seq_length - specials - longest question+option` tokens
start every `doc_stride` tokens, and the passage tokens sit at the same positions in every option's
row, where the evidence head reads them (see `expmrc.features.windows`).

Rules for bad input, each counted in the `FeatureReport`:
- no options: the question gives no window (it is predicted as an empty answer) — `no_options`;
- a gold label naming no option: skipped when training, label IGNORE when predicting — `bad_answer_label`;
- empty passage: skipped when training; when predicting, one window without passage tokens (answered
  from question and options, empty evidence) — `empty_passage`;
- no evidence, or found nowhere in the passage: the answer is trained, the evidence loss masked.
"""

from __future__ import annotations

from typing import Any, Sequence

from tqdm import tqdm

from expmrc.data.datasets import LABELS, ChoiceQuestion
from expmrc.errors import ExpmrcError
from expmrc.features.span import truncated_question
from expmrc.features.windows import (IGNORE, FeatureReport, FeatureTable, PairTemplate, TableBuilder,
                                     char_span_to_tokens, count_unknown, max_context, window_label, window_starts)
from expmrc.text.locate import locate_evidence


def qa_text(question: str, option: str) -> str:
    """The second text of an option's row: the option in place of each `_` of the question, else after it."""
    return question.replace("_", option) if "_" in question else f"{question} {option}"


def answer_index(question: ChoiceQuestion) -> int | None:
    """The option index of the gold label, or None when the label names no option."""
    label = question.answer.strip()
    index = LABELS.find(label) if len(label) == 1 else -1
    return index if 0 <= index < len(question.options) else None


def build_choice_features(questions: Sequence[ChoiceQuestion], tokenizer: Any, max_seq_length: int,
                          max_qa_length: int, doc_stride: int, is_training: bool, token_types: bool = True,
                          progress: bool = False, max_query_length: int | None = None) -> tuple[FeatureTable, FeatureReport]:
    """Window features (with labels when `is_training`) for every question; see the module docstring."""
    if not getattr(tokenizer, "is_fast", False):
        raise ExpmrcError("the tokenizer must be a fast tokenizer: character offsets are needed")
    template = PairTemplate.of(tokenizer, token_types)
    report = FeatureReport(questions=len(questions))
    builder = TableBuilder("choice", token_types)
    unknown = getattr(tokenizer, "unk_token_id", None)
    passages: dict[str, tuple[list[int], list[tuple[int, int]]]] = {}
    for index, question in enumerate(tqdm(questions, desc="choice windows", unit="question", disable=not progress,
                                          leave=False)):
        label = answer_index(question)
        problem = ("no_options" if not question.options else "bad_answer_label" if label is None
                   else "empty_passage" if not question.passage.strip() else None)
        if problem:
            report.note(problem, question.qid)
            if is_training or problem == "no_options":
                if is_training:
                    report.skipped += 1
                else:
                    report.no_window += 1
                continue
        if question.passage not in passages:
            encoded = tokenizer(question.passage, add_special_tokens=False, return_offsets_mapping=True)
            passages[question.passage] = (list(encoded["input_ids"]), [tuple(o) for o in encoded["offset_mapping"]])
        passage_ids, offsets = passages[question.passage]
        text, cut_question = question.question, False
        if max_query_length is not None:
            text, _, cut_question = truncated_question(text, tokenizer, max_query_length)
        qa = [_qa_ids(tokenizer, text, option, max_qa_length) for option in question.options]
        if cut_question or any(cut for _, cut in qa):
            report.note("question_truncated", question.qid)
        capacity = max_seq_length - template.specials - max(len(ids) for ids, _ in qa)
        if capacity < 1:
            raise ExpmrcError(f"question {question.qid}: question and option take {max(len(ids) for ids, _ in qa)} "
                              f"tokens, leaving no room for the passage in --max_seq_length {max_seq_length}; "
                              "lower --max_qa_length")
        evidence_tokens = None
        if is_training:
            span, status = locate_evidence(question.passage, question.evidences)
            if status != "found":
                report.note({"missing": "evidence_missing", "not_found": "evidence_not_found",
                             "repaired": "evidence_whitespace_repaired"}[status], question.qid)
            evidence_tokens = None if span is None else char_span_to_tokens(offsets, *span)
            if span is not None and evidence_tokens is None:
                report.note("evidence_not_found", question.qid)
        starts = window_starts(len(passage_ids), capacity, doc_stride)
        lengths = [min(capacity, len(passage_ids) - start) for start in starts]
        flags = max_context(starts, lengths, len(passage_ids))
        if len(starts) > 1:
            report.multi_window_questions += 1
        for start, length, window_flags in zip(starts, lengths, flags):
            window = passage_ids[start:start + length]
            rows = [template.build(window, ids) for ids, _ in qa]
            passage_pos, null_pos = len(template.before), template.null_pos(len(window))
            columns = {"question_index": index, "passage_pos": passage_pos, "null_pos": null_pos,
                       "labels": IGNORE if label is None else label}
            if is_training:
                columns["evidence_start"], columns["evidence_end"] = (
                    (IGNORE, IGNORE) if evidence_tokens is None
                    else window_label(evidence_tokens, start, start + length, passage_pos, null_pos))
            for ids, _ in qa:
                count_unknown(report, window + ids, unknown)
            builder.add(rows, offsets[start:start + length], window_flags, **columns)
    report.windows = len(builder.window_ptr) - 1
    return builder.build(), report


def _qa_ids(tokenizer: Any, question: str, option: str, limit: int) -> tuple[list[int], bool]:
    """The tokens of question and option (`qa_text`), cut to `limit` from the start; and whether they were cut."""
    ids = list(tokenizer(qa_text(question, option), add_special_tokens=False)["input_ids"])
    return (ids[len(ids) - limit:], True) if len(ids) > limit else (ids, False)
