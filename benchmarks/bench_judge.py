"""Judgements per second of the local support judge (`expmrc judge --judge nli`), on the CPU or a GPU.

    python benchmarks/bench_judge.py                                   # CPU: a MiniLM-L6-shaped NLI model
    python benchmarks/bench_judge.py --device cuda --shapes minilm,base,large --batch-sizes 32,128,512 --pairs 4096
    python benchmarks/bench_judge.py --model DIR                       # a real NLI model's folder instead

The pairs are what a judging run judges on a dev set: each question's gold evidence with its gold answer as
a statement, and the check's other sentence with it (expmrc.scoring.support, the run's own code), from
--subset's dev set in $EXPMRC_DATA, or else from generated English passages (a note says so). The first
--pairs of them are judged through `expmrc.llm.nli.NLIJudge`, the path `expmrc judge` takes (tokenizing,
sorting by length, batching, the forward pass, softmax), --repeats times after one warm-up batch; the
median is printed as judgements (pairs) per second (per CPU second of the process on the CPU, where the
machine may be shared: run it with --threads 1 for a figure per core; per wall second on a GPU), for each
batch size. Beside it, timed in turns with it,
the same pairs batched in their own order (no sorting by length), and the ratio: what sorting saves in padding.

Without --model the judge is a BERT of each --shapes shape with random weights (speed does not depend on
them) and a word-level WordPiece vocabulary built from the pairs (English words whole, Chinese characters one
by one, as a Chinese BERT splits them), so the token counts are about a real tokenizer's and nothing is
downloaded: nothing needs to be carried to a GPU machine but the checkout (and $EXPMRC_DATA, if the dev
set's pairs are wanted).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SHAPES = {"tiny": (64, 2), "minilm": (384, 6), "base": (768, 12), "large": (1024, 24)}  # hidden, layers
LABELS = {0: "entailment", 1: "neutral", 2: "contradiction"}


def dev_pairs(subset: str, limit: int) -> tuple[list, str]:
    """Up to `limit` pairs of a judging run on the dev set (gold evidence, then the check's other sentence), or
    generated ones when the dev set is not at hand; and where they came from."""
    from expmrc.data.datasets import load_dataset
    from expmrc.scoring.support import check_cases, choose_statement, pairs_of

    try:
        dataset = load_dataset(subset)
    except Exception as exc:  # no $EXPMRC_DATA: the benchmark still runs, on generated text
        print(f"note: {exc}; judging generated English pairs instead", file=sys.stderr)
        return generated_pairs(limit), "generated English passages"
    gold, other = check_cases(dataset, choose_statement(None, dataset.language), 12345)
    pairs = pairs_of(gold, other)
    while len(pairs) < limit:
        pairs = pairs + pairs
    return pairs[:limit], f"{subset} dev set ({dataset.path})"


def generated_pairs(limit: int) -> list:
    from expmrc.scoring.support import Pair

    words = ("river city mayor market year people north south built old new small large first last school "
             "station bridge museum church park road festival winter summer").split()
    pairs = []
    for k in range(limit):
        sentence = " ".join(words[(k * 7 + j) % len(words)] for j in range(8 + k % 20))
        pairs.append(Pair(f"The {sentence} of town {k}.", f"What is in town {k}? The answer is: {words[k % 25]}."))
    return pairs


def build_model(folder: Path, shape: str, pairs: list) -> str:
    """A random BERT NLI model of `shape` with a vocabulary of the pairs' words, saved to `folder`."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer
    pieces = re.compile(r"[a-z0-9]+|[^\sa-z0-9]")  # words whole; punctuation and each Chinese character apart
    words = sorted({w for p in pairs for text in (p.premise, p.hypothesis) for w in pieces.findall(text.lower())})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    hidden, layers = SHAPES[shape]
    config = BertConfig(vocab_size=len(vocab), hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=max(1, hidden // 64), intermediate_size=4 * hidden,
                        max_position_embeddings=512, num_labels=3, id2label=LABELS,
                        label2id={v: k for k, v in LABELS.items()})
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(folder)
    BertTokenizer(vocab=str(folder / "vocab.txt"), do_lower_case=True).save_pretrained(folder)
    return str(folder)


def measure(judge, pairs: list, batch: int, repeats: int) -> tuple[float, float]:
    """Pairs per second sorted by length (the judge's own path) and in their own order: the median of `repeats`
    timings of each, taken in turns (ABAB...), so a change of load on the machine hits both alike; on the CPU the
    process's CPU seconds (a machine shared with other jobs slows the wall clock, not them), on a GPU wall seconds."""
    import torch

    cuda = judge.device == "cuda"
    sync, clock = (torch.cuda.synchronize, time.perf_counter) if cuda else ((lambda: None), time.process_time)
    judge.batch_size = batch
    judge.judge(pairs[:batch], "en")  # warm-up: kernels, allocator, threads
    runs = {"sorted": lambda: judge.judge(pairs, "en"),
            "in order": lambda: [judge._batch(pairs[k:k + batch]) for k in range(0, len(pairs), batch)]}
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            sync()
            start = clock()
            run()
            sync()
            seconds[name].append(clock() - start)
    return len(pairs) / statistics.median(seconds["sorted"]), len(pairs) / statistics.median(seconds["in order"])


def main() -> int:
    from expmrc.errors import OneLineParser  # usage errors in one line

    parser = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="a real NLI model's folder (default: random BERTs of --shapes)")
    parser.add_argument("--shapes", default="minilm", help=f"comma list of {', '.join(SHAPES)} (default minilm)")
    parser.add_argument("--subset", default="squad", help="the dev set whose pairs are judged (default squad)")
    parser.add_argument("--pairs", type=int, default=256, help="pairs judged per timing (default 256)")
    parser.add_argument("--batch-sizes", default="8,32", help="comma list (default 8,32)")
    parser.add_argument("--repeats", type=int, default=3, help="timings per case, the median printed (default 3)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads on the CPU (default torch's)")
    args = parser.parse_args()

    import torch

    from expmrc.llm.nli import NLIJudge
    from expmrc.logs import quiet_libraries

    quiet_libraries()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda, but no CUDA GPU is visible", file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.model and not Path(args.model).is_dir():  # before anything is printed
        from expmrc.errors import ExpmrcError

        raise ExpmrcError(f"{args.model}: no such folder (--model takes an NLI model's folder)")
    pairs, source = dev_pairs(args.subset, args.pairs)
    device = torch.cuda.get_device_name() if args.device == "cuda" else f"cpu, {torch.get_num_threads()} threads"
    clock = "wall seconds" if args.device == "cuda" else "CPU seconds of this process"
    print(f"{len(pairs)} pairs from the {source}; device: {device}; torch {torch.__version__}; "
          f"load {os.getloadavg()[0]:.1f}; timed in {clock}")
    print("| model | batch | tokens / pair | judgements / s (sorted by length) | in their own order | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        models = [(Path(args.model).name, args.model)] if args.model else [
            (f"{shape} random (hidden {SHAPES[shape][0]}, {SHAPES[shape][1]} layers)", build_model(Path(tmp) / shape, shape, pairs))
            for shape in args.shapes.split(",")]
        for name, folder in models:
            judge = NLIJudge(folder, device=args.device, progress=False)
            tokens = statistics.fmean(len(judge.tokenizer(p.premise, p.hypothesis, truncation=True,
                                                          max_length=judge.max_length)["input_ids"]) for p in pairs)
            for batch in (int(b) for b in args.batch_sizes.split(",")):
                fast, plain = measure(judge, pairs, batch, args.repeats)
                print(f"| {name} | {batch} | {tokens:.1f} | {fast:,.1f} | {plain:,.1f} | {fast / plain:.2f}x |")
    return 0


if __name__ == "__main__":
    from expmrc.cli import run_guarded  # bad input in one line, exit 2; Ctrl-C 130

    sys.exit(run_guarded(lambda _: main(), None))
