"""Training steps replayed as CUDA graphs (`--cuda_graphs`): the host pays for a step's ~1,800 operators once per
token bucket instead of once per step.

What a graphed run does differently from the eager loop (`expmrc.training.loop`):

- **Static layouts.** Every forward pass is laid out at fixed shapes: rows padded to max_seq_length, options to
  the most a window has, real tokens padded up to a token bucket with dummy rows
  (`expmrc.inference.buckets`). The buckets are planned before the first step from the token counts of every
  forward pass the run will make (the batch stream is a pure function of the seed and the step) and recorded.
- **One graph per bucket.** A step's forward, backward, clipping, AdamW and the zeroing of the gradients are
  captured once per (rows, bucket) on a side stream and replayed after that; with several forward passes a step
  (accumulation), each pass is a graph and the update another. Before a key is captured its step runs eagerly
  (its warm-up, a real step), and so do the run's first `WARMUP_STEPS` steps (the optimizer's state, kernels'
  lazy set-up).
- **Nothing read back.** Inputs are copied into the graph's static tensors without waiting; the loss (then its
  parts, as an eager step logs them) lands in a tensor the loop sums on the device (`LossWindow`), read at log lines and checkpoints only. Clipping uses
  torch's norm and multiply kernels (no branch on the norm); AdamW is fused and capturable, its step counts on the
  device; the learning rate lives in a device tensor the captured AdamW reads and the schedule writes between
  steps (`LambdaLR` fills tensor learning rates in place: one kernel, no read). Dropout draws from the CUDA
  generator, which a capture registers: each replay advances its offset as the eager step would.
- **All graphs share one memory pool**, and only inputs made before capture and the loss copied into a tensor made
  before capture outlive a replay, so the graphs may replay in any order.
- **A capture that fails stops the run** in one line (it may leave the CUDA generator mid-capture, after which
  dropout would repeat itself); the same command with `--cuda_graphs off` resumes from the last checkpoint.

Everything but the capture and the replay (`CudaGraphs`) runs on any device: `GRAPHED_DEVICES` names where steps
are captured; the tests add "cpu" and run the very same steps uncaptured (`Uncaptured`).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, cast

import numpy as np
import torch

from expmrc.errors import ExpmrcError
from expmrc.features.windows import WindowDataset
from expmrc.inference.buckets import BucketedWindows, choose_buckets, graphs_unavailable
from expmrc.inference.predictor import Batches, to_device

logger = logging.getLogger(__name__)
GRAPH_MODES = ("auto", "on", "off")
GRAPHED_DEVICES = ("cuda",)  # where steps are captured; elsewhere `on` is refused and `auto` is off
WARMUP_STEPS = 2  # eager steps of a graphed run before its first capture
AUTO_SOURCE = "the unpadded bf16 step replayed at token buckets (docs/benchmarks.md)"


def resolve_graphs(requested: str, device: str, precision: str, attention: str, processes: int = 1,
                   torch_compile: bool = False, fused_kernels: bool = False) -> tuple[bool, str]:
    """Whether a run's steps are replayed as CUDA graphs, and why: `on` where it cannot be is one line (exit 2),
    `auto` is on where it can be."""
    if requested not in GRAPH_MODES:
        raise ExpmrcError(f"--cuda_graphs must be one of {', '.join(GRAPH_MODES)}, got {requested!r}")
    if requested == "off":
        return False, "asked for off"
    why = why_not(device, precision, attention, processes, torch_compile, fused_kernels)
    if why and requested == "on":
        raise ExpmrcError(f"--cuda_graphs on: {why} (use --cuda_graphs auto or off)")
    if why:
        return False, f"auto: {why}"
    return True, "asked for" if requested == "on" else f"auto on {device}: {AUTO_SOURCE}"


def why_not(device: str, precision: str, attention: str, processes: int, torch_compile: bool,
            fused_kernels: bool) -> str | None:
    """Why this run's steps cannot be graphed (one line), or None."""
    if device not in GRAPHED_DEVICES:
        return f"CUDA graphs need a CUDA GPU; this run is on {device}"
    if torch_compile:
        return "--torch_compile True compiles the model instead"
    if fused_kernels:
        return "--fused_kernels True runs compiled regions, which a capture does not hold"
    if processes > 1:
        return f"one process only (this run has {processes})"
    if device == "cuda":
        return graphs_unavailable(device, precision, attention)
    return None if attention == "unpadded" else "CUDA graphs replay the unpadded step; this run takes the padded path"


@dataclass
class StaticStep:
    """One captured key's static tensors: the inputs a replay reads (made before capture, refilled every step) and
    the loss it writes; `host_lengths`, the batch's row lengths where the attention needs them (not on CUDA)."""

    inputs: dict[str, torch.Tensor]
    loss: torch.Tensor
    scale: float  # the pass's share of the step's loss
    host_lengths: tuple[int, ...] | None = None

    @classmethod
    def of(cls, batch: dict[str, torch.Tensor], device: torch.device, scale: float, parts: int) -> StaticStep:
        """Static inputs shaped as `batch` and a loss holding the loss then its `parts` (a scalar without any)."""
        inputs = {k: torch.empty_like(v, device=device) for k, v in batch.items()}
        return cls(inputs, torch.zeros((1 + parts,) if parts else (), device=device), scale)

    def load(self, batch: dict[str, torch.Tensor]) -> None:
        """Copy a host batch into the static inputs (from pinned memory, without waiting, on CUDA)."""
        cuda = self.loss.device.type == "cuda"
        for key, value in batch.items():
            self.inputs[key].copy_(value.pin_memory() if cuda else value, non_blocking=cuda)
        if not cuda:
            self.host_lengths = to_device(batch, "cpu").get("row_lengths")

    def arguments(self) -> dict[str, Any]:
        """The model's keyword arguments: the static inputs, and the host's row lengths where they are needed."""
        return {**self.inputs, "row_lengths": self.host_lengths} if self.host_lengths else dict(self.inputs)


class Uncaptured:
    """Where steps are not captured (the tests' CPU): every step runs its work eagerly; what would be captured is
    counted, so the tests see the same warm-up and capture decisions."""

    def __init__(self) -> None:
        self.captured: list[Any] = []
        self.capture_seconds = 0.0

    def eager(self, work: Callable[[], None]) -> None:
        work()

    def replay(self, key: Any, work: Callable[[], None]) -> None:
        if key not in self.captured:
            self.captured.append(key)
        work()


class CudaGraphs:
    """Capture and replay on CUDA: warm-up steps and captures on one side stream (torch.cuda.graph's rules), every
    graph in one shared memory pool, replays on the current stream."""

    def __init__(self, device: torch.device) -> None:
        self.stream = torch.cuda.Stream(device)
        self.pool = torch.cuda.graph_pool_handle()
        self.graphs: dict[Any, torch.cuda.CUDAGraph] = {}
        self.captured: list[Any] = []
        self.capture_seconds = 0.0

    def eager(self, work: Callable[[], None]) -> None:
        """`work` eagerly on the side stream, ordered after what the current stream queued and before what it
        queues next."""
        self.stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.stream):
            work()
        torch.cuda.current_stream().wait_stream(self.stream)

    def replay(self, key: Any, work: Callable[[], None]) -> None:
        """Replay `key`'s graph, capturing `work` as it first (capturing runs nothing: the replay runs the step)."""
        graph = self.graphs.get(key)
        if graph is None:
            began = time.perf_counter()
            graph = torch.cuda.CUDAGraph()
            try:
                with torch.cuda.graph(graph, pool=self.pool, stream=self.stream):
                    work()
            except torch.cuda.OutOfMemoryError:
                raise
            except RuntimeError as exc:  # a capture that failed may leave the CUDA generator mid-capture: stop here
                raise ExpmrcError(f"capturing a training step as a CUDA graph failed ({' '.join(str(exc).split())[:300]}); "
                                  "run the same command with --cuda_graphs off: it resumes from the last checkpoint") \
                    from None
            self.graphs[key] = graph
            self.captured.append(key)
            self.capture_seconds += time.perf_counter() - began
        graph.replay()


@dataclass
class GraphedSteps:
    """A run's steps at static layouts, captured per key and replayed (module docstring)."""

    model: torch.nn.Module
    optimizer: Any  # the torch optimizer itself (not accelerate's wrapper): what a capture records
    scheduler: Any
    data: BucketedWindows
    micro: int  # windows per micro-batch on this process
    accumulation: int
    max_grad_norm: float
    runner: Any = None
    statics: dict[Any, StaticStep] = field(default_factory=dict)
    seen: Counter[Any] = field(default_factory=Counter)
    eager_steps: int = 0
    steps: int = 0
    padding: float = 0.0  # the share of the run's computed tokens that are padding (dummy rows)

    def __post_init__(self) -> None:
        device = self.loss_device
        self.runner = self.runner or (CudaGraphs(device) if device.type == "cuda" else Uncaptured())
        for group in self.optimizer.param_groups:  # a device tensor the captured AdamW reads, the schedule fills
            group["lr"] = torch.tensor(float(group["lr"]), device=device,
                                       dtype=torch.float32 if device.type == "cuda" else torch.float64)
            group["capturable"] = device.type == "cuda"

    @property
    def loss_device(self) -> torch.device:
        return next(p.device for p in self.model.parameters())

    def step(self, pieces: list[list[int]]) -> torch.Tensor:
        """One optimizer step over this process's forward passes; returns its loss on the device (not read)."""
        parts = len(getattr(self.model, "loss_parts", ()))
        total = torch.zeros((1 + parts,) if parts else (), device=self.loss_device)
        try:
            alone = len(pieces) == 1
            for piece in pieces:
                batch = self.data.batch(piece)
                key = ("step" if alone else "pass", len(piece), int(batch["pack_index"].shape[0]))
                static = self.statics.get(key) or self.statics.setdefault(
                    key, StaticStep.of(batch, self.loss_device, len(piece) / self.micro / self.accumulation, parts))
                static.load(batch)
                self.run(key, partial(self.forward_backward, static, alone))
                total += static.loss
            if len(pieces) > 1:
                self.run(("update",), self.update)
        except torch.cuda.OutOfMemoryError:
            raise ExpmrcError(f"out of GPU memory in a step replayed as a CUDA graph ({len(pieces[0])} windows a "
                              "forward pass): set a smaller --per_device_micro_batch, or --cuda_graphs off") from None
        self.scheduler.step()  # fills the learning-rate tensor for the next step (not inside any graph)
        self.steps += 1
        return total

    def run(self, key: Any, work: Callable[[], None]) -> None:
        """`work` eagerly while it warms up (the run's first steps, a key's first step), else replayed from its
        graph."""
        warm = self.steps < WARMUP_STEPS or self.seen[key] == 0
        self.seen[key] += 1
        if warm:
            self.eager_steps += key[0] != "pass"
            self.runner.eager(work)
        else:
            self.runner.replay(key, work)

    def forward_backward(self, static: StaticStep, update: bool) -> None:
        """A forward pass and its backward on the static inputs, its loss written to the static loss; the update after
        it when the step has this one pass."""
        out = self.model(**static.arguments())
        loss = out["loss"] * static.scale
        loss.backward()
        static.loss.copy_(logged_loss(out, loss, static.scale))
        if update:
            self.update()

    def update(self) -> None:
        """Clip the gradients (no branch on their norm), step AdamW, zero the gradients in place (they stay the
        tensors a graph wrote)."""
        if self.max_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(list(self.model.parameters()), self.max_grad_norm)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=False)

    def record(self) -> dict[str, Any]:
        """What run_info.json records of the graphs: the plan, the graphs captured, eager steps, capture seconds."""
        return {"buckets": self.data.plan.as_dict(), "padding": self.padding, "graphs": len(self.runner.captured),
                "eager_steps": self.eager_steps, "capture_seconds": round(self.runner.capture_seconds, 3)}


@contextmanager
def plain_learning_rates(optimizer: Any) -> Iterator[None]:
    """The optimizer's learning rates as numbers while a checkpoint is written (a run resumed eagerly, or elsewhere,
    reads them as any run's), then the same device tensors again (the graphs read those)."""
    groups = getattr(optimizer, "param_groups", [])
    tensors = [group["lr"] for group in groups]
    try:
        for group, value in zip(groups, tensors):
            if isinstance(value, torch.Tensor):
                group["lr"] = float(value)
        yield
    finally:
        for group, value in zip(groups, tensors):
            group["lr"] = value


def graphed_steps(model: torch.nn.Module, optimizer: Any, scheduler: Any, dataset: Batches,
                  pieces_of: Callable[[int], list[list[int]]], total: int, micro: int, accumulation: int,
                  max_grad_norm: float, buckets: int) -> GraphedSteps:
    """The graphed steps of a prepared run: its token buckets planned from the real tokens of every forward pass of
    its `total` steps (`pieces_of(step)`), laid out as `BucketedWindows` lays them out."""
    fixed = getattr(dataset, "fixed", None)
    if not callable(fixed):
        raise ExpmrcError("CUDA graphs need a dataset of windows that can be laid out at a fixed shape")
    layout = fixed()
    tokens = layout.real_tokens()
    counts = np.asarray([int(tokens[piece].sum()) for step in range(total) for piece in pieces_of(step)])
    plan = choose_buckets(counts, buckets, int(layout.max_length))
    padded = sum(plan.place(int(n))[0] for n in counts)
    logger.info(f"CUDA graphs: token buckets {', '.join(map(str, plan.buckets))} (dummy rows "
                f"{', '.join(map(str, plan.dummy_rows))}); {100 * (1 - counts.sum() / padded):.1f}% of the run's "
                "tokens are padding")
    steps = GraphedSteps(model, getattr(optimizer, "optimizer", optimizer), scheduler,
                         BucketedWindows(cast(WindowDataset, dataset), plan), micro, accumulation, max_grad_norm)
    steps.padding = round(float(1 - counts.sum() / padded), 6)
    return steps


def logged_loss(out: dict[str, torch.Tensor], loss: torch.Tensor, weight: float) -> torch.Tensor:
    """What a forward pass adds to its step's logged loss: its weighted loss (detached), followed by its unweighted
    parts (a task model's `loss_parts`) under the same weight; the loss alone for a model that returns no parts."""
    total = loss.detach().float()
    parts = out.get("loss_parts")
    return total if parts is None else torch.cat([total.reshape(1), parts.detach().float() * weight])
