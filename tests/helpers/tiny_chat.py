"""A tiny random chat model for tests: a word-level tokenizer trained with `tokenizers`, a chat template set on
it, and a 1-layer LlamaForCausalLM, saved to a folder that `transformers serve` and the local backend load.

Its replies are gibberish, which is the point: the run must count them as parse failures and still
write a complete submission.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|> {{ message['content'] }} <|end|> {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)
CORPUS = [
    "the passage says the answer is in the evidence sentence",
    "what who where when which answer evidence question option",
    '{ } " : , . answer evidence A B C D',
    "北 京 是 中 国 的 首 都 上 海 城 市 长 江 河 流 什 么 哪 里 谁 年 出 生 在 答 案 证 据",
]
# a template without a system role, as Gemma's and Mistral's older ones: it refuses the messages
NO_SYSTEM_TEMPLATE = (
    "{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
    + CHAT_TEMPLATE
)
SPECIAL = ["<pad>", "<unk>", "<|end|>", "<|system|>", "<|user|>", "<|assistant|>"]


def make_tiny_chat_model(folder: Path, seed: int = 0, system_role: bool = True) -> Path:
    """Write a tokenizer (with chat template; one refusing a system turn unless `system_role`) and random weights
    of a tiny Llama into `folder`."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.WordLevel(unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    raw.train_from_iterator(CORPUS, trainers.WordLevelTrainer(special_tokens=SPECIAL))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="<unk>", pad_token="<pad>",
                                        eos_token="<|end|>")
    tokenizer.chat_template = CHAT_TEMPLATE if system_role else NO_SYSTEM_TEMPLATE
    torch.manual_seed(seed)
    return save_chat_model(tiny_llama(tokenizer, hidden=16), tokenizer, folder)


def tiny_llama(tokenizer: Any, hidden: int, **config: Any) -> Any:
    """A 1-layer LlamaForCausalLM (random weights) over `tokenizer`'s vocabulary, ending at its end token."""
    from transformers import LlamaConfig, LlamaForCausalLM

    return LlamaForCausalLM(LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=8192,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.eos_token_id, **config))


def save_chat_model(model: Any, tokenizer: Any, folder: Path) -> Path:
    """Save the model (generating up to the tokenizer's end token) and its tokenizer into `folder`."""
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
