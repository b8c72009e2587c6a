"""Cost of `expmrc faithfulness` per question: trains a tiny span and a tiny choice run on generated data (the
test helpers' tiny BERT), then runs the command's library call on each dev set and prints seconds and forward
passes (windows) per question, with the plain prediction of the same questions as the reference.

    PYTHONPATH=$PWD:tests python benchmarks/bench_faithfulness.py --questions 40 --max_k 4
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

from expmrc.data.datasets import load_dataset
from expmrc.inference.faithfulness_run import run_faithfulness
from expmrc.inference.rerun import FineTuned
from expmrc.training.choice_task import run_choice
from expmrc.training.span_task import run_span
from helpers.choice_data import choice_file
from helpers.span_data import make_span_file
from helpers.tiny_bert import make_tiny_bert_folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=40, help="dev questions per task")
    parser.add_argument("--max_k", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    root = Path(tempfile.mkdtemp(prefix="bench-faith-"))
    bert = make_tiny_bert_folder(root / "bert")
    flags = ["--model_name_or_path", str(bert), "--do_train=True", "--max_seq_length=64", "--doc_stride=16",
             "--train_batch_size=8", "--max_steps=40", "--learning_rate=3e-3", "--loss_lambda=1.0"]
    span_dev = str(make_span_file(root / "dev.json", args.questions, seed=2))
    run_span(flags + [f"--train_file={make_span_file(root / 'train.json', 64, seed=1)}", "--output_dir",
                      str(root / "span"), "--max_query_length=16"])
    choice_dev = choice_file(root / "cdev.json", args.questions, seed=2)
    run_choice(flags + [f"--train_file={choice_file(root / 'ctrain.json', 64, seed=1)}", "--output_dir",
                        str(root / "choice"), "--max_qa_length=8"])
    for task, dev in (("span", span_dev), ("choice", choice_dev)):
        model = FineTuned(str(root / task), "cpu")
        dataset = load_dataset(dev)
        began = time.perf_counter()
        plain = model.predict(dataset.questions)
        reference = time.perf_counter() - began
        result = run_faithfulness(model, dataset, args.max_k, progress=False)
        n = len(dataset.questions)
        print(f"{task}: {n} questions, k = {args.max_k}: faithfulness {result.seconds / n:.4f} s and "
              f"{result.windows / n:.2f} forward passes per question; plain prediction {reference / n:.4f} s and "
              f"{plain.windows / n:.2f} forward passes per question (ratio {result.seconds / reference:.1f}x)")


if __name__ == "__main__":
    main()
