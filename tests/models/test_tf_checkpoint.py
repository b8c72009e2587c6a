"""The TensorFlow checkpoint reader and BERT conversion, against a tiny BERT that real TensorFlow saved.

tests/fixtures/tiny_tf_bert/ was written by tests/fixtures/make_tiny_tf_bert.py (TensorFlow 2.21,
tf.compat.v1.train.Saver, format V2); expected.json holds that script's exact per-variable checksums
and the output of a BERT forward pass it computed with TensorFlow ops.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from helpers.common import FIXTURES
import torch
import transformers

from expmrc.cli import main as cli_main
from expmrc.errors import ExpmrcError
from expmrc.models.tf_bundle import TFCheckpoint, crc32c, crc32c_numpy, mask_crc, read_table, unmask_crc
from expmrc.models.tf_checkpoint import (
    bert_variable_map,
    convert_tf_checkpoint,
    load_tf_bert_state_dict,
    read_bert_config,
)

FIXTURE = FIXTURES / "tiny_tf_bert"
PREFIX = str(FIXTURE / "bert_model.ckpt")
EXPECTED = json.loads((FIXTURE / "expected.json").read_text(encoding="utf-8"))


def reference_crc32c(data: bytes) -> int:
    """Bit-by-bit CRC-32C, the textbook definition, to check the fast one against."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def write_table(path: Path, items: list[tuple[bytes, bytes]], per_block: int = 5, restart_interval: int = 2,
                block_type: int = 0) -> None:
    """A LevelDB-format table written independently of the reader (small blocks, so several of them)."""
    out = bytearray()

    def block(entries: list[tuple[bytes, bytes]], kind: int) -> bytes:
        body, restarts, previous = bytearray(), [], b""
        for i, (key, value) in enumerate(entries):
            shared = 0
            if i % restart_interval:
                while shared < min(len(key), len(previous)) and key[shared] == previous[shared]:
                    shared += 1
            if shared == 0:
                restarts.append(len(body))
            body += varint(shared) + varint(len(key) - shared) + varint(len(value)) + key[shared:] + value
            previous = key
        restarts = restarts or [0]
        body += b"".join(r.to_bytes(4, "little") for r in restarts) + len(restarts).to_bytes(4, "little")
        handle = varint(len(out)) + varint(len(body))
        trailer = bytes([kind]) + mask_crc(crc32c(bytes(body) + bytes([kind]))).to_bytes(4, "little")
        out.extend(body + trailer)
        return handle

    index = [(items[i:i + per_block][-1][0], block(items[i:i + per_block], block_type))
             for i in range(0, len(items), per_block)]
    metaindex = block([], 0)
    index_handle = block(index, 0)
    footer = (metaindex + index_handle).ljust(40, b"\0") + (0xDB4775248B80FB57).to_bytes(8, "little")
    path.write_bytes(bytes(out) + footer)


def doctored_release(tmp_path: Path, edit) -> Path:
    """A copy of the fixture release whose index entries went through `edit(list of (key, value))`."""
    folder = tmp_path / "release"
    shutil.copytree(FIXTURE, folder)
    items = edit(read_table(PREFIX + ".index"))
    write_table(folder / "bert_model.ckpt.index", items)
    return folder


def config(**overrides):
    cfg = read_bert_config(str(FIXTURE / "bert_config.json"))
    for key, value in overrides.items():
        setattr(cfg, key, value)
    return cfg


def run_cli(*argv: str) -> int:
    return cli_main(["convert-checkpoint", *argv])


# ------------------------------------------------------------------ the format reader

@pytest.mark.parametrize("implementation", [crc32c, crc32c_numpy], ids=["default", "numpy-fallback"])
def test_crc32c_matches_the_standard_check_value_and_a_bitwise_reference(implementation):
    assert implementation(b"123456789") == 0xE3069283  # the CRC-32C check value
    rng = np.random.default_rng(7)
    for size in (0, 1, 63, 32767, 40001, 300_000):
        data = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
        expected = reference_crc32c(data) if size <= 40001 else crc32c_numpy(data)
        fast = implementation(data)
        assert fast == expected, size
        assert implementation(data[size // 3:], implementation(data[: size // 3])) == fast, size  # continuation
        assert implementation(memoryview(data)) == fast, size
    assert unmask_crc(mask_crc(0x12345678)) == 0x12345678
    assert mask_crc(0) == 0xA282EAD8


def test_reader_returns_exactly_the_values_tensorflow_saved():
    checkpoint = TFCheckpoint(PREFIX)
    assert checkpoint.num_shards == 1
    assert sorted(checkpoint.entries) == sorted(EXPECTED["variables"])
    for name, want in EXPECTED["variables"].items():
        value = checkpoint.read(name)
        assert str(value.dtype) == want["dtype"] and list(value.shape) == want["shape"], name
        flat = value.astype(np.float64).ravel()
        assert math.fsum(flat.tolist()) == want["sum"], name
        assert math.fsum((flat * ((np.arange(flat.size) % 13) - 6)).tolist()) == want["weighted_sum"], name
    assert int(checkpoint.read("global_step")) == 123456


def test_entry_checksum_is_the_masked_crc32c_of_the_tensor_bytes():
    checkpoint = TFCheckpoint(PREFIX)
    entry = checkpoint.entries["bert/embeddings/word_embeddings"]
    raw = (FIXTURE / "bert_model.ckpt.data-00000-of-00001").read_bytes()[entry.offset:entry.offset + entry.size]
    assert entry.masked_crc32c == mask_crc(crc32c(raw))
    assert entry.masked_crc32c != crc32c(raw)


def test_prefix_can_be_given_as_folder_index_or_data_file():
    for given in (FIXTURE, PREFIX + ".index", PREFIX + ".data-00000-of-00001", PREFIX):
        assert TFCheckpoint(str(given)).prefix.endswith("bert_model.ckpt")


def test_reader_handles_tables_of_many_blocks_and_restart_points(tmp_path):
    folder = doctored_release(tmp_path, lambda items: items)
    checkpoint = TFCheckpoint(str(folder / "bert_model.ckpt"))
    original = TFCheckpoint(PREFIX)
    assert checkpoint.entries == original.entries
    assert np.array_equal(checkpoint.read("bert/pooler/dense/kernel"), original.read("bert/pooler/dense/kernel"))


# ------------------------------------------------------------------ mapping onto BertModel

def test_every_variable_is_mapped_and_only_pretraining_state_is_ignored():
    state_dict, report = load_tf_bert_state_dict(PREFIX, config())
    model = transformers.BertModel(config())
    assert set(state_dict) == set(model.state_dict())
    assert report.missing == [] and report.unused == []
    assert len(report.mapped) == len(bert_variable_map(2)) == 39
    assert sorted(report.ignored) == sorted(
        n for n in EXPECTED["variables"] if n.startswith("cls/") or n.endswith(("adam_m", "adam_v")) or n == "global_step")
    checkpoint = TFCheckpoint(PREFIX)
    kernel = checkpoint.read("bert/encoder/layer_1/intermediate/dense/kernel")  # [hidden, intermediate]
    assert torch.equal(state_dict["encoder.layer.1.intermediate.dense.weight"], torch.from_numpy(kernel.T.copy()))
    assert torch.equal(state_dict["embeddings.LayerNorm.weight"],
                       torch.from_numpy(checkpoint.read("bert/embeddings/LayerNorm/gamma")))


def loaded_model() -> transformers.BertModel:
    state_dict, _ = load_tf_bert_state_dict(PREFIX, config())
    model = transformers.BertModel(config())
    model.load_state_dict(state_dict, strict=True)
    return model.eval()


def forward(model) -> tuple[torch.Tensor, torch.Tensor]:
    inputs = {k: torch.tensor(v) for k, v in EXPECTED["inputs"].items()}
    with torch.no_grad():
        out = model(**inputs)
    return out.last_hidden_state, out.pooler_output


def test_loaded_model_reproduces_the_tensorflow_forward_pass():
    sequence, pooled = forward(loaded_model())
    assert torch.allclose(sequence, torch.tensor(EXPECTED["sequence_output"], dtype=torch.float32), atol=1e-5)
    assert torch.allclose(pooled, torch.tensor(EXPECTED["pooled_output"], dtype=torch.float32), atol=1e-5)


def test_convert_checkpoint_writes_a_folder_giving_the_same_outputs(tmp_path, capsys):
    out = tmp_path / "hf"
    assert run_cli(str(FIXTURE), str(out)) == 0
    assert "39 variables mapped" in capsys.readouterr().err
    for name in ("config.json", "model.safetensors", "vocab.txt", "tokenizer.json", "tokenizer_config.json"):
        assert (out / name).is_file(), name
    converted = transformers.BertModel.from_pretrained(str(out)).eval()
    for got, want in zip(forward(converted), forward(loaded_model())):
        assert torch.equal(got, want)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(out))
    assert tokenizer.tokenize("The cats sat, unable 的一") == ["the", "cat", "##s", "sat", ",", "un", "##able", "的", "一"]
    assert tokenizer("who", "the cat")["input_ids"] == [2, 18, 3, 5, 13, 3]
    record = json.loads((out / "conversion.json").read_text(encoding="utf-8"))
    assert record["missing"] == [] and record["unused"] == [] and len(record["mapped"]) == 39
    assert not [p for p in os.listdir(tmp_path) if "partial" in p]


def test_cased_conversion_keeps_case(tmp_path):
    convert_tf_checkpoint(str(FIXTURE), str(tmp_path / "hf"), do_lower_case=False)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "hf"))
    assert tokenizer.tokenize("The cat") == ["[UNK]", "cat"]


# ------------------------------------------------------------------ doctored variable sets

def test_missing_variable_is_reported_and_refused_unless_allowed(tmp_path, capsys):
    folder = doctored_release(tmp_path, lambda items: [kv for kv in items if kv[0] != b"bert/pooler/dense/bias"])
    _, report = load_tf_bert_state_dict(str(folder / "bert_model.ckpt"), config())
    assert report.missing == ["pooler.dense.bias"]
    assert str(report) == report.summary() and "MISSING from the checkpoint: pooler.dense.bias" in str(report)
    assert run_cli(str(folder), str(tmp_path / "hf")) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "pooler.dense.bias" in err and "missing" in err
    assert not (tmp_path / "hf").exists()
    assert run_cli(str(folder), str(tmp_path / "hf"), "--allow-missing") == 0
    assert "MISSING from the checkpoint: pooler.dense.bias" in capsys.readouterr().err


def test_unknown_variables_are_reported_as_unused(tmp_path):
    def add_extra(items):
        value = dict(items)[b"bert/pooler/dense/bias"]
        return sorted(items + [(b"bert/encoder/extra_gate/bias", value), (b"cls/squad/output_bias", value)])

    folder = doctored_release(tmp_path, add_extra)
    _, report = load_tf_bert_state_dict(str(folder / "bert_model.ckpt"), config())
    assert report.unused == ["bert/encoder/extra_gate/bias"]
    assert "cls/squad/output_bias" in report.ignored and report.missing == []
    with pytest.raises(ExpmrcError, match="has 2 encoder layers but the config's num_hidden_layers is 1; loading it "
                                          "would drop layers"):
        load_tf_bert_state_dict(PREFIX, config(num_hidden_layers=1))
    _, more_layers = load_tf_bert_state_dict(PREFIX, config(num_hidden_layers=3))
    assert len(more_layers.missing) == 16 and all(k.startswith("encoder.layer.2.") for k in more_layers.missing)


def test_a_config_with_fewer_layers_than_the_checkpoint_converts_nothing(tmp_path, capsys):
    folder = tmp_path / "release"
    shutil.copytree(FIXTURE, folder)
    raw = json.loads((folder / "bert_config.json").read_text())
    (folder / "bert_config.json").write_text(json.dumps({**raw, "num_hidden_layers": 1}))
    assert run_cli(str(folder), str(tmp_path / "hf")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "num_hidden_layers is 1" in err and "Traceback" not in err
    assert not (tmp_path / "hf").exists()


def test_shape_mismatch_is_one_line_naming_the_variable(tmp_path, capsys):
    with pytest.raises(ExpmrcError, match=r"layer_0/intermediate/dense/bias has shape \[37\] but the config implies \[36\]"):
        load_tf_bert_state_dict(PREFIX, config(intermediate_size=36))
    folder = tmp_path / "release"
    shutil.copytree(FIXTURE, folder)
    raw = json.loads((folder / "bert_config.json").read_text())
    (folder / "bert_config.json").write_text(json.dumps({**raw, "max_position_embeddings": 128}))
    assert run_cli(str(folder), str(tmp_path / "hf")) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "position_embeddings" in err


# ------------------------------------------------------------------ damaged files

def damaged_release(tmp_path: Path, filename: str, damage) -> Path:
    folder = tmp_path / "release"
    shutil.copytree(FIXTURE, folder)
    path = folder / filename
    path.write_bytes(damage(path.read_bytes()))
    return folder


def flip(data: bytes, position: int) -> bytes:
    return data[:position] + bytes([data[position] ^ 0x40]) + data[position + 1:]


INDEX, DATA = "bert_model.ckpt.index", "bert_model.ckpt.data-00000-of-00001"


@pytest.mark.parametrize("filename, damage, message", [
    (INDEX, lambda d: d[:-10], "no table footer"),
    (INDEX, lambda d: d[:20], "no table footer"),
    (INDEX, lambda d: flip(d, 40), "checksum mismatch in the block at byte 0 (corrupt index)"),
    (DATA, lambda d: d[:50_000], "ends past the end of the file (truncated data file)"),
    (DATA, lambda d: flip(d, 1000), "checksum mismatch for variable"),
    (DATA, lambda d: b"", "ends past the end of the file"),
])
def test_damaged_checkpoint_is_one_clear_line(tmp_path, capsys, filename, damage, message):
    folder = damaged_release(tmp_path, filename, damage)
    assert run_cli(str(folder), str(tmp_path / "hf")) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err, err
    assert filename in err
    assert not (tmp_path / "hf").exists()


def test_missing_data_file_and_compressed_index_are_refused(tmp_path):
    folder = tmp_path / "release"
    shutil.copytree(FIXTURE, folder)
    os.remove(folder / DATA)
    with pytest.raises(ExpmrcError, match="data-00000-of-00001: checkpoint data file not found"):
        load_tf_bert_state_dict(str(folder / "bert_model.ckpt"), config())
    compressed = tmp_path / "compressed.index"
    write_table(compressed, read_table(PREFIX + ".index"), block_type=1)
    with pytest.raises(ExpmrcError, match="Snappy-compressed blocks, which this reader does not support"):
        read_table(str(compressed))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ExpmrcError, match="expected one TensorFlow checkpoint .* found none"):
        TFCheckpoint(str(tmp_path / "empty"))
