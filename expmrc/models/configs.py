"""Model configs checked before a model is built, so a bad value is one line naming the key.

`transformers` validates the types of a config's fields when it builds one (its strict dataclasses);
it does not check that sizes are positive, that the heads divide the hidden size, that dropout rates
are probabilities or that the activation exists, which otherwise surface as a ZeroDivisionError, a
KeyError or an IndexError deep inside the model. `build_config` turns the library's own validation
errors into that line too.
"""

from __future__ import annotations

import math
from typing import Any
from collections.abc import Callable

from huggingface_hub.errors import StrictDataclassError
from transformers import PretrainedConfig
from transformers.activations import ACT2FN

from expmrc.errors import ExpmrcError

POSITIVE = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
            "max_position_embeddings")
NON_NEGATIVE = ("type_vocab_size",)  # DeBERTa has none (0), RoBERTa one
PROBABILITIES = ("hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout")


def build_config(where: str, make: Callable[[], PretrainedConfig]) -> PretrainedConfig:
    """`make()`'s config, checked by `check_config`; the library's validation errors as one line on `where`."""
    try:
        config = make()
    except StrictDataclassError as exc:
        reason = " ".join(line.strip() for line in str(exc).strip().splitlines()[:2])
        raise ExpmrcError(f"{where}: invalid model config: {reason}") from None
    check_config(where, config)
    return config


def check_config(where: str, config: PretrainedConfig) -> None:
    """Refuse, in one line naming the key, config values no model of that architecture can be built from."""
    def bad(key: str, value: Any, expected: str) -> ExpmrcError:
        return ExpmrcError(f"{where}: model config `{key}` must be {expected}, got {value!r}")

    for key in POSITIVE + NON_NEGATIVE:
        value = getattr(config, key, None)
        if value is None:
            continue
        least = 1 if key in POSITIVE else 0
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise bad(key, value, "a positive integer" if least else "a non-negative integer")
    hidden, heads = getattr(config, "hidden_size", None), getattr(config, "num_attention_heads", None)
    if isinstance(hidden, int) and isinstance(heads, int) and hidden % heads:
        raise bad("num_attention_heads", heads, f"a divisor of hidden_size ({hidden})")
    for key in PROBABILITIES:
        value = getattr(config, key, None)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value)
                                                                                 and 0 <= value < 1):
            raise bad(key, value, "a probability in [0, 1)")
    for key in ("layer_norm_eps", "initializer_range"):  # a NaN here makes every loss NaN, far from its cause
        value = getattr(config, key, None)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not (math.isfinite(value) and 0 < value < 1)):
            raise bad(key, value, "a finite number in (0, 1)")
    activation = getattr(config, "hidden_act", None)
    if isinstance(activation, str) and activation not in ACT2FN:
        raise bad("hidden_act", activation, f"one of transformers' activations ({', '.join(sorted(ACT2FN)[:6])}, ...)")
