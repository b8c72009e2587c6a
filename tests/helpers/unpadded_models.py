"""Tiny task models of each encoder family on real windows of both tasks, and how their outputs and gradients are
compared (the unpadded path's tests and the token buckets' tests share them)."""

from __future__ import annotations

import torch

from expmrc.data.datasets import ChoiceQuestion, SpanQuestion
from expmrc.features.choice import build_choice_features
from expmrc.features.span import build_span_features
from expmrc.features.windows import WindowDataset, uses_token_types
from expmrc.inference.predictor import to_device
from expmrc.models.backbones import load_task_model, resolve_source
from expmrc.models.choice import ChoiceModel
from expmrc.models.heads import LossSettings
from expmrc.models.span import SpanModel
from helpers.tiny_backbones import tiny_backbone

UNPADDED_KINDS = ("bert", "roberta", "xlm-roberta", "electra")
PASSAGE = "The river town of Alderbrook grew up around a stone bridge built in 1742. Merchants crossed it daily."
PASSAGE_ZH = "北京是中国的首都。上海是中国最大的城市，人口超过两千万。"
SPAN = [SpanQuestion("en", "When was the bridge built?", PASSAGE, ["1742"], [PASSAGE.index("1742")], [PASSAGE]),
        SpanQuestion("zh", "中国最大的城市是哪里？", PASSAGE_ZH, ["上海"], [PASSAGE_ZH.index("上海")], [PASSAGE_ZH]),
        SpanQuestion("long", "Who crossed the bridge?", " ".join([PASSAGE] * 5), ["Merchants"], [None],
                     ["Merchants crossed it daily."])]
CHOICE = [ChoiceQuestion("m-0", "m", 0, PASSAGE, "The bridge was built in _ .", ["1742", "1800", "1900", "2000"],
                         "A", [PASSAGE]),
          ChoiceQuestion("z-0", "z", 0, PASSAGE_ZH, "哪里人口最多？", ["北京", "上海"], "B", [PASSAGE_ZH]),
          ChoiceQuestion("l-0", "l", 0, " ".join([PASSAGE] * 4), "Who crossed it?", ["merchants", "kings", "no one"],
                         "A", [PASSAGE])]


def loaded(kind: str, task: str, with_data: bool = False, **options):
    """A tiny `kind` task model (dropout off) and its padded training batch of every window of the questions (and,
    `with_data`, the windows themselves)."""
    source = resolve_source(str(tiny_backbone(kind, **options)))
    types = uses_token_types(source.tokenizer, source.config)
    if task == "span":
        table, _ = build_span_features(SPAN, source.tokenizer, 64, 24, 16, True, types)
    else:
        table, _ = build_choice_features(CHOICE, source.tokenizer, 64, 16, 24, True, types, sliding_windows=True)
    torch.manual_seed(0)
    model, _ = load_task_model(SpanModel if task == "span" else ChoiceModel, source, LossSettings(0.5))
    data = WindowDataset(table, True, source.tokenizer.pad_token_id or 0, 1, 64)
    batch = data.batch(list(range(len(data))))
    return (model, batch, data) if with_data else (model, batch)


def outputs(model, batch, path: str, train: bool = False):
    """The model's outputs (and, in training mode, its gradients) on `path`, the batch moved as the loop moves it."""
    model.use_attention(path)
    model.train(train)
    model.zero_grad(set_to_none=True)
    with torch.set_grad_enabled(train):
        out = model(**to_device(batch, torch.device("cpu")))
    if train:
        out["loss"].backward()
        return out, {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return out, {}


def largest_difference(first: dict, second: dict) -> float:
    assert first.keys() == second.keys()
    return max(float((first[k] - second[k]).detach().abs().max()) for k in first)
