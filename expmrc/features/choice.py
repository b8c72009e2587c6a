"""Multiple-choice features: per question, one row per option, `passage` + `question and option` laid out
by the tokenizer's own pair template, as the original release's run_mc_mrc.py built them.

The question and an option become one text as the original did: every `_` of the question is replaced
by the option (`question.replace("_", option)`, so a blank written as a run of underscores repeats the
option, as there), and a question without one is followed by the option after a space (`qa_text`).
That text is tokenized and its LAST `max_query_length` tokens are kept (the option survives a long
question); there is no separate cut of the question. By default the passage is cut from its end so
that each option's row fits `max_seq_length` (one window per question, the original's rows exactly:
a row with a shorter option keeps a few more passage tokens). The evidence head reads the mean of the
option rows' hidden states, so evidence is labelled and decoded only over the passage tokens every row
holds (those before the cut of the longest option). With `sliding_windows` a long passage is instead
cut into windows of `max_seq_length - specials - longest question+option` tokens, `doc_stride` apart,
the passage at the same positions in every row (see `expmrc.features.windows`).

Departures from the original, on purpose: questions with fewer than four options get no empty rows
(the original padded with empty options that took part in the softmax); their rows are padded and
masked out of the softmax (`option_mask`), so an empty option can never be chosen. Tokenization runs
in batched calls over many questions at once (the fast tokenizer's own parallel path).

Rules for bad input, each counted in the `FeatureReport`:
- no options: the question gives no window (it is predicted as an empty answer) — `no_options`;
- a gold label naming no option: skipped when training, label IGNORE when predicting — `bad_answer_label`;
- empty passage: skipped when training; when predicting, one window without passage tokens (answered
  from question and options, empty evidence) — `empty_passage`;
- no evidence, or found nowhere in the passage: the answer is trained, the evidence loss masked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from collections.abc import Sequence

from tqdm import tqdm

from expmrc.data.datasets import LABELS, ChoiceQuestion
from expmrc.errors import ExpmrcError
from expmrc.features.windows import (IGNORE, FeatureReport, FeatureTable, PairTemplate, TableBuilder,
                                     char_span_to_tokens, count_unknown, encode_texts, max_context, window_label,
                                     window_starts, tokenizer_name)
from expmrc.text.locate import locate_evidence

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast


def qa_text(question: str, option: str) -> str:
    """The second text of an option's row: the option in place of each `_` of the question, else after it."""
    return question.replace("_", option) if "_" in question else f"{question} {option}"


def answer_index(question: ChoiceQuestion) -> int | None:
    """The option index of the gold label, or None when the label names no option."""
    label = question.answer.strip()
    index = LABELS.find(label) if len(label) == 1 else -1
    return index if 0 <= index < len(question.options) else None


CHUNK = 512  # questions tokenized per batched tokenizer call


def build_choice_features(questions: Sequence[ChoiceQuestion], tokenizer: PreTrainedTokenizerFast, max_seq_length: int,
                          max_query_length: int, doc_stride: int, is_training: bool, token_types: bool = True,
                          progress: bool = False, sliding_windows: bool = False) -> tuple[FeatureTable, FeatureReport]:
    """Option rows (with labels when `is_training`) for every question, in question order; see the module docstring."""
    if not getattr(tokenizer, "is_fast", False):
        raise ExpmrcError(f"{tokenizer_name(tokenizer)}: the tokenizer must be a fast tokenizer: character offsets "
                          "are needed")
    template = PairTemplate.of(tokenizer, token_types)
    report = FeatureReport(questions=len(questions))
    builder = TableBuilder("choice", token_types)
    layout = _Layout(template, max_seq_length, max_query_length, doc_stride, sliding_windows,
                     getattr(tokenizer, "unk_token_id", None))
    with tqdm(total=len(questions), desc="choice rows", unit="question", disable=not progress, leave=False) as bar:
        for first in range(0, len(questions), CHUNK):
            chunk = questions[first:first + CHUNK]
            passages, qa_ids = _tokenized(tokenizer, chunk)
            for offset, question in enumerate(chunk):
                _add_question(builder, report, layout, first + offset, question, passages[question.passage],
                              qa_ids[offset], is_training)
            bar.update(len(chunk))
    report.windows = len(builder.window_ptr) - 1
    return builder.build(), report


@dataclass(frozen=True)
class _Layout:
    """The settings rows are laid out with."""

    template: PairTemplate
    max_seq_length: int
    max_query_length: int
    doc_stride: int
    sliding_windows: bool
    unknown: int | None


def _tokenized(tokenizer: PreTrainedTokenizerFast, questions: Sequence[ChoiceQuestion]
               ) -> tuple[dict[str, tuple[list[int], list[tuple[int, int]]]], list[list[list[int]]]]:
    """The questions' distinct passages (ids and offsets) and each question's question+option ids, from two
    batched tokenizer calls."""
    texts = list(dict.fromkeys(q.passage for q in questions))
    passages = {text: (list(e.ids), list(e.offsets)) for text, e in zip(texts, encode_texts(tokenizer, texts))}
    joined = [qa_text(q.question, option) for q in questions for option in q.options]
    ids = [e.ids for e in encode_texts(tokenizer, joined)]
    per_question, at = [], 0
    for question in questions:
        per_question.append([list(row) for row in ids[at:at + len(question.options)]])
        at += len(question.options)
    return passages, per_question


def _add_question(builder: TableBuilder, report: FeatureReport, layout: _Layout, index: int,
                  question: ChoiceQuestion, passage: tuple[list[int], list[tuple[int, int]]],
                  qa_ids: list[list[int]], is_training: bool) -> None:
    """Add the rows of one question's windows to `builder`, counting what it notes in `report`."""
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
            return
    passage_ids, offsets = passage
    if any(len(ids) > layout.max_query_length for ids in qa_ids):
        report.note("question_truncated", question.qid)
    qa = [ids[-layout.max_query_length:] for ids in qa_ids]
    room = [layout.max_seq_length - layout.template.specials - len(ids) for ids in qa]  # passage tokens per row
    if min(room) < 1:
        raise ExpmrcError(f"question {question.qid}: question and option take {max(len(ids) for ids in qa)} tokens, "
                          f"leaving no room for the passage in --max_seq_length {layout.max_seq_length}; "
                          "lower --max_query_length")
    evidence_tokens = _evidence_tokens(question, offsets, report) if is_training else None
    if layout.sliding_windows:
        starts = window_starts(len(passage_ids), min(room), layout.doc_stride)
        lengths = [min(min(room), len(passage_ids) - start) for start in starts]
        flags = max_context(starts, lengths, len(passage_ids))
    else:  # one window: each row keeps the passage's first tokens that fit beside its own option
        starts, lengths, flags = [0], [min(min(room), len(passage_ids))], [[True] * min(min(room), len(passage_ids))]
    if len(starts) > 1:
        report.multi_window_questions += 1
    for start, length, window_flags in zip(starts, lengths, flags):
        cuts = [length] * len(qa) if layout.sliding_windows else [min(r, len(passage_ids)) for r in room]
        rows = [layout.template.build(passage_ids[start:start + cut], ids) for cut, ids in zip(cuts, qa)]
        passage_pos, null_pos = len(layout.template.before), layout.template.null_pos(length)
        columns = {"question_index": index, "passage_pos": passage_pos, "null_pos": null_pos,
                   "labels": IGNORE if label is None else label}
        if is_training:
            columns["evidence_start"], columns["evidence_end"] = (
                (IGNORE, IGNORE) if evidence_tokens is None
                else window_label(evidence_tokens, start, start + length, passage_pos, null_pos))
        for cut, ids in zip(cuts, qa):
            count_unknown(report, passage_ids[start:start + cut] + ids, layout.unknown)
        builder.add(rows, offsets[start:start + length], window_flags, **columns)


def _evidence_tokens(question: ChoiceQuestion, offsets: Sequence[tuple[int, int]],
                     report: FeatureReport) -> tuple[int, int] | None:
    """The passage tokens of a training question's evidence, or None (noted in `report`) when it has none."""
    span, status = locate_evidence(question.passage, question.evidences)
    if status != "found":
        report.note({"missing": "evidence_missing", "not_found": "evidence_not_found",
                     "repaired": "evidence_whitespace_repaired"}[status], question.qid)
    tokens = None if span is None else char_span_to_tokens(offsets, *span)
    if span is not None and tokens is None:
        report.note("evidence_not_found", question.qid)
    return tokens
