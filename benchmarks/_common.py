"""What the training-speed benchmarks share: the model-shape flags, a BERT config of that shape, the package's own
task predictor (its windows' padding rule and its decoding, never a copy), the plain textbook training loop they
compare against, interleaved (ABBA) step timing, and peak memory."""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import time
from functools import partial
from typing import Any
from collections.abc import Callable

import torch


def add_shape_arguments(parser: argparse.ArgumentParser, batch: int, steps: int, batch_help: str | None = None) -> None:
    """--hidden --layers --seq --batch --steps --threads, with this benchmark's batch and step counts."""
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=batch, help=batch_help)
    parser.add_argument("--steps", type=int, default=steps, help="timed steps per model, interleaved")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())


def bert_config(args: argparse.Namespace) -> Any:
    """A BERT of the flags' shape: 64-wide attention heads, 4x feed-forward, BERT's vocabulary size."""
    from transformers import BertConfig

    return BertConfig(vocab_size=30522, hidden_size=args.hidden, num_hidden_layers=args.layers,
                      num_attention_heads=max(1, args.hidden // 64), intermediate_size=4 * args.hidden,
                      max_position_embeddings=max(512, args.seq))


def task_predictor(kind: str, tokenizer: Any, where: Any, batch_size: int = 32, **windows: int) -> Any:
    """The package's task predictor for `kind` ("span" or "choice") on `where` (a device, or a run's Accelerator),
    with the task's default window and decoding settings changed by `windows`: its windows pad by the device's rule
    (`expmrc.inference.task_predictor.pad_multiple`) and its predictions decode with those settings, as a run's do."""
    from dataclasses import replace

    from accelerate import Accelerator

    from expmrc.inference.task_predictor import TaskPredictor
    from expmrc.tasks import TASKS

    spec = TASKS[kind]
    settings = replace(spec.defaults, **windows)
    if isinstance(where, Accelerator):
        return TaskPredictor.of_run(spec, tokenizer, settings, True, where, batch_size)
    return TaskPredictor(spec, tokenizer, settings, True, torch.device(where), batch_size)


def under_autocast(model: torch.nn.Module, precision: str, device: torch.device) -> torch.nn.Module:
    """`model` whose forward runs under bf16 autocast when `precision` is bf16, as accelerate prepares a run's model
    (what a step replayed as a CUDA graph calls)."""
    if precision == "bf16":
        model.forward = torch.autocast(device.type, dtype=torch.bfloat16)(model.forward)  # type: ignore[method-assign]
    return model


def textbook_optimizer(model: torch.nn.Module, total_steps: int = 100_000) -> tuple[torch.optim.Optimizer, Any]:
    """The runs' AdamW (fused on CUDA) over `model` with its linear schedule: 10 warm-up steps, then decay."""
    from transformers import get_linear_schedule_with_warmup

    from expmrc.training.loop import parameter_groups

    fused = True if next(model.parameters()).device.type == "cuda" else None
    optimizer = torch.optim.AdamW(parameter_groups(model, 0.01), lr=3e-5, eps=1e-6, fused=fused)
    return optimizer, get_linear_schedule_with_warmup(optimizer, 10, total_steps)


def textbook_update(model: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any) -> None:
    """After the backward pass: clip to norm 1, step the optimizer and the schedule, drop the gradients."""
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)


class PlainLoop:
    """The textbook loop: AdamW, linear warm-up/decay, clipping, forward, backward, step."""

    def __init__(self, model: torch.nn.Module,
                 make_batch: Callable[[torch.Generator], dict[str, torch.Tensor]]) -> None:
        self.model = model.train()
        self.make_batch = make_batch
        self.optimizer, self.scheduler = textbook_optimizer(self.model, 10_000)
        self.generator = torch.Generator().manual_seed(1)

    def step(self) -> float:
        """One optimizer step on a fresh random batch; returns its seconds."""
        batch = self.make_batch(self.generator)
        began = time.perf_counter()
        loss = self.model(**batch)["loss"]
        loss.backward()
        textbook_update(self.model, self.optimizer, self.scheduler)
        return time.perf_counter() - began


def plain_loop(make_model: Callable[[str, Any], torch.nn.Module], random_batch: Callable[..., dict[str, torch.Tensor]],
               kind: str, args: argparse.Namespace) -> PlainLoop:
    """The plain loop training `make_model(kind, args)` on `random_batch(kind, args, generator)` batches."""
    return PlainLoop(make_model(kind, args), partial(random_batch, kind, args))


def interleaved_seconds(ours: PlainLoop, plain: PlainLoop, steps: int) -> tuple[list[float], list[float]]:
    """Per-step seconds of two loops after two warm-up steps each, steps interleaved (ABBA) so load on a
    shared machine hits both alike."""
    for _ in range(2):  # warm-up: allocator, kernels
        ours.step(), plain.step()
    ours_seconds, plain_seconds = [], []
    for i in range(steps):
        if i % 2 == 0:
            ours_seconds.append(ours.step())
            plain_seconds.append(plain.step())
        else:
            plain_seconds.append(plain.step())
            ours_seconds.append(ours.step())
    return ours_seconds, plain_seconds


def _peak_worker(make_loop: Callable[[], PlainLoop], threads: int) -> int:
    torch.set_num_threads(threads)
    loop = make_loop()
    for _ in range(3):
        loop.step()
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


def peak_memory_mib(make_loop: Callable[[], PlainLoop], threads: int) -> float:
    """Max RSS of a fresh process that builds `make_loop()` (picklable) and trains it three steps."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_peak_worker, (make_loop, threads)) / 1024
