"""Token buckets: the plan pads a run's forward passes least for its number of buckets, the same counts always give
the same plan, every pass fits its bucket's dummy rows, static layouts place every token once, a recorded plan reads
back or is refused in one line, and a batch laid out in a bucket gives the unpadded path's logits, loss and
gradients (FP32, within 1e-5), through the CPU's attention and through the call the CUDA kernel gets."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from expmrc.errors import ExpmrcError
from expmrc.inference.buckets import QUANTUM, BucketedWindows, BucketPlan, choose_buckets, least_padding_tops
from expmrc.inference.predictor import to_device
from expmrc.models.unpadded import static_layout
from helpers.unpadded_models import largest_difference, loaded, outputs


def padded_cost(values, weights, tops) -> int:
    cost, first = 0, 0
    for top in tops:
        cost += sum(int(w) * int(values[top] - v) for v, w in zip(values[first:top + 1], weights[first:top + 1]))
        first = top + 1
    return cost


def test_the_partition_pads_least_of_all_cuts():
    rng = np.random.default_rng(3)
    for _ in range(60):
        n = int(rng.integers(1, 8))
        values = np.sort(rng.choice(60, n, replace=False) + 1)
        weights = rng.integers(1, 6, n)
        groups = int(rng.integers(1, n + 1))
        tops = least_padding_tops(values, weights, groups)
        best = min(padded_cost(values, weights, list(cut) + [n - 1])
                   for cut in itertools.combinations(range(n - 1), groups - 1))
        assert len(tops) == groups and tops[-1] == n - 1 and padded_cost(values, weights, tops) == best


def test_a_plan_is_fixed_by_its_counts_and_fits_every_pass():
    counts = np.random.default_rng(0).normal(14_000, 1_500, 1_060).astype(int)
    plan = choose_buckets(counts, 6, 512)
    assert plan == choose_buckets(list(counts), 6, 512) == choose_buckets(counts[::-1], 6, 512)
    assert len(plan.buckets) == 6 and all(b % QUANTUM == 0 for b in plan.buckets)
    assert plan.tops[-1] == counts.max() and list(plan.buckets) == sorted(plan.buckets)
    for tokens in counts:
        bucket, dummy = plan.place(int(tokens))
        assert dummy <= bucket - tokens <= dummy * 512  # each dummy row holds 1 to 512 tokens
    padded = sum(plan.place(int(n))[0] for n in counts)
    assert 1 - counts.sum() / padded < 0.06  # six buckets over a spread like CMRC 2018's steps pad little
    with pytest.raises(ExpmrcError, match="beyond the largest token bucket"):
        plan.place(int(counts.max()) + 1)
    assert plan.place_any(int(counts.max()) + 1000) == (-(-(int(counts.max()) + 1000) // QUANTUM) * QUANTUM, 1)
    assert choose_buckets([100, 100, 100], 4, 64).buckets == (128,)  # one count: one bucket, room for a dummy row
    with pytest.raises(ExpmrcError, match="at least one forward pass"):
        choose_buckets([], 4, 64)


def test_any_counts_give_ascending_buckets_whose_dummy_rows_hold_every_pass():
    rng = np.random.default_rng(1)
    for _ in range(200):
        length = int(rng.integers(16, 600))
        counts = rng.integers(1, 3000, int(rng.integers(1, 200)))
        plan = choose_buckets(counts, int(rng.integers(1, 9)), length)
        assert list(plan.buckets) == sorted(set(plan.buckets)) and list(plan.tops) == sorted(set(plan.tops))
        assert BucketPlan.from_record(plan.as_dict(), "x") == plan
        for tokens in counts:
            bucket, dummy = plan.place(int(tokens))
            assert dummy <= bucket - tokens <= dummy * length


def test_a_recorded_plan_reads_back_and_a_damaged_one_is_one_line():
    plan = choose_buckets([300, 900, 2000, 2100], 2, 64)
    assert BucketPlan.from_record(plan.as_dict(), "x") == plan
    for damaged in (None, [], {"buckets": [1]}, {**plan.as_dict(), "buckets": "abc"},
                    {**plan.as_dict(), "buckets": list(reversed(plan.buckets))}, {**plan.as_dict(), "tops": [10**9, 10**9 + 1]},
                    {**plan.as_dict(), "length": 0}, {**plan.as_dict(), "dummy_rows": [1]}):
        with pytest.raises(ExpmrcError, match="^model/config.json: the recorded token buckets") as error:
            BucketPlan.from_record(damaged, "model/config.json")
        assert "\n" not in str(error.value)


def test_a_static_layout_places_each_token_once_then_the_dummy_rows():
    mask = np.array([[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 0, 0]])
    index, cu = static_layout(mask, 13, 3)
    assert index.tolist() == [0, 1, 2, 4, 8, 9] + [12, 13, 14, 16, 17, 20, 21]  # dummy rows 3, 2, 2 tokens
    assert cu.tolist() == [0, 3, 4, 6, 9, 11, 13] and index.dtype == np.int64 and cu.dtype == np.int32
    assert static_layout(mask, 6, 0)[1].tolist() == [0, 3, 4, 6]  # no padding, no dummy rows
    for bucket, dummy in ((5, 1), (7, 0), (6 + 4 * 2 + 1, 2), (7, 2)):  # too few, none to hold, too many, too short
        with pytest.raises(ExpmrcError, match="^cannot lay 6 tokens out in"):
            static_layout(mask, bucket, dummy)


@pytest.mark.parametrize("task", ["span", "choice"])
@pytest.mark.parametrize("kind", ["bert", "roberta"])
def test_a_bucketed_batch_gives_the_unpadded_logits_loss_and_gradients(kind, task):

    model, batch, data = loaded(kind, task, with_data=True)
    windows = list(range(len(data)))
    tokens = int(data.fixed().real_tokens()[windows].sum())
    plan = choose_buckets([tokens], 1, int(data.max_length))
    bucketed = BucketedWindows(data, plan).batch(windows)
    assert bucketed["pack_index"].shape[0] == plan.buckets[0] > tokens
    for train in (False, True):
        plain, plain_grads = outputs(model, batch, "unpadded", train=train)
        static, static_grads = outputs(model, bucketed, "unpadded", train=train)
        assert largest_difference({k: v.detach() for k, v in plain.items()},
                                  {k: v.detach()[..., :v.shape[-1]] if k != "loss" else v.detach()
                                   for k, v in cut_to(static, plain).items()}) <= 1e-5
        if train:
            assert static_grads.keys() == plain_grads.keys() and largest_difference(plain_grads, static_grads) <= 1e-5


def cut_to(static: dict, plain: dict) -> dict:
    """The static batch's outputs cut to the plain batch's length and options (the rest is masked padding)."""
    return {k: v[tuple(slice(0, n) for n in plain[k].shape)] if v.dim() else v for k, v in static.items()}


def test_the_cuda_kernel_s_call_on_a_static_layout_gives_the_padded_logits(monkeypatch):
    """With the varlen flash op replaced by per-row attention of what it is given, a static layout's call passes
    max_seq_length as the longest row and the dummy rows after the real ones, and the logits are the padded path's."""
    import expmrc.models.unpadded as unpadded

    calls = []

    def stand_in(q, k, v, cu_q, cu_k, max_q, max_k, dropout, causal, debug, scale=None):
        bounds = cu_q.tolist()
        calls.append((bounds, max_q))
        assert max(b - a for a, b in zip(bounds, bounds[1:])) <= max_q and min(b - a for a, b in zip(bounds, bounds[1:])) > 0
        out = torch.cat([F.scaled_dot_product_attention(*(t[a:b].transpose(0, 1) for t in (q, k, v)), scale=scale)
                         .transpose(0, 1) for a, b in zip(bounds, bounds[1:])])
        return out, None, None, None, None

    model, batch, data = loaded("bert", "span", with_data=True)
    windows = list(range(len(data)))
    plan = choose_buckets([int(data.fixed().real_tokens()[windows].sum())], 1, int(data.max_length))
    padded, _ = outputs(model, batch, "padded")
    monkeypatch.setattr(unpadded, "flash_usable", lambda query, size: True)
    monkeypatch.setattr(torch.ops.aten, "_flash_attention_forward", stand_in)
    moved = to_device(BucketedWindows(data, plan).batch(windows), torch.device("cpu"))
    moved.pop("row_lengths")  # as a graph gets it on CUDA: the kernel reads the device's cumulative lengths
    model.use_attention("unpadded")
    model.eval()
    with torch.no_grad():
        static = model(**moved)
    assert largest_difference(padded, {k: v for k, v in cut_to(static, padded).items()}) <= 1e-5
    assert calls and all(max_q == data.max_length for _, max_q in calls)
    assert calls[0][0][-1] == plan.buckets[0] and len(calls[0][0]) - 1 == len(windows) + plan.dummy_rows[0]
