"""What a located quote changed of the passage text it is aligned to, and which changes are of fact.

The quote's tokens and its passage span's tokens (the folded tokens of `expmrc.text.locate`, so case,
width, script, quote marks and contractions are no difference) are aligned (Levenshtein, rapidfuzz);
adjacent edits make one difference. Quote tokens left over at either end are compared with the passage
tokens beside the span, within the same sentence. A difference is a change of fact when it touches

- a negation (`not` and `n't`, `no`, `never`, `without`, `none`, `nor`, `neither`, `nothing`, `nobody`,
  `nowhere`; 不 没 未 无 非 别 勿), on either side: changed, added or left out;
- a number: a token holding a digit, a Chinese numeral (一 … 十 百 千 万 亿 两, 〇, 零, 壹 …) or an English
  number word (`one` … `twenty`, `thirty` … `ninety`, `hundred` … `billion`, `dozen`, `first` …
  `tenth`, `half`, `twice`), changed or added; left out only when part of it stays (`84` quoted as `8`);
- a name: a capitalised word the quote writes that the passage does not hold, or a capitalised word
  of the passage that the quote writes as something else.

Words merely left out (a whole number, a name) are not a change of fact: the quote says less, not
something else.

A quote whose outer edge cuts a number or a word's `n't` in two (`195` of `1956`, `did` of `didn't`)
changes that fact too.

A capitalised word is not a name at the start of a sentence unless the text also writes it capitalised
within one; a quote written in capitals or in title case says nothing by its case (only the passage's
names count). A difference only of token boundaries (`1,000` / `1000`) is form.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from functools import lru_cache

from expmrc.text.locate import Span, encode, fold, is_cjk, tokens

NEGATIONS = frozenset("not no never without none nor neither nothing nobody nowhere 不 没 未 无 非 别 勿".split())
NUMBER_WORDS = frozenset("""zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen
    fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred
    thousand million billion trillion dozen first second third fourth fifth sixth seventh eighth ninth tenth
    half twice""".split())
CHINESE_NUMERALS = frozenset("〇零一二三四五六七八九十百千万亿两廿卅壹贰叁肆伍陆柒捌玖拾佰仟")  # as folded (simplified)
NUMBER, NEGATION, NAME = "number", "negation", "name"
_SENTENCE_END = re.compile(r"[.!?。！？\n]")
_OPENING = set("\"'“‘«「『（([【《 \t")


@dataclass(frozen=True)
class Change:
    """One difference of fact: the quote's text, the passage's text, and what it touches."""

    quote: str
    passage: str
    kind: str  # number, negation or name

    def record(self) -> dict[str, str]:
        return {"quote": self.quote, "passage": self.passage, "kind": self.kind}


_CONTRACTED_NOT = re.compile(r"n['’‘ʼ＇]t\b", re.IGNORECASE)


def cuts_fact(passage: str, at: int, end: bool) -> bool:
    """Whether a quote starting (or, with `end`, ending) at `at` cuts a fact of the passage in two: inside a number
    (`195` of `1956`, `十二万` of `七十二万`), or before the `n't` of a word (`did` of `didn't`)."""
    if not 0 < at < len(passage):
        return False
    if all(c.isdigit() or c in CHINESE_NUMERALS for c in passage[at - 1:at + 1]):
        return True
    return end and passage[at - 1].isalpha() and bool(_CONTRACTED_NOT.match(passage, at))


def is_number(token: str) -> bool:
    """Whether a folded token is a number or holds one (a digit, a Chinese numeral, an English number word)."""
    return any(c.isdigit() or c in CHINESE_NUMERALS for c in token) or token in NUMBER_WORDS


@dataclass(frozen=True)
class _Side:
    """One side of the alignment: its text, tokens, token spans, the word each token belongs to (a Latin word split
    into letters in a CJK text is whole) and the tokens that are names."""

    text: str
    tokens: tuple[str, ...]
    spans: tuple[Span, ...]
    words: tuple[str, ...]
    names: frozenset[int]

    def display(self, lo: int, hi: int) -> str:
        return self.text[self.spans[lo][0]:self.spans[hi - 1][1]] if hi > lo else ""


def _word_span(text: str, span: Span) -> Span:
    """The run of ASCII letters and digits around a token (a Latin word split into letters in a CJK text is whole)."""
    start, end = span
    while start > 0 and text[start - 1].isascii() and text[start - 1].isalnum():
        start -= 1
    while end < len(text) and text[end].isascii() and text[end].isalnum():
        end += 1
    return start, end


def _word(text: str, span: Span) -> str:
    start, end = _word_span(text, span)
    return text[start:end]


def _sentence_initial(text: str, start: int) -> bool:
    """Whether only opening marks and spaces stand between the text's start or a sentence end and `start`."""
    k = start - 1
    while k >= 0 and text[k] in _OPENING:
        k -= 1
    return k < 0 or bool(_SENTENCE_END.match(text[k]))


def _capitalised(text: str, spans: tuple[Span, ...]) -> tuple[list[bool], set[str]]:
    """Per token, whether its word is capitalised (two letters or more, not `I`); and the words (case folded)
    written capitalised within a sentence."""
    flags, within = [], set()
    for span in spans:
        start, end = _word_span(text, span)
        word = text[start:end]
        flag = len(word) >= 2 and word[0].isupper() and not word.isdigit()
        flags.append(flag)
        if flag and not _sentence_initial(text, start):
            within.add(word.casefold())
    return flags, within


@lru_cache(maxsize=64)
def _side(text: str, characters: bool, case_says_nothing: bool = False, known: frozenset[str] = frozenset()) -> _Side:
    """Tokens and names of one side; `known`: words written capitalised within a sentence on the other side."""
    words, spans = tokens(text, characters)
    flags, within = _capitalised(text, spans)
    within |= known
    names = frozenset() if case_says_nothing else frozenset(
        i for i, flag in enumerate(flags)
        if flag and (not _sentence_initial(text, spans[i][0]) or _word(text, spans[i]).casefold() in within))
    whole = tuple(_word(text, span).casefold() if characters and t.isascii() and t.isalpha() else t
                  for t, span in zip(words, spans))
    return _Side(text, words, spans, whole, names)


def _shouting(text: str) -> bool:
    """Whether a text's case tells nothing: written in capitals, or most of its words capitalised (title case)."""
    words = re.findall(r"[^\W\d_]{2,}", text)
    if len(words) < 3:
        return False
    return sum(w[0].isupper() for w in words) >= 0.6 * len(words)


def _window(passage: _Side, span: Span) -> tuple[int, int]:
    """The passage tokens lying in `span`, as a token index range."""
    starts = [s for s, _ in passage.spans]
    return bisect_left(starts, span[0]), bisect_left(starts, span[1])


def _widen(passage: _Side, lo: int, hi: int, left: int, right: int) -> tuple[int, int]:
    """The token range grown by up to `left` and `right` tokens, never across a sentence end."""
    def crosses(a: int, b: int) -> bool:  # is there a sentence end between tokens a and b (a < b)?
        return bool(_SENTENCE_END.search(passage.text[passage.spans[a][1]:passage.spans[b][0]]))
    while left and lo > 0 and not crosses(lo - 1, lo):
        lo, left = lo - 1, left - 1
    while right and hi < len(passage.tokens) and not crosses(hi - 1, hi):
        hi, right = hi + 1, right - 1
    return lo, hi


def _opcodes(quote: _Side, passage: _Side, lo: int, hi: int) -> list[tuple[str, int, int, int, int]]:
    """The Levenshtein alignment of the quote's tokens to the passage's tokens lo..hi: (tag, q_lo, q_hi, p_lo, p_hi)
    per operation, passage indices from lo."""
    from rapidfuzz.distance import Levenshtein

    query, code = encode(quote.tokens, passage.tokens)
    return [(op.tag, op.src_start, op.src_end, op.dest_start, op.dest_end)
            for op in Levenshtein.opcodes(query, code[lo:hi])]


def _edits(quote: _Side, passage: _Side, lo: int, hi: int) -> list[tuple[int, int, int, int]]:
    """Maximal runs of edits aligning the quote's tokens to the passage's tokens lo..hi: (q_lo, q_hi, p_lo, p_hi),
    passage indices from lo."""
    runs: list[list[int]] = []
    for tag, a, b, c, d in _opcodes(quote, passage, lo, hi):
        if tag == "equal":
            continue
        if runs and runs[-1][1] == a and runs[-1][3] == c:
            runs[-1][1], runs[-1][3] = b, d
        else:
            runs.append([a, b, c, d])
    return [(a, b, c, d) for a, b, c, d in runs]


def _without_fragments(quote: _Side, passage: _Side, lo: int, hi: int) -> tuple[int, int]:
    """The token range less a match of one or two tokens at either end that passage text the quote leaves out,
    holding a sentence end the quote does not have, cuts off from the rest (the `不` of a neighbouring sentence
    matched to a `不` the quote put in)."""
    equal = [op[1:] for op in _opcodes(quote, passage, lo, hi) if op[0] == "equal"]
    if len(equal) < 2:
        return lo, hi

    def cut_off(small: tuple[int, ...], rest: tuple[int, ...], before: bool) -> bool:
        """Whether the run `small` (before or after the run `rest`) is cut off by a sentence end."""
        first, second = (small, rest) if before else (rest, small)
        q_gap = quote.text[quote.spans[first[1] - 1][1]:quote.spans[second[0]][0]]
        p_gap = passage.text[passage.spans[lo + first[3] - 1][1]:passage.spans[lo + second[2]][0]]
        return (small[1] - small[0] <= 2 and first[1] == second[0] and bool(_SENTENCE_END.search(p_gap))
                and not _SENTENCE_END.search(q_gap))

    new_lo = lo + equal[1][2] if cut_off(equal[0], equal[1], True) else lo
    new_hi = lo + equal[-2][3] if cut_off(equal[-1], equal[-2], False) else hi
    return new_lo, new_hi


def _aligned_range(quote: _Side, passage: _Side, span: Span) -> tuple[int, int]:
    """The passage token range the quote is compared with: the span less stray fragments of neighbouring
    sentences, grown by the quote tokens left over at its ends (within the sentence), less passage tokens at the
    grown ends that the quote does not hold."""
    lo, hi = _without_fragments(quote, passage, *_window(passage, span))
    edits = _edits(quote, passage, lo, hi)
    left = next((b for a, b, c, d in edits if a == 0 and c == 0), 0)
    right = next((len(quote.tokens) - a for a, b, c, d in edits if b == len(quote.tokens) and d == hi - lo), 0)
    grown_lo, grown_hi = _widen(passage, lo, hi, left, right)
    if (grown_lo, grown_hi) == (lo, hi):
        return lo, hi
    edits = _edits(quote, passage, grown_lo, grown_hi)
    for a, b, c, d in edits:
        if a == b == 0 and c == 0 and grown_lo + d <= lo:  # passage tokens before the quote starts
            grown_lo += d
        elif a == b == len(quote.tokens) and grown_lo + c >= hi:  # passage tokens after the quote ends
            grown_hi = grown_lo + c
    return grown_lo, grown_hi


def _glued_numbers(side: _Side, a: int, b: int) -> bool:
    """Whether tokens a and b (= a + 1) are parts of one number (`8|4`, `1,|956`)."""
    return (0 <= a and b < len(side.tokens) and is_number(side.words[a]) and is_number(side.words[b])
            and side.text[side.spans[a][1]:side.spans[b][0]] in ("", ",", "."))


def _splits_number(side: _Side, lo: int, hi: int) -> bool:
    """Whether leaving out tokens lo..hi leaves part of a number behind (`84` quoted as `8`)."""
    return _glued_numbers(side, lo - 1, lo) or _glued_numbers(side, hi - 1, hi)


def _kind(quote: _Side, passage: _Side, q: tuple[int, int], p: tuple[int, int], present: set[str]) -> str | None:
    """What a difference touches (number, negation, name), or None when it is not a change of fact."""
    if "".join(quote.tokens[q[0]:q[1]]) == "".join(passage.tokens[p[0]:p[1]]):
        return None
    qt, pt = quote.words[q[0]:q[1]], passage.words[p[0]:p[1]]
    if any(t in NEGATIONS for t in qt + pt):
        return NEGATION
    if any(is_number(t) for t in qt) or (any(is_number(t) for t in pt) and (qt or _splits_number(passage, *p))):
        return NUMBER
    new_name = any(i in quote.names and fold(_word(quote.text, quote.spans[i]))[0] not in present
                   for i in range(*q))
    replaced_name = q[1] > q[0] and any(i in passage.names for i in range(*p))
    return NAME if new_name or replaced_name else None


def _reach(side: _Side, lo: int, hi: int, kind: str) -> tuple[int, int]:
    """How many tokens a (non-empty) difference's range can grow to the left and to the right over touching tokens
    of the same number (`1,9|56`, `8|4`) or Latin word (a word split into letters in a CJK text)."""
    def joins(a: int, b: int) -> bool:
        if kind == NUMBER:
            return _glued_numbers(side, a, b)
        return side.spans[a][1] == side.spans[b][0] and side.tokens[a].isascii() and side.tokens[b].isascii()
    if hi == lo:
        return 0, 0
    start, end = lo, hi
    while start > 0 and joins(start - 1, start):
        start -= 1
    while end < len(side.tokens) and joins(end - 1, end):
        end += 1
    return lo - start, end - hi


def _cut_word(passage: str, at: int, number: bool) -> str:
    """The number (or, not `number`, the word with its `n't`) of the passage that position `at` cuts in two."""
    def part(c: str) -> bool:
        return c.isdigit() or c in CHINESE_NUMERALS or c in ",." if number else c.isalpha() or c in "'’‘ʼ＇"
    start, end = at, at
    while start > 0 and part(passage[start - 1]):
        start -= 1
    while end < len(passage) and part(passage[end]):
        end += 1
    return passage[start:end].strip(",.")


def _edge_changes(passage: _Side, quote: _Side, lo: int, hi: int, first: bool, last: bool) -> list[Change]:
    """A change where the quote's outer edge cuts a fact of the passage in two (`did` of `didn't`, `195` of `1956`)."""
    changes = []
    if first and cuts_fact(passage.text, passage.spans[lo][0], False):
        shown = quote.display(0, 1 + _reach(quote, 0, 1, NUMBER)[1])
        changes.append(Change(shown, _cut_word(passage.text, passage.spans[lo][0], True), NUMBER))
    if last and cuts_fact(passage.text, passage.spans[hi - 1][1], True):
        at, end = passage.spans[hi - 1][1], len(quote.tokens)
        kind = NEGATION if _CONTRACTED_NOT.match(passage.text, at) else NUMBER
        shown = quote.display(end - 1 - (_reach(quote, end - 1, end, NUMBER)[0] if kind == NUMBER else 0), end)
        changes.append(Change(shown, _cut_word(passage.text, at, kind == NUMBER), kind))
    return changes


def fact_changes(passage: str, span: Span, quote: str, first: bool = True, last: bool = True) -> list[Change]:
    """The changes of fact between `quote` and the passage text it was aligned to at `span` (module docstring);
    `first` and `last`: whether the quote's start and end are the outer edges of the whole quote (not an ellipsis)."""
    characters = is_cjk(passage)
    p_side = _side(passage, characters)
    present = set(tokens(passage)[0])
    q_side = _side(quote, characters, _shouting(quote), frozenset(
        _word(passage, p_side.spans[i]).casefold() for i in p_side.names))
    lo, hi = _aligned_range(q_side, p_side, span)
    if hi <= lo or not q_side.tokens:
        return []
    changes = []
    for a, b, c, d in _edits(q_side, p_side, lo, hi):
        kind = _kind(q_side, p_side, (a, b), (lo + c, lo + d), present)
        if kind is not None:  # shown with the rest of the number or word it changes, the same on both sides
            (ql, qr), (pl, pr) = _reach(q_side, a, b, kind), _reach(p_side, lo + c, lo + d, kind)
            left, right = max(ql, pl), max(qr, pr)
            changes.append(Change(q_side.display(max(0, a - left), min(len(q_side.tokens), b + right)),
                                  p_side.display(max(lo, lo + c - left), min(hi, lo + d + right)), kind))
    return changes + _edge_changes(p_side, q_side, lo, hi, first, last)
