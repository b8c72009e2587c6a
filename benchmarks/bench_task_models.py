"""Training speed of our task models against the library's own heads on the same backbone, one run.

    python benchmarks/bench_task_models.py                     # BERT, RoBERTa, DeBERTa-v2; both tasks
    python benchmarks/bench_task_models.py --hidden 768 --layers 12 --seq 384 --batch 4

For each backbone (BERT, RoBERTa, DeBERTa-v2; random weights of the same shape: speed does not depend
on them) and each task, the same textbook training step (AdamW, linear schedule, clipping, forward,
backward) is timed on random batches of one shape for:
- span extraction: `SpanModel` (answer and evidence heads, λ-weighted loss) against
  `AutoModelForQuestionAnswering`;
- multiple choice: `ChoiceModel` (first-token pooler, option head, evidence head over the options'
  mean hidden states) against `AutoModelForMultipleChoice`.
Steps are interleaved (ABBA) so that load on a shared machine hits both alike; the ratio is the
library model's median step time over ours: examples/s of ours relative to the library's (target
>= 0.95, i.e. the evidence head and our loss cost at most 5%).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from transformers import (AutoModelForMultipleChoice, AutoModelForQuestionAnswering, BertConfig,  # noqa: E402
                          DebertaV2Config, RobertaConfig)

from _common import PlainLoop, interleaved_seconds  # noqa: E402
from expmrc.models.choice import ChoiceModel  # noqa: E402
from expmrc.models.heads import LossSettings  # noqa: E402
from expmrc.models.span import SpanModel  # noqa: E402

OPTIONS = 4
BACKBONES = {"bert": BertConfig, "roberta": RobertaConfig, "deberta-v2": DebertaV2Config}


def backbone_config(kind: str, args: argparse.Namespace) -> Any:
    """A config of the flags' shape for `kind`: 64-wide heads, 4x feed-forward, a 30k vocabulary."""
    shape = dict(vocab_size=30522, hidden_size=args.hidden, num_hidden_layers=args.layers,
                 num_attention_heads=max(1, args.hidden // 64), intermediate_size=4 * args.hidden,
                 max_position_embeddings=args.seq + 2, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    if kind == "roberta":
        shape.update(pad_token_id=1, type_vocab_size=1)
    if kind == "deberta-v2":
        shape.update(relative_attention=True, position_buckets=256, pos_att_type=["p2c", "c2p"],
                     position_biased_input=False, type_vocab_size=0, max_relative_positions=-1)
    return BACKBONES[kind](**shape)


def make_model(kind: str, task: str, ours: bool, args: argparse.Namespace) -> torch.nn.Module:
    """Our task model or the library's, on the same random encoder (seeded alike)."""
    torch.manual_seed(0)
    config = backbone_config(kind, args)
    if ours:
        return (SpanModel if task == "span" else ChoiceModel)(config, loss=LossSettings(0.1))
    return (AutoModelForQuestionAnswering if task == "span" else AutoModelForMultipleChoice).from_config(config)


def random_batch(kind: str, task: str, ours: bool, args: argparse.Namespace,
                 generator: torch.Generator) -> dict[str, torch.Tensor]:
    """A batch of `--batch` questions at length `--seq` (options x length for multiple choice)."""
    shape = (args.batch, args.seq) if task == "span" else (args.batch, OPTIONS, args.seq)
    ids = torch.randint(1000, 30000, shape, generator=generator)
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    if kind == "bert":
        batch["token_type_ids"] = torch.zeros_like(ids)
    starts = torch.randint(1, args.seq // 2, (args.batch,), generator=generator)
    if task == "span":
        batch.update(start_positions=starts, end_positions=starts + 3)
    else:
        batch["labels"] = torch.randint(0, OPTIONS, (args.batch,), generator=generator)
    if ours:
        passage = torch.ones(args.batch, args.seq, dtype=torch.long)
        batch.update(passage_mask=passage, evidence_start=starts, evidence_end=starts + 10)
        if task == "choice":
            batch["option_mask"] = torch.ones(args.batch, OPTIONS, dtype=torch.long)
    return batch


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--seq", type=int, default=128, help="tokens per row (default 128)")
    parser.add_argument("--batch", type=int, default=8, help="questions per step (default 8; 4 options each for choice)")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per model, interleaved (default 10)")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--backbones", default=",".join(BACKBONES), help="comma-separated subset of bert,roberta,deberta-v2")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"hidden {args.hidden}, {args.layers} layers, length {args.seq}, batch {args.batch} questions, "
          f"{args.steps} interleaved steps each, {args.threads} threads, torch {torch.__version__}, CPU")
    print(f"{'backbone':<11} {'task':<7} {'ours ex/s':>10} {'library ex/s':>13} {'ratio':>7}")
    for kind in args.backbones.split(","):
        for task in ("span", "choice"):
            loops = [PlainLoop(make_model(kind, task, ours, args),
                               lambda g, ours=ours, kind=kind, task=task: random_batch(kind, task, ours, args, g)) for ours in (True, False)]
            ours_s, library_s = interleaved_seconds(loops[0], loops[1], args.steps)
            ours_rate, library_rate = args.batch / statistics.median(ours_s), args.batch / statistics.median(library_s)
            print(f"{kind:<11} {task:<7} {ours_rate:>10.2f} {library_rate:>13.2f} {ours_rate / library_rate:>7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
