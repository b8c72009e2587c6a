"""Token-count buckets: the static layouts a run's steps are replayed at as CUDA graphs, and predictions laid out
the same way.

On the unpadded path a batch's real token count changes every step, and a captured graph fixes every shape. So a
graphed run pads each forward pass's real tokens up to one of a few token counts, its *buckets*, with dummy rows
(`expmrc.models.unpadded.static_layout`), and captures one graph per bucket. The buckets come from the run's own
steps: the batch stream is a pure function of the seed and the step, so every forward pass's token count is known
before the first step, and `choose_buckets` picks the `count` bucket tops that pad those passes least (an exact
partition of the sorted counts, each group padded to its largest count). Each bucket then gets the dummy rows that
fit all of its passes' padding, the bucket rounded up to a multiple of `QUANTUM` tokens (`BucketPlan`). The same
counts give the same plan, which the run records.

Prediction lays its batches out in the training run's buckets too (`BucketedWindows` with `for_training=False`), in
as many dummy rows as each batch needs: a batch larger than every bucket is rounded up to the quantum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any
from collections.abc import Sequence

import numpy as np
import torch

from expmrc.errors import ExpmrcError
from expmrc.features.windows import WindowDataset
from expmrc.models.unpadded import static_layout

QUANTUM = 64  # buckets are multiples of this many tokens (tensor-core friendly, and few candidates to choose from)
GRAPH_PRECISIONS = ("bf16",)  # fp16's loss scaling reads the device back every step; FP32 has no varlen kernel


@dataclass(frozen=True)
class BucketPlan:
    """A run's buckets: `buckets`, the padded token counts (ascending); `tops`, the largest real count each takes in
    training (the largest of its group of the run's counts); `dummy_rows`, each bucket's dummy rows in training;
    `length`, the longest row (max_seq_length)."""

    buckets: tuple[int, ...]
    tops: tuple[int, ...]
    dummy_rows: tuple[int, ...]
    length: int

    def place(self, tokens: int) -> tuple[int, int]:
        """(bucket, dummy rows) of a training forward pass of `tokens` real tokens: the first bucket whose top
        holds it; one line when none does (a pass the plan was not made for)."""
        for bucket, top, dummy in zip(self.buckets, self.tops, self.dummy_rows):
            if tokens <= top:
                return bucket, dummy
        raise ExpmrcError(f"a forward pass of {tokens} tokens is beyond the largest token bucket ({self.tops[-1]}) "
                          "the run planned")

    def place_any(self, tokens: int) -> tuple[int, int]:
        """(padded count, dummy rows) of a prediction batch of `tokens` real tokens: the smallest bucket holding it,
        else its count rounded up to the quantum, in as many dummy rows as its padding needs."""
        padded = next((b for b in self.buckets if b >= tokens), -(-tokens // QUANTUM) * QUANTUM)
        return padded, math.ceil((padded - tokens) / self.length)

    def as_dict(self) -> dict[str, Any]:
        """As run_info.json and the fine-tuned folder record it."""
        return {"buckets": list(self.buckets), "tops": list(self.tops), "dummy_rows": list(self.dummy_rows),
                "length": self.length, "quantum": QUANTUM}

    @classmethod
    def from_record(cls, value: Any, where: str) -> BucketPlan:
        """A recorded plan; one line naming `where` when it is of the wrong shape."""
        try:
            buckets, tops, dummy_rows = (tuple(int(x) for x in value[key]) for key in ("buckets", "tops", "dummy_rows"))
            plan = cls(buckets, tops, dummy_rows, int(value["length"]))
        except (KeyError, TypeError, ValueError):
            raise ExpmrcError(f"{where}: the recorded token buckets are not a plan (buckets, tops, dummy_rows and "
                              "length)") from None
        ordered = list(plan.buckets) == sorted(set(plan.buckets)) and list(plan.tops) == sorted(set(plan.tops))
        if not plan.buckets or not ordered or plan.length < 1 or not len(plan.tops) == len(plan.dummy_rows) \
                == len(plan.buckets) or any(t > b for t, b in zip(plan.tops, plan.buckets)):
            raise ExpmrcError(f"{where}: the recorded token buckets are not ascending counts with their tops")
        return plan


def choose_buckets(tokens: Sequence[int] | np.ndarray, count: int, length: int) -> BucketPlan:
    """The plan padding `tokens` (each forward pass's real token count) least in `count` buckets (module docstring).

    Counts are first rounded up to the quantum; the partition of the distinct rounded counts into at most `count`
    groups, each padded to its largest, is exact (dynamic programming over the sorted counts). Each group's bucket
    is its largest count (its top) plus room for its dummy rows (1 to `length` tokens each), rounded up to the
    quantum.
    """
    counts = np.asarray(tokens, dtype=np.int64)
    if not len(counts) or counts.min() < 1 or count < 1 or length < 1:
        raise ExpmrcError("token buckets need at least one forward pass of at least one token, one bucket and a "
                          "row length")
    rounded = -(-counts // QUANTUM) * QUANTUM
    values, weights = np.unique(rounded, return_counts=True)
    groups = [counts[(rounded > (edges[k - 1] if k else 0)) & (rounded <= edge)]
              for edges in [[int(values[i]) for i in least_padding_tops(values, weights, min(count, len(values)))]]
              for k, edge in enumerate(edges)]
    placed = [_room(int(members.max()), int(members.min()), length) for members in groups]
    k = 1
    while k < len(placed):  # a group whose bucket is no larger than the one before joins it
        if placed[k][0] <= placed[k - 1][0]:
            placed[k - 1:k + 1] = [_room(placed[k][2], placed[k - 1][3], length)]
            k = max(1, k - 1)
        else:
            k += 1
    return BucketPlan(tuple(p[0] for p in placed), tuple(p[2] for p in placed), tuple(p[1] for p in placed), length)


def _room(top: int, least: int, length: int) -> tuple[int, int, int, int]:
    """(bucket, dummy rows, top, least) of a group of counts from `least` to `top`: the fewest dummy rows of 1 to
    `length` tokens each that hold every count's padding, the bucket rounded up to the quantum."""
    dummy = 1
    while True:
        bucket = -(-(top + dummy) // QUANTUM) * QUANTUM
        need = math.ceil((bucket - least) / length)
        if need <= dummy:
            return bucket, dummy, top, least
        dummy = need


def least_padding_tops(values: np.ndarray, weights: np.ndarray, groups: int) -> list[int]:
    """The indices of the group tops when the ascending distinct `values` (each met `weights` times) are cut into
    `groups` contiguous groups (at most len(values)) so that Σ weight × (group top − value) is least; of equal
    cuts, the earliest."""
    n = len(values)
    w = np.concatenate([[0], np.cumsum(weights)])
    wv = np.concatenate([[0], np.cumsum(weights * values)])
    best = values * w[1:] - wv[1:]  # one group ending at j: values[0..j] padded to values[j]
    back = np.full((groups, n), -1, dtype=np.int64)
    for g in range(1, groups):
        row = np.full(n, np.iinfo(np.int64).max // 4, dtype=np.int64)
        for j in range(g, n):
            cut = np.arange(g - 1, j)  # the previous group ends at `cut`, this one is values[cut + 1 .. j]
            total = best[cut] + values[j] * (w[j + 1] - w[cut + 1]) - (wv[j + 1] - wv[cut + 1])
            pick = int(np.argmin(total))
            row[j], back[g, j] = total[pick], cut[pick]
        best = row
    tops, j = [n - 1], n - 1
    for g in range(groups - 1, 0, -1):
        j = int(back[g, j])
        tops.append(j)
    return sorted(tops)


def graphs_unavailable(device: str, precision: str, attention: str) -> str | None:
    """Why a step cannot be replayed as a CUDA graph on this device, precision and attention path (one line), or
    None when it can: CUDA, bf16, the unpadded path on a GPU whose FlashAttention takes variable lengths."""
    if device != "cuda":
        return f"CUDA graphs need a CUDA GPU; this run is on {device}"
    if attention != "unpadded":
        return "CUDA graphs replay the unpadded step at token buckets; this run takes the padded path"
    if precision not in GRAPH_PRECISIONS:
        return (f"CUDA graphs need bf16 (FlashAttention's variable-length kernel, no loss scaling read back); this "
                f"run is {'FP32' if precision == 'no' else precision}")
    if torch.cuda.get_device_capability() < (8, 0):
        return "CUDA graphs need FlashAttention's variable-length kernel: an Ampere or later GPU"
    return None


class BucketedWindows:
    """A dataset's windows as static layouts: every batch at the dataset's fixed shape (`WindowDataset.fixed`), its
    real tokens laid out in a bucket of `plan` with dummy rows (`pack_index`, `cu_lengths`). Training passes take
    the plan's buckets and dummy rows (`BucketPlan.place`), prediction batches any (`BucketPlan.place_any`)."""

    def __init__(self, data: WindowDataset, plan: BucketPlan, for_training: bool = True) -> None:
        self.data = data.fixed()
        self.plan = plan
        self.for_training = for_training
        self.tokens = self.data.real_tokens()

    def __len__(self) -> int:
        return len(self.data)

    def lengths(self) -> np.ndarray:
        """Each window's longest row, as the dataset it lays out has them (grouping and sorted prediction)."""
        return self.data.lengths()

    def placement(self, windows: Sequence[int]) -> tuple[int, int]:
        """(bucket, dummy rows) of a batch of these windows."""
        tokens = int(self.tokens[list(windows)].sum())
        return self.plan.place(tokens) if self.for_training else self.plan.place_any(tokens)

    def batch(self, windows: Sequence[int]) -> dict[str, torch.Tensor]:
        """The fixed-shape batch of these windows with its static layout."""
        batch = self.data.batch(windows)
        bucket, dummy = self.placement(windows)
        mask = batch["attention_mask"].numpy()
        index, cu_lengths = static_layout(mask.reshape(-1, mask.shape[-1]), bucket, dummy)
        return {**batch, "pack_index": torch.from_numpy(index), "cu_lengths": torch.from_numpy(cu_lengths)}
