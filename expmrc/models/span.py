"""The span-extraction model: any encoder with an answer head and an evidence head.

Each head is one linear layer giving start and end logits at every position; positions outside the
window's passage (and its null position, "not here") get MASKED, so neither padding nor the question
can be chosen and the batch's padding length changes nothing. Loss = (start + end cross-entropy) / 2
for the answer + λ × the same for the evidence (`heads.masked_cross_entropy`), + the coupling
regularizer J (`heads.coupling_regularizer`, unweighted) when `coupling` is set: p_a = p_start · p_end
at the gold answer, p_e the same at the pseudo evidence.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import PretrainedConfig

from expmrc.models.heads import LossSettings, TaskModel, coupling_regularizer


class SpanModel(TaskModel):
    """Encoder + answer head + evidence head; `forward` returns logits and, given labels, the loss."""

    task = "span"

    def __init__(self, config: PretrainedConfig, loss: LossSettings | None = None) -> None:
        super().__init__(config, loss)
        self.answer_head = nn.Linear(config.hidden_size, 2)
        self.evidence_head = nn.Linear(config.hidden_size, 2)
        self.post_init()

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, passage_mask: torch.Tensor,
                token_type_ids: torch.Tensor | None = None, start_positions: torch.Tensor | None = None,
                end_positions: torch.Tensor | None = None, evidence_start: torch.Tensor | None = None,
                evidence_end: torch.Tensor | None = None,
                row_lengths: tuple[int, ...] | None = None, pack_index: torch.Tensor | None = None,
                cu_lengths: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Answer and evidence start/end logits [batch, length], and the loss when labels are given (no
        `attention_mask`: no padding; `row_lengths`: each row's real tokens, counted on the host; `pack_index`,
        `cu_lengths`: a static layout, `TaskModel.encode`)."""
        hidden = self.encode(input_ids, attention_mask, token_type_ids, row_lengths, pack_index, cu_lengths)
        start, end = self.span_logits(self.answer_head, hidden, passage_mask)
        evidence_start_logits, evidence_end_logits = self.span_logits(self.evidence_head, hidden, passage_mask)
        out = {"start_logits": start, "end_logits": end, "evidence_start_logits": evidence_start_logits,
               "evidence_end_logits": evidence_end_logits}
        if start_positions is not None:
            coupling = None
            if (self.coupling is not None and end_positions is not None and evidence_start is not None
                    and evidence_end is not None):
                p_answer, answered = self.span_probability(start, end, start_positions, end_positions)
                p_evidence, evidenced = self.span_probability(evidence_start_logits, evidence_end_logits,
                                                              evidence_start, evidence_end)
                coupling = coupling_regularizer(p_answer, p_evidence, answered & evidenced, self.coupling)
            self.add_loss(out, self.span_loss(start, end, start_positions, end_positions),
                          self.span_loss(evidence_start_logits, evidence_end_logits, evidence_start, evidence_end),
                          coupling)
        return out
