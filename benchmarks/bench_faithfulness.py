"""Cost of `expmrc faithfulness` per question: trains a tiny span and a tiny choice run on generated data (the
test helpers' tiny BERT), then runs the command's library call on each dev set and prints seconds and forward
passes (windows) per question, with the plain prediction of the same questions as the reference. For the span
run it also times the command with the earlier p(ŷ) (`every_span_probability` below: every span within
max_answer_length tokenized) in the same process, and checks that both give the same figures.

    PYTHONPATH=$PWD:tests python benchmarks/bench_faithfulness.py --questions 40 --max_k 4
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import torch

from expmrc.data.datasets import SpanQuestion, load_dataset
from expmrc.inference.faithfulness_run import run_faithfulness
from expmrc.inference.rerun import FineTuned
from expmrc.inference.task_predictor import Predicted
from expmrc.decoding.spans import PROBABILITY_FLOOR, _softmax
from expmrc.features.windows import FeatureTable
from expmrc.metrics.leaderboard import clear_caches, score_tokens
from expmrc.text.locate import trim
from expmrc.training.choice_task import run_choice
from expmrc.training.span_task import run_span
from helpers.choice_data import choice_file
from helpers.span_data import make_span_file
from helpers.tiny_bert import make_tiny_bert_folder


def every_span_probability(table: FeatureTable, windows: Sequence[int], outputs: Sequence[Mapping[str, np.ndarray]],
                           passage: str, answer_key: tuple[str, ...], max_length: int) -> float:
    """The reference: `span_probability` as it was before the skeleton filter, tokenizing every span."""
    best = 0.0
    for window in windows:
        offsets, _ = table.passage(window)
        count, first = len(offsets), int(table.passage_pos[window])
        if count == 0:
            continue
        p_start = _softmax(outputs[window]["start_logits"])[first:first + count]
        p_end = _softmax(outputs[window]["end_logits"])[first:first + count]
        total = 0.0
        for s in np.flatnonzero(p_start * p_end.max() >= PROBABILITY_FLOOR):
            for e in range(int(s), min(int(s) + max_length, count)):
                probability = float(p_start[s] * p_end[e])
                if probability < PROBABILITY_FLOOR:
                    continue
                start, end = trim(passage, (int(offsets[s][0]), int(offsets[e][1])))
                if end > start and score_tokens(passage[start:end]) == answer_key:
                    total += probability
        best = max(best, total)
    return best


def nbest_answer_probability(self: Predicted, qid: str, answer: str) -> float | None:
    """p(ŷ) as the first version of `expmrc faithfulness` had it (other figures): the summed probability of the
    n-best answers whose normalized text is ŷ, the probabilities a softmax over the n-best scores."""
    if not answer:
        return None
    if not isinstance(self.questions[self._index[qid]], SpanQuestion):
        return next((float(c["probability"]) for c in self.nbest[qid]["answer"] if c["label"] == answer), 0.0)
    key = score_tokens(answer)
    found = [float(c["probability"]) for c in self.nbest[qid]["answer"] if score_tokens(c["text"]) == key]
    return sum(found) if key else None


def timed_faithfulness(model: FineTuned, dataset, max_k: int, probability=None, nbest: bool = False):
    """run_faithfulness from cold token caches, with p(ŷ) computed by `probability` where given, or from the
    n-best with `nbest`."""
    where = sys.modules[Predicted.__module__]  # the module whose Predicted.answer_probability calls it
    current, method = where.span_probability, Predicted.answer_probability
    clear_caches()
    score_tokens("NLTK imported.")  # the import (about 1.5 s) is paid before timing, not by the first run timed
    try:
        where.span_probability = probability or current
        Predicted.answer_probability = nbest_answer_probability if nbest else method
        return run_faithfulness(model, dataset, max_k, progress=False)
    finally:
        where.span_probability, Predicted.answer_probability = current, method


def train(root: Path, questions: int) -> dict[str, str]:
    """A tiny span run and a tiny choice run under `root`; their dev files by task."""
    bert = make_tiny_bert_folder(root / "bert")
    flags = ["--model_name_or_path", str(bert), "--do_train=True", "--max_seq_length=64", "--doc_stride=16",
             "--train_batch_size=8", "--max_steps=40", "--learning_rate=3e-3", "--loss_lambda=1.0"]
    run_span(flags + [f"--train_file={make_span_file(root / 'train.json', 64, seed=1)}", "--output_dir",
                      str(root / "span"), "--max_query_length=16"])
    run_choice(flags + [f"--train_file={choice_file(root / 'ctrain.json', 64, seed=1)}", "--output_dir",
                        str(root / "choice"), "--max_qa_length=8"])
    return {"span": str(make_span_file(root / "dev.json", questions, seed=2)),
            "choice": choice_file(root / "cdev.json", questions, seed=2)}


def main() -> None:
    from expmrc.errors import OneLineParser  # usage errors in one line

    parser = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=40, help="dev questions per task")
    parser.add_argument("--max_k", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    root = Path(tempfile.mkdtemp(prefix="bench-faith-"))
    os.environ.setdefault("EXPMRC_CACHE", str(root / "cache"))  # the runs' feature caches stay out of ~/.cache
    for task, dev in train(root, args.questions).items():
        model = FineTuned(str(root / task), "cpu")
        dataset = load_dataset(dev)
        began = time.perf_counter()
        plain = model.predict(dataset.questions)
        reference = time.perf_counter() - began
        result = timed_faithfulness(model, dataset, args.max_k)
        n = len(dataset.questions)
        print(f"{task}: {n} questions, k = {args.max_k}: faithfulness {result.seconds / n:.4f} s and "
              f"{result.windows / n:.2f} forward passes per question; plain prediction {reference / n:.4f} s and "
              f"{plain.windows / n:.2f} forward passes per question (ratio {result.seconds / reference:.1f}x)")
        if task == "span":
            earlier = timed_faithfulness(model, dataset, args.max_k, every_span_probability)
            same = earlier.details == result.details and earlier.erasure == result.erasure
            print(f"span: with the earlier p(ŷ), every span tokenized: {earlier.seconds / n:.4f} s per question; "
                  f"now {result.seconds / n:.4f} s ({earlier.seconds / result.seconds:.1f}x faster), "
                  f"figures {'identical' if same else 'DIFFERENT'}")
            first = timed_faithfulness(model, dataset, args.max_k, nbest=True)
            print(f"span: with the first version's p(ŷ) from the n-best (other figures): {first.seconds / n:.4f} s "
                  f"per question ({first.seconds / result.seconds:.2f}x the time now)")


if __name__ == "__main__":
    from expmrc.cli import run_guarded  # bad input in one line, exit 2; Ctrl-C 130

    sys.exit(run_guarded(lambda _: main(), None))
