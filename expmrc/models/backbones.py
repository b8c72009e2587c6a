"""Loading a BERT-architecture encoder and its WordPiece tokenizer from wherever the user keeps it.

Three sources, as the original scripts and Hugging Face users have them:
- `--model_name_or_path DIR`: a Hugging Face folder (config.json, vocab.txt or tokenizer.json,
  model.safetensors or pytorch_model.bin), including folders this project's training writes;
- `--bert_config_file --vocab_file --init_checkpoint`: an original release, where the checkpoint is
  a TensorFlow prefix (`bert_model.ckpt`, read by `expmrc.models.tf_checkpoint`), a PyTorch/safetensors
  weights file, or a Hugging Face folder;
- the config and vocabulary alone (no checkpoint): random weights, for tests and benchmarks.
Weights are matched to `transformers.BertModel` names; whatever else the file holds (pre-training
heads, or the task heads of a fine-tuned folder) is reported and handed back in `extra_state`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from expmrc.errors import ExpmrcError

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
ENCODER_PREFIXES = ("bert.", "model.", "encoder_model.")
# Buffers that older checkpoints store but current BertModel recomputes; never worth reporting.
_IGNORED_BUFFERS = ("embeddings.position_ids", "embeddings.token_type_ids")


@dataclass
class ModelSource:
    """Where the config, vocabulary and weights of an encoder are, resolved from the flags."""

    config_file: str
    vocab_file: str | None  # None: the folder has tokenizer.json only
    tokenizer_dir: str | None
    weights: str | None  # file, TensorFlow prefix, or None for random weights
    weights_kind: str  # "safetensors" | "torch" | "tf" | "none"
    description: str  # what to write into run_info.json as the model


@dataclass
class LoadReport:
    """What loading matched: encoder weights the file lacked, and file entries the encoder did not use."""

    missing: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)
    converter_note: str = ""  # what the TensorFlow checkpoint reader reported, if one was read

    def summary(self) -> str:
        """One line for the log."""
        def names(keys: list[str]) -> str:
            return ", ".join(keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")

        parts = []
        if self.missing:
            parts.append(f"{len(self.missing)} encoder weights not in the checkpoint (left random): {names(self.missing)}")
        if self.unused:
            parts.append(f"{len(self.unused)} checkpoint entries not used by the encoder: {names(self.unused)}")
        if self.converter_note:
            parts.append(f"TensorFlow checkpoint: {self.converter_note}")
        return "; ".join(parts) if parts else "every encoder weight loaded, nothing left over"


@dataclass
class Encoder:
    """A loaded encoder: the BertModel, its tokenizer and config, and checkpoint entries beyond the encoder."""

    model: Any  # transformers.BertModel
    tokenizer: Any  # transformers.BertTokenizer (fast, with offsets)
    config: Any  # transformers.BertConfig
    source: ModelSource
    report: LoadReport
    extra_state: dict[str, Any] = field(default_factory=dict)  # e.g. answer_head.weight of a fine-tuned folder


def resolve_model_source(
    model_name_or_path: str | None = None,
    bert_config_file: str | None = None,
    vocab_file: str | None = None,
    init_checkpoint: str | None = None,
) -> ModelSource:
    """Check the flags name a complete model, and say in one line which file is missing if not."""
    if model_name_or_path:
        if bert_config_file or vocab_file:
            raise ExpmrcError("give either --model_name_or_path or --bert_config_file/--vocab_file, not both")
        folder = Path(model_name_or_path)
        if not folder.is_dir():
            raise ExpmrcError(f"{model_name_or_path}: model folder not found (--model_name_or_path must be a local folder)")
        config_file = folder / "config.json"
        if not config_file.is_file():
            raise ExpmrcError(f"{model_name_or_path}: model folder has no config.json")
        vocab, tokenizer_dir = _folder_vocab(folder)
        if init_checkpoint:
            weights, kind = _checkpoint_weights(init_checkpoint)
        else:
            weights, kind = _folder_weights(folder)
        return ModelSource(str(config_file), vocab, tokenizer_dir, weights, kind, str(model_name_or_path))
    if not bert_config_file or not vocab_file:
        raise ExpmrcError(
            "no model given: pass --model_name_or_path DIR, or --bert_config_file and --vocab_file "
            "(with --init_checkpoint for pretrained weights)"
        )
    for path, flag in ((bert_config_file, "--bert_config_file"), (vocab_file, "--vocab_file")):
        if not Path(path).is_file():
            raise ExpmrcError(f"{path}: file given as {flag} not found")
    weights, kind = _checkpoint_weights(init_checkpoint) if init_checkpoint else (None, "none")
    return ModelSource(bert_config_file, vocab_file, None, weights, kind, init_checkpoint or bert_config_file)


def _folder_vocab(folder: Path) -> tuple[str | None, str | None]:
    if (folder / "vocab.txt").is_file():
        return str(folder / "vocab.txt"), None
    if (folder / "tokenizer.json").is_file():
        return None, str(folder)
    raise ExpmrcError(f"{folder}: model folder has no vocab.txt (nor tokenizer.json)")


def _folder_weights(folder: Path) -> tuple[str, str]:
    for name in WEIGHT_FILES:
        if (folder / name).is_file():
            return str(folder / name), "safetensors" if name.endswith(".safetensors") else "torch"
    raise ExpmrcError(f"{folder}: model folder has no {WEIGHT_FILES[0]} (nor {WEIGHT_FILES[1]})")


def _checkpoint_weights(init_checkpoint: str) -> tuple[str, str]:
    path = Path(init_checkpoint)
    if path.is_dir():
        return _folder_weights(path)
    if path.is_file():
        if path.suffix == ".safetensors":
            return str(path), "safetensors"
        if path.suffix == ".index":  # the user named the index file of a TensorFlow checkpoint
            return str(path.with_suffix("")), "tf"
        return str(path), "torch"
    if Path(f"{init_checkpoint}.index").is_file():
        return init_checkpoint, "tf"
    raise ExpmrcError(
        f"{init_checkpoint}: --init_checkpoint not found (expected a TensorFlow prefix with "
        f"{path.name}.index beside it, a weights file, or a model folder)"
    )


def load_bert_config(source: ModelSource) -> Any:
    """The BertConfig of a source; original `bert_config.json` files read the same way as HF ones."""
    from transformers import BertConfig

    try:
        raw = json.loads(Path(source.config_file).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ExpmrcError(f"{source.config_file}: cannot read the model config ({exc})") from None
    if not isinstance(raw, dict):
        raise ExpmrcError(f"{source.config_file}: model config must be a JSON object")
    for key in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size"):
        if key not in raw:
            raise ExpmrcError(f"{source.config_file}: model config lacks `{key}`")
    model_type = raw.get("model_type", "bert")
    if model_type != "bert":
        raise ExpmrcError(f"{source.config_file}: model_type {model_type!r} is not a BERT-architecture model")
    known = {k: v for k, v in raw.items() if k not in ("architectures", "model_type", "transformers_version")}
    return BertConfig(**known)


def load_tokenizer(source: ModelSource, do_lower_case: bool | None = None) -> Any:
    """A fast WordPiece tokenizer (character offsets need it); `do_lower_case` None takes the folder's setting."""
    from transformers import BertTokenizer

    if source.vocab_file is None:
        kwargs = {} if do_lower_case is None else {"do_lower_case": do_lower_case}
        return BertTokenizer.from_pretrained(source.tokenizer_dir, **kwargs)
    if do_lower_case is None:
        do_lower_case = _folder_lower_case(Path(source.vocab_file).parent)
    vocab = read_vocab(source.vocab_file)
    for token in ("[PAD]", "[UNK]", "[CLS]", "[SEP]"):
        if token not in vocab:
            raise ExpmrcError(f"{source.vocab_file}: vocabulary lacks the special token {token}")
    return BertTokenizer(vocab=vocab, do_lower_case=do_lower_case)


def _folder_lower_case(folder: Path) -> bool:
    """The folder's tokenizer_config.json `do_lower_case`, defaulting to True like the original flags."""
    config = folder / "tokenizer_config.json"
    if config.is_file():
        try:
            value = json.loads(config.read_text(encoding="utf-8")).get("do_lower_case", True)
            return bool(value)
        except (OSError, json.JSONDecodeError, AttributeError):
            return True
    return True


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


def read_weights(source: ModelSource, config: Any) -> tuple[dict[str, Any], str]:
    """The raw state dict of a source's weights (names as stored) and, for TensorFlow, the reader's report."""
    if source.weights_kind == "none":
        return {}, ""
    if source.weights_kind == "tf":
        try:
            from expmrc.models.tf_checkpoint import load_tf_bert_state_dict
        except ImportError:
            raise ExpmrcError(
                f"{source.weights}: is a TensorFlow checkpoint, but this copy of expmrc has no TensorFlow "
                "checkpoint reader (expmrc.models.tf_checkpoint); convert it to a Hugging Face folder elsewhere"
            ) from None
        state, tf_report = load_tf_bert_state_dict(source.weights, config)
        return state, str(tf_report)
    if source.weights_kind == "safetensors":
        from safetensors.torch import load_file

        try:
            return load_file(source.weights), ""
        except Exception as exc:  # safetensors raises its own error types for corrupt files
            raise ExpmrcError(f"{source.weights}: cannot read safetensors weights ({exc})") from None
    import torch

    try:
        state = torch.load(source.weights, map_location="cpu", weights_only=True)
    except Exception as exc:  # pickle and zip errors vary by torch version
        raise ExpmrcError(f"{source.weights}: cannot read PyTorch weights ({exc})") from None
    if isinstance(state, dict) and "model" in state and isinstance(state["model"], dict):
        state = state["model"]
    if not isinstance(state, dict):
        raise ExpmrcError(f"{source.weights}: does not hold a state dict")
    return state, ""


def split_encoder_state(state: dict[str, Any], encoder_keys: set[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split a state dict into encoder weights (prefix `bert.` etc. removed) and everything else."""
    encoder, extra = {}, {}
    for name, tensor in state.items():
        bare = name
        for prefix in ENCODER_PREFIXES:
            if name.startswith(prefix) and name[len(prefix):] in encoder_keys:
                bare = name[len(prefix):]
                break
        if bare in encoder_keys:
            encoder[bare] = tensor
        elif not bare.endswith(_IGNORED_BUFFERS):
            extra[name] = tensor
    return encoder, extra


def load_encoder(
    model_name_or_path: str | None = None,
    bert_config_file: str | None = None,
    vocab_file: str | None = None,
    init_checkpoint: str | None = None,
    do_lower_case: bool | None = None,
    add_pooling_layer: bool = True,
) -> Encoder:
    """Build a BertModel with pretrained weights and its tokenizer; shapes that differ are refused."""
    from transformers import BertModel

    source = resolve_model_source(model_name_or_path, bert_config_file, vocab_file, init_checkpoint)
    config = load_bert_config(source)
    tokenizer = load_tokenizer(source, do_lower_case)
    if len(tokenizer) > config.vocab_size:
        raise ExpmrcError(
            f"{source.vocab_file or source.tokenizer_dir}: vocabulary has {len(tokenizer)} tokens but the "
            f"model config says vocab_size {config.vocab_size}"
        )
    model = BertModel(config, add_pooling_layer=add_pooling_layer)
    own = model.state_dict()
    state, converter_note = read_weights(source, config)
    encoder_state, extra = split_encoder_state(state, set(own))
    for name, tensor in encoder_state.items():
        if tuple(tensor.shape) != tuple(own[name].shape):
            raise ExpmrcError(
                f"{source.weights}: weight {name} has shape {tuple(tensor.shape)} but the config "
                f"({source.config_file}) needs {tuple(own[name].shape)}"
            )
    report = LoadReport(unused=sorted(extra), converter_note=converter_note)
    if source.weights_kind != "none":
        result = model.load_state_dict(encoder_state, strict=False)
        report.missing = sorted(k for k in result.missing_keys if not k.endswith(_IGNORED_BUFFERS))
    return Encoder(model, tokenizer, config, source, report, extra)


def save_model_folder(out_dir: str, state_dict: dict[str, Any], config: Any, tokenizer: Any,
                      extra_config: dict[str, Any] | None = None) -> None:
    """Write a Hugging Face-format folder (config.json, model.safetensors, vocab.txt), atomically."""
    import tempfile

    from safetensors.torch import save_file

    target = Path(out_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        config_dict = config.to_dict()
        if extra_config:
            config_dict["expmrc"] = extra_config
        (tmp / "config.json").write_text(json.dumps(config_dict, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
                                         encoding="utf-8")
        save_file({k: v.detach().cpu().contiguous() for k, v in state_dict.items()}, str(tmp / "model.safetensors"))
        by_id = {index: token for token, index in tokenizer.get_vocab().items()}
        lines = [by_id.get(i, f"[unused_gap{i}]") for i in range(max(by_id) + 1)]  # ids are line numbers
        (tmp / "vocab.txt").write_text("".join(f"{token}\n" for token in lines), encoding="utf-8")
        lower = bool(getattr(tokenizer, "do_lower_case", True))
        (tmp / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": lower}) + "\n", encoding="utf-8")
        if target.exists():
            old = target.with_name(f".{target.name}.old{os.getpid()}")
            os.replace(target, old)
            os.replace(tmp, target)
            _remove_tree(old)
        else:
            os.replace(tmp, target)
    finally:
        if tmp.exists():
            _remove_tree(tmp)


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
