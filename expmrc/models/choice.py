"""The multiple-choice model: a BERT encoder, one logit per option and an evidence head over the passage.

Each option row is encoded on its own; the pooled `[CLS]` gives the option's logit (padded options are
masked out of the softmax). The evidence head reads the mean over real options of the final hidden
states — the passage sits at the same positions in every row — and gives start/end logits over `[CLS]`
and the passage tokens. Loss = cross-entropy over options + λ × (start CE + end CE) / 2.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from expmrc.features.choice import IGNORE
from expmrc.models.heads import init_heads, load_head_weights

MASKED = -10000.0  # logit given to padded options and non-passage positions (safe in fp16 and bf16)
HEAD_PREFIXES = ("option_head.", "evidence_head.")


class ChoiceModel(nn.Module):
    """BERT with an option head on the pooled output and a start/end evidence head."""

    def __init__(self, encoder: nn.Module, loss_lambda: float = 0.1) -> None:
        super().__init__()
        config = encoder.config
        self.bert = encoder  # saved as bert.*, the names load_encoder strips back off
        self.loss_lambda = loss_lambda
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.option_head = nn.Linear(config.hidden_size, 1)
        self.evidence_head = nn.Linear(config.hidden_size, 2)
        init_heads((self.option_head, self.evidence_head), std=config.initializer_range)

    def load_heads(self, state: dict[str, Any]) -> bool:
        """Take trained head weights from a fine-tuned folder's extra entries; False if it has none."""
        return load_head_weights(self, state, HEAD_PREFIXES)

    def forward(
        self,
        input_ids: torch.Tensor,  # [batch, options, length]
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor,
        option_mask: torch.Tensor,  # [batch, options], 1 for real options
        evidence_mask: torch.Tensor,  # [batch, length], 1 for [CLS] and passage tokens
        labels: torch.Tensor | None = None,  # [batch] option index or IGNORE
        evidence_start: torch.Tensor | None = None,  # [batch] position or IGNORE
        evidence_end: torch.Tensor | None = None,
    ) -> dict[str, torch.Tensor]:
        """Option logits [batch, options], evidence start/end logits [batch, length], and the loss
        when labels are given."""
        batch, options, length = input_ids.shape
        encoded = self.bert(
            input_ids=input_ids.reshape(batch * options, length),
            attention_mask=attention_mask.reshape(batch * options, length),
            token_type_ids=token_type_ids.reshape(batch * options, length),
        )
        pooled = encoded.pooler_output.reshape(batch, options, -1)
        option_logits = self.option_head(self.dropout(pooled)).squeeze(-1)
        option_logits = option_logits.masked_fill(option_mask == 0, MASKED)

        hidden = encoded.last_hidden_state.reshape(batch, options, length, -1)
        weights = option_mask.to(hidden.dtype) / option_mask.sum(dim=1, keepdim=True).clamp(min=1).to(hidden.dtype)
        mean_hidden = torch.einsum("bolh,bo->blh", hidden, weights)
        start_logits, end_logits = self.evidence_head(mean_hidden).unbind(dim=-1)
        start_logits = start_logits.masked_fill(evidence_mask == 0, MASKED)
        end_logits = end_logits.masked_fill(evidence_mask == 0, MASKED)

        outputs = {"option_logits": option_logits, "evidence_start_logits": start_logits, "evidence_end_logits": end_logits}
        if labels is not None:
            answer_loss = _mean_ce(option_logits, labels)
            evidence_loss = (_mean_ce(start_logits, evidence_start) + _mean_ce(end_logits, evidence_end)) / 2
            outputs["loss"] = answer_loss + self.loss_lambda * evidence_loss
        return outputs


def _mean_ce(logits: torch.Tensor, targets: torch.Tensor | None) -> torch.Tensor:
    """Cross-entropy averaged over the targets that are not IGNORE; 0 when all are."""
    if targets is None:
        return logits.new_zeros(())
    total = F.cross_entropy(logits.float(), targets, ignore_index=IGNORE, reduction="sum")
    return total / (targets != IGNORE).sum().clamp(min=1)
