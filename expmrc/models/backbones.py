"""Where an encoder comes from, resolved into one `ModelSource`, and the task model the library builds on it.

Sources, as researchers keep their models:
- `--model_name_or_path` a local folder, or a Hugging Face Hub id (downloaded and cached by
  `huggingface_hub`; with `HF_HUB_OFFLINE=1` only what is cached): any architecture the Auto classes
  know (BERT, RoBERTa, ELECTRA, DeBERTa-v2/v3, XLM-RoBERTa, ...), config and fast tokenizer from the
  same place, weights by `from_pretrained`;
- the original release's three flags, `--bert_config_file`, `--vocab_file` and `--init_checkpoint`:
  a BERT config, a WordPiece vocabulary, and weights from a TensorFlow checkpoint prefix (read without
  TensorFlow by `expmrc.models.tf_checkpoint`), a safetensors or PyTorch file, or a Hugging Face
  folder; without `--init_checkpoint`, random weights.
Every source ends in the same place: a config, a fast tokenizer (character offsets are needed) and
weights that `from_pretrained` loads into the task model, whose loading report is the library's own.

Casing comes from the tokenizer. A Hugging Face tokenizer keeps its own, and a `--do_lower_case`
that contradicts it is ignored with a warning; an original vocabulary is read as `--do_lower_case`
says (not given, None: False, the original scripts' default), with a warning when that cannot be
right (False with an uncased vocabulary: every capitalised word would be an unknown token).
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch
from safetensors.torch import load_file
from transformers import AutoConfig, AutoTokenizer, PretrainedConfig
from transformers.models.auto.modeling_auto import MODEL_MAPPING

from expmrc.data.io import read_json
from expmrc.errors import ExpmrcError
from expmrc.models.configs import build_config
from expmrc.models.tf_checkpoint import bert_tokenizer_from_vocab, load_tf_bert_state_dict, read_bert_config

if TYPE_CHECKING:
    from expmrc.models.heads import LossSettings, TaskModel

logger = logging.getLogger(__name__)
HUB_ID = re.compile(r"^[\w.-]+(/[\w.-]+)?$")
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")

@dataclass
class ModelSource:
    """A resolved model: what to record, its config and tokenizer, and its weights."""

    name: str  # what run_info.json records as the model
    config: PretrainedConfig
    tokenizer: Any
    weights: str | dict[str, torch.Tensor] | None  # folder or Hub id, an in-memory state dict, or None (random)
    note: str = ""  # what reading the weights reported (the TensorFlow reader's summary)


def lowercases(tokenizer: Any) -> bool:
    """Whether a fast tokenizer lowercases its input (read off its normalizer)."""
    normalizer = getattr(getattr(tokenizer, "backend_tokenizer", None), "normalizer", None)
    return normalizer is not None and normalizer.normalize_str("A") == "a"


def resolve_source(model_name_or_path: str | None = None, bert_config_file: str | None = None,
                   vocab_file: str | None = None, init_checkpoint: str | None = None,
                   do_lower_case: bool | None = None) -> ModelSource:
    """The model the flags name, checked in one line each: see the module docstring."""
    if model_name_or_path:
        if bert_config_file or vocab_file:
            raise ExpmrcError("give either --model_name_or_path or --bert_config_file/--vocab_file, not both")
        source = _pretrained(model_name_or_path)
        if init_checkpoint:
            source.weights, source.note = _checkpoint_weights(init_checkpoint, source.config)
            source.name = init_checkpoint
        if do_lower_case is not None and do_lower_case != lowercases(source.tokenizer):
            logger.warning(f"warning: --do_lower_case {do_lower_case} ignored: the tokenizer of {model_name_or_path} "
                           f"{'lowercases' if lowercases(source.tokenizer) else 'keeps case'}, and its vocabulary "
                           "was built that way")
        return source
    if not bert_config_file or not vocab_file:
        raise ExpmrcError("no model given: pass --model_name_or_path (a folder or a Hub id), or --bert_config_file "
                          "and --vocab_file (with --init_checkpoint for pretrained weights)")
    for path, flag in ((bert_config_file, "--bert_config_file"), (vocab_file, "--vocab_file")):
        if not Path(path).is_file():
            raise ExpmrcError(f"{path}: file given as {flag} not found")
    config = read_bert_config(bert_config_file)
    lower = bool(do_lower_case)  # None (not given): False, the original scripts' default
    tokenizer = bert_tokenizer_from_vocab(vocab_file, lower, config.max_position_embeddings)
    if len(tokenizer) > config.vocab_size:
        raise ExpmrcError(f"{vocab_file}: vocabulary has {len(tokenizer)} tokens but {bert_config_file} says "
                          f"vocab_size {config.vocab_size}")
    if not lower and not any(t.lower() != t for t in tokenizer.get_vocab() if not (t[:1] == "[" and t[-1:] == "]")):
        given = "is False" if do_lower_case is not None else "was not given and defaults to False as in the original scripts"
        logger.warning(f"warning: CASING MISMATCH: {vocab_file} is uncased (no word has an upper-case letter) but "
                       f"--do_lower_case {given}: every capitalised word will be an unknown token; "
                       "pass --do_lower_case True")
    weights, note = _checkpoint_weights(init_checkpoint, config) if init_checkpoint else (None, "")
    return ModelSource(init_checkpoint or bert_config_file, config, tokenizer, weights, note)


def check_model_folder(name: str) -> None:
    """Refuse, before anything is loaded or said, a --model_name_or_path that is a file, a folder that does not
    exist (a word that could be a Hub id is left to the Hub), or a folder whose config.json cannot be read."""
    local = Path(name).is_dir()
    if Path(name).exists() and not local:
        raise ExpmrcError(f"{name}: is a file, not a model folder (--model_name_or_path takes a folder or a Hub id; "
                          "a weights file goes to --init_checkpoint)")
    if not local and (not HUB_ID.match(name) or Path(name).exists() or name.startswith((".", "~"))):
        raise ExpmrcError(f"{name}: model folder not found (--model_name_or_path takes a folder or a Hub id)")
    if local and (Path(name) / "config.json").is_file():  # too deep, NaN, not an object: one line naming it
        if not isinstance(read_json(str(Path(name) / "config.json"), "model config"), dict):
            raise ExpmrcError(f"{Path(name) / 'config.json'}: model config must be a JSON object")


def _pretrained(name: str) -> ModelSource:
    """Config and tokenizer of a folder or Hub id; the weights are loaded later by `from_pretrained`."""
    local = Path(name).is_dir()
    check_model_folder(name)
    try:
        config = build_config(name, lambda: AutoConfig.from_pretrained(name))
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise ExpmrcError(_load_error(name, local, "config", exc)) from None
    if type(config) not in MODEL_MAPPING:
        raise ExpmrcError(f"{name}: model_type {config.model_type!r} has no encoder in transformers' AutoModel")
    try:
        tokenizer = AutoTokenizer.from_pretrained(name, use_fast=True)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ExpmrcError(_load_error(name, local, "tokenizer", exc)) from None
    if not getattr(tokenizer, "is_fast", False):
        raise ExpmrcError(f"{name}: its tokenizer ({type(tokenizer).__name__}) has no fast version, so no character "
                          "offsets; answers and evidence cannot be mapped back to the passage")
    _check_tokenizer(name, tokenizer)
    if local and not any((Path(name) / f).is_file() for f in WEIGHT_FILES) and \
            not any(Path(name).glob("model*.safetensors")):
        raise ExpmrcError(f"{name}: model folder has no {WEIGHT_FILES[0]} (nor {WEIGHT_FILES[1]})")
    return ModelSource(name, config, tokenizer, name)


def _check_tokenizer(name: str, tokenizer: Any) -> None:
    """Refuse a tokenizer with an empty vocabulary (an empty vocab.txt) or one that cannot encode text."""
    if tokenizer.backend_tokenizer.get_vocab_size(with_added_tokens=False) == 0:
        raise ExpmrcError(f"{name}: the tokenizer's vocabulary is empty (an empty vocab.txt?), so every word "
                          "would be unknown")
    try:
        tokenizer("The first words.", "Die ersten Wörter.")
    except Exception as exc:  # the tokenizers library raises a bare Exception for a broken vocabulary
        raise ExpmrcError(f"{name}: its tokenizer cannot encode text ({' '.join(str(exc).split())[:160]})") from None


def _load_error(name: str, local: bool, what: str, exc: Exception) -> str:
    """One line for a folder or Hub id whose config or tokenizer cannot be read."""
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if local:
        return f"{name}: cannot read the model's {what} ({reason})"
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False"):
        return (f"{name}: not a local folder, and not in the Hugging Face cache while HF_HUB_OFFLINE is set; "
                "download it once with the network on, or give a folder")
    return f"{name}: not a local folder, and the Hugging Face Hub cannot give it ({reason})"


def _checkpoint_weights(init_checkpoint: str, config: PretrainedConfig) -> tuple[str | dict, str]:
    """The weights `--init_checkpoint` names: a folder (loaded by from_pretrained), or a state dict read from a
    TensorFlow prefix, a safetensors or a PyTorch file; and what reading it reported."""
    path = Path(init_checkpoint)
    if path.is_dir():
        return str(path), ""
    if path.suffix == ".index" or (not path.exists() and Path(f"{init_checkpoint}.index").is_file()):
        prefix = str(path.with_suffix("")) if path.suffix == ".index" else init_checkpoint
        state, report = load_tf_bert_state_dict(prefix, config)
        return state, report.summary()
    if not path.is_file():
        raise ExpmrcError(f"{init_checkpoint}: --init_checkpoint not found (expected a TensorFlow prefix with "
                          f"{path.name}.index beside it, a weights file, or a model folder)")
    try:
        if path.suffix == ".safetensors":
            return load_file(str(path)), ""
        state = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as exc:  # safetensors, pickle and zip errors vary by version
        raise ExpmrcError(f"{init_checkpoint}: cannot read the weights ({str(exc).splitlines()[0]})") from None
    if isinstance(state, dict) and isinstance(state.get("model"), dict):
        state = state["model"]
    if not isinstance(state, dict):
        raise ExpmrcError(f"{init_checkpoint}: does not hold a state dict")
    return state, ""


@dataclass
class LoadReport:
    """What `from_pretrained` reported: weights the checkpoint lacked (left to initialisation) and entries unused."""

    missing: list[str]
    unused: list[str]
    note: str = ""

    def summary(self) -> str:
        """One line for the log."""
        def names(keys: list[str]) -> str:
            return ", ".join(keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")

        parts = []
        if self.missing:
            parts.append(f"{len(self.missing)} weights initialised, not in the checkpoint: {names(self.missing)}")
        if self.unused:
            parts.append(f"{len(self.unused)} checkpoint entries unused: {names(self.unused)}")
        if self.note:
            parts.append(self.note)
        return "; ".join(parts) if parts else "every weight loaded, nothing left over"


def load_task_model(model_class: type[TaskModel], source: ModelSource,
                    loss: LossSettings | None = None) -> tuple[Any, LoadReport]:
    """The task model on the source's weights (heads initialised where the checkpoint has none), built with the
    loss settings it trains with (`loss`; none for a model that only predicts).

    A folder written for the other task, or weights whose shapes do not fit, are refused in one line.
    """
    recorded = getattr(source.config, "expmrc", None)
    if isinstance(recorded, dict) and recorded.get("task") not in (None, model_class.task):
        raise ExpmrcError(f"{source.name}: a fine-tuned {recorded.get('task')} model; this script trains and "
                          f"predicts {model_class.task}")
    if source.weights is None:
        model = model_class(source.config, loss=loss)
        return model, LoadReport([], [], "random weights (no --init_checkpoint)")
    folder = source.weights if isinstance(source.weights, str) else None
    state = None if folder else source.weights
    try:
        # with output_loading_info, (model, loading info); the stub types only the model
        model, info = cast("tuple[TaskModel, dict[str, Any]]", model_class.from_pretrained(
            folder, config=source.config, state_dict=state, output_loading_info=True, ignore_mismatched_sizes=True,
            loss=loss))
    except (OSError, ValueError, RuntimeError) as exc:
        raise ExpmrcError(f"{source.name}: the weights do not fit a {model_class.task} model of this config "
                          f"({' '.join(str(exc).split())[:200]})") from None
    except Exception as exc:
        if "safetensor" not in type(exc).__name__.lower():
            raise
        raise ExpmrcError(f"{source.name}: cannot read the weights file (truncated or not safetensors? "
                          f"{' '.join(str(exc).split())[:160]})") from None
    if info.get("mismatched_keys"):  # (name, shape in the checkpoint, shape the config gives)
        shown = [f"{k[0]} {tuple(k[1])} in the checkpoint, {tuple(k[2])} in the config" if isinstance(k, tuple)
                 and len(k) == 3 else str(k) for k in sorted(info["mismatched_keys"], key=str)]
        raise ExpmrcError(f"{source.name}: the weights do not fit a {model_class.task} model of this config, "
                          f"{len(shown)} of the wrong shape: "
                          f"{'; '.join(shown[:3])}" + (f"; and {len(shown) - 3} more" if len(shown) > 3 else ""))
    report = LoadReport(sorted(info.get("missing_keys", ())), sorted(info.get("unexpected_keys", ())), source.note)
    _refuse_layer_mismatch(source, report)
    return model, report


LAYER = re.compile(r"(?:^|\.)layers?\.(\d+)\.")


def _refuse_layer_mismatch(source: ModelSource, report: LoadReport) -> None:
    """A config with fewer (or more) layers than the checkpoint would silently drop (or randomise) encoder layers."""
    unused = sorted({int(m.group(1)) for key in report.unused if (m := LAYER.search(key))})
    missing = sorted({int(m.group(1)) for key in report.missing if (m := LAYER.search(key))})
    layers = getattr(source.config, "num_hidden_layers", None)
    if unused:
        raise ExpmrcError(f"{source.name}: the checkpoint has {unused[-1] + 1} encoder layers but the config's "
                          f"num_hidden_layers is {layers}; loading it would drop layers")
    if missing:
        raise ExpmrcError(f"{source.name}: the checkpoint has no weights for encoder layer(s) "
                          f"{', '.join(map(str, missing[:5]))} of the config's num_hidden_layers {layers}; they would "
                          "start random")

