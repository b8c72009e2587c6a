"""Finding a text in a passage: the one place that does it, by named policies, always in exact offsets.

Every consumer (training labels, LOCA, the evidence baselines, the report's highlights and the
grounding of free-form quotes) asks `find` with the policies it trusts, in order; the first policy
that finds anything wins, and `choose` picks one of its spans. Policies, registered in `POLICIES`:

- `offset`: the text exactly where a given offset (`start`) says, or nothing.
- `verbatim`: every occurrence, character for character (overlapping ones included).
- `whitespace`: every match that lets any run of whitespace in the text match any run in the passage.
- `normalized`: every match after the form is folded on both sides (`fold`: NFKC, full-/half-width
  punctuation to ASCII, traditional Chinese script to simplified with OpenCC, accents of Latin
  letters dropped, English negative contractions spelt out, digit-grouping commas dropped (`1,000` =
  `1000`), case folded) and quote marks and whitespace dropped; each match is mapped back to the
  passage characters it came from.
- `fuzzy`: one alignment over word tokens of the folded form (over letters and digits in a CJK passage)
  with rapidfuzz: the passage window most like the text, its score the share of the text's tokens
  matched in order, in runs of two or more (0-100).

Of several spans, `choose` takes the one holding `holding` (an evidence holding the answer), else one
lying within `within` (an answer inside its evidence), else the one starting nearest `near`, else the
first. Spans are (start, end) character offsets, end exclusive.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from collections.abc import Callable, Sequence

from expmrc.registry import Registry

Span = tuple[int, int]

# punctuation NFKC leaves alone, folded to its ASCII counterpart (full-width ASCII forms NFKC folds itself), and
# letters written without an accent
_FOLD = str.maketrans({"。": ".", "、": ",", "｡": ".", "､": ",", "—": "-", "–": "-", "―": "-", "‐": "-",
                       "～": "~", "〜": "~", "·": ".", "・": ".", "《": "<", "》": ">", "〈": "<", "〉": ">",
                       "【": "[", "】": "]", "〔": "(", "〕": ")",
                       # Latin letters whose accent Unicode does not decompose
                       "ø": "o", "Ø": "O", "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "ł": "l", "Ł": "L",
                       "đ": "d", "Đ": "D", "ð": "d", "Ð": "D", "þ": "th", "Þ": "TH", "ı": "i"})
QUOTES = frozenset("\"'`“”‘’„‟«»「」『』＂＇‹›〝〞")
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
CJK = _CJK  # the CJK ranges (a character class body) every tokenizer of the project splits one by one
_ACCENTED = re.compile("[\u00c0-\u024f\u1e00-\u1eff]")
_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\U00020000-\U0003134f]")
# English negative contractions and `cannot`, spelt out (their stems where the spelling changes): a form
_CONTRACTION = re.compile(r"\b(\w+?)n['’‘ʼ＇]t\b|\b(can)(not)\b", re.IGNORECASE)
_STEMS = {"ca": "can", "wo": "will", "sha": "shall"}
_TOKEN = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")
_CHARACTER = re.compile(r"[^\W_]")
_GROUPING = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")  # the comma of `1,000` (folded from `，` too)


@dataclass(frozen=True)
class Hint:
    """What a caller knows about where the text should be (all optional)."""

    start: int | None = None  # a given character offset of the text (the `offset` policy)
    holding: Span | None = None  # prefer the span that holds this one
    within: Span | None = None  # prefer a span lying inside this one
    near: int | None = None  # else the span starting nearest this offset


@dataclass(frozen=True)
class Found:
    """Where a text was found: its span, the policy that found it and that policy's score (100 = exact)."""

    start: int
    end: int
    policy: str
    score: float = 100.0

    @property
    def span(self) -> Span:
        return self.start, self.end


Policy = Callable[[str, str, Hint], list[tuple[Span, float]]]
POLICIES: Registry[Policy] = Registry("text-location policy")


def policy(name: str) -> Callable[[Policy], Policy]:
    """Register a policy under `name` (names are unique)."""
    return POLICIES.register(name)


def occurrences(passage: str, text: str) -> list[Span]:
    """Every verbatim occurrence of `text` (non-empty) in `passage`, overlapping ones included."""
    spans: list[Span] = []
    at = passage.find(text) if text else -1
    while at != -1:
        spans.append((at, at + len(text)))
        at = passage.find(text, at + 1)
    return spans


def token_occurrences(haystack: Sequence[str], needle: Sequence[str]) -> list[int]:
    """Every position where `needle` (non-empty) is a contiguous run of the token list `haystack`."""
    n = len(needle)
    if n == 0:
        return []
    first, key = needle[0], tuple(needle)
    return [i for i in range(len(haystack) - n + 1) if haystack[i] == first and tuple(haystack[i:i + n]) == key]


def at_offset(passage: str, text: str, start: int | None) -> Span | None:
    """The span of `text` at `start` when the passage reads exactly `text` there, else None."""
    if not isinstance(start, int) or isinstance(start, bool) or start < 0 or not text:
        return None
    return (start, start + len(text)) if passage[start:start + len(text)] == text else None


def trim(passage: str, span: Span) -> Span:
    """`span` without the whitespace at either end."""
    begin, end = span
    while begin < end and passage[begin].isspace():
        begin += 1
    while end > begin and passage[end - 1].isspace():
        end -= 1
    return begin, end


@policy("offset")
def _offset(passage: str, text: str, hint: Hint) -> list[tuple[Span, float]]:
    span = at_offset(passage, text, hint.start)
    return [] if span is None else [(span, 100.0)]


@policy("verbatim")
def _verbatim(passage: str, text: str, hint: Hint) -> list[tuple[Span, float]]:
    return [(span, 100.0) for span in occurrences(passage, text)]


@policy("whitespace")
def _whitespace(passage: str, text: str, hint: Hint) -> list[tuple[Span, float]]:
    pieces = text.split()
    if not pieces:
        return []
    pattern = re.compile(r"\s+".join(re.escape(piece) for piece in pieces))
    return [(m.span(), 100.0) for m in pattern.finditer(passage)]


@lru_cache(maxsize=1)
def _simplified() -> Callable[[str], str]:
    """OpenCC's traditional-to-simplified conversion of one character (loaded once)."""
    import opencc

    return opencc.OpenCC("t2s").convert


@lru_cache(maxsize=65536)
def _fold_char(ch: str) -> str:
    """One character's folded form: NFKC, punctuation to ASCII, simplified script, no accents, case folded."""
    text = unicodedata.normalize("NFKC", ch).translate(_FOLD)
    if _HAN.search(text):
        text = "".join(_simplified()(c) for c in text)
    elif _ACCENTED.match(text):  # a Latin letter without its accents (é -> e); kana keep their marks
        text = "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))
    return text.casefold()


def _spelt_out(match: re.Match) -> list[tuple[str, Span]]:
    """A negative contraction (`didn't`, `can't`, `won't`) or `cannot` as its two words: (stem, its span),
    (" not", the span of `n't` or `not`)."""
    stem = 1 if match.group(1) else 2
    word = match.group(stem).casefold()
    return [(_STEMS.get(word, word), match.span(stem)), (" not", (match.end(stem), match.end()))]


@lru_cache(maxsize=1024)
def fold(text: str) -> tuple[str, tuple[int, ...]]:
    """The form of `text` that differences of form do not change (module docstring; whitespace kept) and, per
    character of it, its source index in `text` (non-decreasing)."""
    form, source = _folded(text)
    if "," not in form:
        return form, source
    cut = {m.start() for m in _GROUPING.finditer(form)}
    return "".join(c for k, c in enumerate(form) if k not in cut), tuple(s for k, s in enumerate(source) if k not in cut)


def _folded(text: str) -> tuple[str, tuple[int, ...]]:
    """`fold` before digit grouping is dropped."""
    out: list[str] = []
    source: list[int] = []
    at = 0
    for match in [*_CONTRACTION.finditer(text), None]:
        stop = len(text) if match is None else match.start()
        parts = list(map(_fold_char, text[at:stop]))
        out += parts
        if sum(map(len, parts)) == stop - at:  # one character for one: the common case
            source += range(at, stop)
        else:
            for i, folded in enumerate(parts, at):
                source += [i] * len(folded)
        if match is not None:
            for words, (start, end) in _spelt_out(match):
                out.append(words)
                source += [start + k * (end - start) // len(words) for k in range(len(words))]
            at = match.end()
    return "".join(out), tuple(source)


@lru_cache(maxsize=1024)
def normalized(text: str) -> tuple[str, tuple[int, ...]]:
    """The folded form of `text` without quote marks and whitespace (module docstring) and, per character of it,
    its source index."""
    form, source = fold(text)
    kept = [k for k, c in enumerate(form) if not c.isspace() and c not in QUOTES]
    return "".join(form[k] for k in kept), tuple(source[k] for k in kept)


@policy("normalized")
def _normalized(passage: str, text: str, hint: Hint) -> list[tuple[Span, float]]:
    key = normalized(text)[0]
    form, source = normalized(passage)
    return [((source[a], source[b - 1] + 1), 100.0) for a, b in occurrences(form, key)]


@lru_cache(maxsize=1024)
def tokens(text: str, characters: bool = False) -> tuple[tuple[str, ...], tuple[Span, ...]]:
    """Word tokens of the folded form of `text` (a CJK character is one; with `characters`, every letter and digit
    is one), with their character spans in `text`."""
    form, source = fold(text)
    pattern = _CHARACTER if characters else _TOKEN
    found = [(m.group(), (source[m.start()], source[m.end() - 1] + 1)) for m in pattern.finditer(form)]
    return tuple(t for t, _ in found), tuple(s for _, s in found)


def is_cjk(text: str) -> bool:
    """Whether CJK characters make up a fifth or more of `text` (then `fuzzy` compares it character by character)."""
    return len(re.findall(f"[{_CJK}]", text)) * 5 >= len(text) > 0


def encode(query: Sequence[str], passage: tuple[str, ...]) -> tuple[str, str]:
    """Two token sequences as strings with one private-use character per distinct token (rapidfuzz compares
    characters); the passage's code is kept, so a passage asked about many times is coded once."""
    code, vocabulary = _passage_code(passage)
    extra: dict[str, str] = {}
    query_code = "".join(vocabulary.get(t) or extra.setdefault(t, chr(0xF0000 + len(vocabulary) + len(extra)))
                         for t in query)
    return query_code, code


@lru_cache(maxsize=64)
def _passage_code(passage: tuple[str, ...]) -> tuple[str, dict[str, str]]:
    vocabulary: dict[str, str] = {}
    return "".join(vocabulary.setdefault(t, chr(0xF0000 + len(vocabulary))) for t in passage), vocabulary


def _blocks(query: str, region: str) -> list[tuple[int, int, int]]:
    """(query index, region index, length) of the in-order matches of `query` in `region`, less the matches at
    either end stranded far from the rest: one block, or a few blocks of at most a quarter of the query's tokens,
    followed (preceded) by a gap of at least three times their length."""
    from rapidfuzz.distance import Indel

    blocks = [(b.a, b.b, b.size) for b in Indel.opcodes(query, region).as_matching_blocks() if b.size]
    blocks = blocks[_stranded(blocks, len(query) // 4):]
    mirrored = [(0, len(region) - b - size, size) for _, b, size in reversed(blocks)]
    return blocks[:len(blocks) - _stranded(mirrored, len(query) // 4)]


def _stranded(blocks: list[tuple[int, int, int]], limit: int) -> int:
    """How many leading blocks are stranded: the most whose total length (at most `limit` beyond the first block)
    is at most a third of the gap after them."""
    size = cut = 0
    for k in range(1, len(blocks)):
        size += blocks[k - 1][2]
        if k > 1 and size > limit:
            break
        if blocks[k][1] - (blocks[k - 1][1] + blocks[k - 1][2]) >= 3 * size:
            cut = k
    return cut


def _aligned(query: str, region: str) -> tuple[int, int, int] | None:
    """The tightest region window [first, last] holding an in-order match of `query`, and how many query tokens
    it matches in runs of two or more: the start as late and the end as early as the matches allow."""
    forward = _blocks(query, region)
    backward = _blocks(query[::-1], region[::-1])
    if not forward or not backward:
        return None
    first = len(region) - backward[-1][1] - backward[-1][2]  # the latest start: matching from the right
    last = forward[-1][1] + forward[-1][2] - 1  # the earliest end: matching from the left
    if first > last:
        first = forward[0][1]
    def inside(blocks: list[tuple[int, int, int]], flip: bool) -> int:
        runs = [(len(region) - b - size if flip else b, size) for _, b, size in blocks]
        return sum(max(0, min(b + size, last + 1) - max(b, first)) for b, size in runs if size >= 2 or len(query) <= 2)

    matched = max(inside(forward, False), inside(backward, True))
    return (first, last, matched) if first <= last else None


@policy("fuzzy")
def _fuzzy(passage: str, text: str, hint: Hint) -> list[tuple[Span, float]]:
    """The passage window most like `text` over word tokens; its score counts the text's tokens matched in
    runs of two or more (all of them for a text of one or two tokens), as a share of the text's tokens."""
    from rapidfuzz import fuzz

    characters = is_cjk(passage)
    words, _ = tokens(text, characters)
    passage_words, spans = tokens(passage, characters)
    if not words or not passage_words:
        return []
    query, target = encode(words, passage_words)
    lo, hi = 0, len(target)
    if len(query) < len(target):
        window = fuzz.partial_ratio_alignment(query, target)
        if window is None:
            return []
        slack = len(query) // 2 + 2
        lo, hi = max(0, window.dest_start - slack), min(len(target), window.dest_end + slack)
    aligned = _aligned(query, target[lo:hi])
    if aligned is None:
        return []
    first, last, matched = lo + aligned[0], lo + aligned[1], aligned[2]
    if last - first + 1 > 2 * len(query):  # matches scattered over a long stretch: not a quote of it
        return []
    return [((spans[first][0], spans[last][1]), 100.0 * matched / len(query))]


def choose(spans: Sequence[Span], hint: Hint) -> Span:
    """Of several spans (non-empty list): the one holding `hint.holding`, else one within `hint.within`,
    else the one starting nearest `hint.near`, else the first (ties: the earliest)."""
    if hint.holding is not None:
        held = [s for s in spans if s[0] <= hint.holding[0] and hint.holding[1] <= s[1]]
        if held:
            return held[0]
    if hint.within is not None:
        inside = [s for s in spans if hint.within[0] <= s[0] and s[1] <= hint.within[1]]
        if inside:
            return inside[0]
    near = hint.near
    if near is not None:
        return min(spans, key=lambda s: (abs(s[0] - near), s[0]))
    return spans[0]


def find(passage: str, text: str, policies: Sequence[str] = ("offset", "verbatim"), hint: Hint = Hint(),
         region: Span | None = None, keep: Callable[[Span], bool] | None = None) -> Found | None:
    """Where `text` lies in `passage` (within `region` when given) by the first of `policies` that finds it, or None;
    with `keep`, only the spans (passage offsets) it keeps count."""
    if not text:
        return None
    lo, hi = region or (0, len(passage))
    rest = passage[lo:hi] if region else passage
    if lo:
        hint = Hint(None if hint.start is None else hint.start - lo, _shift(hint.holding, -lo),
                    _shift(hint.within, -lo), None if hint.near is None else hint.near - lo)
    for name in policies:
        found = [(s, score) for s, score in POLICIES[name](rest, text, hint)
                 if keep is None or keep((s[0] + lo, s[1] + lo))]
        if found:
            scores = dict(found)
            span = choose([s for s, _ in found], hint)
            return Found(span[0] + lo, span[1] + lo, name, scores[span])
    return None


def _shift(span: Span | None, by: int) -> Span | None:
    return None if span is None else (span[0] + by, span[1] + by)


# --- the policies the training labels use -----------------------------------------------------------


def locate_evidence(passage: str, evidences: Sequence[object] | None,
                    answer: Span | None = None) -> tuple[Span | None, str]:
    """The span of a question's evidence for training labels, and how it was found: each evidence string,
    stripped, `verbatim` (the occurrence holding the answer, else the one nearest it, else the first), then
    each `whitespace`-tolerantly. Status "found", "repaired" (whitespace), "not_found" or "missing" (none given)."""
    texts = [str(e).strip() for e in evidences or [] if str(e).strip()]
    if not texts:
        return None, "missing"
    hint = Hint(holding=answer, near=None if answer is None else answer[0])
    for name, status in (("verbatim", "found"), ("whitespace", "repaired")):
        for text in texts:
            found = find(passage, text, (name,), hint)
            if found is not None:
                return found.span, status
    return None, "not_found"


def locate_answer(passage: str, answer: str, given: object) -> tuple[Span | None, bool]:
    """The span of a span answer: at `given` (its `answer_start`) when the text is there, else the occurrence
    nearest to it (the first when none is given); and whether it had to be moved."""
    start = given if isinstance(given, int) and not isinstance(given, bool) else None
    found = find(passage, answer, ("offset", "verbatim"), Hint(start=start, near=0 if start is None else start))
    return (None, False) if found is None else (found.span, found.policy != "offset")
