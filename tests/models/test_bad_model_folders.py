"""A model folder's malformed parts are refused in one line naming the file and the real cause."""

import json

import pytest
from helpers.tiny_bert import make_tiny_bert_folder

from expmrc.errors import ExpmrcError
from expmrc.inference.rerun import torch_device
from expmrc.models.backbones import load_task_model, resolve_source
from expmrc.models.span import SpanModel


def load(folder):
    return load_task_model(SpanModel, resolve_source(str(folder)))


def edit_config(folder, **changes):
    config = json.loads((folder / "config.json").read_text())
    config.update(changes)
    (folder / "config.json").write_text(json.dumps(config))


@pytest.fixture
def folder(tmp_path):
    return make_tiny_bert_folder(tmp_path / "m")


def test_an_empty_vocab_is_refused(folder):
    (folder / "vocab.txt").write_text("")
    with pytest.raises(ExpmrcError, match="vocabulary is empty"):
        load(folder)


def test_a_truncated_weights_file_is_one_line(folder):
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(ExpmrcError, match="cannot read the weights file") as caught:
        load(folder)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("text, reason", [
    ('{"model_type": "bert", "x": ' + "[" * 100_000 + "]" * 100_000 + "}", "too deeply"),
    ('{"model_type": "bert", "x": ' + "[" * 150 + "]" * 150 + "}", "more than 100 levels"),
    ("[1, 2]", "must be a JSON object"),
    ('{"model_type": "bert", "layer_norm_eps": NaN}', "NaN"),
    ("", "empty"),
])
def test_a_malformed_config_is_one_line_naming_it(folder, text, reason):
    (folder / "config.json").write_text(text)
    with pytest.raises(ExpmrcError, match=reason) as caught:
        load(folder)
    assert str(caught.value).startswith(str(folder / "config.json"))


@pytest.mark.parametrize("eps", [0, -1e-12, 1e308, True])
def test_a_layer_norm_eps_no_model_can_use_is_named(folder, eps):
    edit_config(folder, layer_norm_eps=eps)
    with pytest.raises(ExpmrcError, match="layer_norm_eps"):
        load(folder)


def test_wrong_shapes_are_given_with_names_and_shapes(folder):
    edit_config(folder, intermediate_size=40)
    with pytest.raises(ExpmrcError) as caught:
        load(folder)
    message = str(caught.value)
    assert "intermediate.dense" in message and "(64, 32) in the checkpoint, (40, 32) in the config" in message
    assert "above report" not in message


def test_a_file_given_as_model_folder_says_so(folder):
    with pytest.raises(ExpmrcError, match="is a file, not a model folder"):
        resolve_source(str(folder / "model.safetensors"))


@pytest.mark.parametrize("name, reason", [("bogus", "not a torch device"), ("meta", "meta device"),
                                          ("cuda:x", "not a torch device"), ("", "not a torch device")])
def test_bad_devices_are_one_line(name, reason):
    with pytest.raises(ExpmrcError, match=reason):
        torch_device(name)


def test_cuda_without_a_gpu_is_one_line():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ExpmrcError, match="no cuda device is available"):
        torch_device("cuda")
    assert torch_device("cpu").type == "cpu"
