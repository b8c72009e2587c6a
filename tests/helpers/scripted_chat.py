"""A tiny chat model whose greedy reply is known: a 1-layer Llama with random weights, whose attention and
MLP outputs are then zeroed and whose embeddings and output layer are set so that each token predicts
the next token of one script. After the chat template's `<|assistant|>` it writes

    {"answer": " B Swiss Alps 上 海 ", "evidence": " He bought three apples "}

whatever the question, so replies parse (a letter for multiple choice, words for span), score above zero
on some questions and zero on others, and the evidence is passage text in one of the test datasets (the
RACE-like one of helpers/llm_data.py) and invented in the others: figures worth comparing between two
implementations.
"""

from __future__ import annotations

from pathlib import Path

from helpers.tiny_chat import CHAT_TEMPLATE, SPECIAL, save_chat_model, tiny_llama

OPEN, MIDDLE, CLOSE = '{"answer": "', '", "evidence": "', '"}'
ANSWER = ["B", "Swiss", "Alps", "上", "海"]
EVIDENCE = ["He", "bought", "three", "apples"]
SCRIPT = ["<|assistant|>", OPEN, *ANSWER, MIDDLE, *EVIDENCE, CLOSE, "<|end|>"]
REPLY = "".join([OPEN, " ", " ".join(ANSWER), " ", MIDDLE, " ", " ".join(EVIDENCE), " ", CLOSE])
HIDDEN = 64


def make_scripted_chat_model(folder: Path, seed: int = 0) -> Path:
    """Write the tokenizer (with its chat template) and the scripted weights into `folder`."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = SPECIAL + [w for w in SCRIPT if w not in SPECIAL]
    raw = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="<unk>", pad_token="<pad>",
                                        eos_token="<|end|>")
    tokenizer.add_special_tokens({"additional_special_tokens": SPECIAL[3:]})
    tokenizer.add_tokens([OPEN, MIDDLE, CLOSE])
    tokenizer.chat_template = CHAT_TEMPLATE
    torch.manual_seed(seed)
    model = tiny_llama(tokenizer, hidden=HIDDEN, tie_word_embeddings=False)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        model.model.embed_tokens.weight.copy_(torch.eye(len(tokenizer), HIDDEN))
        model.lm_head.weight.zero_()
        ids = [tokenizer.convert_tokens_to_ids(w) for w in SCRIPT]
        for current, following in zip(ids, ids[1:]):
            model.lm_head.weight[following, current] = 1.0
    return save_chat_model(model, tokenizer, folder)
