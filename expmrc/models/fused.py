"""The eager step's small kernels fused into compiled regions (`--fused_kernels True`).

A BERT layer run eagerly launches, after each of its two dense layers, a bias add (inside the GEMM), a
dropout, a residual add and a LayerNorm: four passes over [tokens, hidden] where one would do, and as many
again backwards; the intermediate GELU is one more. `Fusion` runs those spans as small `torch.compile`d
functions of the layer's own weights, compiled with dynamic shapes so that the token count, which changes
every batch on the unpadded path, compiles once (per mode: training, evaluation, prediction), and the task
heads' masked logits and their cross-entropies too (`expmrc.models.heads`). Each region computes what the
modules compute, in the same order; dropout draws from the compiled kernel's own random stream, with the
module's rate. GELU is fused for the activations `F.gelu` computes (BERT's exact `gelu`, and the tanh
forms); any other activation keeps the layer's own module.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import torch
from torch.nn import functional as F

GELU_APPROXIMATIONS = {"gelu": "none", "gelu_new": "tanh", "gelu_pytorch_tanh": "tanh"}  # F.gelu's `approximate`


def dense_dropout_add_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, residual: torch.Tensor,
                           norm_weight: torch.Tensor, norm_bias: torch.Tensor, eps: float, p: float,
                           training: bool) -> torch.Tensor:
    """LayerNorm(dropout(x W^T + b) + residual): what a BERT layer's two output modules compute."""
    y = F.dropout(F.linear(x, weight, bias), p, training)
    return F.layer_norm(y + residual, (y.shape[-1],), norm_weight, norm_bias, eps)


def dense_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, approximate: str) -> torch.Tensor:
    """GELU(x W^T + b): a BERT layer's intermediate module."""
    return F.gelu(F.linear(x, weight, bias), approximate=approximate)


@lru_cache(maxsize=64)
def compiled(function: Callable[..., Any], backend: Any) -> Callable[..., Any]:
    """`function` compiled once per backend with dynamic shapes (every call site shares the compiled graphs)."""
    return torch.compile(function, dynamic=True, backend=backend)


class Fusion:
    """The compiled regions of one model: `backend` is torch.compile's, `activation` the config's `hidden_act`."""

    def __init__(self, backend: Any = "inductor", activation: Any = "gelu") -> None:
        self.backend = backend
        self.approximate = GELU_APPROXIMATIONS.get(activation) if isinstance(activation, str) else None

    def region(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """`function` as a compiled region of this model."""
        return compiled(function, self.backend)

    def layer_rest(self, layer: Any, context: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """The rest of a BERT-family layer after attention (`context`), on packed tokens `x` [tokens, hidden]."""
        x = self._output(layer.attention.output, context, x)
        inner = layer.intermediate
        if self.approximate is None:
            middle = inner(x)
        else:
            middle = self.region(dense_gelu)(x, inner.dense.weight, inner.dense.bias, self.approximate)
        return self._output(layer.output, middle, x)

    def _output(self, module: Any, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        """An output module (dense, dropout, residual, LayerNorm) as one region."""
        norm = module.LayerNorm
        return self.region(dense_dropout_add_norm)(x, module.dense.weight, module.dense.bias, residual, norm.weight,
                                                   norm.bias, norm.eps, module.dropout.p, module.training)
