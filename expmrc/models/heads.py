"""Task heads on top of BERT, as both baseline models set them up and take them back from a saved folder."""

from __future__ import annotations

from typing import Any, Iterable

from torch import nn

from expmrc.errors import ExpmrcError


def init_heads(heads: Iterable[nn.Linear], std: float) -> None:
    """Normal(0, std) weights and zero biases: how BERT initialises its own dense layers."""
    for head in heads:
        nn.init.normal_(head.weight, std=std)
        nn.init.zeros_(head.bias)


def load_head_weights(model: nn.Module, state: dict[str, Any], prefixes: tuple[str, ...]) -> bool:
    """Load `model`'s head weights (keys starting with `prefixes`) from a fine-tuned folder's extra entries.

    Returns False when `state` has none of them; a folder with only some of them is refused.
    """
    heads = {k: v for k, v in state.items() if k.startswith(prefixes)}
    if not heads:
        return False
    missing = {k for k in model.state_dict() if k.startswith(prefixes)} - set(heads)
    if missing:
        raise ExpmrcError(f"the fine-tuned model has only some head weights, lacking {sorted(missing)}")
    model.load_state_dict(heads, strict=False)
    return True
