"""Both task models on every backbone: labels map back to exact text, pretrained encoders load whatever their
checkpoint's prefix, save -> load gives identical logits, the loss is answer + λ · evidence."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from expmrc.data.datasets import ChoiceQuestion, SpanQuestion
from expmrc.errors import ExpmrcError
from expmrc.features.choice import build_choice_features
from expmrc.features.span import build_span_features
from expmrc.features.windows import IGNORE, WindowDataset, uses_token_types
from expmrc.models.backbones import load_task_model, resolve_source
from expmrc.models.choice import ChoiceModel
from expmrc.models.heads import MASKED, LossSettings
from expmrc.models.span import SpanModel
from helpers.tiny_backbones import KINDS, tiny_backbone

PASSAGE_EN = "The river town of Alderbrook grew up around a stone bridge built in 1742. Merchants crossed it daily."
PASSAGE_ZH = "北京是中国的首都。上海是中国最大的城市，人口超过两千万。"
SPAN = [
    SpanQuestion("en", "When was the bridge built?", PASSAGE_EN, ["1742"], [PASSAGE_EN.index("1742")],
                 ["The river town of Alderbrook grew up around a stone bridge built in 1742."]),
    SpanQuestion("zh", "中国最大的城市是哪里？", PASSAGE_ZH, ["上海"], [PASSAGE_ZH.index("上海")],
                 ["上海是中国最大的城市，人口超过两千万。"]),
    SpanQuestion("long", "Who crossed the bridge?", " ".join([PASSAGE_EN] * 6), ["Merchants"], [None],
                 ["Merchants crossed it daily."]),
]
CHOICE = [
    ChoiceQuestion("m-0", "m", 0, PASSAGE_EN, "The bridge was built in _ .", ["1742", "1800", "1900"], "A",
                   ["The river town of Alderbrook grew up around a stone bridge built in 1742."]),
    ChoiceQuestion("z-0", "z", 0, PASSAGE_ZH, "哪里人口最多？", ["北京", "上海"], "B", ["上海是中国最大的城市"]),
    ChoiceQuestion("l-0", "l", 0, " ".join([PASSAGE_EN] * 6), "Who crossed it?", ["merchants", "kings"], "A",
                   ["Merchants crossed it daily."]),
]


def source(kind, **options):
    return resolve_source(str(tiny_backbone(kind, **options)))


def features(kind, task, tokenizer, config):
    types = uses_token_types(tokenizer, config)
    if task == "span":
        return build_span_features(SPAN, tokenizer, 64, 24, 16, True, types)
    return build_choice_features(CHOICE, tokenizer, 64, 16, 24, True, types, sliding_windows=True)


def label_texts(table, questions, names):
    """The passage text under each labelled window's (start, end) label columns."""
    texts = set()
    for window in range(len(table)):
        start, end = (int(getattr(table, name)[window]) for name in names)
        if start in (IGNORE, int(table.null_pos[window])):
            continue
        offsets, _ = table.passage(window)
        first = int(table.passage_pos[window])
        question = questions[int(table.question_index[window])]
        passage = getattr(question, "context", None) or question.passage
        texts.add((question.qid, passage[offsets[start - first][0]:offsets[end - first][1]].strip()))
    return texts


@pytest.mark.parametrize("kind", KINDS)
def test_every_label_maps_back_to_its_exact_passage_text(kind):
    src = source(kind)
    span, report = features(kind, "span", src.tokenizer, src.config)
    assert label_texts(span, SPAN, ("start_positions", "end_positions")) == {
        ("en", "1742"), ("zh", "上海"), ("long", "Merchants")}
    assert label_texts(span, SPAN, ("evidence_start", "evidence_end")) == {(q.qid, q.evidences[0]) for q in SPAN}
    assert report.multi_window_questions >= 1 and report.unknown_share < 0.05  # byte-level BPE splits Chinese
    choice, report = features(kind, "choice", src.tokenizer, src.config)
    assert label_texts(choice, CHOICE, ("evidence_start", "evidence_end")) == {(q.qid, q.evidences[0]) for q in CHOICE}
    assert report.multi_window_questions >= 1
    null = {int(p) for p in span.null_pos} | {int(p) for p in choice.null_pos}
    assert null == {0}  # every one of these templates starts with its first special token


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("model_class", [SpanModel, ChoiceModel])
def test_pretrained_encoder_loads_from_either_prefix_and_heads_are_initialised(kind, model_class):
    for mlm_head in (False, True):
        src = source(kind, mlm_head=mlm_head)
        model, report = load_task_model(model_class, src)
        # a checkpoint without pooler weights gives the choice model a fresh pooler, nothing else of the encoder
        encoder_missing = [k for k in report.missing if k.startswith(model.base_model_prefix + ".")]
        assert report.missing and all(model_class is ChoiceModel and ".pooler." in k for k in encoder_missing)
        assert all(k.split(".")[0] in ("answer_head", "evidence_head", "pooler", "option_head")
                   for k in report.missing if k not in encoder_missing)
        heads = model.evidence_head.weight
        assert 0.005 < heads.std().item() < 0.05 and model.evidence_head.bias.abs().max().item() == 0
    reference = source(kind).config
    encoder = model.base_model.embeddings.word_embeddings.weight
    assert encoder.shape == (reference.vocab_size, getattr(reference, "embedding_size", reference.hidden_size))


def batch_of(kind, task):
    src = source(kind)
    table, _ = features(kind, task, src.tokenizer, src.config)
    return src, WindowDataset(table, True, src.tokenizer.pad_token_id).batch(list(range(len(table))))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("model_class", [SpanModel, ChoiceModel])
def test_save_then_load_gives_identical_logits_and_a_complete_folder(kind, model_class, tmp_path):
    src, batch = batch_of(kind, model_class.task)
    torch.manual_seed(1)
    model, _ = load_task_model(model_class, src)
    with torch.no_grad():
        model.evidence_head.weight.normal_()  # trained heads, as far as the round trip can tell
    model.config.expmrc = {"task": model_class.task}
    model.save_pretrained(tmp_path)
    src.tokenizer.save_pretrained(tmp_path)
    again, report = load_task_model(model_class, resolve_source(str(tmp_path)))
    assert report.missing == [] and report.unused == []
    model.eval(), again.eval()
    with torch.no_grad():
        first, second = model(**batch), again(**batch)
    for key in first:  # same weights; a reloaded tensor's memory layout may pick another kernel (last-bit changes)
        torch.testing.assert_close(first[key], second[key], rtol=1e-6, atol=1e-7, msg=key)
    other = ChoiceModel if model_class is SpanModel else SpanModel
    with pytest.raises(ExpmrcError, match=f"a fine-tuned {model_class.task} model; this script trains and predicts"):
        load_task_model(other, resolve_source(str(tmp_path)))


@pytest.mark.parametrize("kind", ["bert", "roberta", "deberta-v2"])
def test_span_loss_is_answer_plus_lambda_times_evidence_over_all_windows(kind):
    src, batch = batch_of(kind, "span")
    model, _ = load_task_model(SpanModel, src, LossSettings(0.5))
    model.eval()
    batch["evidence_start"][0] = batch["evidence_end"][0] = IGNORE  # counts zero, still divides by every window
    with torch.no_grad():
        out = model(**batch)
    rows = batch["input_ids"].shape[0]
    ce = lambda logits, labels: F.cross_entropy(logits, labels, ignore_index=IGNORE, reduction="sum") / rows  # noqa: E731
    answer = (ce(out["start_logits"], batch["start_positions"]) + ce(out["end_logits"], batch["end_positions"])) / 2
    evidence = (ce(out["evidence_start_logits"], batch["evidence_start"])
                + ce(out["evidence_end_logits"], batch["evidence_end"])) / 2
    assert torch.allclose(out["loss"], answer + 0.5 * evidence, atol=1e-6)
    # positions outside the passage and its null position can never be chosen
    outside = (batch["passage_mask"] == 0)
    assert (out["start_logits"][outside] == MASKED).all() and (out["evidence_end_logits"][outside] == MASKED).all()


@pytest.mark.parametrize("kind", ["bert", "xlm-roberta"])
def test_choice_padding_of_options_and_length_changes_nothing_and_masks_padded_options(kind):
    src, batch = batch_of(kind, "choice")
    model, _ = load_task_model(ChoiceModel, src, LossSettings(1.0))
    model.eval()
    with torch.no_grad():
        out = model(**batch)
        assert (out["option_logits"][batch["option_mask"] == 0] == MASKED).all()
        longer = {k: v for k, v in batch.items()}
        pad = src.tokenizer.pad_token_id
        longer["input_ids"] = F.pad(batch["input_ids"], (0, 5), value=pad)
        for key in ("attention_mask", "passage_mask") + (("token_type_ids",) if "token_type_ids" in batch else ()):
            longer[key] = F.pad(batch[key], (0, 5))
        again = model(**longer)
    assert torch.allclose(out["option_logits"], again["option_logits"], atol=1e-5)
    assert torch.allclose(out["loss"], again["loss"], atol=1e-5)
    all_ignored = {**batch, "evidence_start": torch.full_like(batch["evidence_start"], IGNORE),
                   "evidence_end": torch.full_like(batch["evidence_end"], IGNORE)}
    with torch.no_grad():
        answer_only = model(**all_ignored)["loss"]
    expected = F.cross_entropy(out["option_logits"], batch["labels"], reduction="sum") / batch["labels"].shape[0]
    assert torch.isfinite(answer_only) and torch.allclose(answer_only, expected, atol=1e-6)


def test_the_loss_settings_are_given_at_construction_and_never_changed():
    model = SpanModel(source("bert").config, loss=LossSettings(0.3, True, (1.0, 2.0, 3.0)))
    assert (model.loss_lambda, model.coupling) == (0.3, (1.0, 2.0, 3.0))
    with pytest.raises(AttributeError):
        model.loss_lambda = 1.0
    with pytest.raises(ExpmrcError, match="--coupling_c2 must be a finite number of at least 0, got nan"):
        LossSettings(0.1, True, (1.0, float("nan"), 3.0)).checked()
