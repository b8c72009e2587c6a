"""The encoder on the real tokens only: BERT, RoBERTa, XLM-R and ELECTRA without computing on padding.

The padded path (the library's own forward) runs every layer on [rows, length] tokens and masks the
padding out of attention; the unpadded path runs the very same modules and weights on the batch's real
tokens only, packed into one [tokens, hidden] tensor:

1. the real tokens found (`Packing`: their flat positions, and each row's cumulative length), and their ids,
   token types and the positions the library gives them in the padded batch (RoBERTa's count from after its
   padding index) gathered;
2. the encoder's own embeddings module on those, then ELECTRA's `embeddings_project`;
3. every layer: query, key and value (its own `nn.Linear`s) on the packed tokens, attention within each
   row through a variable-length kernel (`varlen_attention`), then the layer's own output, intermediate
   and output modules, which work token by token (or their fused forms, `expmrc.models.fused`);
4. the packed states scattered back to [rows, length, hidden], zeros at the padding, for the heads (which
   mask every position outside the passage, so the padding never reaches a logit).

A *static layout* (`StaticLayout`, what a step replayed as a CUDA graph needs: `expmrc.training.graphs`) fixes
every shape: the batch padded to max_seq_length, its real tokens padded up to a bucket of token counts by dummy
rows appended after the batch's rows (each of 1 to max_seq_length tokens, attending only within themselves, their
states dropped), the flat positions of all of them and the rows' cumulative lengths built on the host
(`static_layout`) and handed in as tensors. Nothing is then counted or read on the device, the attention kernel
is told max_seq_length as its longest row, and the real rows' numbers are those of the plain unpadded path.

Attention dropout stays on in training, as the library applies it (to the attention probabilities, with
the module's own rate): on CUDA under bf16/fp16 the kernel is PyTorch's varlen FlashAttention
(`torch.ops.aten._flash_attention_forward`, the op under SDPA on nested tensors, which takes dropout;
`torch.nn.attention.varlen.varlen_attn` does not), elsewhere one `scaled_dot_product_attention` over the rows
laid out to the longest real row, the rest masked (`grid_attention`).
Loading, saving and checkpoints are unchanged: no weight is added, renamed or copied.

Any other encoder keeps the padded path and says why in one line (`unpadded_support`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import accumulate
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils.rnn import pad_sequence

from expmrc.errors import ExpmrcError

if TYPE_CHECKING:
    from expmrc.models.fused import Fusion

ATTENTION_MODES = ("auto", "padded", "unpadded")
# What `--attention auto` picks on each kind of device, and the measurement that decided it (docs/benchmarks.md,
# "Attention without padding and fused kernels"). CUDA: unpadded, 1.11x faster end to end than padded on an H100;
# it needs bf16/fp16 autocast (FlashAttention's kernel), so auto keeps the padded path in FP32. CPU:
# no measurable difference at the CMRC 2018 run's lengths (length-grouped batches pad 0.4%), so the library's
# own path. TPUs (XLA) compile one graph per shape, and a token count that changes every batch would recompile
# every step; MPS is unmeasured.
AUTO_ATTENTION = {"cuda": "unpadded", "cpu": "padded", "mps": "padded", "xla": "padded"}
AUTO_SOURCES = {
    "cuda": "measured on an H100: the release CMRC 2018 run trained in 44.05 s unpadded, 48.95 s padded (docs/benchmarks.md)",
    "cpu": "benchmarks/bench_unpadded.py found no difference at real lengths (docs/benchmarks.md)",
    "mps": "not measured: the library's padded path",
    "xla": "one XLA graph per batch shape: padded",
}
SUPPORTED = ("BertModel", "RobertaModel", "XLMRobertaModel", "ElectraModel")  # MacBERT is a BertModel
HALF = (torch.float16, torch.bfloat16)


def resolve_attention(requested: str, device: str, precision: str, compiled: bool) -> tuple[str, str]:
    """The attention path a run takes ("padded" or "unpadded") and why, for `--attention` on a device kind
    ("cuda", "cpu", "mps", "xla") under a resolved precision ("no", "bf16", "fp16"), compiled or not."""
    if requested not in ATTENTION_MODES:
        raise ExpmrcError(f"--attention must be one of {', '.join(ATTENTION_MODES)}, got {requested!r}")
    if requested != "auto":
        if requested == "unpadded" and device == "xla":
            raise ExpmrcError("--attention unpadded cannot run on a TPU: XLA compiles one graph per batch shape, and "
                              "the token count changes every batch (use --attention padded or auto)")
        return requested, "asked for"
    if compiled:
        return "padded", "auto: --torch_compile pads batches to its length buckets"
    if device == "cuda" and precision not in ("bf16", "fp16"):
        return "padded", "auto: FlashAttention's variable-length kernel needs bf16/fp16, this run is FP32"
    mode = AUTO_ATTENTION.get(device, "padded")
    return mode, f"auto on {device}: {AUTO_SOURCES.get(device, 'not measured')}"


def unpadded_support(encoder: nn.Module) -> str | None:
    """Why `encoder` cannot take the unpadded path (one line), or None when it can: a BERT, RoBERTa, XLM-R or
    ELECTRA encoder whose layers have the library's plain self-attention structure."""
    name = type(encoder).__name__
    if name not in SUPPORTED:
        return (f"{name} keeps the padded path: the unpadded one reproduces BERT, RoBERTa, XLM-R and ELECTRA "
                f"layers only (softmax(QK^T)V attention over absolute positions)")
    config = encoder.config
    if getattr(config, "is_decoder", False) or getattr(config, "add_cross_attention", False):
        return f"{name} keeps the padded path: it is configured as a decoder (causal or cross-attention)"
    layers = getattr(getattr(encoder, "encoder", None), "layer", None)
    if not isinstance(layers, nn.ModuleList) or not all(_plain_layer(layer) for layer in layers):
        return f"{name} keeps the padded path: its layers do not have the library's BERT structure"
    return None


def _plain_layer(layer: nn.Module) -> bool:
    """Whether a layer has the modules the unpadded forward calls (and no cross-attention)."""
    attention = getattr(layer, "attention", None)
    self_attention = getattr(attention, "self", None)
    return (not hasattr(layer, "crossattention")
            and all(isinstance(getattr(self_attention, n, None), nn.Linear) for n in ("query", "key", "value"))
            and isinstance(getattr(self_attention, "dropout", None), nn.Dropout)
            and all(isinstance(getattr(m, "dense", None), nn.Linear) for m in
                    (getattr(attention, "output", None), getattr(layer, "intermediate", None),
                     getattr(layer, "output", None))))


@dataclass(frozen=True)
class Packing:
    """Where a batch's real tokens are: each row's length (on the host; None for a static layout whose kernel reads
    the device's `cu_lengths` alone), their flat positions in [rows × length] (None when nothing is padded) and the
    rows' cumulative lengths (int32, on the device) the kernels take; `static_longest`, a static layout's fixed
    longest row (max_seq_length), which a replayed graph keeps whatever the batch."""

    rows: int
    length: int
    lengths: tuple[int, ...] | None
    index: torch.Tensor | None
    cu_lengths: torch.Tensor
    static_longest: int | None = None

    @property
    def tokens(self) -> int:
        """Tokens in the batch (a static layout's dummy rows included)."""
        return sum(self.host_lengths)

    @property
    def host_lengths(self) -> tuple[int, ...]:
        """Each row's tokens as the host counted them; one line when the layout left them on the device."""
        if self.lengths is None:
            raise ExpmrcError("this static layout's row lengths are on the device only (its attention needs "
                              "FlashAttention's variable-length kernel: CUDA, bf16/fp16)")
        return self.lengths

    @property
    def longest(self) -> int:
        """The longest row's tokens (a static layout: the length every row fits in)."""
        if self.static_longest is not None:
            return self.static_longest
        return max(self.host_lengths, default=0)

    @cached_property
    def real(self) -> torch.Tensor:
        """Which positions are real when every row's tokens are laid out from its start to the longest row's
        length [rows, longest] (built once per batch on the host, then moved)."""
        lengths = torch.tensor(self.host_lengths, dtype=torch.long)
        longest = max(self.host_lengths, default=0)
        return (torch.arange(longest)[None, :] < lengths[:, None]).to(self.cu_lengths.device, non_blocking=True)


@dataclass(frozen=True)
class StaticLayout:
    """A static layout's tensors (module docstring): `index`, the flat positions of the real tokens and then the
    dummy rows' tokens in [(rows + dummy rows) × length] ([bucket], int64); `cu_lengths`, the cumulative lengths of
    the rows and then the dummy rows ([rows + dummy rows + 1], int32); `lengths`, the same as host counts where
    the attention needs them (the CPU's), else None."""

    index: torch.Tensor
    cu_lengths: torch.Tensor
    lengths: tuple[int, ...] | None = None

    def packing(self, rows: int, length: int) -> Packing:
        """The packing of a [rows, length] batch laid out this way: its dummy rows follow its rows."""
        total = self.cu_lengths.shape[0] - 1
        if total < rows:
            raise ExpmrcError(f"a static layout of {total} rows for a batch of {rows}")
        return Packing(total, length, self.lengths, self.index, self.cu_lengths, static_longest=length)


def static_layout(mask: np.ndarray, bucket: int, dummy_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """The host side of a static layout of a padded batch whose attention mask is `mask` [rows, length]: its real
    tokens' flat positions then `dummy_rows` rows of dummy tokens, `bucket` positions in all (int64), and the
    cumulative lengths of its rows and the dummy rows (int32). The dummy tokens (bucket less the real ones) are
    shared out as evenly as can be, the first rows taking one more; each dummy row gets 1 to `length` of them,
    else one line says so."""
    rows, length = mask.shape
    real = mask.reshape(rows, length) != 0
    row_lengths = real.sum(-1)
    spare = bucket - int(row_lengths.sum())
    if spare < 0 or (spare and not dummy_rows) or (dummy_rows and not dummy_rows <= spare <= dummy_rows * length):
        raise ExpmrcError(f"cannot lay {int(row_lengths.sum())} tokens out in {bucket} with {dummy_rows} dummy rows "
                          f"of at most {length} tokens each")
    share, extra = divmod(spare, dummy_rows) if dummy_rows else (0, 0)
    dummy = np.full(dummy_rows, share, dtype=np.int64) + (np.arange(dummy_rows) < extra)
    positions = np.arange(length)[None, :]
    dummy_index = ((rows + np.arange(dummy_rows))[:, None] * length + positions)[positions < dummy[:, None]]
    index = np.concatenate([np.flatnonzero(real), dummy_index]).astype(np.int64)
    cu_lengths = np.concatenate([[0], np.cumsum(np.concatenate([row_lengths, dummy]))]).astype(np.int32)
    return index, cu_lengths


def pack(attention_mask: torch.Tensor | None, rows: int, length: int, device: torch.device,
         row_lengths: tuple[int, ...] | None = None) -> Packing:
    """The packing of a [rows, length] batch. `row_lengths`, each row's count of ones in the mask counted on the
    host (`inference.predictor.to_device` does), spares reading the mask back from the device; rows of the mask
    need not be left-aligned."""
    if attention_mask is None:
        lengths: tuple[int, ...] = (length,) * rows
        index = None
    else:
        flat = attention_mask.reshape(rows * length)
        lengths = tuple(int(n) for n in row_lengths) if row_lengths is not None else \
            tuple(attention_mask.reshape(rows, length).sum(-1).tolist())
        index = torch.nonzero_static(flat, size=sum(lengths)).squeeze(-1)
    starts = torch.tensor(list(accumulate(lengths, initial=0)), dtype=torch.int32)
    if device.type == "cuda":
        starts = starts.pin_memory().to(device, non_blocking=True)
    return Packing(rows, length, lengths, index, starts.to(device))


@lru_cache(maxsize=8)
def _flash_capable(device: torch.device) -> bool:
    """Whether PyTorch's FlashAttention kernels run on this CUDA device (compute capability 8.0 or later)."""
    return torch.cuda.get_device_capability(device) >= (8, 0)


def flash_usable(query: torch.Tensor, head_size: int) -> bool:
    """Whether the varlen FlashAttention kernel takes these inputs: CUDA, bf16/fp16, head size a multiple of 8
    up to 256, an Ampere or later GPU, and flash SDPA not switched off."""
    return (query.is_cuda and query.dtype in HALF and head_size % 8 == 0 and head_size <= 256
            and torch.backends.cuda.flash_sdp_enabled() and _flash_capable(query.device))


def varlen_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, packing: Packing, heads: int,
                     dropout: float, scale: float) -> torch.Tensor:
    """softmax(q k^T · scale) v within each row of packed [tokens, heads × size] projections, attention
    probabilities dropped with probability `dropout`; returns [tokens, heads × size]. Varlen FlashAttention where
    it runs (`flash_usable`), else `grid_attention`."""
    if flash_usable(query, query.shape[1] // heads):
        return flash_varlen(query, key, value, packing, heads, dropout, scale)
    return grid_attention(query, key, value, packing, heads, dropout, scale)


def grid_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, packing: Packing, heads: int,
                   dropout: float, scale: float) -> torch.Tensor:
    """`varlen_attention` by one `scaled_dot_product_attention` over the rows laid out to the longest row's real
    length, the rest of each row masked (what the padded path computes, on the fewest positions): a batched call,
    which a CPU runs far faster than one call per row."""
    width = query.shape[1]
    lengths = list(packing.host_lengths)
    rows, longest = packing.rows, max(lengths, default=0)

    def laid_out(t: torch.Tensor) -> torch.Tensor:  # copies whose backward is slicing, not a scatter
        grid = pad_sequence(list(t.split(lengths)), batch_first=True)
        return grid.view(rows, longest, heads, width // heads).transpose(1, 2)

    out = F.scaled_dot_product_attention(laid_out(query), laid_out(key), laid_out(value),
                                         attn_mask=packing.real[:, None, None, :], dropout_p=dropout, scale=scale)
    out = out.transpose(1, 2).reshape(rows, longest, width)
    return torch.cat([out[row, :n] for row, n in enumerate(lengths)])


def flash_varlen(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, packing: Packing, heads: int,
                 dropout: float, scale: float) -> torch.Tensor:
    """`varlen_attention` through PyTorch's varlen FlashAttention op (differentiable; the op under SDPA on
    nested tensors), whose dropout draws from the CUDA generator."""
    tokens, width = query.shape
    shape = (tokens, heads, width // heads)
    out = torch.ops.aten._flash_attention_forward(
        query.view(shape), key.view(shape), value.view(shape), packing.cu_lengths, packing.cu_lengths,
        packing.longest, packing.longest, dropout, False, False, scale=scale)[0]
    return out.reshape(tokens, width)


# encoder, layer: Any, as any BERT-family encoder is read by attribute (`embeddings`, `encoder.layer`), which
# nn.Module types as Tensor | Module
def encode_unpadded(encoder: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor | None,
                    token_type_ids: torch.Tensor | None, row_lengths: tuple[int, ...] | None = None,
                    fusion: Fusion | None = None, layout: StaticLayout | None = None) -> torch.Tensor:
    """The encoder's last hidden states [rows, length, hidden] computed on the real tokens only (see the module
    docstring), zeros at the padding; `fusion` (`expmrc.models.fused.Fusion`) runs the layers' small kernels
    as compiled regions; `layout`, a static layout's tensors (then `attention_mask` and `row_lengths` are not
    read)."""
    rows, length = input_ids.shape
    if layout is None:
        packing = pack(attention_mask, rows, length, input_ids.device, row_lengths)
    else:
        packing = layout.packing(rows, length)
        extra = packing.rows - rows  # the dummy rows: any valid ids, their states are dropped below
        input_ids = torch.cat([input_ids, input_ids.new_zeros(extra, length)])
        if token_type_ids is not None:
            token_type_ids = torch.cat([token_type_ids, token_type_ids.new_zeros(extra, length)])
    x = _embeddings(encoder, input_ids, token_type_ids, packing)
    hidden = x.shape[-1]
    for layer in encoder.encoder.layer:
        x = _layer(layer, x, packing, fusion)
    if packing.index is None:
        return x.view(rows, length, hidden)
    states = x.new_zeros(packing.rows * length, hidden).index_copy(0, packing.index, x)
    return states[:rows * length].view(rows, length, hidden)


def _embeddings(encoder: Any, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None,
                packing: Packing) -> torch.Tensor:
    """The encoder's own embeddings of the real tokens [tokens, hidden], at the positions the library gives them in
    the padded batch (RoBERTa's count from after its padding index), then ELECTRA's projection."""
    module = encoder.embeddings
    rows, length = input_ids.shape
    padding = getattr(module, "padding_idx", None)
    if isinstance(padding, int):  # RoBERTa-like: real tokens count from padding_idx + 1, as the library counts them
        real = input_ids.ne(padding).long()
        positions = torch.cumsum(real, dim=1) * real + padding
    else:
        positions = torch.arange(length, device=input_ids.device).expand(rows, length)

    def packed(t: torch.Tensor) -> torch.Tensor:
        flat = t.reshape(1, rows * length)
        return flat if packing.index is None else flat[:, packing.index]

    types = None if token_type_ids is None else packed(token_type_ids)
    states = module(input_ids=packed(input_ids), token_type_ids=types, position_ids=packed(positions))[0]
    if hasattr(encoder, "embeddings_project"):  # ELECTRA with embeddings narrower than its hidden size
        states = encoder.embeddings_project(states)
    return states


def _layer(layer: Any, x: torch.Tensor, packing: Packing, fusion: Fusion | None) -> torch.Tensor:
    """One BERT-family layer on packed tokens: attention within rows, then the layer's token-wise modules."""
    attention = layer.attention.self
    heads = attention.num_attention_heads
    scale = getattr(attention, "scaling", None) or getattr(attention, "attention_head_size", 64) ** -0.5
    dropout = attention.dropout.p if attention.training else 0.0
    context = varlen_attention(attention.query(x), attention.key(x), attention.value(x), packing, heads, dropout,
                               scale)
    if fusion is not None:
        return fusion.layer_rest(layer, context, x)
    x = layer.attention.output(context, x)
    return layer.output(layer.intermediate(x), x)
