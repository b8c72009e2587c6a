"""Tiny BERT models for tests: a small WordPiece vocabulary and a random 2-layer encoder in a folder.

Every lowercase ASCII word can be spelled from the single letters and their `##` continuations, so
texts never fall back to [UNK] unless a test wants them to; a few whole words and Chinese characters
make some words one piece and others several.
"""

from __future__ import annotations

import json
import string
from pathlib import Path

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "a", "of", "is", "in", "what", "who", "where", "when", "which", "answer", "evidence",
         "city", "river", "paris", "france", "capital", "king", "year", "born", "##s", "##ed", "##ing"]
CHINESE = list("北京是中国的首都上海城市长江河流什么哪里谁年出生在")


def tiny_vocab(cased: bool = False) -> list[str]:
    """Special tokens, digits, punctuation, letters (and `##` pieces), a few words and Chinese characters."""
    letters = string.ascii_lowercase + (string.ascii_uppercase if cased else "")
    tokens = SPECIAL + list(string.digits) + list(string.punctuation)
    tokens += list(letters) + [f"##{c}" for c in letters + string.digits]
    tokens += WORDS + (["Paris", "France"] if cased else []) + CHINESE
    seen: dict[str, None] = {}
    for token in tokens:
        seen.setdefault(token)
    return list(seen)


def tiny_config(vocab_size: int, hidden: int = 32, layers: int = 2, dropout: float = 0.0,
                max_position: int = 128) -> dict:
    """A BERT config with the given size; dropout 0 by default so tests are exact."""
    return {
        "model_type": "bert", "vocab_size": vocab_size, "hidden_size": hidden, "num_hidden_layers": layers,
        "num_attention_heads": 4, "intermediate_size": hidden * 2, "hidden_act": "gelu",
        "hidden_dropout_prob": dropout, "attention_probs_dropout_prob": dropout,
        "max_position_embeddings": max_position, "type_vocab_size": 2, "initializer_range": 0.02,
        "layer_norm_eps": 1e-12, "pad_token_id": 0,
    }


def make_tiny_bert_folder(folder: Path, hidden: int = 32, layers: int = 2, cased: bool = False,
                          dropout: float = 0.0, max_position: int = 128, seed: int = 0) -> Path:
    """Write config.json, vocab.txt, tokenizer_config.json and random model.safetensors into `folder`."""
    import torch
    from safetensors.torch import save_file
    from transformers import BertConfig, BertModel

    folder.mkdir(parents=True, exist_ok=True)
    vocab = tiny_vocab(cased)
    config = tiny_config(len(vocab), hidden, layers, dropout, max_position)
    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": not cased}), encoding="utf-8")
    torch.manual_seed(seed)
    model = BertModel(BertConfig(**{k: v for k, v in config.items() if k != "model_type"}))
    save_file({f"bert.{k}": v.contiguous() for k, v in model.state_dict().items()}, str(folder / "model.safetensors"))
    return folder

def tiny_tokenizer(cased: bool = False):
    """A BertTokenizer over the tiny vocabulary."""
    from transformers import BertTokenizer

    vocab = {token: i for i, token in enumerate(tiny_vocab(cased))}
    return BertTokenizer(vocab=vocab, do_lower_case=not cased)
