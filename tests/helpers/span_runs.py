"""A tiny span-extraction baseline run: a tiny BERT, generated training and dev files, and the command line that
trains it for a few steps and predicts (the compile and attention tests compare such runs' predictions)."""

from __future__ import annotations

from pathlib import Path

from helpers.span_data import make_span_file
from helpers.tiny_bert import make_tiny_bert_folder


def tiny_span_files(root: Path) -> dict[str, Path]:
    """A tiny BERT folder, a training file (40 questions) and a dev file (20) of generated questions under `root`."""
    return {"root": root, "model": make_tiny_bert_folder(root / "bert", seed=3),
            "train": make_span_file(root / "train.json", 40, seed=11), "dev": make_span_file(root / "dev.json", 20, seed=12)}


def run_flags(tiny: dict[str, Path], output: Path, *extra: str) -> list[str]:
    """run_se_mrc.py's flags that train the tiny model 30 steps into `output` and predict the dev file."""
    return ["--model_name_or_path", str(tiny["model"]), "--do_train=True", f"--train_file={tiny['train']}",
            "--do_predict=True", f"--predict_file={tiny['dev']}", f"--output_dir={output}", "--max_seq_length=64",
            "--doc_stride=16", "--max_query_length=16", "--train_batch_size=8", "--max_steps=30",
            "--learning_rate=3e-3", "--loss_lambda=1.0", "--rand_seed=5", f"--cache_dir={tiny['root'] / 'cache'}",
            "--logging_steps=10", *extra]
