"""The training loop both baselines share, on `accelerate` (CPU, GPUs, machines, TPU).

Batches are cut from a fixed stream: epoch e is a permutation of the dataset seeded by (seed, e),
the epochs are laid end to end, and optimizer step s takes the next `train_batch_size` items. With
length grouping (on by default for datasets that know their lengths), each epoch's permutation is
cut into megabatches of `MEGABATCH` global batches, each sorted by length and cut into batches whose
order is shuffled by (seed, epoch): batches of similar lengths pad little, and the stream is still a
pure function of (seed, epoch, step). Each
process takes its own slice of every global batch, so `train_batch_size` is the total over devices
(and accumulation steps), as in the original TensorFlow scripts, and the data position of a run is
its step number alone. Every `save_checkpoints_steps` steps `Accelerator.save_state` writes the model,
optimizer, scheduler and every process's random states into a checkpoint folder (written under a
temporary name, then renamed), beside the settings that fix the batch stream; running the same
command again resumes from the newest one and, with a fixed seed on CPU, ends in exactly the weights
an uninterrupted run reaches. A checkpoint written with other settings is refused, never resumed.

A dataset is anything with `len()` and `batch(indices) -> dict of tensors` (`features.windows.WindowDataset`),
and optionally `lengths()`, the padded cost of each item, for length grouping and sorted prediction.

Precision (`expmrc.inference.saved.resolve_precision`): `auto` resolves to bf16 autocast on GPUs that support it
(fp16 with loss scaling on older ones) and on TPUs, and to FP32 on CPU; FP32 matmuls on GPUs use TF32 unless `tf32`
is False.

With `cuda_graphs` on (auto: one CUDA GPU, bf16, the unpadded path) a step is not launched kernel by kernel: it is
replayed from the CUDA graph of its token bucket (`expmrc.training.graphs`), planned here from the run's batches.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.utils import DistributedType, set_seed
from tqdm import tqdm
from transformers import get_linear_schedule_with_warmup

from expmrc.data.io import write_json_atomic
from expmrc.data.runs import CHECKPOINT_DIR, CHECKPOINT_STATE, LOG_FILE
from expmrc.errors import ExpmrcError
from expmrc.inference.predictor import PREDICT_BATCH_SIZE, Batches, dataset_lengths, to_device
from expmrc.inference.saved import resolve_precision
from expmrc.models.unpadded import ATTENTION_MODES
from expmrc.training.graphs import (GRAPH_MODES, GraphedSteps, graphed_steps, logged_loss, plain_learning_rates,
                                    resolve_graphs)

logger = logging.getLogger(__name__)
ADAM_EPSILON = 1e-6  # the original BERT optimizer's epsilon
MEGABATCH = 50  # global batches per length-sorted megabatch
DEFAULT_BUCKETS = (128, 256, 384, 512)  # padded lengths of a compiled run (below --max_seq_length, then it)
RECOMPILE_LIMIT = 64  # compiled shapes per model: buckets x the micro-batch sizes an out-of-memory retry tries
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
MAX_EPOCHS = 1000  # far beyond any fine-tuning run; larger values are typos (or inf)
GRAPH_BUCKETS = 8  # token buckets of a graphed run: each one graph captured, fewer pad more (docs/benchmarks.md)


@dataclass
class TrainConfig:
    """Optimization and bookkeeping settings of one run; these defaults are the baseline flags' defaults."""

    output_dir: str
    learning_rate: float = 3e-5
    num_train_epochs: float = 3.0
    max_steps: int = -1  # > 0 overrides num_train_epochs
    train_batch_size: int = 32  # total over processes and accumulation steps
    predict_batch_size: int = PREDICT_BATCH_SIZE  # total over processes
    warmup_proportion: float = 0.1
    weight_decay: float = 0.01
    gradient_accumulation_steps: int = 1
    mixed_precision: str = "auto"  # auto | no | fp16 | bf16
    tf32: bool = True  # FP32 matmuls on GPUs may use TF32
    group_by_length: bool = True  # length-grouped batches when the dataset knows its lengths
    per_device_micro_batch: int = 0  # most items per forward pass; 0: whole micro-batch, halved on CUDA OOM
    torch_compile: bool = False
    compile_buckets: tuple[int, ...] = ()  # lengths a compiled run pads to; (): `default_buckets`
    compile_mode: str = "default"  # torch.compile's mode: reduce-overhead adds CUDA graphs
    compile_backend: Any = "inductor"  # torch.compile's backend (tests pass "eager" or their own)
    attention: str = "auto"  # auto | padded | unpadded: the encoder on padded batches or on real tokens only
    fused_kernels: bool = False  # the unpadded encoder's small kernels as compiled regions (expmrc.models.fused)
    cuda_graphs: str = "auto"  # auto | on | off: steps replayed as CUDA graphs at token buckets (training.graphs)
    graph_buckets: int = GRAPH_BUCKETS
    seed: int = 12345
    save_checkpoints_steps: int = 1000
    logging_steps: int = 50
    keep_checkpoints: int = 3
    max_grad_norm: float = 1.0  # global-norm clipping, as the original optimizer does

    def checked(self, max_length: int | None = None) -> TrainConfig:
        """This configuration, once every setting is in range (one line naming its flag otherwise); the last
        compile bucket must be `max_length`, the longest window, where it is given."""
        for name in ("train_batch_size", "predict_batch_size", "gradient_accumulation_steps", "save_checkpoints_steps",
                     "keep_checkpoints", "logging_steps"):
            if getattr(self, name) < 1:
                raise ExpmrcError(f"--{name} must be at least 1, got {getattr(self, name)}")
        if self.per_device_micro_batch < 0:
            raise ExpmrcError(f"--per_device_micro_batch must be 0 (automatic) or at least 1, got "
                              f"{self.per_device_micro_batch}")
        for name in ("learning_rate", "num_train_epochs", "warmup_proportion", "weight_decay"):
            if not math.isfinite(getattr(self, name)):
                raise ExpmrcError(f"--{name} must be a finite number, got {getattr(self, name)}")
        if not 0 < self.learning_rate <= 1:
            raise ExpmrcError(f"--learning_rate must be above 0 and at most 1, got {self.learning_rate}")
        if self.num_train_epochs <= 0 and self.max_steps <= 0:
            raise ExpmrcError("--num_train_epochs must be positive (or give --max_steps)")
        if self.num_train_epochs > MAX_EPOCHS:
            raise ExpmrcError(f"--num_train_epochs must be at most {MAX_EPOCHS}, got {self.num_train_epochs}")
        if not 0 <= self.warmup_proportion < 1:
            raise ExpmrcError(f"--warmup_proportion must be in [0, 1), got {self.warmup_proportion}")
        if not 0 <= self.weight_decay < 1:
            raise ExpmrcError(f"--weight_decay must be in [0, 1), got {self.weight_decay}")
        self.check_compiling(max_length)
        self.check_attention()
        return self

    def check_attention(self) -> None:
        """--attention's value, and the combinations with compiling that cannot run."""
        if self.attention not in ATTENTION_MODES:
            raise ExpmrcError(f"--attention must be one of {', '.join(ATTENTION_MODES)}, got {self.attention!r}")
        if self.torch_compile and self.attention == "unpadded":
            raise ExpmrcError("--attention unpadded does not combine with --torch_compile True, which pads every batch "
                              "to a length bucket to compile each shape once (use --fused_kernels True for compiled "
                              "regions on real tokens)")
        if self.fused_kernels and self.torch_compile:
            raise ExpmrcError("--fused_kernels True compiles regions of the eager model; with --torch_compile True the "
                              "whole model is compiled already (give one of the two)")
        if self.fused_kernels and self.attention == "padded":
            raise ExpmrcError("--fused_kernels True fuses the unpadded encoder's kernels; --attention padded runs the "
                              "library's own layers (use --attention auto or unpadded)")
        self.check_graphs()

    def check_graphs(self) -> None:
        """--cuda_graphs's value, and `on` with what cannot be graphed whatever the device."""
        if self.cuda_graphs not in GRAPH_MODES:
            raise ExpmrcError(f"--cuda_graphs must be one of {', '.join(GRAPH_MODES)}, got {self.cuda_graphs!r}")
        if self.graph_buckets < 1:
            raise ExpmrcError(f"graph_buckets must be at least 1, got {self.graph_buckets}")
        if self.cuda_graphs != "on":
            return
        for given, what in ((self.attention == "padded", "--attention padded: the library's padded forward"),
                            (self.torch_compile, "--torch_compile True: the model is compiled instead"),
                            (self.fused_kernels, "--fused_kernels True: compiled regions, which a capture does not "
                                                 "hold")):
            if given:
                raise ExpmrcError(f"--cuda_graphs on replays the unpadded eager step as CUDA graphs; it does not "
                                  f"combine with {what} (use --cuda_graphs auto or off)")

    def check_compiling(self, max_length: int | None) -> None:
        """The compile buckets and mode: ascending token counts ending at `max_length`, and only when compiling."""
        given = ",".join(map(str, self.compile_buckets))
        if not self.torch_compile:
            if self.compile_buckets:
                raise ExpmrcError("--compile_buckets pads batches for --torch_compile True; without it they would "
                                  "only add padding (add --torch_compile True or drop --compile_buckets)")
            if self.compile_mode != "default":
                raise ExpmrcError("--torch_compile_mode needs --torch_compile True")
            return
        if self.compile_mode not in COMPILE_MODES:
            raise ExpmrcError(f"--torch_compile_mode must be one of {', '.join(COMPILE_MODES)}, got {self.compile_mode!r}")
        buckets = list(self.compile_buckets)
        if buckets and (min(buckets) < 1 or buckets != sorted(set(buckets))):
            raise ExpmrcError(f"--compile_buckets must be ascending token counts separated by commas, such as "
                              f"128,256,384,512; got {given!r}")
        if buckets and max_length is not None and buckets[-1] < max_length:
            raise ExpmrcError(f"--compile_buckets {given} does not reach --max_seq_length {max_length}: windows longer "
                              f"than {buckets[-1]} tokens would have no bucket (end the list with {max_length})")
        if buckets and max_length is not None and buckets[-1] > max_length:
            raise ExpmrcError(f"--compile_buckets {given} goes beyond --max_seq_length {max_length}: no window is "
                              f"that long (end the list with {max_length})")


@dataclass
class TrainResult:
    """How a call to `train` ended."""

    global_step: int
    resumed_from: int  # the checkpoint step training continued from; 0 for a fresh start
    last_loss: float | None  # mean loss over the last logging window (None if no step ran)
    examples_per_second: float  # over the steps this call ran, checkpoint writing included
    seconds: float
    checkpoint_seconds: float  # of `seconds`, the time spent writing checkpoints
    micro_batch: int = 0  # items per forward pass it ended with (0: whole micro-batches)
    compile_seconds: float = 0.0  # of `seconds`, the first steps of each compiled batch shape
    compiled_shapes: list[tuple[int, ...]] = field(default_factory=list)
    graphs: dict[str, Any] = field(default_factory=dict)  # --cuda_graphs: asked, used, why, and what the run did

    def summary(self, ran: int) -> str:
        """One log line: steps, seconds, throughput, and the compiling and checkpoint writing within them."""
        text = f"trained {ran} steps in {self.seconds:.1f} s ({self.examples_per_second:.1f} examples/s)"
        if self.compiled_shapes:
            text += (f"; compiling {self.compile_seconds:.1f} s of it ({len(self.compiled_shapes)} batch shapes: "
                     f"{', '.join('x'.join(map(str, s)) for s in self.compiled_shapes)})")
        if self.graphs.get("used"):
            text += (f"; {self.graphs['graphs']} CUDA graphs captured in {self.graphs['capture_seconds']:.1f} s, "
                     f"{self.graphs['eager_steps']} steps eager")
        return text + (f"; writing checkpoints {self.checkpoint_seconds:.1f} s" if self.checkpoint_seconds else "")


def device_kind(use_tpu: bool = False, cpu_only: bool = False) -> str:
    """The kind of device a run will use: "xla", "cuda", "mps" or "cpu"."""
    if use_tpu:
        return "xla"
    if cpu_only:
        return "cpu"
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def device_name(device: torch.device) -> str:
    """A device as run records and benchmarks name it: the GPU's model, else the CPU and its cores."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"CPU ({os.cpu_count()} cores)" if device.type == "cpu" else device.type


def cpu_only(use_tpu: bool = False) -> bool:
    """Whether several processes share a machine without any accelerator (they run on CPUs, joined by gloo)."""
    return (not use_tpu and int(os.environ.get("WORLD_SIZE", "1")) > 1
            and not (hasattr(torch, "accelerator") and torch.accelerator.is_available()))


def run_device(use_tpu: bool = False) -> str:
    """The kind of device the run's Accelerator will take (`device_kind`), known before it is made."""
    return device_kind(use_tpu, cpu_only(use_tpu))


def make_accelerator(config: TrainConfig, use_tpu: bool = False, log_with: str | None = None,
                     project_dir: str | None = None) -> Accelerator:
    """The run's Accelerator (the only device layer), with every RNG seeded by `config.seed`, and the tracker of
    the run's training curves (`log_with`, writing under `project_dir`; `expmrc.training.curves`) where one is asked.

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
    device = run_device(use_tpu)
    precision = resolve_precision(config.mixed_precision, device)
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = config.tf32
        torch.backends.cudnn.allow_tf32 = config.tf32
    try:
        accelerator = Accelerator(mixed_precision=precision, step_scheduler_with_optimizer=False,
                                  cpu=cpu_only(use_tpu), log_with=log_with, project_dir=project_dir)
    except (ValueError, RuntimeError) as exc:
        raise ExpmrcError(f"--mixed_precision {precision} is not available here: {exc}") from None
    set_seed(config.seed)
    return accelerator


def precision_record(config: TrainConfig, accelerator: Accelerator) -> dict[str, Any]:
    """What run_info.json records about precision: asked for, resolved, the device and whether TF32 was on."""
    device = accelerator.device.type
    return {"requested": config.mixed_precision, "resolved": accelerator.mixed_precision, "device": device,
            "tf32": bool(device == "cuda" and torch.backends.cuda.matmul.allow_tf32)}


def total_train_steps(num_examples: int, config: TrainConfig) -> int:
    """Optimizer steps of a run: `max_steps`, else epochs × examples / batch size, rounded up."""
    if config.max_steps > 0:
        return config.max_steps
    return max(1, math.ceil(config.num_train_epochs * num_examples / config.train_batch_size))


@lru_cache(maxsize=4)
def epoch_permutation(num_examples: int, seed: int, epoch: int) -> tuple[int, ...]:
    """The order of the dataset in one epoch; depends only on (seed, epoch), never on global RNG state."""
    return tuple(int(i) for i in np.random.default_rng([seed, epoch]).permutation(num_examples))


def grouped_epoch_order(lengths: np.ndarray, seed: int, epoch: int, batch_size: int,
                        megabatch: int = MEGABATCH) -> np.ndarray:
    """Epoch `epoch`'s permutation with length grouping: megabatches sorted by length, their batches shuffled.

    The first items of the epoch that complete the batch the previous epoch began keep their place, so
    every megabatch starts on a global batch boundary; a final short batch stays last.
    """
    n = len(lengths)
    order = np.asarray(epoch_permutation(n, seed, epoch), dtype=np.int64)
    head = min((-epoch * n) % batch_size, n)
    pieces = [order[:head]]
    rng = np.random.default_rng([seed, epoch, 1])
    size = megabatch * batch_size
    for start in range(head, n, size):
        block = order[start:start + size]
        block = block[np.argsort(-lengths[block], kind="stable")]
        batches = [block[i:i + batch_size] for i in range(0, len(block), batch_size)]
        full = [b for b in batches if len(b) == batch_size]
        pieces.extend(full[i] for i in rng.permutation(len(full)))
        pieces.extend(b for b in batches if len(b) < batch_size)
    return np.concatenate(pieces)


class BatchStream:
    """The global batches of a run: step -> dataset indices, a pure function of (seed, step) and the lengths."""

    def __init__(self, num_examples: int, batch_size: int, seed: int, lengths: np.ndarray | None = None) -> None:
        if lengths is not None and len(lengths) != num_examples:
            raise ValueError(f"{len(lengths)} lengths for {num_examples} items")
        self.num_examples, self.batch_size, self.seed, self.lengths = num_examples, batch_size, seed, lengths
        self._orders: dict[int, np.ndarray] = {}

    def epoch_order(self, epoch: int) -> np.ndarray:
        """The order of the dataset in one epoch (the two latest are kept)."""
        if epoch not in self._orders:
            if self.lengths is None:
                order = np.asarray(epoch_permutation(self.num_examples, self.seed, epoch), dtype=np.int64)
            else:
                order = grouped_epoch_order(self.lengths, self.seed, epoch, self.batch_size)
            self._orders = {e: o for e, o in self._orders.items() if e >= epoch - 1}
            self._orders[epoch] = order
        return self._orders[epoch]

    def indices(self, step: int) -> list[int]:
        """Dataset indices of global batch `step`: the next `batch_size` items of the epoch stream."""
        indices: list[int] = []
        position = step * self.batch_size
        while len(indices) < self.batch_size:
            epoch, offset = divmod(position, self.num_examples)
            take = min(self.batch_size - len(indices), self.num_examples - offset)
            indices.extend(int(i) for i in self.epoch_order(epoch)[offset:offset + take])
            position += take
        return indices


def batch_indices(step: int, num_examples: int, batch_size: int, seed: int,
                  lengths: np.ndarray | None = None) -> list[int]:
    """Dataset indices of global batch `step` (see `BatchStream`); grouped by length when `lengths` are given."""
    return BatchStream(num_examples, batch_size, seed, lengths).indices(step)


def parameter_groups(model: torch.nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """AdamW groups: weight decay on weight matrices, none on biases and LayerNorm weights."""
    no_decay: set[int] = set()
    for module in model.modules():
        if isinstance(module, torch.nn.LayerNorm) or "LayerNorm" in type(module).__name__:
            no_decay.update(id(p) for p in module.parameters(recurse=False))
    decay: list[torch.nn.Parameter] = []
    plain: list[torch.nn.Parameter] = []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        (plain if name.endswith("bias") or id(param) in no_decay else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": plain, "weight_decay": 0.0}]


def train(model: torch.nn.Module, dataset: Batches, config: TrainConfig, accelerator: Accelerator,
          curve: str = "train") -> TrainResult:
    """Train `model` (whose forward returns a dict with `loss`) in place, resuming from the newest checkpoint.

    A loss that stops being finite ends the run with one line naming the step (no checkpoint is written
    from such weights). Nothing is read back from the device between log lines and checkpoints, so the
    host queues the next steps' work while the device runs. Log lines go to the run's tracker too, under
    `curve` (`LossWindow.flush`).
    """
    curves = LossCurves(curve, tuple(getattr(model, "loss_parts", ())), getattr(model, "loss_lambda", None))
    run = prepare_training(model, dataset, config, accelerator)
    run.model.train()
    Path(config.output_dir).mkdir(parents=True, exist_ok=True)
    bar = tqdm(total=run.total, initial=run.start, desc="training", unit="step",
               disable=not accelerator.is_local_main_process, dynamic_ncols=True)
    window = LossWindow(torch.zeros((), device=accelerator.device), curves=curves)
    checkpoint_seconds = 0.0
    began = time.perf_counter()
    try:
        for step in range(run.start, run.total):
            done = step + 1
            window.add(run_step(run, step, config, accelerator), done)
            bar.update(1)
            if done % config.logging_steps == 0 or done == run.total:
                window.flush(done, run.total, bar, config, accelerator, run.scheduler)
            if done % config.save_checkpoints_steps == 0:  # the final weights go to model/, not a checkpoint
                window.check_finite(accelerator)
                saving = time.perf_counter()
                with plain_learning_rates(run.optimizer):
                    save_checkpoint(config.output_dir, done, run.settings, accelerator, config.keep_checkpoints)
                checkpoint_seconds += time.perf_counter() - saving
    finally:
        bar.close()
    seconds = time.perf_counter() - began
    ran = run.total - run.start
    result = TrainResult(global_step=run.total, resumed_from=run.start, last_loss=window.last_loss,
                         examples_per_second=ran * config.train_batch_size / seconds if ran and seconds > 0 else 0.0,
                         seconds=seconds, checkpoint_seconds=checkpoint_seconds,
                         micro_batch=run.chunk if run.chunk < run.micro else 0, compile_seconds=run.compile_seconds,
                         compiled_shapes=sorted(run.shapes) if run.compiled else [],
                         graphs={**run.graphs_record, **(run.graphs.record() if run.graphs else {})})
    logger.info(result.summary(ran))
    return result


@dataclass
class PreparedRun:
    """What the training loop runs with: the prepared model, optimizer and schedule, the batches (padded to the
    length buckets when compiled) and their order, the checkpoint settings, the step to start from, the
    micro-batch sizes (full and current) and, when compiled, the batch shapes met and the seconds their
    first steps took."""

    model: torch.nn.Module  # the task model as accelerate prepared it (wrapped for several processes)
    optimizer: Any
    scheduler: Any
    dataset: Batches
    stream: BatchStream
    settings: dict[str, Any]
    total: int
    start: int
    micro: int
    chunk: int
    compiled: bool = False
    shapes: set[tuple[int, ...]] = field(default_factory=set)
    compile_seconds: float = 0.0
    graphs: GraphedSteps | None = None  # the steps replayed as CUDA graphs (--cuda_graphs), else None
    graphs_record: dict[str, Any] = field(default_factory=dict)  # asked, used and why

    def new_shapes(self, pieces: list[list[int]]) -> set[tuple[int, ...]]:
        """The padded batch shapes of these forward passes not met before (for a dataset that knows them)."""
        shape = getattr(self.dataset, "input_shape", None)
        if not callable(shape):
            return set()
        found = {tuple(shape(piece)) for piece in pieces} - self.shapes
        self.shapes |= found
        return found


def prepare_training(model: torch.nn.Module, dataset: Batches, config: TrainConfig,
                     accelerator: Accelerator) -> PreparedRun:
    """Check the batch arithmetic, build AdamW (fused on CUDA) and the linear schedule, compile the model
    (batches then padded to the length buckets), prepare them with accelerate and resume from the newest
    checkpoint whose settings match."""
    num_examples = len(dataset)
    if num_examples == 0:
        raise ExpmrcError(f"{config.output_dir}: no training features to train on")
    processes, accumulation = accelerator.num_processes, config.gradient_accumulation_steps
    batch_size = config.train_batch_size
    if batch_size % (processes * accumulation):
        raise ExpmrcError(f"--train_batch_size {batch_size} must be divisible by {processes} processes × "
                          f"{accumulation} gradient accumulation steps")
    total = total_train_steps(num_examples, config)
    model = model.to(accelerator.device)
    groups = parameter_groups(model, config.weight_decay)
    fused = all(p.is_cuda for group in groups for p in group["params"])  # fused kernels: CUDA tensors only
    optimizer = torch.optim.AdamW(groups, lr=config.learning_rate, eps=ADAM_EPSILON, fused=fused or None)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(total * config.warmup_proportion), total)
    if config.torch_compile:
        dataset = bucketed(dataset, config.compile_buckets)
        model = compile_model(model, config)
    model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)
    lengths = dataset_lengths(dataset) if config.group_by_length else None
    stream = BatchStream(num_examples, batch_size, config.seed, lengths)
    settings: dict[str, Any] = {"train_batch_size": batch_size, "seed": config.seed, "total_steps": total,
                                "num_examples": num_examples}
    if lengths is not None:  # only then, so checkpoints of plain-order runs still resume with grouping off
        settings["group_by_length"] = True
    start = load_latest_checkpoint(config.output_dir, settings, accelerator)
    micro = batch_size // (processes * accumulation)
    chunk = min(config.per_device_micro_batch, micro) if config.per_device_micro_batch > 0 else micro
    run = PreparedRun(model, optimizer, scheduler, dataset, stream, settings, total, start, micro, chunk,
                      compiled=config.torch_compile)
    prepare_graphs(run, config, accelerator)
    return run


def prepare_graphs(run: PreparedRun, config: TrainConfig, accelerator: Accelerator) -> None:
    """--cuda_graphs resolved for the prepared run (`expmrc.training.graphs`): its graphed steps where on."""
    model = accelerator.unwrap_model(run.model, keep_torch_compile=False)
    used, why = resolve_graphs(config.cuda_graphs, accelerator.device.type, str(accelerator.mixed_precision),
                               getattr(model, "attention_path", "padded"), accelerator.num_processes,
                               config.torch_compile, config.fused_kernels)
    if used and not callable(getattr(run.dataset, "fixed", None)):
        if config.cuda_graphs == "on":
            raise ExpmrcError("--cuda_graphs on: the training data cannot be laid out at a fixed shape (windows of a "
                              "feature table can)")
        used, why = False, "auto: the training data cannot be laid out at a fixed shape"
    run.graphs_record = {"requested": config.cuda_graphs, "used": used, "why": why}
    if used:
        run.graphs = graphed_steps(run.model, run.optimizer, run.scheduler, run.dataset,
                                   lambda step: step_pieces(run.stream.indices(step), config, accelerator, run.chunk),
                                   run.total, run.micro, config.gradient_accumulation_steps, config.max_grad_norm,
                                   config.graph_buckets)


def default_buckets(max_length: int) -> tuple[int, ...]:
    """The length buckets of a compiled run: 128, 256 and 384 tokens where shorter than `max_length`, then
    `max_length` itself (512 for the release's settings)."""
    return tuple(b for b in DEFAULT_BUCKETS if b < max_length) + (max_length,)


def bucketed(dataset: Batches, buckets: tuple[int, ...]) -> Batches:
    """The dataset padded to the length buckets (the default ones up to its longest window when none are given),
    where it can pad to given lengths (`bucketed`); any other dataset as it is."""
    pad = getattr(dataset, "bucketed", None)
    if not callable(pad):
        return dataset
    if not buckets:
        lengths = dataset_lengths(dataset)
        longest = getattr(dataset, "max_length", None) or (int(lengths.max()) if lengths is not None else 0)
        buckets = default_buckets(longest) if longest else ()
    return cast(Batches, pad(buckets)) if buckets else dataset


def compile_model(model: torch.nn.Module, config: TrainConfig) -> torch.nn.Module:
    """`torch.compile` with static shapes: each padded batch shape (one per length bucket) is compiled once,
    never into a dynamic-shape graph, and the limit on recompiles leaves room for every bucket."""
    import torch._dynamo  # the module is not loaded before torch.compile is first called

    dynamo = torch._dynamo.config
    limit = "recompile_limit" if hasattr(dynamo, "recompile_limit") else "cache_size_limit"
    setattr(dynamo, limit, max(getattr(dynamo, limit), RECOMPILE_LIMIT))
    mode = None if config.compile_mode == "default" else config.compile_mode
    compiled = torch.compile(model, dynamic=False, mode=mode, backend=config.compile_backend)
    return cast(torch.nn.Module, compiled)  # an OptimizedModule; the stub says only Callable


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (CUDA; elsewhere nothing is queued)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run_step(run: PreparedRun, step: int, config: TrainConfig, accelerator: Accelerator) -> torch.Tensor:
    """Optimizer step `step` (after a CUDA out-of-memory error, again in smaller forward passes). A compiled
    model's first step at a new batch shape is timed apart: it is where that shape is compiled. A graphed run's step
    goes to its graphed steps (`expmrc.training.graphs.GraphedSteps`)."""
    indices = run.stream.indices(step)
    if run.graphs is not None:
        return run.graphs.step(step_pieces(indices, config, accelerator, run.chunk))
    while True:
        pieces = step_pieces(indices, config, accelerator, run.chunk)
        shapes = run.new_shapes(pieces) if run.compiled else set()
        if shapes:
            synchronize(accelerator.device)
            began = time.perf_counter()
        try:
            loss = train_step(run.model, run.dataset, pieces, run.optimizer, run.scheduler, config, accelerator)
            break
        except torch.cuda.OutOfMemoryError:
            run.shapes -= shapes
            run.chunk = smaller_chunk(run.chunk, config, accelerator, run.optimizer)
    if shapes:
        synchronize(accelerator.device)
        seconds = time.perf_counter() - began
        run.compile_seconds += seconds
        logger.info(f"compiled for batches of {', '.join('x'.join(map(str, s)) for s in sorted(shapes))} tokens: "
                    f"{seconds:.1f} s (that step included)")
    mark_step(accelerator)
    return loss


@dataclass(frozen=True)
class LossCurves:
    """What a log line reports besides the loss: the names of the parts a model's training forward returns
    (`loss_parts`, after the loss in each step's vector), λ where the model has one, and the tracker's prefix."""

    prefix: str = "train"
    parts: tuple[str, ...] = ()
    loss_lambda: float | None = None

    def values(self, means: list[float], learning_rate: float, examples_per_second: float) -> dict[str, float]:
        """One log line's figures by name: the loss, its parts, λ, the learning rate and the throughput."""
        found = {"loss": means[0], **dict(zip(self.parts, means[1:]))}
        if self.loss_lambda is not None:
            found["lambda"] = float(self.loss_lambda)
        return {**found, "learning_rate": learning_rate, "examples_per_second": examples_per_second}


@dataclass
class LossWindow:
    """The summed loss (and its parts: `train_step`'s vector) since the last log line and the first step whose loss
    was not finite, both kept on the device and read only at log lines and checkpoints (a read waits for the
    device)."""

    summed: torch.Tensor
    steps: int = 0
    last_loss: float | None = None
    curves: LossCurves = field(default_factory=LossCurves)
    began: float = field(default_factory=time.perf_counter)  # when the window opened, for its throughput
    first_bad: torch.Tensor = field(init=False)  # the first step with a non-finite loss, -1 while none
    bad_loss: torch.Tensor = field(init=False)  # the loss of the latest step, frozen at the first bad one

    def __post_init__(self) -> None:
        self.first_bad = torch.full((), -1, dtype=torch.long, device=self.summed.device)
        self.bad_loss = torch.zeros((), device=self.summed.device)

    def add(self, loss: torch.Tensor, step: int) -> None:
        """Add step `step`'s loss (a scalar, or the loss then its parts), noting the step when it is the first that
        is not finite (no device read)."""
        self.summed = self.summed + loss
        self.steps += 1
        total = loss.reshape(-1)[0]
        open_ = self.first_bad < 0
        self.bad_loss = torch.where(open_, total.float(), self.bad_loss)
        self.first_bad.masked_fill_(open_ & ~torch.isfinite(total), step)

    def check_finite(self, accelerator: Accelerator) -> None:
        """One line naming the first step, on any process, whose loss was not finite."""
        steps = accelerator.gather(self.first_bad.reshape(1)).tolist()
        losses = accelerator.gather(self.bad_loss.reshape(1)).tolist()
        bad = sorted((step, loss) for step, loss in zip(steps, losses) if step >= 0)
        if bad:
            raise ExpmrcError(f"step {bad[0][0]}: the loss is {bad[0][1]}; training stopped (lower "
                              "--learning_rate, or use --mixed_precision bf16/no instead of fp16)")

    def flush(self, done: int, total: int, bar: Any, config: TrainConfig, accelerator: Accelerator,
              scheduler: Any) -> None:
        """The window's mean loss (over processes too) on the bar and, from the main process, in the log, with its
        parts, λ, the learning rate and the throughput in train_log.jsonl and the run's tracker (`LossCurves`)."""
        self.check_finite(accelerator)
        means = [value / self.steps for value in accelerator.reduce(self.summed, "mean").reshape(-1).tolist()]
        self.last_loss = means[0]
        bar.set_postfix(loss=f"{self.last_loss:.4f}")
        now = time.perf_counter()
        rate = self.steps * config.train_batch_size / (now - self.began) if now > self.began else 0.0
        values = self.curves.values(means, float(scheduler.get_last_lr()[0]), rate)  # graphed: a tensor
        if accelerator.is_main_process:
            log_step(config.output_dir, done, total, values)
        accelerator.log({f"{self.curves.prefix}/{name}": value for name, value in values.items()}, step=done)
        self.summed = torch.zeros((), device=self.summed.device)
        self.steps, self.began = 0, now


def smaller_chunk(chunk: int, config: TrainConfig, accelerator: Accelerator, optimizer: Any) -> int:
    """After a CUDA out-of-memory error: half as many items per forward pass, or one line saying what to do."""
    optimizer.zero_grad(set_to_none=True)
    torch.cuda.empty_cache()
    if config.per_device_micro_batch > 0 or chunk == 1 or accelerator.num_processes > 1:
        raise ExpmrcError(f"out of GPU memory with {chunk} windows per forward pass: set a smaller "
                          "--per_device_micro_batch (the total --train_batch_size and the result stay the same)"
                          " or a shorter --max_seq_length") from None
    logger.warning(f"out of GPU memory with {chunk} windows per forward pass; retrying the step with {chunk // 2}")
    return chunk // 2


def mark_step(accelerator: Accelerator) -> None:
    """On a TPU, cut the lazy XLA graph after each optimizer step (what torch_xla's loaders do per batch)."""
    if accelerator.distributed_type == DistributedType.XLA:
        import torch_xla.core.xla_model as xm  # only importable on TPU machines

        xm.mark_step()


def step_pieces(indices: list[int], config: TrainConfig, accelerator: Accelerator, chunk: int = 0) -> list[list[int]]:
    """This process's forward passes of global batch `indices`: its micro-batch of each accumulation step, cut
    into pieces of at most `chunk` items (0: whole micro-batches)."""
    processes, accumulation = accelerator.num_processes, config.gradient_accumulation_steps
    micro = len(indices) // (processes * accumulation)
    size = chunk if 0 < chunk < micro else micro
    pieces: list[list[int]] = []
    for a in range(accumulation):
        first = (a * processes + accelerator.process_index) * micro
        mine = indices[first:first + micro]
        pieces.extend(mine[c:c + size] for c in range(0, micro, size))
    return pieces


def train_step(model: torch.nn.Module, dataset: Batches, pieces: list[list[int]], optimizer: Any, scheduler: Any,
               config: TrainConfig, accelerator: Accelerator) -> torch.Tensor:
    """One optimizer step over this process's forward passes (`step_pieces`), gradients synced on the last one.

    Each pass's mean loss is weighted by its share of the micro-batch, so the step's gradient does not
    depend on how the micro-batch was cut. Returns this process's share of the step's mean loss (detached), followed
    by its parts where the model returns them (`logged_loss`), without reading it back from the device. Clipping uses
    the library's per-device (`foreach`) kernels on GPUs.
    """
    accumulation = config.gradient_accumulation_steps
    micro = config.train_batch_size // (accelerator.num_processes * accumulation)
    graphs = config.torch_compile and "reduce-overhead" in config.compile_mode  # CUDA graphs
    keep_mask = config.torch_compile  # one compiled graph per shape: the mask is always there
    step_loss = torch.zeros((), device=accelerator.device)
    for k, piece in enumerate(pieces):
        batch = to_device(dataset.batch(piece), accelerator.device, keep_mask)
        if graphs:
            torch.compiler.cudagraph_mark_step_begin()
        with nullcontext() if k == len(pieces) - 1 else accelerator.no_sync(model):
            out = model(**batch)
            loss = out["loss"] * (len(piece) / micro) / accumulation
            accelerator.backward(loss)
        step_loss = step_loss + logged_loss(out, loss, len(piece) / micro / accumulation)
    if config.max_grad_norm > 0:
        accelerator.clip_grad_norm_(model.parameters(), config.max_grad_norm)
    optimizer.step()
    scheduler.step()  # accelerate's scheduler does not advance when fp16 skipped the optimizer step
    optimizer.zero_grad(set_to_none=True)
    return step_loss


def log_step(output_dir: str, step: int, total: int, values: dict[str, float]) -> None:
    """Log a loss line and append it, with the loss's parts, λ, the learning rate and the throughput, to
    OUTPUT_DIR/train_log.jsonl."""
    logger.info(f"step {step}/{total}: loss {values['loss']:.4f}, learning rate {values['learning_rate']:.3g}")
    rounded = {name: value if name == "learning_rate" else round(value, 1 if name == "examples_per_second" else 6)
               for name, value in values.items()}  # the learning rate as the schedule gives it
    with open(Path(output_dir) / LOG_FILE, "a", encoding="utf-8") as log:
        log.write(json.dumps({"step": step, **rounded}) + "\n")


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
