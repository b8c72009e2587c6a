"""Every difference between a located quote and the passage text it is aligned to, each of one kind.

Both sides are tokenized after folding (`expmrc.text.locate.fold`: case, width, script, quote marks,
contractions and digit grouping are no difference): a CJK character; a number with its decimal
points and any letters stuck to it (`3.2`, `1.5`, `10km`, `1990s`); a word; a currency, percent or
degree sign. Punctuation and markup are not tokens, so a difference of them is form. The tokens are
aligned (Levenshtein, rapidfuzz); adjacent edits make one difference; quote tokens left over at
either end are compared with the passage tokens beside the span, within the same sentence. A
difference only of token boundaries (`10 km` / `10km`) is form; every other one is a `Change`:

- `negation`: it touches a negation (`not` and `n't`, `no`, `never`, `without`, `none`, `nor`,
  `neither`, `nothing`, `nobody`, `nowhere`; 不 没 未 无 非 别 勿 outside words such as 非常 特别
  未来 不过) on either side: changed, added or left out;
- `number`: the quote writes a number or its unit where the passage does not (added or replacing),
  or replaces one, or leaves out part of one and keeps the rest (`3.2` → `32`, `102 million` →
  `million`, `5 km` → `5`). A number is a run of digits, Chinese numerals (outside words such as
  一起 一样), English number words and currency or percent signs; its unit is the word (one or two
  CJK characters) right after it;
- `name`: a capitalised word the quote writes that the passage does not hold, or a capitalised word
  of the passage replaced; a Chinese name of the passage with a character replaced, added or left
  out (names found as `chinese_names` says);
- `word`: any other word or character added, left out or replaced.

A whole number or name left out silently is a `word` change: the quote says less, not something
else. A quote whose outer edge cuts a number or a word's `n't` in two (`195` of `1956`, `3` of
`3.2`, `did` of `didn't`) changes that fact too. A capitalised word is not a name at the start of a
sentence unless the text also writes it capitalised within one; a quote written in capitals or in
title case says nothing by its case (only the passage's names count).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from expmrc.text.locate import CJK, Span, encode, fold

NEGATION, NUMBER, NAME, WORD = "negation", "number", "name", "word"
KINDS = (NEGATION, NUMBER, NAME, WORD)  # of a change, by precedence: the first that fits
FACTS = (NEGATION, NUMBER, NAME)  # the kinds that make a quote `altered`
NEGATIONS = frozenset("not no never without none nor neither nothing nobody nowhere".split())
NUMBER_WORDS = frozenset("""zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen
    fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred
    thousand million billion trillion dozen first second third fourth fifth sixth seventh eighth ninth tenth
    half twice""".split())
CHINESE_NUMERALS = frozenset("〇零一二三四五六七八九十百千万亿两廿卅壹贰叁肆伍陆柒捌玖拾佰仟")  # as folded (simplified)
CHINESE_NEGATIONS = frozenset("不没未无非别勿")
# words holding a negation or numeral character that is neither
_NOT_NEGATION = ("非常", "未来", "特别", "区别", "分别", "别人", "别的", "级别", "告别", "类别", "性别", "差别",
                 "个别", "识别", "无论", "不过", "不但", "不仅", "不少", "不断", "不久", "不管", "不论", "无数", "无比")
_NOT_NUMERAL = ("一起", "一样", "一些", "一直", "一定", "一般", "一切", "一边", "一下", "一旦", "一致", "一同",
                "一向", "一再", "一面", "一方", "一点", "一会", "统一", "唯一", "万一", "千万", "万分", "十分")
SIGNS = "$¢£¤¥₠-₿%‰‱°"  # currency, percent and degree signs (NFKC folds ＄ ￥ ％ to these)
_TOKEN = re.compile(rf"[{CJK}]|\d+(?:[.,]\d+)*(?:[^\W\d_{CJK}]+)?|[^\W_{CJK}]+(?:\.\d+)*|[{SIGNS}]")
# English words that are no unit after a number (`1959 and`, `20 of`)
_FUNCTION = frozenset("""a an the and or but nor so yet of in on at to for by with from as into onto than then that
    this these those which who whom whose what when where while is was are were be been being has have had do does did
    will would can could shall should may might must it its he she they we you i his her their our your my me him them
    us per each every all some any more most less least about over under after before since until up down out off
    also too very only just still even""".split())
_UNIT_PREFIX = frozenset("公英美平立千厘毫港欧日韩澳加人")  # the first character of a two-character CJK unit (公里 美元)
# Chinese names: a surname (the less ambiguous of the common ones) and one or two characters, written twice or more,
# after 小 老 阿, or before a title; a transliteration (three or more of these characters, or two words joined by ·)
_SURNAMES = frozenset("王李张刘陈杨黄赵吴徐孙朱胡郭罗郑梁宋韩冯邓曹彭肖董袁潘蒋蔡杜魏吕丁沈姚卢姜崔谭汪廖贾韦邹孟"
                      "秦邱薛闫侯黎郝龚邵覃孔欧诸葛司")
_TITLES = ("先生", "女士", "小姐", "老师", "教授", "同学", "医生", "经理", "主任", "师傅", "阿姨", "叔叔", "校长",
           "博士", "大夫", "总统", "主席", "将军", "部长", "市长", "书记", "院士", "夫人", "太太", "大爷", "奶奶",
           "爷爷", "老板", "大哥", "大姐", "伯伯")
_TRANSLITERATION = frozenset("阿埃艾安奥巴拜邦鲍贝彼毕波伯博布查达戴丹德迪蒂杜多厄恩法菲芬弗福盖甘戈格圭哈豪赫亨"
                             "霍基吉贾杰捷卡凯坎柯科克肯库奎拉莱兰朗劳勒雷蕾里丽莉列琳隆卢鲁伦罗洛玛迈麦曼梅蒙米"
                             "密姆穆娜纳奈尼纽努诺欧帕佩皮珀普奇齐恰乔切琼萨塞桑瑟森莎舍施斯索塔泰坦汤提图托瓦威"
                             "维温沃乌锡谢辛休雅亚耶伊尤约泽扎詹")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+")
_MIDDLE_DOT = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+(?:[·•・‧][\u3400-\u4dbf\u4e00-\u9fff]+)+")
_SENTENCE_END = re.compile(r"[.!?。！？\n]")
_OPENING = set("\"'“‘«「『（([【《 \t")
_CONTRACTED_NOT = re.compile(r"n['’‘ʼ＇]t\b", re.IGNORECASE)
_NOT_AHEAD = re.compile(r"[^\W\d_]*n['’‘ʼ＇]t\b", re.IGNORECASE)  # the rest of a word ending in n't


@dataclass(frozen=True)
class Change:
    """One difference: the quote's text, the passage's text ("" for a side that has none), its kind (KINDS), and
    where the passage side lies in the passage (`start` == `end`: where the quote added its text)."""

    quote: str
    passage: str
    kind: str
    start: int = -1
    end: int = -1

    @property
    def fact(self) -> bool:
        return self.kind in FACTS

    def record(self) -> dict[str, Any]:
        return {"quote": self.quote, "passage": self.passage, "kind": self.kind, "start": self.start, "end": self.end}


def _in_word(form: str, at: int, words: tuple[str, ...]) -> bool:
    """Whether the character at `at` of `form` is part of one of `words` there."""
    return any(form.startswith(w, at - k) for w in words for k, c in enumerate(w) if c == form[at] and at >= k)


def cuts_fact(passage: str, at: int, end: bool) -> bool:
    """Whether a quote starting (or, with `end`, ending) at `at` cuts a fact of the passage in two: inside a number
    (`195` of `1956`, `十二万` of `七十二万`, `3` of `3.2`, `1` of `1,000`), or inside a word ending in `n't` (`did`
    of `didn't`, `ca` of `can't`)."""
    if not 0 < at < len(passage):
        return False
    if all(c.isdigit() or c in CHINESE_NUMERALS for c in passage[at - 1:at + 1]):
        return True
    if end and passage[at - 1].isdigit() and passage[at] in ".,，" and passage[at + 1:at + 2].isdigit():
        return True
    if not end and passage[at].isdigit() and passage[at - 1] in ".,，" and passage[at - 2:at - 1].isdigit():
        return True
    return end and passage[at - 1].isalpha() and bool(_NOT_AHEAD.match(passage, at))


def is_number(token: str) -> bool:
    """Whether a folded token is a number or holds one (a digit, a Chinese numeral, an English number word)."""
    return any(c.isdigit() or c in CHINESE_NUMERALS for c in token) or token in NUMBER_WORDS


@dataclass(frozen=True)
class _Side:
    """One side of the alignment: its text, tokens (folded), their spans in the text, the tokens that are
    negations and names, and per token the number (its unit included) and the Chinese name it belongs to (-1 for
    none)."""

    text: str
    tokens: tuple[str, ...]
    spans: tuple[Span, ...]
    negations: frozenset[int]
    names: frozenset[int]
    numbers: tuple[int, ...]
    chinese_name: tuple[int, ...]  # per token, the Chinese name it is a character of, or -1

    def display(self, lo: int, hi: int) -> str:
        return self.text[self.spans[lo][0]:self.spans[hi - 1][1]] if hi > lo else ""


def _sentence_initial(text: str, start: int) -> bool:
    """Whether only opening marks and spaces stand between the text's start or a sentence end and `start`."""
    k = start - 1
    while k >= 0 and text[k] in _OPENING:
        k -= 1
    return k < 0 or bool(_SENTENCE_END.match(text[k]))


def _shouting(text: str) -> bool:
    """Whether a text's case tells nothing: written in capitals, or most of its words capitalised (title case)."""
    words = re.findall(r"[^\W\d_]{2,}", text)
    if len(words) < 3:
        return False
    return sum(w[0].isupper() for w in words) >= 0.6 * len(words)


def _latin_names(text: str, spans: tuple[Span, ...], words: list[str], known: frozenset[str]) -> set[int]:
    """The tokens that are capitalised words (two letters or more) within a sentence, or at a sentence start when
    the text (or `known`: the other side's names, folded) also writes them capitalised within one."""
    flags = [len(w := text[a:b]) >= 2 and w[0].isupper() and w.isalpha() for a, b in spans]
    within = set(known) | {t for (a, _), t, f in zip(spans, words, flags) if f and not _sentence_initial(text, a)}
    return {i for i, ((a, _), t, f) in enumerate(zip(spans, words, flags))
            if f and (not _sentence_initial(text, a) or t in within)}


@lru_cache(maxsize=64)
def chinese_names(text: str) -> tuple[Span, ...]:
    """Where a text names someone or somewhere in Chinese, as far as characters tell (spans of `text`): two or more
    words joined by a middle dot (迈克尔·杰克逊); three or more characters all common in transliterations (西班牙); a
    surname and one or two characters (王小明) written twice or more, or after 小 老 阿 (小王), or before a title
    (王老师: the surname). Traditional script counts as simplified."""
    form, source = fold(text)
    found = [(source[a], source[b - 1] + 1) for a, b in _form_names(form)]
    return tuple(found + [m.span() for m in _MIDDLE_DOT.finditer(text)])


def _form_names(form: str) -> list[Span]:
    """`chinese_names` of a folded text, less the names joined by a middle dot (which folding makes a stop)."""
    spans = []
    for run in _HAN.finditer(form):
        start = None
        for k in range(run.start(), run.end() + 1):
            if k < run.end() and form[k] in _TRANSLITERATION:
                start = k if start is None else start
                continue
            if start is not None and k - start >= 3:
                spans.append((start, k))
            start = None
    for k, c in enumerate(form):
        if c not in _SURNAMES:
            continue
        if form[k - 1:k] in ("小", "老", "阿") or form.startswith(_TITLES, k + 1):
            spans.append((k, k + 1))
            continue
        for size in (3, 2):
            name = form[k:k + size]
            if len(name) == size and _HAN.fullmatch(name) and form.count(name) >= 2:
                spans.append((k, k + size))
                break
    return spans


def _numbers(form: str, tokens: list[str], at: list[int], cjk: bool) -> tuple[int, ...]:
    """Per token, the number it is part of (a run of number tokens and signs, and its unit), or -1."""
    def numeric(i: int) -> bool:
        t = tokens[i]
        if t[0] in SIGNS or t[0].isdigit() or t in NUMBER_WORDS:
            return True
        return t in CHINESE_NUMERALS and not _in_word(form, at[i], _NOT_NUMERAL)

    def joined(i: int) -> bool:  # tokens i - 1 and i stand next to one another, or with spaces between
        return not form[at[i - 1] + len(tokens[i - 1]):at[i]].strip()

    out, group, after_number, i = [-1] * len(tokens), -1, False, 0
    while i < len(tokens):
        if numeric(i):
            if not (after_number and joined(i)):
                group += 1
            out[i], after_number, i = group, True, i + 1
            continue
        if after_number and joined(i) and _unit(tokens[i], cjk):
            out[i] = group
            if cjk and tokens[i] in _UNIT_PREFIX and i + 1 < len(tokens) and joined(i + 1) and not numeric(i + 1):
                i += 1
                out[i] = group
        after_number, i = False, i + 1
    return tuple(out)


def _unit(token: str, cjk: bool) -> bool:
    """Whether a token right after a number is its unit: a CJK character, or (in a text that is not CJK) an English
    word other than a function word or a negation."""
    if re.fullmatch(f"[{CJK}]", token):
        return True
    return not cjk and token.isalpha() and token not in _FUNCTION and token not in NEGATIONS


@lru_cache(maxsize=64)
def _side(text: str, case_says_nothing: bool = False, known: frozenset[str] = frozenset()) -> _Side:
    """Tokens, negations, names and numbers of one side; `known`: words written capitalised within a sentence on the
    other side."""
    form, source = fold(text)
    found = list(_TOKEN.finditer(form))
    words = [m.group() for m in found]
    at = [m.start() for m in found]
    spans = tuple((source[m.start()], source[m.end() - 1] + 1) for m in found)
    cjk = len(re.findall(f"[{CJK}]", form)) * 5 >= len(form) > 0
    negations = frozenset(i for i, t in enumerate(words) if t in NEGATIONS or (
        t in CHINESE_NEGATIONS and not _in_word(form, at[i], _NOT_NEGATION)))
    names = set() if case_says_nothing else _latin_names(text, spans, words, known)
    starts, chinese = [a for a, _ in spans], [-1] * len(words)
    for k, (a, b) in enumerate(chinese_names(text)):
        for i in range(bisect_left(starts, a), bisect_left(starts, b)):
            names.add(i)
            chinese[i] = k
    return _Side(text, tuple(words), spans, negations, frozenset(names), _numbers(form, words, at, cjk), tuple(chinese))


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


def _reach_run(passage: _Side, edge: int, run: tuple[str, ...], direction: int) -> int:
    """How far (in tokens) the range must grow from `edge` to take in the nearest occurrence of `run` (quote tokens
    left over at that end) within a dozen tokens beyond it in the same sentence (a parenthetical between, which the
    quote leaves out); 0 when there is none."""
    if not run:
        return 0
    lo, hi = (_widen(passage, edge, edge, len(run) + 12, 0)[0], edge) if direction < 0 else \
        (edge, _widen(passage, edge, edge, 0, len(run) + 12)[1])
    window = passage.tokens[lo:hi]
    places = [k for k in range(len(window) - len(run) + 1) if window[k:k + len(run)] == run]
    if not places:
        return 0
    return edge - (lo + places[-1]) if direction < 0 else lo + places[0] + len(run) - edge


def _aligned_range(quote: _Side, passage: _Side, span: Span) -> tuple[int, int]:
    """The passage token range the quote is compared with: the span less stray fragments of neighbouring
    sentences, grown by the quote tokens left over at its ends (within the sentence), less passage tokens at the
    grown ends that the quote does not hold."""
    lo, hi = _without_fragments(quote, passage, *_window(passage, span))
    edits = _edits(quote, passage, lo, hi)
    left = next((b for a, b, c, d in edits if a == 0 and c == 0), 0)
    right = next((len(quote.tokens) - a for a, b, c, d in edits if b == len(quote.tokens) and d == hi - lo), 0)
    left = _reach_run(passage, lo, quote.tokens[:left], -1) or left
    right = _reach_run(passage, hi, quote.tokens[len(quote.tokens) - right:], 1) or right
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


def _kind(quote: _Side, passage: _Side, q: Span, p: Span, aligned: Span, present: set[str]) -> str | None:
    """What a difference touches (KINDS), or None when it is one of token boundaries only (form)."""
    if "".join(quote.tokens[q[0]:q[1]]) == "".join(passage.tokens[p[0]:p[1]]):
        return None
    if any(i in quote.negations for i in range(*q)) or any(i in passage.negations for i in range(*p)):
        return NEGATION
    if _number_changed(quote, passage, q, p, aligned):
        return NUMBER
    return NAME if _name_changed(quote, passage, q, p, aligned, present) else WORD


def _number_changed(quote: _Side, passage: _Side, q: Span, p: Span, aligned: Span) -> bool:
    """Whether the quote writes a number or unit here, or replaces one of the passage's, or leaves out part of one
    whose other parts it keeps."""
    if any(quote.numbers[i] >= 0 for i in range(*q)):
        return True
    touched = {passage.numbers[i] for i in range(*p)} - {-1}
    kept = (i for i in range(*aligned) if not p[0] <= i < p[1])
    return bool(touched) and (q[1] > q[0] or any(passage.numbers[i] in touched for i in kept))


def _name_changed(quote: _Side, passage: _Side, q: Span, p: Span, aligned: Span, present: set[str]) -> bool:
    """Whether the quote writes a capitalised name the passage does not hold, replaces a name of the passage, or
    leaves out a character of a Chinese name next to one it keeps."""
    if any(i in quote.names and quote.tokens[i] not in present for i in range(*q)):
        return True
    named = [i for i in range(*p) if i in passage.names]
    if not named:
        return False
    if q[1] > q[0]:
        return True
    dropped = {passage.chinese_name[i] for i in named} - {-1}
    return any(passage.chinese_name[j] in dropped for j in (p[0] - 1, p[1]) if aligned[0] <= j < aligned[1])


def _reach(side: _Side, lo: int, hi: int, kind: str) -> tuple[int, int]:
    """How many tokens a (non-empty) difference's range can grow to the left and to the right over tokens written
    touching it: of the same number (`三万`), or of the same Latin word (`does|n't`)."""
    def joins(a: int, b: int) -> bool:
        if side.spans[a][1] != side.spans[b][0]:
            return False
        if kind == NUMBER:
            return is_number(side.tokens[a]) and is_number(side.tokens[b])
        return side.tokens[a].isascii() and side.tokens[b].isascii()
    if hi == lo:
        return 0, 0
    start, end = lo, hi
    while start > 0 and joins(start - 1, start):
        start -= 1
    while end < len(side.tokens) and joins(end - 1, end):
        end += 1
    return lo - start, end - hi


def _passage_place(side: _Side, lo: int, hi: int) -> Span:
    """Where passage tokens lo..hi lie (an empty range: the point after token lo - 1, or before token lo)."""
    if hi > lo:
        return side.spans[lo][0], side.spans[hi - 1][1]
    at = side.spans[lo - 1][1] if lo > 0 else side.spans[0][0] if side.spans else 0
    return at, at


def _cut_word(passage: str, at: int, number: bool) -> Span:
    """The number (or, not `number`, the word with its `n't`) of the passage that position `at` cuts in two."""
    def part(c: str) -> bool:
        return c.isdigit() or c in CHINESE_NUMERALS or c in ",." if number else c.isalpha() or c in "'’‘ʼ＇"
    start, end = at, at
    while start > 0 and part(passage[start - 1]):
        start -= 1
    while end < len(passage) and part(passage[end]):
        end += 1
    while end > start and passage[end - 1] in ",.":
        end -= 1
    while start < end and passage[start] in ",.":
        start += 1
    return start, end


def _edge_changes(passage: _Side, quote: _Side, lo: int, hi: int, first: bool, last: bool) -> list[Change]:
    """A change where the quote's outer edge cuts a fact of the passage in two (`did` of `didn't`, `195` of `1956`)."""
    changes = []
    if first and cuts_fact(passage.text, passage.spans[lo][0], False):
        a, b = _cut_word(passage.text, passage.spans[lo][0], True)
        changes.append(Change(quote.display(0, 1), passage.text[a:b], NUMBER, a, b))
    if last and cuts_fact(passage.text, passage.spans[hi - 1][1], True):
        at, end = passage.spans[hi - 1][1], len(quote.tokens)
        number = not _CONTRACTED_NOT.match(passage.text, at)
        a, b = _cut_word(passage.text, at, number)
        changes.append(Change(quote.display(end - 1, end), passage.text[a:b], NUMBER if number else NEGATION, a, b))
    return changes


def differences(passage: str, span: Span, quote: str, first: bool = True, last: bool = True) -> list[Change]:
    """Every difference between `quote` and the passage text it was aligned to at `span` (module docstring), in
    quote order; `first` and `last`: whether the quote's start and end are the outer edges of the whole quote (not
    an ellipsis)."""
    p_side = _side(passage)
    q_side = _side(quote, _shouting(quote), frozenset(p_side.tokens[i] for i in p_side.names))
    if not q_side.tokens or not p_side.tokens:
        return []
    lo, hi = _aligned_range(q_side, p_side, span)
    if hi <= lo:
        return []
    present = set(p_side.tokens)
    changes = []
    for a, b, c, d in _edits(q_side, p_side, lo, hi):
        kind = _kind(q_side, p_side, (a, b), (lo + c, lo + d), (lo, hi), present)
        if kind is None:
            continue
        (ql, qr), (pl, pr) = _reach(q_side, a, b, kind), _reach(p_side, lo + c, lo + d, kind)
        left, right = max(ql, pl), max(qr, pr)  # shown with the rest of the number or word, the same on both sides
        qa, qb = max(0, a - left), min(len(q_side.tokens), b + right)
        pa, pb = max(lo, lo + c - left), min(hi, lo + d + right)
        start, end = _passage_place(p_side, pa, pb)
        changes.append(Change(q_side.display(qa, qb), p_side.display(pa, pb), kind, start, end))
    return changes + _edge_changes(p_side, q_side, lo, hi, first, last)


def elided_negation(passage: str, gap: Span) -> Change | None:
    """The negation an ellipsis stands for, or None: one among the last two tokens of the passage text the
    ellipsis leaves out (`gap`), with nothing but words and spaces between it and the text the quote goes on with
    (`had ... fought` for `had not fought`; not `(no compound)`, closed before it)."""
    side = _side(passage)
    lo, hi = _window(side, gap)
    hi = min(hi, len(side.tokens))
    while hi > lo and side.spans[hi - 1][1] > gap[1]:
        hi -= 1
    resumed = side.spans[hi][0] if hi < len(side.tokens) else len(passage)  # where the quote's text goes on
    for i in range(hi - 1, max(lo, hi - 2) - 1, -1):
        a, b = side.spans[i]
        if re.search(r"[^\w\s'’]", passage[b:resumed]):
            return None
        if i in side.negations:
            return Change("…", passage[a:b], NEGATION, a, b)
    return None
