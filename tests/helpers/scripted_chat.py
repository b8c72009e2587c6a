"""A tiny chat model whose greedy reply is known: a 1-layer Llama with random weights, whose attention and
MLP outputs are then zeroed and whose embeddings and output layer are set so that each token predicts
the next token of one script. After the chat template's `<|assistant|>` it writes

    {"answer": " B Swiss Alps 上 海 ", "evidence": " He bought three apples "}

whatever the question, so replies parse (a letter for multiple choice, words for span), score above zero
on some questions and zero on others, and the evidence is passage text in one of the test datasets (the
RACE-like one of helpers/llm_data.py) and invented in the others: figures worth comparing between two
implementations. `evidence=IDS_EVIDENCE` scripts a reply citing sentences by number instead (the ids
evidence form): `{"answer": " B Swiss Alps 上 海 ", "evidence": " [1] [4] "}`.
"""

from __future__ import annotations

from pathlib import Path

from helpers.tiny_chat import CHAT_TEMPLATE, SPECIAL, save_chat_model, tiny_llama

OPEN, MIDDLE, CLOSE = '{"answer": "', '", "evidence": "', '"}'
ANSWER = ["B", "Swiss", "Alps", "上", "海"]
EVIDENCE = ["He", "bought", "three", "apples"]
IDS_EVIDENCE = ["[1]", "[4]"]
HIDDEN = 64
# `transformers serve` turns a request's `stop` into stop strings, which `generate` prepares by decoding every
# vocabulary entry after this probe word: a word-level vocabulary must hold it (it is never generated)
STOP_PROBE = "abcdef"


def script(evidence: list[str]) -> list[str]:
    """The tokens the model writes after the chat template's prompt, up to its end token."""
    return ["<|assistant|>", OPEN, *ANSWER, MIDDLE, *evidence, CLOSE, "<|end|>"]


def reply_of(evidence: list[str]) -> str:
    """The reply text the model's script decodes to."""
    return "".join([OPEN, " ", " ".join(ANSWER), " ", MIDDLE, " ", " ".join(evidence), " ", CLOSE])


SCRIPT = script(EVIDENCE)
REPLY = reply_of(EVIDENCE)


def make_scripted_chat_model(folder: Path, seed: int = 0, evidence: list[str] = EVIDENCE) -> Path:
    """Write the tokenizer (with its chat template) and the weights scripted to write `evidence` into `folder`."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = SPECIAL + [w for w in script(evidence) if w not in SPECIAL] + [STOP_PROBE]
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
        ids = [tokenizer.convert_tokens_to_ids(w) for w in script(evidence)]
        for current, following in zip(ids, ids[1:]):
            model.lm_head.weight[following, current] = 1.0
    return save_chat_model(model, tokenizer, folder)
