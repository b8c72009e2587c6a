"""Original TensorFlow BERT releases (BERT, BERT-wwm, MacBERT) as PyTorch `transformers.BertModel` weights.

`load_tf_bert_state_dict` maps every encoder variable of a checkpoint (`bert/embeddings/...`,
`bert/encoder/layer_N/...`, `bert/pooler/...`) to the state-dict key of `BertModel`, transposing dense
kernels (TensorFlow stores them [in, out], torch.nn.Linear [out, in]). The pre-training heads (`cls/...`),
Adam slots and `global_step` are ignored; anything else is reported as unused and every expected weight
that is absent as missing. `convert_tf_checkpoint` writes a Hugging Face folder once so that later runs
load it directly.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field

import numpy as np
import torch
from transformers import BertConfig, BertModel, BertTokenizer

from expmrc.data.io import atomic_directory, read_json, write_json_atomic
from expmrc.errors import ExpmrcError
from expmrc.models.configs import build_config
from expmrc.models.tf_bundle import TFCheckpoint, resolve_prefix

IGNORED_PREFIXES = ("cls/",)
IGNORED_SUFFIXES = ("/adam_m", "/adam_v", "/Adam", "/Adam_1")
IGNORED_NAMES = ("global_step", "beta1_power", "beta2_power")


@dataclass
class TFLoadReport:
    """What happened to each variable: mapped (TF name -> state-dict key), missing, unused, ignored."""

    checkpoint: str
    mapped: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line for logs: counts, and the names of missing and unused variables."""
        text = (f"{self.checkpoint}: {len(self.mapped)} variables mapped, {len(self.ignored)} ignored "
                f"(pre-training heads, optimizer slots, global_step)")
        if self.missing:
            text += f"; MISSING from the checkpoint: {', '.join(self.missing)}"
        if self.unused:
            text += f"; UNUSED checkpoint variables: {', '.join(self.unused)}"
        return text

    def __str__(self) -> str:
        return self.summary()

    def as_dict(self) -> dict:
        """A JSON-ready record (kept beside a converted model)."""
        return {"checkpoint": self.checkpoint, "mapped": self.mapped, "missing": self.missing,
                "unused": self.unused, "ignored": self.ignored}


def bert_variable_map(num_layers: int) -> dict[str, tuple[str, bool]]:
    """TensorFlow variable name -> (BertModel state-dict key, whether to transpose), for every weight."""
    names: dict[str, tuple[str, bool]] = {
        "bert/embeddings/word_embeddings": ("embeddings.word_embeddings.weight", False),
        "bert/embeddings/position_embeddings": ("embeddings.position_embeddings.weight", False),
        "bert/embeddings/token_type_embeddings": ("embeddings.token_type_embeddings.weight", False),
        "bert/embeddings/LayerNorm/gamma": ("embeddings.LayerNorm.weight", False),
        "bert/embeddings/LayerNorm/beta": ("embeddings.LayerNorm.bias", False),
    }
    for i in range(num_layers):
        tf_layer, pt_layer = f"bert/encoder/layer_{i}", f"encoder.layer.{i}"
        dense = ["attention/self/query", "attention/self/key", "attention/self/value",
                 "attention/output/dense", "intermediate/dense", "output/dense"]
        for scope in dense:
            key = f"{pt_layer}.{scope.replace('/', '.')}"
            names[f"{tf_layer}/{scope}/kernel"] = (f"{key}.weight", True)
            names[f"{tf_layer}/{scope}/bias"] = (f"{key}.bias", False)
        for scope in ("attention/output/LayerNorm", "output/LayerNorm"):
            key = f"{pt_layer}.{scope.replace('/', '.')}"
            names[f"{tf_layer}/{scope}/gamma"] = (f"{key}.weight", False)
            names[f"{tf_layer}/{scope}/beta"] = (f"{key}.bias", False)
    names["bert/pooler/dense/kernel"] = ("pooler.dense.weight", True)
    names["bert/pooler/dense/bias"] = ("pooler.dense.bias", False)
    return names


def expected_shapes(config) -> dict[str, tuple[int, ...]]:
    """The shape of every BertModel weight for a `transformers.BertConfig` (torch layout)."""
    h, inter = config.hidden_size, config.intermediate_size
    shapes: dict[str, tuple[int, ...]] = {
        "embeddings.word_embeddings.weight": (config.vocab_size, h),
        "embeddings.position_embeddings.weight": (config.max_position_embeddings, h),
        "embeddings.token_type_embeddings.weight": (config.type_vocab_size, h),
        "pooler.dense.weight": (h, h),
    }
    for i in range(config.num_hidden_layers):
        shapes[f"encoder.layer.{i}.intermediate.dense.weight"] = (inter, h)
        shapes[f"encoder.layer.{i}.intermediate.dense.bias"] = (inter,)
        shapes[f"encoder.layer.{i}.output.dense.weight"] = (h, inter)
        for name in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            shapes[f"encoder.layer.{i}.{name}.weight"] = (h, h)
    for _, (key, _) in bert_variable_map(config.num_hidden_layers).items():
        shapes.setdefault(key, (h,))  # biases and LayerNorm parameters
    return shapes


TF_LAYER = re.compile(r"/layer_(\d+)/")


def is_ignored(name: str) -> bool:
    """True for variables a fine-tuning model never uses: pre-training heads, optimizer state, step counter."""
    return name.startswith(IGNORED_PREFIXES) or name.endswith(IGNORED_SUFFIXES) or name in IGNORED_NAMES


def load_tf_bert_state_dict(ckpt_prefix: str, config) -> tuple[dict, TFLoadReport]:
    """Read a TensorFlow BERT checkpoint into a `BertModel` state dict (float32 tensors) and a report.

    A variable whose shape disagrees with `config`, or encoder layers beyond its `num_hidden_layers`
    (which would be dropped), stop the load with one line.
    """
    checkpoint = TFCheckpoint(ckpt_prefix)
    report = TFLoadReport(checkpoint=checkpoint.prefix)
    mapping = bert_variable_map(config.num_hidden_layers)
    shapes = expected_shapes(config)
    state_dict: dict[str, torch.Tensor] = {}
    for name, entry in checkpoint.entries.items():
        if name not in mapping:
            (report.ignored if is_ignored(name) else report.unused).append(name)
            continue
        key, transpose = mapping[name]
        tf_shape = tuple(reversed(shapes[key])) if transpose else shapes[key]
        if entry.shape != tf_shape:
            raise ExpmrcError(f"{checkpoint.index_path}: variable {name} has shape {list(entry.shape)} but the "
                              f"config implies {list(tf_shape)} (wrong bert_config.json for this checkpoint?)")
        if not entry.dtype.startswith(("float", "bfloat")):
            raise ExpmrcError(f"{checkpoint.index_path}: variable {name} has dtype {entry.dtype}, expected a float type")
        value = checkpoint.read(name).astype(np.float32, copy=False)
        if transpose:
            value = np.ascontiguousarray(value.T)
        state_dict[key] = torch.from_numpy(value)
        report.mapped[name] = key
    found = set(report.mapped)
    report.missing = [key for name, (key, _) in mapping.items() if name not in found]
    extra = sorted({int(m.group(1)) for name in report.unused if (m := TF_LAYER.search(name))})
    if extra:
        raise ExpmrcError(f"{checkpoint.index_path}: the checkpoint has {extra[-1] + 1} encoder layers but the config's "
                          f"num_hidden_layers is {config.num_hidden_layers}; loading it would drop layers")
    return state_dict, report


def read_bert_config(path: str):
    """A `transformers.BertConfig` from an original `bert_config.json` (same field names)."""
    raw = read_json(path, "BERT config file")
    required = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                "max_position_embeddings", "type_vocab_size")
    if not isinstance(raw, dict):
        raise ExpmrcError(f"{path}: BERT config must be a JSON object")
    absent = [k for k in required if not isinstance(raw.get(k), int)]
    if absent:
        raise ExpmrcError(f"{path}: BERT config lacks integer field(s) {', '.join(absent)}")
    return build_config(path, lambda: BertConfig(**raw))


def read_vocab(path: str) -> dict[str, int]:
    """A BERT vocab.txt as token -> id, as the original `load_vocab` reads it; every vocab.txt is read here.

    The id is the line number (a line ends at a newline character only), the token the line stripped of
    surrounding whitespace; a token listed twice keeps the id of its last line, as later lines overwrite.
    """
    try:
        with open(path, encoding="utf-8", newline="\n") as handle:
            tokens = [line.strip() for line in handle]
    except FileNotFoundError:
        raise ExpmrcError(f"{path}: vocabulary file not found") from None
    except OSError as exc:
        raise ExpmrcError(f"{path}: cannot read the vocabulary ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise ExpmrcError(f"{path}: vocabulary file is not UTF-8 text") from None
    if not tokens:
        raise ExpmrcError(f"{path}: vocabulary file is empty")
    return {token: index for index, token in enumerate(tokens)}


def bert_tokenizer_from_vocab(vocab_file: str, do_lower_case: bool, model_max_length: int = 512):
    """A `transformers.BertTokenizer` over an original `vocab.txt`.

    (transformers 5 silently ignores `vocab_file=`; the vocabulary must be passed as a dict.)
    """
    vocab = read_vocab(vocab_file)
    absent = [t for t in ("[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]") if t not in vocab]
    if absent:
        raise ExpmrcError(f"{vocab_file}: vocabulary lacks the special token(s) {', '.join(absent)}")
    return BertTokenizer(vocab=vocab, do_lower_case=do_lower_case, model_max_length=model_max_length)


@dataclass(frozen=True)
class ReleaseFiles:
    """The three parts of an original BERT release."""

    bert_config_file: str
    vocab_file: str
    init_checkpoint: str


def find_release_files(tf_dir: str, bert_config_file: str | None = None, vocab_file: str | None = None,
                       init_checkpoint: str | None = None) -> ReleaseFiles:
    """Locate `bert_config.json`, `vocab.txt` and the checkpoint prefix in a release folder (overridable)."""
    if not os.path.isdir(tf_dir):
        raise ExpmrcError(f"{tf_dir}: not a folder (expected an unpacked TensorFlow BERT release)")
    config = bert_config_file or os.path.join(tf_dir, "bert_config.json")
    vocab = vocab_file or os.path.join(tf_dir, "vocab.txt")
    for path, flag in ((config, "--bert-config-file"), (vocab, "--vocab-file")):
        if not os.path.isfile(path):
            raise ExpmrcError(f"{path}: not found (name the file with {flag})")
    return ReleaseFiles(config, vocab, resolve_prefix(init_checkpoint or tf_dir))


def convert_tf_checkpoint(tf_dir: str, output_dir: str, do_lower_case: bool = True, overwrite: bool = False,
                          allow_missing: bool = False, bert_config_file: str | None = None,
                          vocab_file: str | None = None, init_checkpoint: str | None = None) -> TFLoadReport:
    """Write a Hugging Face folder (config.json, model.safetensors, vocab.txt, tokenizer files) from a release.

    The folder is built under a hidden name beside `output_dir` and renamed into place (data/io.py's
    atomic_directory), so a failed or interrupted run leaves nothing behind and a killed one's leftover is
    removed by the next conversion to the same folder.
    """
    files = find_release_files(tf_dir, bert_config_file, vocab_file, init_checkpoint)
    if os.path.exists(output_dir) and (not os.path.isdir(output_dir) or os.listdir(output_dir)) and not overwrite:
        raise ExpmrcError(f"{output_dir}: already exists and is not empty (pass --overwrite to replace it)")
    config = read_bert_config(files.bert_config_file)
    tokenizer = bert_tokenizer_from_vocab(files.vocab_file, do_lower_case, config.max_position_embeddings)
    ids = max(tokenizer.get_vocab().values()) + 1  # ids are line numbers: a repeated token leaves a gap
    if ids != config.vocab_size:
        raise ExpmrcError(f"{files.vocab_file}: {ids} lines but the config says vocab_size {config.vocab_size}")
    state_dict, report = load_tf_bert_state_dict(files.init_checkpoint, config)
    if report.missing and not allow_missing:
        raise ExpmrcError(f"{report.checkpoint}: {len(report.missing)} weight(s) missing from the checkpoint: "
                          f"{', '.join(report.missing)} (pass --allow-missing to keep them randomly initialized)")
    model = BertModel(config, add_pooling_layer=True)
    model.load_state_dict(state_dict, strict=False)
    sources = [files.bert_config_file, files.vocab_file, files.init_checkpoint]
    with atomic_directory(output_dir, overwrite=overwrite, inputs=sources) as staging:
        model.save_pretrained(str(staging))
        tokenizer.save_pretrained(str(staging))
        shutil.copyfile(files.vocab_file, staging / "vocab.txt")
        write_json_atomic(str(staging / "conversion.json"),
                          {"source": {"bert_config_file": os.path.abspath(files.bert_config_file),
                                      "vocab_file": os.path.abspath(files.vocab_file),
                                      "init_checkpoint": os.path.abspath(files.init_checkpoint)},
                           "do_lower_case": do_lower_case, **report.as_dict()}, indent=1)
    return report

