"""What the span and multiple-choice models share: any encoder from the Auto classes, one loss, saving.

`TaskModel` is a `transformers.PreTrainedModel`: it holds the encoder the config names (BERT,
RoBERTa, ELECTRA, DeBERTa, ...) under that architecture's own attribute name (`bert`, `roberta`,
...), so `from_pretrained` loads a pretrained encoder whether its checkpoint was saved with that
prefix (from a `*ForMaskedLM`) or without (from `AutoModel`), initialises the task heads the checkpoint
lacks, and reports what it did; `save_pretrained` writes encoder and heads together. The encoder's own
pooler is built only for a task that reads it (`uses_pooler`: multiple choice, as the original took
BERT's pooled output), so its pretrained `pooler.dense.*` is loaded where the checkpoint has one.

The loss of both tasks goes through `masked_cross_entropy`: the cross-entropy summed over the
windows that have a label and divided by the number of windows in the batch (the original release's
mean over all windows), so that a batch split over devices or accumulation steps gives the same loss
and λ weighs the evidence the same way in both tasks. What the loss adds to the answer loss (λ and the
coupling regularizer) is a `LossSettings` the model is built with, never changed afterwards.
"""

from __future__ import annotations

import inspect
import math
import sys
from dataclasses import dataclass
from typing import Any, cast

import torch
from torch import nn
from torch.nn import functional as F
from transformers import PretrainedConfig, PreTrainedModel
from transformers.models.auto.modeling_auto import MODEL_MAPPING

from expmrc.errors import ExpmrcError
from expmrc.features.windows import IGNORE
from expmrc.models.fused import Fusion
from expmrc.models.unpadded import StaticLayout, encode_unpadded, unpadded_support

MASKED = -10000.0  # the logit of positions a span may not point at (finite: safe in fp16 and bf16)
COUPLING_DEFAULTS = (4.96, 2.02, 3.10)  # c1, c2, c3 of the coupling regularizer (docs/coupling.md)
# the parts of a task model's loss, unweighted, as a training forward returns them (`loss_parts`): the answer loss
# L_A, the evidence loss L_E (weighted by λ in the loss) and, with the coupling regularizer on, its term J
LOSS_PARTS = ("answer_loss", "evidence_loss", "coupling_loss")


@dataclass(frozen=True)
class LossSettings:
    """What a task model's loss adds to the answer loss: `loss_lambda` × the evidence loss, and, when `coupling`
    is on, the coupling regularizer J with its constants c1, c2, c3 (`coupling_regularizer`)."""

    loss_lambda: float = 0.0
    coupling: bool = False
    constants: tuple[float, float, float] = COUPLING_DEFAULTS

    def checked(self, prefix: str = "--") -> LossSettings:
        """These settings, once λ and the constants are finite and not negative (one line naming the flag)."""
        if not math.isfinite(self.loss_lambda):
            raise ExpmrcError(f"{prefix}loss_lambda must be a finite number, got {self.loss_lambda}")
        if self.loss_lambda < 0:
            raise ExpmrcError(f"{prefix}loss_lambda must not be negative, got {self.loss_lambda}")
        for number, value in enumerate(self.constants, 1):
            if not (math.isfinite(value) and value >= 0):
                raise ExpmrcError(f"{prefix}coupling_c{number} must be a finite number of at least 0, got {value}")
        return self

    def as_dict(self) -> dict[str, Any]:
        """As run_info.json and the fine-tuned folder record them."""
        return {"loss_lambda": float(self.loss_lambda), "coupling_loss": self.coupling,
                "coupling_c": list(self.constants) if self.coupling else None}


def masked_cross_entropy(logits: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
    """Cross-entropy summed over labels that are not IGNORE, divided by all rows (0 when none is labelled)."""
    if labels is None:
        return logits.new_zeros(())
    return F.cross_entropy(logits.float(), labels, ignore_index=IGNORE, reduction="sum") / labels.shape[0]


def masked_logits(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                  allowed: torch.Tensor) -> torch.Tensor:
    """A linear head's logits [..., outputs] in FP32, MASKED where `allowed` is 0."""
    return F.linear(hidden, weight, bias).float().masked_fill(allowed[..., None] == 0, MASKED)


def pair_cross_entropy(start: torch.Tensor, end: torch.Tensor, start_labels: torch.Tensor | None,
                       end_labels: torch.Tensor | None) -> torch.Tensor:
    """The mean of the start and end cross-entropies (`masked_cross_entropy`)."""
    return (masked_cross_entropy(start, start_labels) + masked_cross_entropy(end, end_labels)) / 2


def gold_probability(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's softmax probability of its label, and which rows have one (label not IGNORE; 0 where none)."""
    valid = labels != IGNORE
    picked = F.softmax(logits.float(), dim=-1).gather(-1, labels.clamp(min=0)[:, None]).squeeze(-1)
    return torch.where(valid, picked, torch.zeros_like(picked)), valid


def coupling_regularizer(p_answer: torch.Tensor, p_evidence: torch.Tensor, valid: torch.Tensor,
                         c: tuple[float, float, float]) -> torch.Tensor:
    """J = p_a(1 - p_e)c1 + (1 - p_a)(p_e c2 + (1 - p_e)c3), summed over valid rows and divided by all rows
    (as `masked_cross_entropy`). With the paper's c1 > c3 > c2 it costs most to answer right from evidence
    the model does not believe (c1), then to be wrong without believing the evidence (c3); being wrong while
    believing the evidence costs least (c2)."""
    c1, c2, c3 = c
    penalty = p_answer * (1 - p_evidence) * c1 + (1 - p_answer) * (p_evidence * c2 + (1 - p_evidence) * c3)
    return torch.where(valid, penalty, torch.zeros_like(penalty)).sum() / max(valid.shape[0], 1)


class TaskModel(PreTrainedModel):
    """An encoder of any architecture the config names, plus the heads a subclass adds."""

    config_class = PretrainedConfig
    task = ""  # "span" or "choice": what a saved folder records and a loaded folder must match
    uses_pooler = False  # whether the encoder's own pooler (where its architecture has one) is built

    def __init__(self, config: PretrainedConfig, loss: LossSettings | None = None) -> None:
        super().__init__(config)
        # the mapping's stub says a tuple of classes; a config type maps to its one encoder class
        encoder_class = cast("type[PreTrainedModel]", MODEL_MAPPING[type(config)])
        self.base_model_prefix = encoder_class.base_model_prefix
        pooling = "add_pooling_layer" in inspect.signature(encoder_class).parameters
        kwargs = {"add_pooling_layer": self.uses_pooler} if pooling else {}
        setattr(self, self.base_model_prefix, encoder_class(config, **kwargs))
        # whether the encoder builds its masks with the library's masking functions, which take a ready 4D mask
        self.library_masks = hasattr(sys.modules.get(encoder_class.__module__), "create_bidirectional_mask")
        self.loss_settings = loss or LossSettings()
        self.attention_path = "padded"  # or "unpadded" (`use_attention`); how the model runs, not saved with it
        self.fusion: Fusion | None = None

    @property
    def loss_lambda(self) -> float:
        """The weight of the evidence loss."""
        return self.loss_settings.loss_lambda

    @property
    def coupling(self) -> tuple[float, float, float] | None:
        """c1, c2, c3 of the coupling regularizer when it is on, else None."""
        return self.loss_settings.constants if self.loss_settings.coupling else None

    @property
    def loss_parts(self) -> tuple[str, ...]:
        """The names of the parts a training forward returns under `loss_parts` (`LOSS_PARTS`, J only when the
        coupling regularizer is on)."""
        return LOSS_PARTS if self.coupling is not None else LOSS_PARTS[:2]

    def add_loss(self, out: dict[str, torch.Tensor], answer: torch.Tensor, evidence: torch.Tensor,
                 coupling: torch.Tensor | None) -> None:
        """`out["loss"]` = L_A + λ·L_E (+ J with the regularizer on), and `out["loss_parts"]`, the unweighted parts
        in `loss_parts` order, detached (J is 0 where the labels to compute it are missing)."""
        out["loss"] = answer + self.loss_lambda * evidence
        parts = [answer, evidence]
        if self.coupling is not None:
            if coupling is not None:
                out["loss"] = out["loss"] + coupling
            parts.append(coupling if coupling is not None else answer.new_zeros(()))
        out["loss_parts"] = torch.stack(parts).detach().float()

    def _check_and_adjust_attn_implementation(self, attn_implementation: Any, is_init_check: bool = False,
                                              *args: Any, **kwargs: Any) -> Any:
        """Leave the attention implementation to the encoder (sdpa where it has one), as its own classes do:
        the library's check on this wrapper would otherwise force eager attention on every architecture."""
        return attn_implementation

    def usable_length(self) -> int:
        """How many positions an input may have: the position embeddings, less the offset RoBERTa-like
        encoders start their positions at."""
        limit = getattr(self.config, "max_position_embeddings", None) or 1 << 30
        padding = getattr(getattr(self.base_model, "embeddings", None), "padding_idx", None)
        return limit - (padding + 1) if isinstance(padding, int) else limit

    def use_attention(self, path: str, fused: bool = False, backend: Any = "inductor") -> str | None:
        """Run the encoder on the "padded" path (the library's forward) or the "unpadded" one
        (`expmrc.models.unpadded`), the latter with its small kernels `fused` into regions compiled by `backend`
        (`expmrc.models.fused`). Returns why the encoder keeps the padded path when "unpadded" was asked (one
        line), else None."""
        why = unpadded_support(self.base_model) if path == "unpadded" else None
        self.attention_path = "padded" if why else path
        unpadded = self.attention_path == "unpadded"
        self.fusion = Fusion(backend, getattr(self.config, "hidden_act", None)) if fused and unpadded else None
        return why

    def region(self, function: Any) -> Any:
        """`function` as a compiled region when the model's kernels are fused, else as it is."""
        return function if self.fusion is None else self.fusion.region(function)

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None,
               token_type_ids: torch.Tensor | None, row_lengths: tuple[int, ...] | None = None,
               pack_index: torch.Tensor | None = None, cu_lengths: torch.Tensor | None = None) -> torch.Tensor:
        """The encoder's last hidden states [rows, length, hidden]. No `attention_mask` means no padding;
        `row_lengths`, each row's real tokens counted on the host, spares the unpadded path a read from the
        device; `pack_index` and `cu_lengths`, a static layout's (`expmrc.models.unpadded.static_layout`), run the
        unpadded path at fixed shapes. Under SDPA the padding mask goes in as the 4D boolean mask the library would
        build from it, so that the library does not first ask the device whether it can skip it (a host sync per
        forward pass)."""
        if pack_index is not None and cu_lengths is not None:
            if self.attention_path != "unpadded":
                raise ExpmrcError("a static layout of packed tokens runs on the unpadded path only; this model takes "
                                  "the padded one")
            layout = StaticLayout(pack_index, cu_lengths, row_lengths)
            return encode_unpadded(self.base_model, input_ids, None, token_type_ids, None, self.fusion, layout)
        if self.attention_path == "unpadded":
            return encode_unpadded(self.base_model, input_ids, attention_mask, token_type_ids, row_lengths,
                                   self.fusion)
        inputs: dict[str, Any] = {"input_ids": input_ids}
        if attention_mask is not None:
            sdpa = self.library_masks and getattr(self.config, "_attn_implementation", None) == "sdpa"
            inputs["attention_mask"] = attention_mask[:, None, None, :].bool() if sdpa else attention_mask
        if token_type_ids is not None:
            inputs["token_type_ids"] = token_type_ids
        return self.base_model(**inputs).last_hidden_state

    def span_logits(self, head: nn.Linear, hidden: torch.Tensor, allowed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Start and end logits of a two-output head, MASKED where `allowed` is 0."""
        logits = self.region(masked_logits)(hidden, head.weight, head.bias, allowed)
        return logits[..., 0], logits[..., 1]

    def span_loss(self, start: torch.Tensor, end: torch.Tensor, start_labels: torch.Tensor | None,
                  end_labels: torch.Tensor | None) -> torch.Tensor:
        """The mean of the start and end cross-entropies."""
        return self.region(pair_cross_entropy)(start, end, start_labels, end_labels)

    def span_probability(self, start: torch.Tensor, end: torch.Tensor, start_labels: torch.Tensor,
                         end_labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """p_start(gold start) · p_end(gold end) per row, and which rows are labelled."""
        p_start, valid_start = gold_probability(start, start_labels)
        p_end, valid_end = gold_probability(end, end_labels)
        return p_start * p_end, valid_start & valid_end
