"""The multiple-choice model: any encoder, one logit per option and an evidence head over the passage.

Each option's row is encoded on its own. The option head reads the row's pooled first token, as the
original took BERT's `get_pooled_output()`: the checkpoint's pretrained pooler (BERT, MacBERT, RoBERTa:
`pooler.dense.*`) where its architecture has one (freshly initialised when the checkpoint lacks its
weights), else a dense layer and tanh of our own (ELECTRA, DeBERTa); it gives one logit, and padded
options are masked out of the softmax (the original instead padded to four options with empty texts,
which took part in it). The evidence head reads
the mean over the real options of the hidden states — the passage sits at the same positions in
every row — and gives start/end logits over the passage and its null position. Loss = cross-entropy
over the options + λ × (start + end cross-entropy) / 2, each through `heads.masked_cross_entropy`,
+ the coupling regularizer J when `coupling` is set (p_a = the gold option's softmax probability).
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import PretrainedConfig

from expmrc.models.heads import MASKED, LossSettings, TaskModel, coupling_regularizer, gold_probability, masked_cross_entropy


class ChoiceModel(TaskModel):
    """Encoder + first-token pooler and option head + start/end evidence head."""

    task = "choice"
    uses_pooler = True

    def __init__(self, config: PretrainedConfig, loss: LossSettings | None = None) -> None:
        super().__init__(config, loss)
        hidden = config.hidden_size
        has_pooler = getattr(getattr(self, self.base_model_prefix), "pooler", None) is not None
        self.pooler = None if has_pooler else nn.Linear(hidden, hidden)  # our own, where the encoder has none
        self.dropout = nn.Dropout(getattr(config, "hidden_dropout_prob", 0.1))
        self.option_head = nn.Linear(hidden, 1)
        self.evidence_head = nn.Linear(hidden, 2)
        self.post_init()

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, passage_mask: torch.Tensor,
                option_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                labels: torch.Tensor | None = None, evidence_start: torch.Tensor | None = None,
                evidence_end: torch.Tensor | None = None,
                row_lengths: tuple[int, ...] | None = None, pack_index: torch.Tensor | None = None,
                cu_lengths: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Option logits [batch, options], evidence start/end logits [batch, length], and the loss given labels
        (`row_lengths`: the real tokens of each option's row, rows of a question together, counted on the host;
        `pack_index`, `cu_lengths`: a static layout, `TaskModel.encode`)."""
        batch, options, length = input_ids.shape
        rows = batch * options
        hidden = self.encode(input_ids.reshape(rows, length),
                             None if attention_mask is None else attention_mask.reshape(rows, length),
                             None if token_type_ids is None else token_type_ids.reshape(rows, length), row_lengths,
                             pack_index, cu_lengths)
        hidden = hidden.reshape(batch, options, length, -1)
        pooled = self.pool(hidden[:, :, 0])
        option_logits = self.option_head(self.dropout(pooled)).squeeze(-1).float()
        option_logits = option_logits.masked_fill(option_mask == 0, MASKED)
        weights = option_mask.to(hidden.dtype) / option_mask.sum(dim=1, keepdim=True).clamp(min=1).to(hidden.dtype)
        mean_hidden = torch.einsum("bolh,bo->blh", hidden, weights)
        start, end = self.span_logits(self.evidence_head, mean_hidden, passage_mask)
        out = {"option_logits": option_logits, "evidence_start_logits": start, "evidence_end_logits": end}
        if labels is not None:
            coupling = None
            if self.coupling is not None and evidence_start is not None and evidence_end is not None:
                p_answer, answered = gold_probability(option_logits, labels)
                p_evidence, evidenced = self.span_probability(start, end, evidence_start, evidence_end)
                coupling = coupling_regularizer(p_answer, p_evidence, answered & evidenced, self.coupling)
            self.add_loss(out, masked_cross_entropy(option_logits, labels),
                          self.span_loss(start, end, evidence_start, evidence_end), coupling)
        return out

    def pool(self, first: torch.Tensor) -> torch.Tensor:
        """The pooled first tokens [..., hidden]: the encoder's pooler where it has one, else ours."""
        if self.pooler is not None:
            return torch.tanh(self.pooler(first))
        shape = first.shape
        # nn.Module.__getattr__ is typed as returning a Tensor; `pooler` is the encoder's module
        return self.base_model.pooler(first.reshape(-1, 1, shape[-1])).reshape(shape)  # type: ignore[operator]
