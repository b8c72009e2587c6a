"""The span-extraction model: a BERT encoder with an answer head and an evidence head.

Each head is one linear layer giving start and end logits at every position. Padding positions get
a large negative logit, so a batch's padding length never changes the loss or the predictions.
Loss = mean of start and end cross-entropy for the answer + λ × the same for the evidence. Windows
whose evidence label is IGNORE (questions without usable evidence) add zero to the evidence term,
which is still averaged over all windows of the batch: so the per-process losses of a batch split
over several devices average to exactly the loss of the whole batch.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from expmrc.models.heads import init_heads, load_head_weights
from expmrc.features.span import IGNORE

PAD_LOGIT = -10000.0  # finite, so fp16 stays clear of inf - inf
HEAD_PREFIXES = ("answer_head.", "evidence_head.")


class SpanModel(nn.Module):
    """BertModel + answer head + evidence head; `forward` returns logits and, given labels, the loss."""

    def __init__(self, encoder: nn.Module, loss_lambda: float) -> None:
        super().__init__()
        self.bert = encoder
        self.loss_lambda = loss_lambda
        hidden = encoder.config.hidden_size
        self.answer_head = nn.Linear(hidden, 2)
        self.evidence_head = nn.Linear(hidden, 2)
        init_heads((self.answer_head, self.evidence_head), std=encoder.config.initializer_range)

    def load_heads(self, state: dict[str, Any]) -> bool:
        """Take trained head weights from a fine-tuned folder's extra entries; False if it has none."""
        return load_head_weights(self, state, HEAD_PREFIXES)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor,
                start_positions: torch.Tensor | None = None, end_positions: torch.Tensor | None = None,
                evidence_start_positions: torch.Tensor | None = None,
                evidence_end_positions: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                           token_type_ids=token_type_ids).last_hidden_state
        padding = attention_mask == 0
        start, end = self.answer_head(hidden).float().masked_fill(padding[..., None], PAD_LOGIT).unbind(-1)
        ev_start, ev_end = self.evidence_head(hidden).float().masked_fill(padding[..., None], PAD_LOGIT).unbind(-1)
        out = {"start_logits": start, "end_logits": end,
               "evidence_start_logits": ev_start, "evidence_end_logits": ev_end}
        if start_positions is None:
            return out
        answer_loss = (F.cross_entropy(start, start_positions) + F.cross_entropy(end, end_positions)) / 2
        evidence_loss = (_ignoring_cross_entropy(ev_start, evidence_start_positions)
                         + _ignoring_cross_entropy(ev_end, evidence_end_positions)) / 2
        out["loss"] = answer_loss + self.loss_lambda * evidence_loss
        return out


def _ignoring_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy averaged over the batch, IGNORE labels counting zero; zero when all are IGNORE."""
    return F.cross_entropy(logits, labels, ignore_index=IGNORE, reduction="sum") / labels.numel()
