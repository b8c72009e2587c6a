"""Tiny tokenizer and BERT configuration shared by the multiple-choice tests (CPU, seconds)."""

from __future__ import annotations

from pathlib import Path

from transformers import BertConfig, BertTokenizer

from expmrc.data.datasets import ChoiceQuestion

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
CHINESE = list("我们的猫坐在上它很好吗什么哪里是不对？。，")
ENGLISH = ["the", "cat", "sat", "on", "mat", "it", "was", "good", "where", "did", "what", "##s", "a", "dog", "ran",
           ".", ",", "?", "mark"]
WORDS = [f"w{i}" for i in range(60)]


def write_vocab(folder: Path) -> Path:
    """Write a WordPiece vocabulary with Chinese characters, English words and generated words."""
    path = Path(folder) / "vocab.txt"
    path.write_text("\n".join(SPECIAL + CHINESE + ENGLISH + WORDS) + "\n", encoding="utf-8")
    return path


def tokenizer(folder: Path, do_lower_case: bool = True) -> BertTokenizer:
    """A fast BERT tokenizer over the tiny vocabulary."""
    return BertTokenizer(vocab=str(write_vocab(folder)), do_lower_case=do_lower_case)


def tiny_config(vocab_size: int, hidden: int = 64, layers: int = 2, max_positions: int = 128) -> BertConfig:
    """A BERT configuration small enough to train for hundreds of steps in seconds on one core."""
    return BertConfig(
        vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=4,
        intermediate_size=hidden * 2, max_position_embeddings=max_positions, type_vocab_size=2,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )


def question(qid: str, passage: str, q: str, options: list[str], answer: str, evidences=None) -> ChoiceQuestion:
    """A ChoiceQuestion built by hand."""
    pid, _, index = qid.rpartition("-")
    return ChoiceQuestion(qid=qid, passage_id=pid, index=int(index), passage=passage, question=q,
                          options=options, answer=answer, evidences=evidences)
