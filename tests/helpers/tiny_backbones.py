"""Tiny random backbones of every architecture the baselines support, built offline in about a second.

`make_tiny_backbone(kind, folder)` writes a folder that `AutoConfig`, `AutoTokenizer` and `AutoModel`
load with no network: a fast tokenizer trained here with the `tokenizers` library on a few hundred
dev-set passages (English and Chinese; a built-in text when `EXPMRC_DATA` is unset), or on the texts a
test gives (`texts=`: `texts_of(its training file)`, or `BUILT_IN_TEXTS`), so that what a learning test
learns does not depend on the data being present, wrapped in the transformers class the architecture uses
on the Hub, and a randomly initialised 2-layer encoder.

The tokenizer pipelines are the ones the transformers classes rebuild when they load a folder (they
keep the vocabulary, merges and post-processor of `tokenizer.json` but re-create the normalizer and
pre-tokenizer from their own arguments), so what is trained here is what comes back after loading:

- bert, electra: WordPiece, BERT normalizer and pre-tokenizer, ``[CLS] A [SEP] B [SEP]``, token types 0/1;
- roberta: byte-level BPE, ``<s> A </s></s> B </s>``, offsets trimmed of spaces;
- deberta (v1): byte-level BPE, ``[CLS] A [SEP] [SEP] B [SEP]`` (the v5 DebertaTokenizer template);
- deberta-v2: SentencePiece-style Unigram with a Metaspace pre-tokenizer, ``[CLS] A [SEP] B [SEP]``;
- xlm-roberta: Unigram over whitespace-split words, ``<s> A </s></s> B </s>``.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tokenizers import Tokenizer
    from transformers import PreTrainedConfig, TokenizersBackend

KINDS = ("bert", "roberta", "electra", "deberta-v2", "xlm-roberta", "deberta")

VOCAB_SIZE = 2000  # target size of every trained vocabulary (the fallback text may give fewer)
ALPHABET = 1000  # most frequent characters kept by WordPiece and Unigram (the rest become unknown)

_WORDPIECE, _BYTE_BPE, _UNIGRAM = "wordpiece", "byte-level-bpe", "unigram"
_FAMILY = {"bert": _WORDPIECE, "electra": _WORDPIECE, "roberta": _BYTE_BPE, "deberta": _BYTE_BPE,
           "deberta-v2": _UNIGRAM, "xlm-roberta": _UNIGRAM}
# Special tokens in vocabulary order: the ids the Hub checkpoints of each architecture use for them.
_SPECIALS = {
    "bert": ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"),
    "electra": ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"),
    "roberta": ("<s>", "<pad>", "</s>", "<unk>", "<mask>"),
    "xlm-roberta": ("<s>", "<pad>", "</s>", "<unk>", "<mask>"),  # XLMRobertaTokenizer hard-codes unk_id=3
    "deberta-v2": ("[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"),
    "deberta": ("[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"),
}
# Kinds whose tokenizer class can lowercase; the others are cased whatever `cased` says, as on the Hub.
LOWERCASING_KINDS = ("bert", "electra", "deberta-v2")

# Used when EXPMRC_DATA is unset: a few paragraphs in the style of the dev sets, written for these tests.
FALLBACK_ENGLISH = (
    "The river town of Alderbrook grew up around a stone bridge built in 1742. Merchants crossed it every "
    "morning with wool, salt and timber, and by the end of the century the town had three markets, a school "
    "and a small harbour for barges. Today the bridge is closed to cars, but visitors still walk across it to "
    "reach the old customs house, which now holds a museum of local history.",
    "Maria wanted to learn the violin, but her family could not afford lessons. She borrowed an old "
    "instrument from her neighbour and practised in the garden after school. When a teacher heard her playing "
    "one evening, he offered to teach her for free. Two years later she won a place at the city's music "
    "academy, where she studied until she was twenty.",
    "Scientists have found that many birds use the Earth's magnetic field to find their way during long "
    "journeys. Young birds seem to inherit a sense of direction, while older ones also remember landmarks such "
    "as coasts, mountains and rivers. Researchers tested this by moving some birds hundreds of miles before "
    "releasing them; the adults corrected their course, but the young ones did not.",
    "Which of the following is true according to the passage? What did the teacher offer Maria? Why was the "
    "bridge closed to cars? How many markets did the town have by the end of the century? When was the "
    "school opened, and who paid for it?",
    "In 1905 the company opened its first factory near the railway station. It produced bicycles, sewing "
    "machines and, later, small engines for farm vehicles. During the 1930s about 4,000 people worked there, "
    "making it the largest employer in the region. The factory closed in 1987 and the buildings were turned "
    "into flats, offices and a public library.",
)
FALLBACK_CHINESE = (
    "河口镇位于长江下游，是一座有八百多年历史的古镇。镇上的石桥建于明代，桥下的河水终年不断。过去，商人们每天早上"
    "从这里运出丝绸、茶叶和大米，镇子因此十分繁荣。如今石桥已经不再通车，但每年都有很多游客来这里参观。",
    "小王大学毕业以后，没有留在北京工作，而是回到了自己的家乡。他发现村里的老人很多，年轻人都去城市打工了。"
    "于是他开了一家小商店，还帮助老人们在网上卖水果。两年以后，村里的收入提高了不少，也有年轻人愿意回来了。",
    "科学家研究发现，很多鸟类在长途飞行时会利用地球的磁场来判断方向。年轻的鸟好像天生就知道往哪里飞，"
    "而年纪大的鸟还会记住海岸、山脉和河流等地标。这说明经验对动物的学习也非常重要。",
    "根据短文，下列哪一项是正确的？小王为什么回到家乡？石桥是什么时候建成的？说话人认为什么最重要？"
    "这段话主要想告诉我们什么？",
    "中国的茶文化有几千年的历史。人们不但喝茶，还用茶招待客人、表达敬意。不同的地方有不同的习惯：南方人喜欢"
    "喝绿茶，北方人更爱喝花茶。现在，喝茶已经成为很多外国朋友了解中国文化的一种方式。",
)

BUILT_IN_TEXTS = FALLBACK_ENGLISH + FALLBACK_CHINESE  # `corpus()` without data; tests that must not vary pass it

_DEV_FILES = {"squad": 6, "race": 5, "cmrc2018": 4, "c3": 4}  # subset -> every n-th passage: 250 in all


def _dev_passages(subset: str) -> list[tuple[str, list[str]]]:
    """Every passage of an ExpMRC dev set under $EXPMRC_DATA with its questions, or [] when absent."""
    root = os.environ.get("EXPMRC_DATA")
    path = Path(root or "") / subset / f"expmrc-{subset}-dev.json"
    if not root or not path.is_file():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    if subset in ("squad", "cmrc2018"):
        return [(p["context"], [q["question"] for q in p["qas"]]) for article in data for p in article["paragraphs"]]
    return [(item["article"], list(item["questions"])) for item in data]


@functools.cache
def corpus() -> tuple[str, ...]:
    """The training texts: a few hundred dev passages and their questions, else the built-in fallback."""
    texts: list[str] = []
    for subset, step in _DEV_FILES.items():
        for passage, questions in _dev_passages(subset)[::step]:
            texts.append(passage)
            texts.append(" ".join(questions))
    return tuple(texts) if texts else BUILT_IN_TEXTS


@functools.cache
def held_out_texts(language: str, count: int = 8) -> tuple[str, ...]:
    """Dev passages in 'english' or 'chinese' left out of `corpus()` (the fallback paragraphs without data)."""
    subsets = {"english": ("squad", "race"), "chinese": ("cmrc2018", "c3")}[language]
    texts = [passage for subset in subsets for passage, _ in _dev_passages(subset)[1::_DEV_FILES[subset]][:count]]
    if texts:
        return tuple(texts)
    return FALLBACK_ENGLISH if language == "english" else FALLBACK_CHINESE


def _pipeline(kind: str, cased: bool) -> Tokenizer:
    """An untrained `tokenizers.Tokenizer` with the normalizer and pre-tokenizer the kind's class rebuilds."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

    family = _FAMILY[kind]
    if family == _WORDPIECE:
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                    strip_accents=None, lowercase=not cased)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    elif family == _BYTE_BPE:
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    elif kind == "deberta-v2":
        tok = Tokenizer(models.Unigram())
        steps = [normalizers.Lowercase()] if not cased else []
        steps += [normalizers.Replace(Regex(r"\s{2,}|[\n\r\t]"), " "), normalizers.NFC(),
                  normalizers.Strip(left=False, right=True)]
        tok.normalizer = normalizers.Sequence(steps)
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    else:  # xlm-roberta: no normalizer unless the checkpoint carries a SentencePiece charsmap
        tok = Tokenizer(models.Unigram())
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")])
    return tok


def _training_lines(tok: Tokenizer, texts: tuple[str, ...]) -> list[str]:
    """Normalized texts cut at sentence ends, with characters outside the ALPHABET most frequent blanked."""
    # Blanking rare characters here, ties broken by the character, keeps the alphabet deterministic (the
    # trainers' own `limit_alphabet` breaks ties in hash order) and lets the Unigram trainer, which wants a
    # piece for every character it sees, stay within VOCAB_SIZE. Sentences rather than whole passages make
    # Unigram training several times faster (Chinese passages have no spaces to split at).
    normal = [tok.normalizer.normalize_str(t) if tok.normalizer else t for t in texts]
    counts: Counter[str] = Counter()
    for text in normal:
        counts.update(text)
    ranked = sorted((c for c in counts if not c.isspace()), key=lambda c: (-counts[c], c))
    blank = {ord(c): " " for c in ranked[ALPHABET:]}
    lines = []
    for text in normal:
        lines += [s for s in re.split(r"(?<=[。！？；.!?])", text.translate(blank)) if s.strip()]
    return lines


@functools.cache
def _trained_model_json(kind: str, cased: bool, texts: tuple[str, ...]) -> str:
    """The `model` part of the trained tokenizer's JSON (vocabulary, merges), trained once per process."""
    from tokenizers import pre_tokenizers, trainers

    tok = _pipeline(kind, cased)
    specials = list(_SPECIALS[kind])
    family = _FAMILY[kind]
    if family == _WORDPIECE:
        lines = _training_lines(tok, texts)
        # The trainer numbers `##x` pieces in hash order as it meets them, and breaks ties between equally
        # frequent merges by number: listing them up front, in order, makes training deterministic.
        inner = sorted({c for line in lines for word, _ in tok.pre_tokenizer.pre_tokenize_str(line) for c in word[1:]})
        trainer = trainers.WordPieceTrainer(vocab_size=VOCAB_SIZE, special_tokens=specials + [f"##{c}" for c in inner],
                                            show_progress=False)
        tok.train_from_iterator(lines, trainer)
    elif family == _BYTE_BPE:  # 256 byte symbols: nothing is ever unknown, no need to limit the alphabet
        trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=specials, show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tok.train_from_iterator(texts, trainer)
    else:
        # Small seed set, strong shrinking and one EM sub-iteration: about 1 s instead of 5-10 s.
        trainer = trainers.UnigramTrainer(vocab_size=VOCAB_SIZE, special_tokens=specials, unk_token=specials[3],
                                          show_progress=False, max_piece_length=6, seed_size=5000,
                                          shrinking_factor=0.5, n_sub_iterations=1)
        tok.train_from_iterator(_training_lines(tok, texts), trainer)
    model = json.loads(tok.to_str())["model"]
    if family == _WORDPIECE:  # the trainer numbers the `##` alphabet in hash order
        rest = sorted((t for t in model["vocab"] if t not in specials),
                      key=lambda t: (len(t.removeprefix("##")), t.startswith("##"), t))
        model["vocab"] = {t: i for i, t in enumerate(specials + rest)}
    elif family == _UNIGRAM:
        model["vocab"] = [[p, 0.0] for p in specials] + _canonical_pieces(model["vocab"][len(specials):])
    return json.dumps(model)


def _canonical_pieces(pieces: list[list]) -> list[list]:
    """Unigram [piece, score] pairs with the trainer's run-to-run noise removed, sorted by score then piece."""
    # Scores vary in the last bits between runs (parallel sums), and characters that only ever occur inside
    # longer pieces are appended by the trainer with the lowest score plus 1e-4, 2e-4, ... in hash order:
    # round the scores and hand out that ladder of scores in character order.
    scored = {p: round(s, 8) for p, s in pieces}
    lowest = min(scored.values())
    ladder: list[str] = []
    rung = 0
    while step := [p for p, s in scored.items() if len(p) == 1 and abs(s - lowest - 1e-4 * rung) < 1e-7]:
        ladder += step  # the learnt piece with the lowest score may share the first rung
        rung += 1
    for piece, score in zip(sorted(ladder), sorted((scored[p] for p in ladder), reverse=True)):
        scored[piece] = score
    return [[p, s] for p, s in sorted(scored.items(), key=lambda item: (-item[1], item[0]))]


def texts_of(*paths: str | Path) -> tuple[str, ...]:
    """The passages, questions and options of ExpMRC dataset files, for a tokenizer trained on a test's own data."""
    from expmrc.data.datasets import ChoiceQuestion, load_dataset, passage_of

    texts: list[str] = []
    for path in paths:
        for question in load_dataset(str(path)).questions:
            options = question.options if isinstance(question, ChoiceQuestion) else []
            texts += [passage_of(question), question.question, *options]
    return tuple(dict.fromkeys(texts))  # passages repeat across their questions


def make_tokenizer(kind: str, *, cased: bool = False, max_length: int = 512,
                   texts: tuple[str, ...] | None = None) -> TokenizersBackend:
    """A fast transformers tokenizer of the kind's Hub class, trained on `texts` (default `corpus()`)."""
    from transformers import (BertTokenizer, DebertaTokenizer, DebertaV2Tokenizer, RobertaTokenizer,
                              XLMRobertaTokenizer)

    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; expected one of {KINDS}")
    trained_as = "bert" if kind == "electra" else kind  # same pipeline and special tokens: train once
    model = json.loads(_trained_model_json(trained_as, cased, corpus() if texts is None else tuple(texts)))
    specials = _SPECIALS[kind]
    common = {"model_max_length": max_length}
    if _FAMILY[kind] == _WORDPIECE:
        return BertTokenizer(vocab=model["vocab"], do_lower_case=not cased, **common)
    if _FAMILY[kind] == _BYTE_BPE:
        merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
        cls = RobertaTokenizer if kind == "roberta" else DebertaTokenizer
        return cls(vocab=model["vocab"], merges=merges, **common)
    vocab = [(piece, float(score)) for piece, score in model["vocab"]]
    if kind == "deberta-v2":
        return DebertaV2Tokenizer(vocab=vocab, do_lower_case=not cased, unk_id=specials.index("[UNK]"), **common)
    return XLMRobertaTokenizer(vocab=vocab, **common)


def tiny_config(kind: str, tokenizer: TokenizersBackend, *, hidden: int = 32, layers: int = 2, heads: int = 4,
                max_position: int = 512, dropout: float = 0.0) -> PreTrainedConfig:
    """A configuration of the kind shaped like its Hub checkpoints, sized down, for this tokenizer."""
    from transformers import AutoConfig

    size = {"vocab_size": len(tokenizer), "hidden_size": hidden, "num_hidden_layers": layers,
            "num_attention_heads": heads, "intermediate_size": 4 * hidden, "hidden_dropout_prob": dropout,
            "attention_probs_dropout_prob": dropout, "max_position_embeddings": max_position,
            "initializer_range": 0.02, "pad_token_id": tokenizer.pad_token_id}
    extra: dict = {}
    if kind in ("bert", "electra"):
        extra = {"type_vocab_size": 2, "layer_norm_eps": 1e-12}
        if kind == "electra":  # ELECTRA-small style: narrower embeddings projected up to the hidden size
            extra["embedding_size"] = max(hidden // 2, 1)
    elif kind in ("roberta", "xlm-roberta"):  # positions start after the padding id, hence the +2
        extra = {"type_vocab_size": 1, "layer_norm_eps": 1e-5, "max_position_embeddings": max_position + 2,
                 "bos_token_id": tokenizer.cls_token_id, "eos_token_id": tokenizer.sep_token_id}
    elif kind == "deberta-v2":  # DeBERTa-v3 style: no token types, shared-key relative attention in buckets
        extra = {"type_vocab_size": 0, "layer_norm_eps": 1e-7, "relative_attention": True,
                 "max_relative_positions": -1, "position_buckets": 64, "norm_rel_ebd": "layer_norm",
                 "share_att_key": True, "pos_att_type": ["p2c", "c2p"], "position_biased_input": False}
    elif kind == "deberta":
        extra = {"type_vocab_size": 0, "layer_norm_eps": 1e-7, "relative_attention": True,
                 "max_relative_positions": -1, "pos_att_type": ["c2p", "p2c"], "position_biased_input": False}
    return AutoConfig.for_model(kind, **{**size, **extra})


def make_tiny_backbone(kind: str, folder: Path, *, hidden: int = 32, layers: int = 2, heads: int = 4,
                       max_position: int = 512, dropout: float = 0.0, seed: int = 0, cased: bool = False,
                       mlm_head: bool = False, texts: tuple[str, ...] | None = None) -> Path:
    """Write config, fast tokenizer (trained on `texts`, default `corpus()`) and random weights (from `seed`) of
    a tiny `kind` encoder into `folder`."""
    # The weights are an AutoModel's (keys without the architecture prefix) or, with mlm_head=True, an
    # AutoModelForMaskedLM's (keys under `bert.`, `roberta.`, ... plus the MLM head), as most Hub checkpoints
    # are stored. cased=False lowercases where the tokenizer class can (LOWERCASING_KINDS).
    import torch
    from transformers import AutoModel, AutoModelForMaskedLM

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = make_tokenizer(kind, cased=cased, max_length=max_position, texts=texts)
    config = tiny_config(kind, tokenizer, hidden=hidden, layers=layers, heads=heads, max_position=max_position,
                         dropout=dropout)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = (AutoModelForMaskedLM if mlm_head else AutoModel).from_config(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@functools.cache
def _cache_root() -> Path:
    """A temporary folder for this process's backbones, removed at exit."""
    root = Path(tempfile.mkdtemp(prefix="expmrc-tiny-backbones-"))
    atexit.register(shutil.rmtree, root, True)
    return root


def tiny_backbone(kind: str, **kwargs: Any) -> Path:
    """The folder of `make_tiny_backbone(kind, ..., **kwargs)`, built once per process; treat it as read-only."""
    return _built_once(kind, tuple(sorted(kwargs.items())))


@functools.cache
def _built_once(kind: str, options: tuple[tuple[str, Any], ...]) -> Path:
    """`tiny_backbone`'s cache, keyed by the keyword arguments in name order."""
    tag = hashlib.sha1(json.dumps(options).encode()).hexdigest()[:10]
    return make_tiny_backbone(kind, _cache_root() / f"{kind}-{tag}", **dict(options))
