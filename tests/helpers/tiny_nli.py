"""A tiny randomly initialised NLI model for the support judge's tests: the tiny BERT vocabulary and encoder of
tiny_bert.py with a 3-way sequence-classification head whose config names its labels (as an MNLI/XNLI model's
does), saved to a folder `AutoModelForSequenceClassification` loads. Its verdicts are noise; the tests check
the plumbing (labels read from the config, batching, the device, the outputs), never what it says."""

from __future__ import annotations

from pathlib import Path

from helpers.tiny_bert import tiny_config, tiny_vocab

NLI_LABELS = {0: "entailment", 1: "neutral", 2: "contradiction"}


def make_tiny_nli_folder(folder: Path, labels: dict[int, str] | None = None, seed: int = 0,
                         max_position: int = 512) -> Path:
    """Write config.json (id2label `labels`, default entailment/neutral/contradiction), the tokenizer and random
    weights of a 2-layer BERT classifier into `folder`."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    labels = NLI_LABELS if labels is None else labels
    folder.mkdir(parents=True, exist_ok=True)
    vocab = tiny_vocab()
    settings = {k: v for k, v in tiny_config(len(vocab), max_position=max_position).items() if k != "model_type"}
    settings["initializer_range"] = 0.5  # weights large enough that pairs get different labels, each at random
    config = BertConfig(**settings, num_labels=len(labels), id2label=dict(labels),
                        label2id={name: i for i, name in labels.items()})
    torch.manual_seed(seed)
    BertForSequenceClassification(config).save_pretrained(folder)
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    BertTokenizer(vocab=str(folder / "vocab.txt"), do_lower_case=True).save_pretrained(folder)
    return folder
