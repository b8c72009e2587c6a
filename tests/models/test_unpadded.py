"""The unpadded encoder gives the padded encoder's numbers: the same logits in FP32 (within 1e-5) for BERT,
RoBERTa, XLM-R and ELECTRA on real windows of both tasks, the same loss and gradients in training with dropout
off, attention dropout still applied; other encoders keep the padded path and say why in one line; the fused
regions compute the same and compile once whatever the token count; the varlen FlashAttention call is made
as the op expects it."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from expmrc.errors import ExpmrcError
from expmrc.inference.predictor import to_device
from expmrc.models.unpadded import AUTO_ATTENTION, Packing, flash_varlen, pack, resolve_attention, varlen_attention
from helpers.unpadded_models import UNPADDED_KINDS, largest_difference, loaded, outputs

@pytest.mark.parametrize("task", ["span", "choice"])
@pytest.mark.parametrize("kind", UNPADDED_KINDS)
def test_unpadded_gives_the_padded_logits_loss_and_gradients(kind, task):
    model, batch = loaded(kind, task)
    mask = batch["attention_mask"]
    assert not mask.all() and (mask.sum(-1) == mask.shape[-1]).any()  # padded rows and full rows
    padded, _ = outputs(model, batch, "padded")
    unpadded, _ = outputs(model, batch, "unpadded")
    assert model.attention_path == "unpadded"
    assert largest_difference(padded, unpadded) <= 1e-5
    padded, padded_grads = outputs(model, batch, "padded", train=True)
    unpadded, unpadded_grads = outputs(model, batch, "unpadded", train=True)
    assert abs(float(padded["loss"].detach() - unpadded["loss"].detach())) <= 1e-5
    assert padded_grads.keys() == unpadded_grads.keys() and len(padded_grads) > 10
    assert largest_difference(padded_grads, unpadded_grads) <= 1e-5


@pytest.mark.parametrize("kind, name", [("deberta-v2", "DebertaV2Model"), ("deberta", "DebertaModel")])
def test_other_encoders_keep_the_padded_path_and_say_why_in_one_line(kind, name):
    model, batch = loaded(kind, "span")
    padded, _ = outputs(model, batch, "padded")
    why = model.use_attention("unpadded")
    assert why.startswith(f"{name} keeps the padded path:") and "\n" not in why
    assert model.attention_path == "padded"
    again, _ = outputs(model, batch, "padded")
    assert largest_difference(padded, again) == 0.0


def test_choice_rows_are_flattened_with_their_lengths_counted_on_the_host():
    model, batch = loaded("bert", "choice")
    moved = to_device(batch, torch.device("cpu"))
    mask = batch["attention_mask"]
    assert mask.shape[1] == 4 and moved["row_lengths"] == tuple(mask.reshape(-1, mask.shape[-1]).sum(-1).tolist())
    assert 1 in moved["row_lengths"]  # a padded option: one token (the loader's "never attends to none")


def synthetic_batch(lengths: list[int], length: int, vocabulary: int, seed: int = 0, pad: int = 0,
                    left: bool = False) -> dict[str, torch.Tensor]:
    """A span batch of random ids with these real lengths, padded on the right (or the `left`), every real
    position allowed."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, vocabulary, (len(lengths), length), generator=g)
    mask = torch.zeros(len(lengths), length, dtype=torch.long)
    for row, n in enumerate(lengths):
        mask[row, length - n:] = 1 if left else 0
        mask[row, :n] = 0 if left else 1
    ids = ids.masked_fill(mask == 0, pad)
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids),
            "passage_mask": mask.clone()}


@pytest.mark.parametrize("lengths, left", [([24, 24, 24], False), ([1, 24, 1, 9], False), ([1, 1], False),
                                           ([3, 24, 11], True)],
                         ids=["no padding", "one-token rows", "only one-token rows", "padded on the left"])
def test_batches_without_padding_with_one_token_rows_or_padded_on_the_left(lengths, left):
    model, _ = loaded("roberta", "span")
    batch = synthetic_batch(lengths, 24, model.config.vocab_size, pad=model.config.pad_token_id, left=left)
    padded, _ = outputs(model, batch, "padded")
    moved = to_device(batch, torch.device("cpu"))
    assert ("row_lengths" in moved) == (min(lengths) < 24) and (moved["attention_mask"] is None) == (min(lengths) == 24)
    model.use_attention("unpadded")
    with torch.no_grad():
        for given in (moved, batch):  # lengths counted on the host, or read from the mask (a full mask given too)
            unpadded = model.eval()(**given)
            assert largest_difference(padded, unpadded) <= 1e-5


def test_attention_dropout_stays_on_in_training():
    """With only attention dropout on, training-mode outputs differ from eval's; with it off, they are eval's."""
    for rate, differs in ((0.5, True), (0.0, False)):
        model, batch = loaded("bert", "span")
        for module in model.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
        for layer in model.bert.encoder.layer:
            layer.attention.self.dropout.p = rate
        evaluated, _ = outputs(model, batch, "unpadded")
        trained, _ = outputs(model, batch, "unpadded", train=True)
        gap = float((trained["start_logits"].detach() - evaluated["start_logits"]).abs().max())
        assert (gap > 1e-5) if differs else gap == 0.0


def test_attention_dropout_drops_probabilities_and_keeps_their_expectation():
    """Per row, dropout(softmax(qk^T)) v with inverted scaling: draws differ, their mean is the undropped output."""
    torch.manual_seed(0)
    lengths = (5, 1, 7)
    q, k, v = (torch.randn(sum(lengths), 2 * 8) for _ in range(3))
    packing = Packing(3, 7, lengths, None, torch.tensor([0, 5, 6, 13], dtype=torch.int32))
    plain = varlen_attention(q, k, v, packing, 2, 0.0, 8 ** -0.5)
    draws = torch.stack([varlen_attention(q, k, v, packing, 2, 0.3, 8 ** -0.5) for _ in range(4000)])
    assert not torch.allclose(draws[0], draws[1])
    error = draws.std(0) / len(draws) ** 0.5  # the standard error of the mean of the draws
    assert ((draws.mean(0) - plain).abs() <= 5 * error + 1e-6).all()
    # the one-token row attends to itself with probability 1: each head's output is dropped or scaled by 1/0.7
    alone = draws[:, 5].reshape(4000, 2, 8)
    kept = (alone.abs().sum(-1) > 0)
    assert torch.allclose(alone[kept], (v[5].reshape(2, 8) / 0.7).expand(4000, 2, 8)[kept], atol=1e-6)
    assert 0.25 < 1 - kept.float().mean() < 0.35


def scalar_reads(run) -> int:
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        run()
    return sum(e.count for e in profile.key_averages() if e.key in ("aten::_local_scalar_dense", "aten::is_nonzero"))


def test_an_unpadded_step_reads_nothing_back_when_the_host_counted_the_lengths():
    model, batch = loaded("bert", "span")
    model.use_attention("unpadded")
    model.train()
    moved = to_device(batch, torch.device("cpu"))

    def step(inputs) -> None:
        model(**inputs)["loss"].backward()
        model.zero_grad(set_to_none=True)

    assert scalar_reads(lambda: step(moved)) == 0


def test_packing_with_the_host_s_lengths_never_reads_the_mask():
    """A mask on the meta device has no values to read: packing works from the host's counts alone, and without
    them it has to read the mask (on a GPU, a wait for the device)."""
    mask = torch.ones(3, 4, dtype=torch.long, device="meta")
    packing = pack(mask, 3, 4, torch.device("cpu"), row_lengths=(4, 2, 3))
    assert packing.lengths == (4, 2, 3) and packing.cu_lengths.tolist() == [0, 4, 6, 9]
    assert packing.index.shape == (9,)
    with pytest.raises((NotImplementedError, RuntimeError)):
        pack(mask, 3, 4, torch.device("cpu"))


class CountingBackend:
    """A torch.compile backend that runs the captured graphs eagerly and counts them."""

    def __init__(self) -> None:
        self.graphs = 0

    def __call__(self, graph, inputs):
        self.graphs += 1
        return graph.forward


def test_fused_regions_compute_the_same_and_compile_once_for_every_token_count():
    model, _ = loaded("bert", "span")
    backend = CountingBackend()
    batches = [synthetic_batch(lengths, 32, model.config.vocab_size, seed)
               for seed, lengths in enumerate([[32, 20, 7], [11, 3, 30], [32, 32, 1], [17, 25, 9]])]
    counts = []
    for batch in batches:
        plain, plain_grads = outputs(model, {**batch, "start_positions": torch.tensor([1, 2, 0]),
                                             "end_positions": torch.tensor([3, 2, 0])}, "unpadded", train=True)
        model.use_attention("unpadded", fused=True, backend=backend)
        model.train()
        model.zero_grad(set_to_none=True)
        fused = model(**to_device({**batch, "start_positions": torch.tensor([1, 2, 0]),
                                   "end_positions": torch.tensor([3, 2, 0])}, torch.device("cpu")))
        fused["loss"].backward()
        fused_grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        assert largest_difference(plain, {k: v.detach() for k, v in fused.items()}) <= 1e-6
        assert largest_difference(plain_grads, fused_grads) <= 1e-6
        counts.append(backend.graphs)
    assert counts[0] >= 3 and counts == [counts[0]] * len(counts)  # the regions, compiled for the first batch only


def test_the_varlen_flash_call_fits_the_op():
    """The op's own shape rules (its meta kernel) accept the call; what the kernel computes is checked on a GPU."""
    lengths = (5, 1, 9)
    packing = Packing(3, 9, lengths, None, torch.empty(4, dtype=torch.int32, device="meta"))
    q, k, v = (torch.empty(sum(lengths), 4 * 16, device="meta", dtype=torch.bfloat16) for _ in range(3))
    out = flash_varlen(q, k, v, packing, 4, 0.1, 0.25)
    assert out.shape == (15, 64) and out.dtype == torch.bfloat16


def test_the_unpadded_path_through_a_stand_in_flash_kernel_gives_the_padded_logits(monkeypatch):
    """With the flash op replaced by per-row attention of what it is given, the logits are the padded path's:
    the call passes the rows' cumulative lengths, the longest row, the scale and the dropout rate."""
    import expmrc.models.unpadded as unpadded

    calls = []

    def stand_in(q, k, v, cu_q, cu_k, max_q, max_k, dropout, causal, debug, scale=None):
        calls.append((cu_q.tolist(), max_q, dropout, causal, scale))
        assert q.dim() == 3 and torch.equal(cu_q, cu_k) and max_q == max_k and cu_q.dtype == torch.int32
        bounds = cu_q.tolist()
        out = torch.cat([F.scaled_dot_product_attention(*(t[a:b].transpose(0, 1) for t in (q, k, v)), scale=scale)
                         .transpose(0, 1) for a, b in zip(bounds, bounds[1:])])
        return out, None, None, None, None

    model, batch = loaded("bert", "span")
    padded, _ = outputs(model, batch, "padded")
    monkeypatch.setattr(unpadded, "flash_usable", lambda query, size: True)
    monkeypatch.setattr(torch.ops.aten, "_flash_attention_forward", stand_in)
    unpadded_out, _ = outputs(model, batch, "unpadded")
    assert largest_difference(padded, unpadded_out) <= 1e-5
    lengths = batch["attention_mask"].sum(-1).tolist()
    cu = [0]
    for n in lengths:
        cu.append(cu[-1] + n)
    assert calls[0] == (cu, max(lengths), 0.0, False, (model.config.hidden_size // 4) ** -0.5)
    assert len(calls) == model.config.num_hidden_layers


def test_packing_follows_the_mask_wherever_its_ones_are():
    mask = torch.tensor([[1, 1, 0, 0], [0, 1, 1, 1], [1, 0, 1, 0]])
    packing = pack(mask, 3, 4, torch.device("cpu"))
    assert packing.lengths == (2, 3, 2) and packing.index.tolist() == [0, 1, 5, 6, 7, 8, 10]
    assert packing.cu_lengths.tolist() == [0, 2, 5, 7] and packing.longest == 3 and packing.tokens == 7
    assert pack(None, 2, 4, torch.device("cpu")).lengths == (4, 4)


@pytest.mark.parametrize("requested, device, precision, compiled, path", [
    ("auto", "cuda", "bf16", False, "unpadded"), ("auto", "cuda", "fp16", False, "unpadded"),
    ("auto", "cuda", "no", False, "padded"), ("auto", "cuda", "bf16", True, "padded"),
    ("auto", "xla", "bf16", False, "padded"), ("auto", "mps", "no", False, "padded"),
    ("auto", "cpu", "no", False, AUTO_ATTENTION["cpu"]), ("padded", "cuda", "bf16", False, "padded"),
    ("unpadded", "cuda", "no", False, "unpadded"), ("unpadded", "cpu", "no", False, "unpadded"),
])
def test_auto_reads_the_table_of_measured_devices(requested, device, precision, compiled, path):
    chosen, why = resolve_attention(requested, device, precision, compiled)
    assert chosen == path and why


def test_unpadded_on_a_tpu_is_one_line():
    with pytest.raises(ExpmrcError, match="^--attention unpadded cannot run on a TPU"):
        resolve_attention("unpadded", "xla", "bf16", False)
