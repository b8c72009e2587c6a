"""The span model: its loss is answer CE + λ × evidence CE, padding changes nothing, heads reload."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from expmrc.errors import ExpmrcError
from expmrc.features.span import IGNORE
from expmrc.models.span import SpanModel
from helpers.tiny_bert import tiny_config


def model(loss_lambda=0.5):
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(**{k: v for k, v in tiny_config(60).items() if k != "model_type"})
    return SpanModel(BertModel(config, add_pooling_layer=False), loss_lambda).eval()


def batch(pad=0):
    ids = torch.tensor([[2, 10, 3, 20, 21, 22, 3], [2, 11, 3, 30, 31, 3, 0]])
    mask = (ids != 0).long()
    if pad:
        ids = torch.cat([ids, torch.zeros(2, pad, dtype=torch.long)], 1)
        mask = torch.cat([mask, torch.zeros(2, pad, dtype=torch.long)], 1)
    types = torch.zeros_like(ids)
    types[:, 3:] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types * mask}


LABELS = {"start_positions": torch.tensor([3, 0]), "end_positions": torch.tensor([4, 0]),
          "evidence_start_positions": torch.tensor([3, IGNORE]), "evidence_end_positions": torch.tensor([5, IGNORE])}


def test_loss_is_answer_plus_lambda_times_evidence():
    m = model(loss_lambda=0.5)
    out = m(**batch(), **LABELS)
    answer = (F.cross_entropy(out["start_logits"], LABELS["start_positions"])
              + F.cross_entropy(out["end_logits"], LABELS["end_positions"])) / 2
    # the second window's evidence is IGNORE: it counts zero, the average is still over both windows
    evidence = (F.cross_entropy(out["evidence_start_logits"][:1], LABELS["evidence_start_positions"][:1])
                + F.cross_entropy(out["evidence_end_logits"][:1], LABELS["evidence_end_positions"][:1])) / 2 / 2
    assert torch.allclose(out["loss"], answer + 0.5 * evidence)
    m.loss_lambda = 0.0
    assert torch.allclose(m(**batch(), **LABELS)["loss"], answer)


def test_all_evidence_ignored_gives_no_evidence_loss_and_no_nan():
    m = model(loss_lambda=1.0)
    labels = dict(LABELS, evidence_start_positions=torch.tensor([IGNORE, IGNORE]),
                  evidence_end_positions=torch.tensor([IGNORE, IGNORE]))
    out = m(**batch(), **labels)
    answer_only = model(loss_lambda=0.0)(**batch(), **labels)["loss"]
    assert torch.isfinite(out["loss"]) and torch.allclose(out["loss"], answer_only)
    out["loss"].backward()
    assert m.evidence_head.weight.grad.abs().sum() == 0


def test_padding_length_changes_neither_logits_nor_loss():
    m = model()
    short, long = m(**batch(), **LABELS), m(**batch(pad=5), **LABELS)
    assert torch.allclose(short["loss"], long["loss"], atol=1e-5)
    assert torch.allclose(short["start_logits"][0], long["start_logits"][0, :7], atol=1e-5)
    assert long["start_logits"][1, 6:].max() < -1000  # padding can never be picked


def test_heads_reload_from_a_state_dict():
    trained, fresh = model(), model()
    with torch.no_grad():
        trained.answer_head.weight.add_(1.0)
    assert fresh.load_heads({k: v for k, v in trained.state_dict().items() if not k.startswith("bert.")})
    assert torch.equal(fresh.answer_head.weight, trained.answer_head.weight)
    assert not fresh.load_heads({})


def test_a_folder_with_only_some_head_weights_is_refused_in_one_line():
    partial = {k: v for k, v in model().state_dict().items() if k.startswith("answer_head.")}
    with pytest.raises(ExpmrcError, match=r"only some head weights, lacking \['evidence_head.bias', 'evidence_head.weight'\]"):
        model().load_heads(partial)
