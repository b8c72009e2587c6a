"""The one prediction loop: a model's per-item outputs over a dataset, on one device or several processes.

Training's prediction, Select & Forget and every re-prediction of a saved model (`expmrc.inference.rerun`)
run here. A dataset is anything with `len()` and `batch(indices) -> dict of tensors`
(`features.windows.WindowDataset`), and optionally `lengths()`, the padded cost of each item, by which
prediction runs longest first.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any, Protocol
from collections.abc import Callable

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.utils import gather_object
from tqdm import tqdm

PREDICT_BATCH_SIZE = 32  # items per prediction batch when nothing says otherwise (the baselines' --predict_batch_size)


class Batches(Protocol):
    """What the loop trains and predicts on."""

    def __len__(self) -> int: ...

    def batch(self, indices: list[int]) -> dict[str, torch.Tensor]: ...


def dataset_lengths(dataset: Any) -> np.ndarray | None:
    """The per-item lengths of a dataset that knows them (`lengths()`), else None."""
    lengths = getattr(dataset, "lengths", None)
    return np.asarray(lengths(), dtype=np.int64) if callable(lengths) else None


def to_device(batch: dict[str, torch.Tensor], device: Any, keep_full_mask: bool = False) -> dict[str, Any]:
    """Move every tensor of a batch to `device`; to a GPU through pinned memory, without waiting for the copy.

    An `attention_mask` of all ones (no padding, seen on the host copy) goes as None, which the encoder takes
    for "no mask", as it would decide itself after reading the mask back from the device; kept with
    `keep_full_mask` (a compiled model: one graph per shape) and on TPUs (one XLA graph per shape). A mask with
    padding goes with `row_lengths`, each row's real tokens counted on the host copy, which the unpadded
    encoder needs before it can start (`expmrc.models.unpadded`) and would otherwise read back from the device; a
    static layout's batch (`cu_lengths`) goes with the row lengths it lays out, its dummy rows included.
    """
    kind = torch.device(device).type
    if kind == "cuda":
        moved: dict[str, Any] = {
            key: (value.pin_memory() if value.device.type == "cpu" else value).to(device, non_blocking=True)
            for key, value in batch.items()}
    else:
        moved = {key: value.to(device) for key, value in batch.items()}
    mask = batch.get("attention_mask")
    layout = batch.get("cu_lengths")
    if layout is not None and layout.device.type == "cpu":  # a static layout: its rows, dummy ones too
        moved["row_lengths"] = tuple(np.diff(layout.numpy()).tolist())
    elif mask is not None and mask.device.type == "cpu" and not keep_full_mask and kind != "xla":
        if mask.numpy().all():
            moved["attention_mask"] = None
        else:
            moved["row_lengths"] = tuple(mask.reshape(-1, mask.shape[-1]).sum(-1).tolist())
    return moved


def predict(model: torch.nn.Module, dataset: Batches, batch_size: int, accelerator: Accelerator) -> list[dict[str, np.ndarray]]:
    """The model's per-item outputs (those with a batch dimension) for every item, in order, on every process.

    Each process runs one contiguous share of the items (`predict_items`) under the run's autocast
    precision, and the shares are gathered and checked so that nothing is duplicated or dropped.
    `batch_size` is the total over processes.
    """
    model = accelerator.unwrap_model(model, keep_torch_compile=False).to(accelerator.device)  # predicted eagerly
    processes, rank = accelerator.num_processes, accelerator.process_index
    bounds = [len(dataset) * i // processes for i in range(processes + 1)]
    mine = list(range(bounds[rank], bounds[rank + 1]))
    found = predict_items(model, dataset, mine, max(1, batch_size // processes), accelerator.device,
                          accelerator.autocast, accelerator.is_local_main_process)
    outputs = [found[i] for i in mine]
    if processes == 1:
        return outputs
    gathered = gather_object([(bounds[rank] + j, out) for j, out in enumerate(outputs)])
    gathered.sort(key=lambda pair: pair[0])
    if [index for index, _ in gathered] != list(range(len(dataset))):
        raise RuntimeError("predictions gathered across processes do not cover the dataset exactly once")
    return [out for _, out in gathered]


def predict_items(model: torch.nn.Module, dataset: Batches, items: list[int], batch_size: int, device: Any,
                  autocast: Callable[[], Any] = nullcontext, progress: bool = False) -> dict[int, dict[str, np.ndarray]]:
    """The one prediction loop: the outputs of `items`, run longest first when the dataset knows its lengths
    (batches then pad little) in batches of `batch_size` under `autocast()`, keyed by item.

    Outputs along the sequence are cut to the item's own length, so memory grows with real tokens, not
    padded ones. Training's prediction, Select & Forget and every re-prediction of a saved model run here.
    """
    lengths = dataset_lengths(dataset)
    order = sorted(items, key=lambda i: (-int(lengths[i]), i)) if lengths is not None else list(items)
    was_training = model.training
    model.eval()
    found: dict[int, dict[str, np.ndarray]] = {}
    with torch.inference_mode():
        for start in tqdm(range(0, len(order), batch_size), desc="predicting", unit="batch", disable=not progress,
                          dynamic_ncols=True):
            chunk = order[start:start + batch_size]
            batch = dataset.batch(chunk)
            padded = batch["input_ids"].shape[-1] if lengths is not None and "input_ids" in batch else None
            with autocast():
                result = model(**to_device(batch, device))
            arrays = {k: v.float().cpu().numpy() for k, v in result.items()
                      if k != "loss" and v.dim() > 0 and v.shape[0] == len(chunk)}
            for j, item in enumerate(chunk):
                found[item] = {k: (v[j][..., :lengths[item]]
                                   if padded and lengths is not None and v.ndim == 2 and v.shape[-1] == padded
                                   else v[j]) for k, v in arrays.items()}
    model.train(was_training)
    return found
