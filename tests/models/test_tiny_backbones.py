"""The tiny test backbones: fast tokenizers whose offsets slice back to the text, and models that load offline."""

from __future__ import annotations

import json

import pytest
import torch
from tokenizers import decoders
from transformers import AutoConfig, AutoModel, AutoTokenizer, BatchEncoding, PreTrainedTokenizerBase
from transformers.utils import logging as hf_logging

from helpers import tiny_backbones
from helpers.tiny_backbones import KINDS, LOWERCASING_KINDS, held_out_texts, make_tiny_backbone, tiny_backbone

hf_logging.set_verbosity_error()  # no load reports or progress chatter in the test output

HUB_CLASS = {"bert": "BertTokenizer", "electra": "BertTokenizer", "roberta": "RobertaTokenizer",
             "deberta": "DebertaTokenizer", "deberta-v2": "DebertaV2Tokenizer", "xlm-roberta": "XLMRobertaTokenizer"}
BASE_PREFIX = {"bert": "bert", "electra": "electra", "roberta": "roberta", "xlm-roberta": "roberta",
               "deberta": "deberta", "deberta-v2": "deberta"}
TYPE_VOCAB = {"bert": 2, "electra": 2, "roberta": 1, "xlm-roberta": 1, "deberta": 0, "deberta-v2": 0}
# Does the offset of a word-initial token start at the space before the word?
SPACE_IN_OFFSETS = {"bert": False, "electra": False, "roberta": False, "xlm-roberta": False,
                    "deberta": True, "deberta-v2": True}

PAIRS = [
    ("Where is  the capital of Victoria?",
     "  Melbourne is the capital of Victoria.\nIt hosts the Australian Open, a café and  1,500 events in 2019. "
     "Sydney is larger; its harbour is famous. The economy is highly diversified.  "),
    ("小王为什么回到家乡？",
     "小王大学毕业以后，没有留在北京工作，而是回到了自己的家乡。他发现村里的老人很多，年轻人都去城市打工了。"
     "于是他开了一家小商店（2015年），还帮助老人们在网上卖水果。ABC公司也来了。"),
]


def _tokenizer(kind: str, **kwargs) -> PreTrainedTokenizerBase:
    """The tokenizer AutoTokenizer loads from a cached tiny backbone's folder."""
    return AutoTokenizer.from_pretrained(tiny_backbone(kind, **kwargs))


def _surface(kind: str, tokens: list[str]) -> str:
    """The text a run of tokens stands for, with the tokenizer's word markers turned back into spaces."""
    if kind in ("bert", "electra"):
        return "".join(t.removeprefix("##") for t in tokens)
    if kind in ("roberta", "deberta"):
        return decoders.ByteLevel().decode(tokens)  # a character's bytes may be split over several tokens
    return "".join(tokens).replace("▁", " ")


def _comparable(tokenizer: PreTrainedTokenizerBase, text: str) -> str:
    """`text` as the tokenizer's normalizer sees it (lowercased, NFC, ...), without any whitespace."""
    normalizer = tokenizer.backend_tokenizer.normalizer
    return "".join((normalizer.normalize_str(text) if normalizer else text).split())


def _passage_groups(encoding: BatchEncoding, index: int) -> list[tuple[int, int, list[str]]]:
    """Window `index`'s passage tokens as (start, end, tokens), runs of overlapping offsets merged.

    Tokens overlap where byte-level BPE splits a character's bytes over two tokens, and where a
    Metaspace tokenizer gives a lone "▁" the offsets of the character after it.
    """
    groups: list[tuple[int, int, list[str]]] = []
    tokens = encoding.tokens(index)
    for position, sequence in enumerate(encoding.sequence_ids(index)):
        if sequence != 1:
            continue
        start, end = encoding["offset_mapping"][index][position]
        if groups and start < groups[-1][1]:
            first, last, run = groups.pop()
            groups.append((first, max(last, end), run + [tokens[position]]))
        else:
            groups.append((start, end, [tokens[position]]))
    return groups


@pytest.mark.parametrize("kind", KINDS)
def test_autotokenizer_gives_the_hub_class_fast_and_small(kind):
    tokenizer = _tokenizer(kind)
    config = AutoConfig.from_pretrained(tiny_backbone(kind))
    assert tokenizer.is_fast and type(tokenizer).__name__ == HUB_CLASS[kind]
    assert config.model_type == kind and config.vocab_size == len(tokenizer)
    assert 300 <= len(tokenizer) <= 2100 and tokenizer.model_max_length == 512
    assert tokenizer.unk_token_id is not None and tokenizer.pad_token_id is not None


@pytest.mark.parametrize("kind", KINDS)
def test_pair_windows_slice_back_to_the_passage(kind):
    tokenizer = _tokenizer(kind)
    max_length, stride = 40, 8
    questions, passages = zip(*PAIRS)
    encoding = tokenizer(list(questions), list(passages), truncation="only_second", max_length=max_length,
                         stride=stride, return_overflowing_tokens=True, return_offsets_mapping=True)
    samples = encoding["overflow_to_sample_mapping"]
    assert samples == sorted(samples) and set(samples) == {0, 1} and samples.count(0) > 1

    for sample, passage in enumerate(passages):
        windows = [i for i, s in enumerate(samples) if s == sample]
        covered = set()
        previous = None
        for n, i in enumerate(windows):
            ids, sequence = encoding["input_ids"][i], encoding.sequence_ids(i)
            assert len(ids) <= max_length and (len(ids) == max_length or n == len(windows) - 1)
            # the question is repeated whole in every window, the passage part moves on
            question = [t for t, s in zip(ids, sequence) if s == 0]
            assert question == [t for t, s in zip(encoding["input_ids"][windows[0]], encoding.sequence_ids(windows[0]))
                                if s == 0]
            spans = [tuple(o) for o, s in zip(encoding["offset_mapping"][i], sequence) if s == 1]
            if previous is not None:  # `stride` is the number of passage tokens two windows share
                assert spans[:stride] == previous[-stride:]
            previous = spans
            groups = _passage_groups(encoding, i)
            for g, (start, end, tokens) in enumerate(groups):
                assert 0 <= start <= end <= len(passage)
                piece = passage[start:end]
                covered.update(range(start, end))
                surface = _surface(kind, tokens)
                if tokens == [tokenizer.unk_token]:
                    assert piece.strip()
                elif "\ufffd" in surface:  # byte-level BPE: a character's bytes split between two windows
                    assert end - start == 1 and g in (0, len(groups) - 1)
                elif not surface.strip():  # a lone word marker: empty, a space, or (Metaspace, at the
                    # end of a window) the first character of the next window
                    assert not piece.strip() or (end - start == 1 and g == len(groups) - 1)
                else:
                    assert _comparable(tokenizer, piece) == "".join(surface.split()), (tokens, piece)
        assert all(c in covered for c, char in enumerate(passage) if not char.isspace())


# Special tokens before the question, between question and passage, after the passage; then whether the
# passage part has token type 1 (the others 0).
TEMPLATE = {
    "bert": (["[CLS]"], ["[SEP]"], ["[SEP]"], True), "electra": (["[CLS]"], ["[SEP]"], ["[SEP]"], True),
    "deberta-v2": (["[CLS]"], ["[SEP]"], ["[SEP]"], True), "deberta": (["[CLS]"], ["[SEP]", "[SEP]"], ["[SEP]"], False),
    "roberta": (["<s>"], ["</s>", "</s>"], ["</s>"], False), "xlm-roberta": (["<s>"], ["</s>", "</s>"], ["</s>"], False),
}


@pytest.mark.parametrize("kind", KINDS)
def test_pair_template(kind):
    encoding = _tokenizer(kind)("a b", "c d", return_token_type_ids=True)
    tokens, sequence, types = encoding.tokens(), encoding.sequence_ids(), encoding["token_type_ids"]
    first_a, first_b = sequence.index(0), sequence.index(1)
    last_a, last_b = len(sequence) - 1 - sequence[::-1].index(0), len(sequence) - 1 - sequence[::-1].index(1)
    before, between, after, b_is_one = TEMPLATE[kind]
    assert (tokens[:first_a], tokens[last_a + 1:first_b], tokens[last_b + 1:]) == (before, between, after)
    assert set(types[:first_b]) == {0} and set(types[first_b:last_b + 1]) == {int(b_is_one)}


@pytest.mark.parametrize("kind", KINDS)
def test_word_markers_in_offsets(kind):
    text = "the cat  sat 北京"
    encoding = _tokenizer(kind)(text, return_offsets_mapping=True, add_special_tokens=False)
    tokens, offsets = encoding.tokens(), encoding["offset_mapping"]
    cat = next(i for i, (start, end) in enumerate(offsets) if start <= text.index("cat") < end)
    assert (text[offsets[cat][0]] == " ") is SPACE_IN_OFFSETS[kind]
    lone = [(tokens[i], text[start:end], i) for i, (start, end) in enumerate(offsets) if tokens[i] in ("▁", "Ġ")]
    if kind in ("bert", "electra"):
        assert not lone
    elif kind == "roberta":  # trimmed offsets: a token that is only a space has an empty span
        assert lone and all(piece == "" for _, piece, _ in lone)
    elif kind == "xlm-roberta":  # spaces are never in offsets; a lone "▁" carries the next character
        assert lone and all(piece == text[offsets[i + 1][0]] and offsets[i][0] == offsets[i + 1][0]
                            for _, piece, i in lone)
    else:  # deberta, deberta-v2: the space itself
        assert lone and all(piece == " " for _, piece, _ in lone)


@pytest.mark.parametrize("kind", KINDS)
def test_few_unknown_tokens_on_english_and_chinese(kind):
    tokenizer = _tokenizer(kind)
    for language, most in (("english", 0.01), ("chinese", 0.2)):
        ids = [i for text in held_out_texts(language) for i in tokenizer(text, add_special_tokens=False)["input_ids"]]
        assert sum(i == tokenizer.unk_token_id for i in ids) / len(ids) < most, language
    # common Chinese characters are whole tokens (byte-level BPE spells them in bytes and knows them all)
    if kind not in ("roberta", "deberta"):
        assert all(tokenizer.convert_tokens_to_ids(c) != tokenizer.unk_token_id for c in "的是了在")


@pytest.mark.parametrize("kind", KINDS)
def test_question_longer_than_the_window_is_refused(kind):
    tokenizer = _tokenizer(kind)
    question, passage = "what is the capital", "Paris is the capital of France. " * 4
    room = 3  # tokens left for the passage in each window
    max_length = len(tokenizer(question, add_special_tokens=False)["input_ids"]) + room
    max_length += tokenizer.num_special_tokens_to_add(pair=True)
    with pytest.raises(Exception, match="too short to respect the provided max_length"):
        tokenizer(question * 3, passage, truncation="only_second", max_length=max_length, stride=1,
                  return_overflowing_tokens=True)
    # room for the passage but not more than `stride`: the Rust side panics (a BaseException)
    with pytest.raises(BaseException, match="stride"):
        tokenizer(question, passage, truncation="only_second", max_length=max_length, stride=room,
                  return_overflowing_tokens=True)
    windows = tokenizer(question, passage, truncation="only_second", max_length=max_length, stride=room - 1,
                        return_overflowing_tokens=True)["input_ids"]
    assert len(windows) > 1 and len(windows[0]) == max_length


@pytest.mark.parametrize("kind", KINDS)
def test_model_loads_with_every_weight_and_runs_full_length(kind):
    folder = tiny_backbone(kind)
    model, info = AutoModel.from_pretrained(folder, output_loading_info=True)
    assert not any(info.values()), info
    assert type(model).__name__.lower().startswith(kind.replace("-", "")[:5])
    assert model.base_model_prefix == BASE_PREFIX[kind] and model.config.type_vocab_size == TYPE_VOCAB[kind]
    tokenizer = AutoTokenizer.from_pretrained(folder)
    batch = tokenizer(["A question?"], [" ".join(held_out_texts("english"))], truncation="only_second",
                      max_length=512, padding="max_length", return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    assert hidden.shape == (1, 512, model.config.hidden_size) and torch.isfinite(hidden).all()


@pytest.mark.parametrize("kind", KINDS)
def test_masked_lm_checkpoint_stores_the_encoder_under_its_prefix(kind):
    folder = tiny_backbone(kind, mlm_head=True)
    from safetensors import safe_open

    with safe_open(str(folder / "model.safetensors"), "pt") as weights:
        keys = set(weights.keys())
    prefix = BASE_PREFIX[kind] + "."
    assert any(k.startswith(prefix) for k in keys) and any(not k.startswith(prefix) for k in keys)
    _, info = AutoModel.from_pretrained(folder, output_loading_info=True)
    assert info["unexpected_keys"] and not any(k.startswith(prefix) for k in info["unexpected_keys"])
    assert all(".pooler." in k or k.startswith("pooler.") for k in info["missing_keys"])


@pytest.mark.parametrize("kind", KINDS)
def test_save_and_load_give_identical_outputs(kind, tmp_path):
    folder = tiny_backbone(kind)
    model, tokenizer = AutoModel.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)
    batch = tokenizer(list(q for q, _ in PAIRS), list(p for _, p in PAIRS), padding=True, return_tensors="pt")
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    again, tokenizer_again = AutoModel.from_pretrained(tmp_path), AutoTokenizer.from_pretrained(tmp_path)
    assert tokenizer_again(list(q for q, _ in PAIRS), list(p for _, p in PAIRS), padding=True,
                           return_tensors="pt")["input_ids"].equal(batch["input_ids"])
    with torch.no_grad():
        assert torch.equal(model(**batch).last_hidden_state, again(**batch).last_hidden_state)


@pytest.mark.parametrize("kind", ["bert", "roberta", "deberta-v2", "xlm-roberta"])  # electra, deberta: same trainers
def test_building_again_gives_the_same_files(kind, tmp_path):
    first = tiny_backbone(kind)
    tiny_backbones._trained_model_json.cache_clear()  # train the tokenizer again (the trainers hash in random order)
    second = make_tiny_backbone(kind, tmp_path / kind)
    for name in ("tokenizer.json", "tokenizer_config.json", "config.json", "model.safetensors"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


@pytest.mark.parametrize("kind", KINDS)
def test_casing(kind):
    def lowercases(tokenizer) -> bool:
        normalizer = tokenizer.backend_tokenizer.normalizer
        return normalizer is not None and normalizer.normalize_str("Paris") == "paris"

    assert lowercases(_tokenizer(kind)) is (kind in LOWERCASING_KINDS)
    if kind in LOWERCASING_KINDS:
        cased = _tokenizer(kind, cased=True)
        assert not lowercases(cased) and "M" in "".join(cased.tokenize("Maria"))


def test_sizes_follow_the_arguments_and_the_folder_is_cached():
    folder = tiny_backbone("roberta", hidden=16, layers=1, heads=2, max_position=64, dropout=0.1, seed=3)
    assert tiny_backbone("roberta", hidden=16, layers=1, heads=2, max_position=64, dropout=0.1, seed=3) == folder
    config = json.loads((folder / "config.json").read_text())
    assert (config["hidden_size"], config["num_hidden_layers"], config["num_attention_heads"]) == (16, 1, 2)
    assert config["max_position_embeddings"] == 66 and config["hidden_dropout_prob"] == 0.1  # RoBERTa: +2
    assert AutoTokenizer.from_pretrained(folder).model_max_length == 64
    other_seed = AutoModel.from_pretrained(tiny_backbone("roberta", hidden=16, layers=1, heads=2, max_position=64,
                                                         dropout=0.1, seed=4))
    model = AutoModel.from_pretrained(folder)
    assert not torch.equal(model.embeddings.word_embeddings.weight, other_seed.embeddings.word_embeddings.weight)


def test_builds_from_the_fallback_text_without_data(monkeypatch, tmp_path):
    monkeypatch.delenv("EXPMRC_DATA", raising=False)
    tiny_backbones.corpus.cache_clear()
    tiny_backbones.held_out_texts.cache_clear()
    try:
        assert tiny_backbones.corpus() == tiny_backbones.FALLBACK_ENGLISH + tiny_backbones.FALLBACK_CHINESE
        for kind in ("bert", "xlm-roberta"):
            tokenizer = AutoTokenizer.from_pretrained(make_tiny_backbone(kind, tmp_path / kind))
            for text in tiny_backbones.FALLBACK_ENGLISH + tiny_backbones.FALLBACK_CHINESE:
                assert tokenizer.unk_token_id not in tokenizer(text)["input_ids"]
    finally:
        tiny_backbones.corpus.cache_clear()
        tiny_backbones.held_out_texts.cache_clear()
