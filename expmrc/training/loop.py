"""The training and prediction loop both baselines share, on `accelerate` (CPU, GPUs, machines, TPU).

Batches are cut from a fixed stream: epoch e is a permutation of the dataset seeded by (seed, e),
the epochs are laid end to end, and optimizer step s takes the next `train_batch_size` items. Each
process takes its own slice of every global batch, so `train_batch_size` is the total over devices
(and accumulation steps), as in the original TensorFlow scripts, and the data position of a run is
its step number alone. Every `save_checkpoints_steps` steps `Accelerator.save_state` writes the model,
optimizer, scheduler and every process's random states into a checkpoint folder (written under a
temporary name, then renamed), beside the settings that fix the batch stream; running the same
command again resumes from the newest one and, with a fixed seed on CPU, ends in exactly the weights
an uninterrupted run reaches. A checkpoint written with other settings is refused, never resumed.

A dataset is anything with `len()` and `batch(indices) -> dict of tensors` (`features.windows.WindowDataset`).
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import time
from contextlib import nullcontext
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.utils import gather_object, set_seed
from tqdm import tqdm
from transformers import get_linear_schedule_with_warmup

from expmrc.data.io import write_json_atomic
from expmrc.errors import ExpmrcError
from expmrc.training.rundir import CHECKPOINT_DIR, CHECKPOINT_STATE, LOG_FILE

logger = logging.getLogger(__name__)
ADAM_EPSILON = 1e-6  # the original BERT optimizer's epsilon


class Batches(Protocol):
    """What the loop trains and predicts on."""

    def __len__(self) -> int: ...

    def batch(self, indices: list[int]) -> dict[str, torch.Tensor]: ...


@dataclass
class TrainConfig:
    """Optimization and bookkeeping settings of one run (the flags, minus model and data)."""

    output_dir: str
    learning_rate: float = 3e-5
    num_train_epochs: float = 2.0
    max_steps: int = -1  # > 0 overrides num_train_epochs
    train_batch_size: int = 32  # total over processes and accumulation steps
    predict_batch_size: int = 8  # total over processes
    warmup_proportion: float = 0.1
    weight_decay: float = 0.01
    gradient_accumulation_steps: int = 1
    mixed_precision: str = "no"  # no | fp16 | bf16
    seed: int = 12345
    save_checkpoints_steps: int = 1000
    logging_steps: int = 50
    keep_checkpoints: int = 3
    max_grad_norm: float = 1.0  # global-norm clipping, as the original optimizer does


@dataclass
class TrainResult:
    """How a call to `train` ended."""

    global_step: int
    total_steps: int
    resumed_from: int  # the checkpoint step training continued from; 0 for a fresh start
    last_loss: float | None  # mean loss over the last logging window (None if no step ran)
    examples_per_second: float  # over the steps this call ran, checkpoint writing included
    seconds: float
    checkpoint_seconds: float  # of `seconds`, the time spent writing checkpoints


def make_accelerator(config: TrainConfig, use_tpu: bool = False) -> Accelerator:
    """The run's Accelerator (the only device layer), with every RNG seeded by `config.seed`.

    Seeding here, before any model is built, makes task heads start identically on every process
    and in every rerun. `use_tpu` (the original flag) requires torch_xla, which accelerate then uses.
    Several processes on a machine without any accelerator (e.g. `torchrun --nproc_per_node 2` on a
    laptop) run as multi-CPU processes joined by gloo.
    """
    if use_tpu:
        try:
            import torch_xla  # noqa: F401  (accelerate picks the XLA device when it is importable)
        except ImportError:
            raise ExpmrcError("--use_tpu True needs torch_xla (pip install torch_xla on the TPU VM)") from None
    cpu_only = (not use_tpu and int(os.environ.get("WORLD_SIZE", "1")) > 1
                and not (hasattr(torch, "accelerator") and torch.accelerator.is_available()))
    try:
        accelerator = Accelerator(mixed_precision=config.mixed_precision, step_scheduler_with_optimizer=False,
                                  cpu=cpu_only)
    except (ValueError, RuntimeError) as exc:
        raise ExpmrcError(f"--mixed_precision {config.mixed_precision} is not available here: {exc}") from None
    set_seed(config.seed)
    return accelerator


def total_train_steps(num_examples: int, config: TrainConfig) -> int:
    """Optimizer steps of a run: `max_steps`, else epochs × examples / batch size, rounded up."""
    if config.max_steps > 0:
        return config.max_steps
    return max(1, math.ceil(config.num_train_epochs * num_examples / config.train_batch_size))


@lru_cache(maxsize=4)
def epoch_permutation(num_examples: int, seed: int, epoch: int) -> tuple[int, ...]:
    """The order of the dataset in one epoch; depends only on (seed, epoch), never on global RNG state."""
    return tuple(int(i) for i in np.random.default_rng([seed, epoch]).permutation(num_examples))


def batch_indices(step: int, num_examples: int, batch_size: int, seed: int) -> list[int]:
    """Dataset indices of global batch `step`: the next `batch_size` items of the epoch stream."""
    indices: list[int] = []
    position = step * batch_size
    while len(indices) < batch_size:
        epoch, offset = divmod(position, num_examples)
        take = min(batch_size - len(indices), num_examples - offset)
        indices.extend(epoch_permutation(num_examples, seed, epoch)[offset:offset + take])
        position += take
    return indices


def parameter_groups(model: torch.nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """AdamW groups: weight decay on weight matrices, none on biases and LayerNorm weights."""
    no_decay: set[int] = set()
    for module in model.modules():
        if isinstance(module, torch.nn.LayerNorm) or "LayerNorm" in type(module).__name__:
            no_decay.update(id(p) for p in module.parameters(recurse=False))
    decay, plain = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        (plain if name.endswith("bias") or id(param) in no_decay else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": plain, "weight_decay": 0.0}]


def train(model: torch.nn.Module, dataset: Batches, config: TrainConfig, accelerator: Accelerator) -> TrainResult:
    """Train `model` (whose forward returns a dict with `loss`) in place, resuming from the newest checkpoint.

    A loss that stops being finite ends the run with one line naming the step (no checkpoint is written
    from such weights).
    """
    num_examples = len(dataset)
    if num_examples == 0:
        raise ExpmrcError("no training features to train on")
    processes, accumulation = accelerator.num_processes, config.gradient_accumulation_steps
    batch_size = config.train_batch_size
    if batch_size % (processes * accumulation):
        raise ExpmrcError(f"--train_batch_size {batch_size} must be divisible by {processes} processes × "
                          f"{accumulation} gradient accumulation steps")
    total = total_train_steps(num_examples, config)
    optimizer = torch.optim.AdamW(parameter_groups(model, config.weight_decay), lr=config.learning_rate,
                                  eps=ADAM_EPSILON)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(total * config.warmup_proportion), total)
    model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)
    settings = {"train_batch_size": batch_size, "seed": config.seed, "total_steps": total, "num_examples": num_examples}
    start = load_latest_checkpoint(config.output_dir, settings, accelerator)

    model.train()
    Path(config.output_dir).mkdir(parents=True, exist_ok=True)
    bar = tqdm(total=total, initial=start, desc="training", unit="step", disable=not accelerator.is_local_main_process,
               dynamic_ncols=True)
    window_loss = torch.zeros((), device=accelerator.device)
    window_steps, last_loss, checkpoint_seconds = 0, None, 0.0
    began = time.perf_counter()
    try:
        for step in range(start, total):
            indices = batch_indices(step, num_examples, batch_size, config.seed)
            loss = train_step(model, dataset, indices, optimizer, scheduler, config, accelerator)
            if not math.isfinite(float(accelerator.reduce(loss, "mean"))):
                raise ExpmrcError(f"step {step + 1}: the loss is {float(loss)}; training stopped (lower "
                                  "--learning_rate, or use --mixed_precision bf16/no instead of fp16)")
            window_loss += loss
            window_steps += 1
            bar.update(1)
            done = step + 1
            if done % config.logging_steps == 0 or done == total:
                last_loss = float(accelerator.reduce(window_loss, "mean")) / window_steps
                bar.set_postfix(loss=f"{last_loss:.4f}")
                if accelerator.is_main_process:
                    log_step(config.output_dir, done, total, last_loss, scheduler.get_last_lr()[0])
                window_loss.zero_()
                window_steps = 0
            if done % config.save_checkpoints_steps == 0 or done == total:
                saving = time.perf_counter()
                save_checkpoint(config.output_dir, done, settings, accelerator, config.keep_checkpoints)
                checkpoint_seconds += time.perf_counter() - saving
    finally:
        bar.close()
    seconds = time.perf_counter() - began
    ran = total - start
    return TrainResult(global_step=total, total_steps=total, resumed_from=start, last_loss=last_loss,
                       examples_per_second=ran * batch_size / seconds if ran and seconds > 0 else 0.0,
                       seconds=seconds, checkpoint_seconds=checkpoint_seconds)


def train_step(model: Any, dataset: Batches, indices: list[int], optimizer: Any, scheduler: Any,
               config: TrainConfig, accelerator: Accelerator) -> torch.Tensor:
    """One optimizer step on global batch `indices`: this process's micro-batches, synced on the last.

    Returns this process's share of the step's mean loss (detached).
    """
    processes, accumulation = accelerator.num_processes, config.gradient_accumulation_steps
    micro = len(indices) // (processes * accumulation)
    step_loss = torch.zeros((), device=accelerator.device)
    for a in range(accumulation):
        first = (a * processes + accelerator.process_index) * micro
        batch = to_device(dataset.batch(indices[first:first + micro]), accelerator.device)
        with nullcontext() if a == accumulation - 1 else accelerator.no_sync(model):
            loss = model(**batch)["loss"] / accumulation
            accelerator.backward(loss)
        step_loss += loss.detach().float()
    if config.max_grad_norm > 0:
        accelerator.clip_grad_norm_(model.parameters(), config.max_grad_norm)
    optimizer.step()
    scheduler.step()  # accelerate's scheduler does not advance when fp16 skipped the optimizer step
    optimizer.zero_grad(set_to_none=True)
    return step_loss


def log_step(output_dir: str, step: int, total: int, loss: float, learning_rate: float) -> None:
    """Log a loss line and append it to OUTPUT_DIR/train_log.jsonl."""
    logger.info(f"step {step}/{total}: loss {loss:.4f}, learning rate {learning_rate:.3g}")
    with open(Path(output_dir) / LOG_FILE, "a", encoding="utf-8") as log:
        log.write(json.dumps({"step": step, "loss": round(loss, 6), "learning_rate": learning_rate}) + "\n")


def to_device(batch: dict[str, torch.Tensor], device: Any) -> dict[str, torch.Tensor]:
    """Move every tensor of a batch to `device`."""
    return {key: value.to(device) for key, value in batch.items()}


def predict(model: torch.nn.Module, dataset: Batches, batch_size: int, accelerator: Accelerator) -> list[dict[str, np.ndarray]]:
    """The model's per-item outputs (those with a batch dimension) for every item, in order, on every process.

    Each process runs one contiguous share of the items; the shares are gathered and checked so that
    nothing is duplicated or dropped. `batch_size` is the total over processes.
    """
    model = accelerator.unwrap_model(model).to(accelerator.device)
    processes, rank = accelerator.num_processes, accelerator.process_index
    bounds = [len(dataset) * i // processes for i in range(processes + 1)]
    mine = list(range(bounds[rank], bounds[rank + 1]))
    per_process = max(1, batch_size // processes)
    was_training = model.training
    model.eval()
    outputs: list[dict[str, np.ndarray]] = []
    with torch.inference_mode():
        for start in tqdm(range(0, len(mine), per_process), desc="predicting", unit="batch",
                          disable=not accelerator.is_local_main_process, dynamic_ncols=True):
            items = mine[start:start + per_process]
            with accelerator.autocast():
                result = model(**to_device(dataset.batch(items), accelerator.device))
            arrays = {k: v.float().cpu().numpy() for k, v in result.items()
                      if k != "loss" and v.dim() > 0 and v.shape[0] == len(items)}
            outputs.extend({k: v[j] for k, v in arrays.items()} for j in range(len(items)))
    model.train(was_training)
    if processes == 1:
        return outputs
    gathered = gather_object([(bounds[rank] + j, out) for j, out in enumerate(outputs)])
    gathered.sort(key=lambda pair: pair[0])
    if [index for index, _ in gathered] != list(range(len(dataset))):
        raise RuntimeError("predictions gathered across processes do not cover the dataset exactly once")
    return [out for _, out in gathered]


# ---- checkpoints ---------------------------------------------------------------------------------

def checkpoint_steps(output_dir: str) -> list[int]:
    """Steps of the complete checkpoints in `output_dir/checkpoints`, oldest first."""
    root = Path(output_dir) / CHECKPOINT_DIR
    if not root.is_dir():
        return []
    steps = []
    for path in root.iterdir():
        if path.name.startswith("step-") and (path / CHECKPOINT_STATE).is_file():
            try:
                steps.append(int(path.name[len("step-"):]))
            except ValueError:
                continue
    return sorted(steps)


def checkpoint_path(output_dir: str, step: int) -> Path:
    """The folder of the checkpoint written after optimizer step `step`."""
    return Path(output_dir) / CHECKPOINT_DIR / f"step-{step:08d}"


def save_checkpoint(output_dir: str, step: int, settings: dict[str, Any], accelerator: Accelerator, keep: int) -> Path:
    """`Accelerator.save_state` into a temporary folder, the settings beside it, then a rename; keep the newest `keep`."""
    final = checkpoint_path(output_dir, step)
    tmp = final.with_name(f".tmp-{final.name}")
    if accelerator.is_main_process:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(tmp))
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        write_json_atomic(str(tmp / CHECKPOINT_STATE),
                          {"global_step": step, "num_processes": accelerator.num_processes, **settings}, indent=2)
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
        for old in checkpoint_steps(output_dir)[:-keep]:
            shutil.rmtree(checkpoint_path(output_dir, old), ignore_errors=True)
    accelerator.wait_for_everyone()
    return final


def load_latest_checkpoint(output_dir: str, settings: dict[str, Any], accelerator: Accelerator) -> int:
    """Restore the newest complete checkpoint, if any, and return its step (0 when starting fresh)."""
    steps = checkpoint_steps(output_dir)
    if not steps:
        return 0
    folder = checkpoint_path(output_dir, steps[-1])
    state = json.loads((folder / CHECKPOINT_STATE).read_text(encoding="utf-8"))
    for key, value in settings.items():
        if state.get(key) != value:
            raise ExpmrcError(f"{folder}: checkpoint was written with {key} = {state.get(key)}, this run has {value}; "
                              "rerun the original command or use a new --output_dir")
    accelerator.load_state(str(folder))  # model, optimizer, scheduler and this process's random states
    if state.get("num_processes") != accelerator.num_processes:
        logger.warning(f"{folder}: written by {state.get('num_processes')} processes, resumed on "
                       f"{accelerator.num_processes}: the batches stay the same, dropout draws do not")
    logger.info(f"resuming from {folder} (step {steps[-1]})")
    return int(state["global_step"])
