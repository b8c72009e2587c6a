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
  一起 一样), English number words and currency or percent signs; its unit is a unit of measure,
  currency or time right after it (`km`, `dollars`, `October`, also after one other word: `Australian
  dollars`), in Chinese a measure word or unit (个 年 元 公里 平方公里);
- `name`: a capitalised word the quote writes that the passage does not hold, or a capitalised word
  of the passage replaced; a Chinese name of the passage with a character replaced, added or left
  out (names found as `chinese_names` says);
- `word`: any other word or character added, left out or replaced.

A whole number or name left out silently is a `word` change: the quote says less, not something
else. A quote whose outer edge leaves part of a fact outside (`edge_fact`: `195` of `1956`, `3` of
`3.2`, `did` of `didn't`, `3.2` of `3.2%`, `45` of `$45`, `did` of `did not`) changes that fact
too. A capitalised word is not a name at the start of a sentence (or after a colon) unless the text
also writes it capitalised within one; a quote written in capitals or in title case says nothing by
its case (only the passage's names count). `framing_changes` compares a framing that is passage
text (`X said, "…"`) with the passage text before the quote it frames.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, replace
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
_TOKEN = re.compile(rf"[{CJK}]|\d+(?:[.,]\d+)*(?:[^\W\d_{CJK}]+)?|[^\W_{CJK}]+(?:(?<=\d)\.\d+)*|[{SIGNS}]")
# units of a number: Chinese measure words and units (one character, or longer ones, longest first), English units of
# measure, currency and time (folded)
_ZH_UNITS = frozenset("个年月日天号时分秒周岁元角块毛次回遍趟人名位口户家座栋间层楼本册页张条根支枝只头匹尾件套双对副"
                      "台辆架艘部场届期批种类项门所片颗粒滴杯瓶碗盘包箱袋斤两克吨米里尺寸丈亩顷升度倍成折级段节章首篇"
                      "句字行列排份笔例代世轮圈步声下点队国省市县区镑")
_ZH_UNITS_LONG_LIST = ("人民币", "平方", "立方", "公里", "公斤", "公顷", "公尺", "公分", "英里", "英尺", "英寸", "英镑", "英亩",
                  "美元", "美分", "千米", "千克", "千瓦", "厘米", "毫米", "毫升", "港元", "港币", "欧元", "日元", "韩元",
                  "澳元", "加元", "台币", "小时", "分钟", "星期", "世纪", "年代", "年级", "周年", "周岁", "平米", "人次",
                  "光年", "海里", "摄氏度", "华氏度")
_ZH_UNITS_LONG = {c: tuple(w for w in _ZH_UNITS_LONG_LIST if w[0] == c) for c in {w[0] for w in _ZH_UNITS_LONG_LIST}}
_APPROXIMATELY = frozenset("余多来几")  # between a Chinese number and its unit: 两万余人
_EN_UNITS = frozenset("""percent per cent points point km kilometers kilometres kilometer kilometre miles mile meters
    metres meter metre m cm mm feet foot ft inches inch yards yard kg kilograms kilogram grams gram g lb lbs pounds
    pound tons tonnes ton ounces ounce oz litres liters litre liter gallons gallon acres acre hectares hectare square
    cubic degrees degree dollars dollar cents cent euros euro yuan yen rupees rupee francs franc marks pence penny
    pennies shillings years year months month weeks week days day hours hour minutes minute seconds decades decade
    centuries century times mph kph kmh am pm bc ad bce ce january february march april june july august september
    october november december jan feb mar apr jun jul aug sep sept oct nov dec""".split())
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
_NAME_STOPS = frozenset("的是在和与及于由为被把向对从等了将也都就而并或之其这个说称叫名年月日")  # no part of a name
_MIDDLE_DOT = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+(?:[·•・‧][\u3400-\u4dbf\u4e00-\u9fff]+)+")
_SENTENCE_END = re.compile(r"[.!?。！？\n]")
_OPENING = set("\"'“‘«「『（([【《 \t")
_NOT_AHEAD = re.compile(r"[^\W\d_]*n['’‘ʼ＇]t\b", re.IGNORECASE)  # the rest of a word ending in n't

ZH_NEGATIONS = frozenset("不没沒未无無非别別勿")  # as written (the fact check folds traditional script)
_NEGATION_WORDS = "|".join(sorted(NEGATIONS))
_NEGATED_AUXILIARIES = frozenset("有能会曾再用要必肯敢得法是可该应")  # 没有, 不能, 无法: one negation word
_NEGATING = rf"(?:{_NEGATION_WORDS}|cannot|[^\W\d_]+n['’‘ʼ＇]t)"  # a negation word, `cannot`, a word ending in n't
_NEGATION_AFTER = re.compile(rf"\s+({_NEGATING})\b(?!\.\s?\d)", re.IGNORECASE)  # not `No. 1`
_NEGATION_BEFORE = re.compile(rf"\b({_NEGATING})\s+$", re.IGNORECASE)
_NUMBER_BEFORE = re.compile(r"(?:\d|[〇零一二三四五六七八九十百千万亿两]|\b(?:" + "|".join(sorted(NUMBER_WORDS)) + r"))$",
                            re.IGNORECASE)
_WORD_BEFORE = re.compile(rf"[^\W\d_{CJK}]+$")  # a word (a CJK character is one) ending at a quote's edge
_WORD_AFTER = re.compile(rf"[^\W\d_{CJK}]+")
# what belongs to a number just outside a quote's edge: a sign, a scale, a currency (a word or a character)
_SIGN_AFTER = re.compile(r"\s?(?:[%‰‱°℃℉％﹪]|(?:per\s?cent|percent(?:age points?)?|million|billion|trillion|thousand|"
                         r"hundred|dollars?|cents?|euros?|pounds?|yuan|yen|rmb|degrees?)\b|美元|欧元|英镑|日元|港元|港币|"
                         r"韩元|澳元|人民币|[万亿元块度倍])", re.IGNORECASE)
_SIGN_BEFORE = re.compile(r"(?:[$¢£¥€₠-₿＄￥￡]|\b(?:RMB|USD|EUR|GBP|CNY|HKD|JPY|minus|negative)|人民币|负|零下|百分之|"
                          r"千分之|(?<![\w.])[-−])\s?$", re.IGNORECASE)


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


def cuts_fact(passage: str, at: int, end: bool, signs: bool = True) -> bool:
    """Whether a quote starting (or, with `end`, ending) at `at` cuts a fact of the passage in two (`edge_fact`);
    without `signs`, only a number or a word ending in `n't` cut in two counts (a span answer's edges)."""
    found = edge_fact(passage, at, end)
    return found is not None and (signs or found[2])


def cuts_word(passage: str, at: int) -> bool:
    """Whether position `at` falls inside a word of Latin (not CJK) letters: a quote starting or ending there is not
    that word (`T, the area` is not `settlement, the area`)."""
    return 0 < at < len(passage) and all(c.isalpha() and c < "\u2e80" for c in passage[at - 1:at + 1])


def edge_fact(passage: str, at: int, end: bool) -> tuple[str, Span, bool] | None:
    """The fact a quote starting (or, with `end`, ending) at `at` leaves partly outside, or None: (its kind, its span
    in the passage, whether the edge falls inside a word). Inside a number (`195` of `1956`, `十二万` of `七十二万`, `3`
    of `3.2`) or a word ending in `n't` (`did` of `didn't`, `ca` of `can't`, `can` of `cannot`); a number's sign,
    scale or currency just outside (`3.2` of `3.2%`, `45` of `$45`, `102` of `102 million`, `3亿` of `3亿元`); a
    negation just outside, with nothing but spaces between (`which they did` of `which they did not`, `all came` of
    `Not all came`, `同意` of `不同意`)."""
    if not 0 < at < len(passage):
        return None
    left, right = passage[at - 1], passage[at]
    if (all(c.isdigit() or c in CHINESE_NUMERALS for c in (left, right))
            or end and left.isdigit() and right in ".,，" and passage[at + 1:at + 2].isdigit()
            or not end and right.isdigit() and left in ".,，" and passage[at - 2:at - 1].isdigit()):
        return NUMBER, _cut_word(passage, at, True), True
    if end and left.isalpha() and (_NOT_AHEAD.match(passage, at) or passage[at - 3:at + 3].lower() == "cannot"):
        return NEGATION, _cut_word(passage, at, False), True
    return _sign_or_negation_after(passage, at) if end else _sign_or_negation_before(passage, at)


def _sign_or_negation_after(passage: str, at: int) -> tuple[str, Span, bool] | None:
    """A sign or scale of the number a quote ends with, or a negation right after the quote's last word."""
    sign = _SIGN_AFTER.match(passage, at)
    if sign and _NUMBER_BEFORE.search(passage, max(0, at - 12), at) and not _in_word(passage, at - 1, _NOT_NUMERAL):
        start = at
        while start > 0 and (passage[start - 1] in CHINESE_NUMERALS or passage[start - 1] in ".,"
                             or passage[start - 1].isascii() and passage[start - 1].isalnum()):
            start -= 1
        while passage[start] in ".,":
            start += 1
        return NUMBER, (start, sign.end()), False
    if not passage[at - 1].isalnum():
        return None
    word = _WORD_BEFORE.search(passage, max(0, at - 30), at)
    start = word.start() if word else at - 1  # the quote's last word, shown with the negation
    negation = _NEGATION_AFTER.match(passage, at)
    if negation:
        return NEGATION, (start, negation.end()), False
    if passage[at] in ZH_NEGATIONS and not _in_word(passage, at, _NOT_NEGATION):
        return NEGATION, (start, at + 1), False
    return None


def _sign_or_negation_before(passage: str, at: int) -> tuple[str, Span, bool] | None:
    """A currency or minus sign (or 百分之, 零下) before the number a quote starts with, or a negation right before
    the quote's first word."""
    if passage[at].isdigit() or passage[at] in CHINESE_NUMERALS:
        sign = _SIGN_BEFORE.search(passage, max(0, at - 10), at)
        if sign:
            return NUMBER, (sign.start(), _cut_word(passage, at, True)[1]), False
    if not passage[at].isalnum():
        return None
    word = _WORD_AFTER.match(passage, at)
    end = word.end() if word else at + 1
    negation = _NEGATION_BEFORE.search(passage, max(0, at - 20), at)
    if negation:
        return NEGATION, (negation.start(1), end), False
    for k in (at - 1, at - 2):  # 不同意; 没有得到, 无法履行, 不能去
        if k >= 0 and passage[k] in ZH_NEGATIONS and not _in_word(passage, k, _NOT_NEGATION) \
                and (k == at - 1 or passage[k + 1] in _NEGATED_AUXILIARIES):
            return NEGATION, (k, end), False
    return None


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
    """Whether only opening marks and spaces stand between the text's start, a sentence end or a colon and `start`
    (a capital after a colon starts a sentence or a list item)."""
    k = start - 1
    while k >= 0 and text[k] in _OPENING:
        k -= 1
    return k < 0 or bool(_SENTENCE_END.match(text[k])) or text[k] in ":："


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
    return tuple(found + [_dotted(text, m.span()) for m in _MIDDLE_DOT.finditer(text)])


def _dotted(text: str, span: Span) -> Span:
    """A name joined by middle dots within a run of Han characters (`由于长向相似于罗密·施奈德`): from at most five
    characters before the first dot to at most five after the last, stopping at a word that names no one (`由`,
    `于`, `的`, `等`)."""
    start, end = span
    first = min(text.find(d, start, end) for d in "·•・‧" if text.find(d, start, end) >= 0)
    last = max(text.rfind(d, start, end) for d in "·•・‧")
    a = first
    while a > max(start, first - 5) and text[a - 1] not in _NAME_STOPS:
        a -= 1
    b = last + 1
    while b < min(end, last + 6) and text[b] not in _NAME_STOPS:
        b += 1
    return a, b


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
        return 0 < i < len(tokens) and not form[at[i - 1] + len(tokens[i - 1]):at[i]].strip()

    out, group, after_number, i = [-1] * len(tokens), -1, False, 0
    while i < len(tokens):
        if numeric(i):
            if not (after_number and joined(i)):
                group += 1
            out[i], after_number, i = group, True, i + 1
            continue
        if after_number and joined(i):
            size = _unit_at(tokens, i, joined, cjk)
            for k in range(i, i + size):
                out[k] = group
            i += max(size - 1, 0)
        after_number, i = False, i + 1
    return tuple(out)


def _unit_at(tokens: list[str], i: int, joined: Callable[[int], bool], cjk: bool) -> int:
    """How many tokens from token `i` (right after a number) are its unit: a unit of measure, currency or time in
    English (`km`, `percent`, `dollars`, `October`), also after one other word (`Australian dollars`); a measure word
    or unit in Chinese (`个`, `公里`, `平方公里`, `余人`); 0 for none."""
    if not cjk:
        if tokens[i] in _EN_UNITS:
            return 1
        return 2 if joined(i + 1) and tokens[i + 1] in _EN_UNITS and tokens[i].isalpha() else 0
    start = i + 1 if tokens[i] in _APPROXIMATELY and joined(i + 1) else i  # 两万余人, 三十多岁
    end = start
    while end < len(tokens) and (end == i or joined(end)):
        size = next((len(w) for w in _ZH_UNITS_LONG.get(tokens[end], ()) if "".join(tokens[end:end + len(w)]) == w
                     and all(joined(k) for k in range(end + 1, end + len(w)))), int(tokens[end] in _ZH_UNITS))
        if not size:
            break
        end += size
        if "".join(tokens[end - size:end]) not in ("平方", "立方"):
            break
    return end - i if end > start else 0


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
    """A change where the quote's outer edge leaves part of a fact of the passage outside (`edge_fact`: `did` of
    `didn't`, `195` of `1956`, `3.2` of `3.2%`, `which they did` of `which they did not`), shown with the quote's
    tokens that lie in that fact (at least one). A negation beside an edge token aligned only across passage text
    the quote leaves out (`Great Lakes area` for `Great Lakes region (an area not …`) is no sure edge."""
    changes = []
    n = len(quote.tokens)
    for at, end in ((passage.spans[lo][0], False), (passage.spans[hi - 1][1], True)):
        found = edge_fact(passage.text, at, end) if (last if end else first) else None
        if found is None or found[0] == NEGATION and not found[2] and _across_gap(quote, passage, lo, hi, end):
            continue
        kind, (start, stop), _ = found
        inside = max(1, min(n, sum(start <= a and b <= stop for a, b in passage.spans[lo:hi])))
        shown = quote.display(n - inside, n) if end else quote.display(0, inside)
        changes.append(Change(shown, passage.text[start:stop], kind, start, stop))
    return changes


def _across_gap(quote: _Side, passage: _Side, lo: int, hi: int, end: bool) -> bool:
    """Whether the quote's one or two tokens at that edge are aligned to passage tokens past passage text the quote
    leaves out."""
    ops = _opcodes(quote, passage, lo, hi)
    ops = ops if not end else ops[::-1]
    return len(ops) >= 2 and ops[0][0] == "equal" and ops[0][2] - ops[0][1] <= 2 and ops[1][0] == "insert"


def _sides(passage: str, quote: str) -> tuple[_Side, _Side]:
    """The passage's side and the quote's (whose case counts unless it is shouting; the passage's names are known)."""
    p_side = _side(passage)
    return p_side, _side(quote, _shouting(quote), frozenset(p_side.tokens[i] for i in p_side.names))


def _classified(q_side: _Side, p_side: _Side, lo: int, hi: int) -> list[Change]:
    """The changes aligning the quote's tokens to the passage's tokens lo..hi (differences of form left out)."""
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
    return changes


def differences(passage: str, span: Span, quote: str, first: bool = True, last: bool = True) -> list[Change]:
    """Every difference between `quote` and the passage text it was aligned to at `span` (module docstring), in
    quote order; `first` and `last`: whether the quote's start and end are the outer edges of the whole quote (not
    an ellipsis)."""
    p_side, q_side = _sides(passage, quote)
    if not q_side.tokens or not p_side.tokens:
        return []
    lo, hi = _aligned_range(q_side, p_side, span)
    if hi <= lo:
        return []
    return _classified(q_side, p_side, lo, hi) + _edge_changes(p_side, q_side, lo, hi, first, last)


def framing_changes(passage: str, at: int, framing: str) -> tuple[list[Change], int]:
    """The differences between a framing that is passage text (`X said, "…"`, `X说：“…”`) and the passage text
    just before `at`, where the quote it frames lies, within that sentence; and where the compared passage text
    starts (passage tokens before the framing's first are not compared). A capitalised word of the framing that the
    passage never writes is a name, also at the framing's start (`Mary said`); the framing's start is the quote's
    outer edge (`edge_fact`: `同意：“…”` for `不同意：“…”`)."""
    p_side, q_side = _sides(passage, framing)
    if not q_side.tokens or not p_side.tokens:
        return [], at
    present = set(p_side.tokens)
    strangers = {i for i, (a, b) in enumerate(q_side.spans) if framing[a].isupper() and b - a >= 2
                 and q_side.tokens[i].isalpha() and q_side.tokens[i] not in present}
    q_side = replace(q_side, names=q_side.names | strangers)  # a speaker the passage never names: `Mary said`
    hi = _window(p_side, (at, at))[0]
    lo = _widen(p_side, hi, hi, len(q_side.tokens) + 2, 0)[0]
    edits = _edits(q_side, p_side, lo, hi)
    if edits and edits[0][:3] == (0, 0, 0):  # passage tokens before the framing starts
        lo += edits[0][3]
    if lo >= hi:
        return _classified(q_side, p_side, lo, hi), at
    edge = _edge_changes(p_side, q_side, lo, hi, True, False)  # `同意：“…”` for `不同意：“…”`
    return _classified(q_side, p_side, lo, hi) + edge, p_side.spans[lo][0]


def elided_negation(passage: str, gap: Span) -> Change | None:
    """The negation an ellipsis stands for, or None: one among the last two tokens of the passage text the
    ellipsis leaves out (`gap`), with nothing but words and spaces between it and the text the quote goes on with
    (`had ... fought` for `had not fought`, `did [...]. Then` for `did not. Then`; not `(no compound)`, closed before
    it)."""
    side = _side(passage)
    lo, hi = _window(side, gap)
    hi = min(hi, len(side.tokens))
    while hi > lo and side.spans[hi - 1][1] > gap[1]:
        hi -= 1
    for i in range(hi - 1, max(lo, hi - 2) - 1, -1):
        a, b = side.spans[i]
        if re.search(r"[^\w\s'’]", passage[b:gap[1]]):  # closed before the text the quote goes on with
            return None
        if i in side.negations:
            return Change("…", passage[a:b], NEGATION, a, b)
    return None
