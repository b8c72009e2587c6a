"""Sentence splitting with character offsets, for English and Chinese passages.

Two rules, both keeping every sentence's `start`/`end` offsets (`passage[start:end] == text`):

`simple` (the default; it reproduces the ExpMRC paper's Table 4, see README):
- a sentence ends after a run of terminators together with the closing quotes and brackets right
  after it (`" ' ” ’ ) ） ] 】 」 』 》`), so `他说：“走吧。”` and `He left.")` stay whole;
- `。`, `！`, `？` always end a sentence; `.`, `!`, `?` only when whitespace or the end of the text
  follows (so `3.5`, `U.S.A` and `1.由于` stay whole, and a `?` glued to Chinese text does not split);
- `;` and `；` are terminators too when `semicolons=True`; a line break always ends a sentence.

`refined` (a better splitter for English and mixed text) adds to that: an ASCII terminator also
ends a sentence when an uppercase letter, an opening quote or a Chinese character follows directly
(the missing space in RACE's `lake.Some`, `是吗?好`), but not a `.` after a known abbreviation
(`Mr.`, `e.g.`, `St.`) or a single letter (`J. K.`, `U.S.`), nor a terminator followed by a
lowercase word (`"Where?" she asked.`).

Whitespace around sentences is not part of them.

`split_at_delimiters` is the rule behind the pseudo evidence released with the paper (`expmrc pseudo
--preset release`): a sentence ends right after every delimiter character (`RELEASE_DELIMITERS`), with
nothing attached, so a closing quote after `?` starts the next sentence.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

ASCII_TERMINATORS = ".!?"
CJK_TERMINATORS = "。！？"
CLOSERS = "\"'”’)）]】」』》"
OPENERS = "\"'“‘(（[【「『《"
ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof st jr sr vs etc no nos mt co corp inc ltd gen gov sen rep lt col capt sgt
    fig approx dept est vol rev ave jan feb mar apr jun jul aug sep sept oct nov dec e.g i.e a.m p.m
    al cf ph.d u.s u.k u.n""".split()
)


@dataclass(frozen=True)
class Sentence:
    """One sentence: its text and where it lies in the passage (`passage[start:end] == text`)."""

    text: str
    start: int
    end: int


def _is_cjk(ch: str) -> bool:
    return "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf"


def _word_before(text: str, i: int) -> str:
    """The run of non-space characters that ends just before position `i`."""
    j = i
    while j > 0 and not text[j - 1].isspace() and text[j - 1] not in OPENERS:
        j -= 1
    return text[j:i]


def _ascii_run_ends_sentence(text: str, run_start: int, run_end: int, after: int, refined: bool) -> bool:
    """Whether the ASCII terminators text[run_start:run_end] (closers up to `after`) end a sentence."""
    n = len(text)
    if after >= n:
        return True
    nxt = text[after]
    if not refined:
        return nxt.isspace()
    is_period = text[run_start:run_end] == "."
    if is_period and run_end == after:
        word = _word_before(text, run_start)
        if word[-1:].isdigit() and (nxt.isdigit() or _is_cjk(nxt)):
            return False  # 3.5, 1.由于
        if word.lower().lstrip("(\"'") in ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
            return False
        if len(word) >= 2 and word[-2] == "." and word[-1].isalpha():
            return False  # U.S. or P.E. in the middle of a sentence
    if nxt.isspace():
        k = after
        while k < n and text[k].isspace() and text[k] != "\n":
            k += 1
        if k < n and text[k].islower():
            return False
        return True
    return nxt.isupper() or nxt in OPENERS or _is_cjk(nxt)


RULES = ("simple", "refined")
RELEASE_DELIMITERS = {"zh": "。！？?!", "en": ".!?"}


def split_at_delimiters(text: str, delimiters: str) -> list[Sentence]:
    """Cut `text` right after every character of `delimiters`; keep the non-blank pieces, stripped, with offsets."""
    cuts = [i + 1 for i, ch in enumerate(text) if ch in delimiters]
    return _pieces(text, cuts)


def split_sentences(text: str, rule: str = "simple", semicolons: bool = False) -> list[Sentence]:
    """Split `text` into sentences with character offsets, by `rule` (see the module docstring)."""
    if rule not in RULES:
        raise ValueError(f"unknown sentence rule {rule!r}; choose one of {', '.join(RULES)}")
    return list(_split_cached(text, rule == "refined", semicolons))


@lru_cache(maxsize=4096)
def _split_cached(text: str, refined: bool, semicolons: bool) -> tuple[Sentence, ...]:
    ascii_terms = ASCII_TERMINATORS + (";" if semicolons else "")
    cjk_terms = CJK_TERMINATORS + ("；" if semicolons else "")
    terms = ascii_terms + cjk_terms
    cuts: list[int] = []
    n = len(text)
    i = 0
    while i < n:
        ch = text[i]
        if ch == "\n":
            cuts.append(i)
            i += 1
            continue
        if ch not in terms:
            i += 1
            continue
        run_start = i
        while i < n and text[i] in terms:
            i += 1
        run_end = i
        while i < n and text[i] in CLOSERS:
            i += 1
        run = text[run_start:run_end]
        if any(c in cjk_terms for c in run) or _ascii_run_ends_sentence(text, run_start, run_end, i, refined):
            cuts.append(i)
    return tuple(_pieces(text, cuts))


def _pieces(text: str, cuts: list[int]) -> list[Sentence]:
    """The stripped, non-blank pieces of `text` between consecutive `cuts` (and the text's ends)."""
    n = len(text)
    sentences = []
    start = 0
    for cut in cuts + [n]:
        piece_start, piece_end = start, cut
        while piece_start < piece_end and text[piece_start].isspace():
            piece_start += 1
        while piece_end > piece_start and text[piece_end - 1].isspace():
            piece_end -= 1
        if piece_end > piece_start:
            sentences.append(Sentence(text[piece_start:piece_end], piece_start, piece_end))
        start = cut
    return sentences


CLAUSE_MARKS = "，；：,;:"


def clause_cuts(text: str, sentence: Sentence) -> list[int]:
    """The sentence's start, each offset just after a clause mark (`，；：,;:`) inside it, and its end."""
    cuts = [sentence.start]
    cuts += [i + 1 for i in range(sentence.start, sentence.end - 1) if text[i] in CLAUSE_MARKS]
    return cuts + [sentence.end]
