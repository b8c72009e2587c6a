"""Quotes for the places issue 38 found where "only form is repaired" was bypassed or honest form was flagged, made
by rules from the dev sets' gold evidences and passages (tests/helpers/rule_quotes.py adds them to its kinds).

Changes of meaning: `edge sign` (a sign, scale or currency of a number dropped at the quote's edge: `3.2` of `3.2%`,
`45` of `$45`, `15` of `15%`, `3亿` of `3亿元`), `final negation` (a negation that ends a sentence or the quote
left out: `which they did.` for `which they did not.`), `initial negation` (one that opens the quote or a sentence
left out), `framed speech` (a speech framing copied from the passage, `X said, "…"`, `X说：“…”`, with a name or
character of the speaker changed), `framed clause` (the evidence's clause before a comma written as the framing of
the rest, `In March 2018, "…"`, with a number, negation or name of it changed), `name swap` (two Latin names of the
evidence swapped), `modal` (a modal verb swapped: `may` / `will`, `可能` / `一定`) and `stitched` (the evidence's
start joined to the end of another sentence of the passage). Honest quotes: `cited` (citation marks added around
or after the quote or a sentence: `[1]`, `(S3)`, `[source 2]`, `【1】`, `^1`), `html` (entities and tags),
`bracketed ellipsis` (`[...]`, `(…)`, `[…]`, `（……）` for a left-out middle) and `passage framing` (the framing of
`framed clause` or `framed speech` unchanged). A swap of ordinary words, `synonym` (`因为` / `由于`, `开始` / `起初`,
`began` / `started`), is no form and no fact: `reworded`, never `altered`.
"""

from __future__ import annotations

import random
import re

from helpers.fact_quotes import change_name, change_negation, change_number
from helpers.quotes import is_chinese

EDGE_FACT_KINDS = ("edge sign", "final negation", "initial negation", "framed speech", "framed clause", "name swap",
                   "modal", "stitched")
EDGE_HONEST_KINDS = ("cited", "html", "bracketed ellipsis", "passage framing")
SYNONYM = "synonym"
PASSAGE_KINDS = ("framed speech",)  # made from the passage's own framings: once per passage, not per question


def swap_pairs(text: str) -> dict[str, str]:
    """`a/b a/b ...` as a mapping both ways."""
    out = {}
    for pair in text.split():
        a, b = pair.split("/")
        out[a], out[b] = b, a
    return out


MODALS_EN = swap_pairs("may/will might/must can/must should/may could/would shall/may")
MODALS_ZH = swap_pairs("可能/一定 可以/必须 应该/也许 能够/必须 也许/肯定 大概/肯定 必然/或许")
SYNONYMS_EN = swap_pairs("""began/started begin/start big/large bought/purchased help/assist helped/assisted
    showed/demonstrated shows/demonstrates built/constructed important/significant often/frequently
    quickly/rapidly enough/sufficient main/primary area/region famous/renowned maybe/perhaps happy/glad
    got/obtained get/obtain chose/selected choose/select end/finish ended/finished whole/entire kids/children
    mostly/largely almost/nearly""")
SYNONYMS_ZH = swap_pairs("""因为/由于 开始/起初 但是/可是 所以/因此 非常/十分 马上/立刻 觉得/认为 美丽/漂亮 突然/忽然
    经常/常常 后来/之后 现在/目前 如果/假如 虽然/尽管 而且/并且 办法/方法 仔细/认真 帮助/帮忙 已经/早已 特别/尤其
    一起/一同 仍然/依然 大约/大概 喜欢/喜爱 以前/从前 明白/懂得 希望/盼望 高兴/开心 孩子/小孩 地方/地点 最后/最终
    当时/那时 得到/获得 成为/变成 包括/包含 只是/不过 许多/很多 重要/关键 建立/创立 称为/叫做""")

_SIGN_AFTER_EN = re.compile(r"(?<![\w.,])(\d+(?:[.,]\d+)*)(\s?(?:%|percent\b|per cent\b|million\b|billion\b|"
                            r"trillion\b|dollars\b|euros\b|pounds\b|yuan\b|yen\b|°[CF]?|degrees\b))")
_SIGN_AFTER_ZH = re.compile(r"(\d+(?:\.\d+)?|[一二三四五六七八九十两百千]+)(%|％|万|亿|美元|欧元|英镑|日元|元|度|倍)")
_SIGN_BEFORE = re.compile(r"([$€£¥]|US\$|HK\$|RMB ?|人民币|百分之|零下|负)(\d|[一二三四五六七八九十])")
_FINAL_NEGATION_EN = re.compile(r" (?:not|never|no)(?=[.!?;,)\"”’]|$)|n't(?=[.!?;,)\"”’]|$)")
_FINAL_NEGATION_ZH = re.compile(r"(?:没有|不|没|未)(?=[。！？，；”）]|$)")
_INITIAL_NEGATION_EN = re.compile(r"(?:^|(?<=[.!?] ))(?:Not|Never|No|None of|Nothing|Nobody|Neither|Without) (?=\w)")
_INITIAL_NEGATION_ZH = re.compile(r"(?:^|(?<=[。！？，]))(?:不|没有|没|未)(?![过但仅少断久管论])(?=[\u4e00-\u9fff])")
_EN_NEGATION = re.compile(r"(?<=\w) (?:not|never|no)\b|(?<=\w)n't\b")
_ZH_NEGATION = re.compile(r"(?<=[\u4e00-\u9fff])(?:没有|不|没|未)(?![过但仅少断久管论来])(?=[\u4e00-\u9fff])")
_SPEECH_EN = re.compile(r"(?:^|(?<=[.!?] ))(?P<pre>[A-Z][^.!?\"“”]{0,70}?)\s(?P<verb>said|says|asked|replied|added|"
                        r"explained|wrote|writes|told \w+|shouted|cried)(?P<colon>[,:]?)\s(?P<open>[\"“])"
                        r"(?P<body>[^\"“”]{12,240})(?P<close>[\"”])")
_SPEECH_ZH = re.compile(r"(?P<pre>[\u4e00-\u9fff]{2,8}?)(?P<verb>说道|问道|叫道|回答|说|问|道|喊|答)(?P<colon>[：:])\s*"
                        r"(?P<open>[“「\"])(?P<body>[^”」\"]{6,120})(?P<close>[”」\"])")
_CAPITALISED = re.compile(r"\b[A-Z][a-z]{2,}\b")
_SENTENCE_EN = re.compile(r"[^.!?]+[.!?]")
_SENTENCE_ZH = re.compile(r"[^。！？]+[。！？]")
CITATION_MARKS = ("[1]", "[2]", "[1][3]", "[1, 2]", "[S3]", "(S3)", "[source 2]", "(sentence 4)", "【1】", "^1", "[^2]",
                  "[Sentence 5]", "（来源：第3句）", "【2】【4】")
_PANGRAM_ZH = "明华国伟丽强军平芳敏霞杰涛静磊洋艳勇娟"


def _not_in(quote: str | None, passage: str) -> str | None:
    """`quote`, unless the passage holds it (then the "change" is none)."""
    return None if quote is None or quote in passage else quote


def edge_sign(evidence: str, passage: str, rng: random.Random) -> str | None:
    """The evidence cut right after a number, leaving out its sign, scale or currency (`3.2` of `3.2%`), or starting
    right at a number, leaving out the sign before it (`45` of `$45`); every place the passage holds that cut quote
    has the sign beside it."""
    after = _SIGN_AFTER_ZH if is_chinese(evidence) else _SIGN_AFTER_EN
    options = [(m.end(1), m.group(2), True) for m in after.finditer(evidence)]
    options += [(m.start(2), m.group(1), False) for m in _SIGN_BEFORE.finditer(evidence)]
    options = [(at, sign, end) for at, sign, end in options
               if len(evidence[:at] if end else evidence[at:]) >= 12]
    if not options:
        return None
    at, sign, end = rng.choice(options)
    quote = evidence[:at] if end else evidence[at:]
    signed = quote + sign if end else sign + quote
    return quote if passage.count(quote) == passage.count(signed) else None


def _cut_at(passage: str, quote: str, left_out: str, end: bool) -> str | None:
    """A quote cut from the evidence, kept when every place the passage holds it has `left_out` just beyond its cut
    edge (after it, or with `end` false before it)."""
    return quote if quote and passage.count(quote) == passage.count(quote + left_out if end else left_out + quote) \
        else None


def final_negation(evidence: str, passage: str, rng: random.Random) -> str | None:
    """A negation at a sentence's or the quote's end left out: one that ends a sentence of the evidence dropped
    (`which they did.` for `which they did not.`), or the evidence cut right before one of its negations (`The two
    kingdoms had` for `The two kingdoms had not fought …`)."""
    chinese = is_chinese(evidence)
    options = [(evidence[:m.start()] + evidence[m.end():], "")
               for m in (_FINAL_NEGATION_ZH if chinese else _FINAL_NEGATION_EN).finditer(evidence) if m.start() > 3]
    options += [(evidence[:m.start()], m.group()) for m in (_ZH_NEGATION if chinese else _EN_NEGATION).finditer(evidence)
                if len(evidence[:m.start()]) >= (6 if chinese else 20)]
    if not options:
        return None
    quote, left_out = rng.choice(options)
    return _cut_at(passage, quote, left_out, True) if left_out else _not_in(quote, passage)


def initial_negation(evidence: str, passage: str, rng: random.Random) -> str | None:
    """A negation at a sentence's or the quote's start left out: one that opens the evidence or one of its
    sentences dropped (`All came` for `Not all came`), or the evidence from right after one of its negations on
    (`fought a war …` for `had not fought a war …`)."""
    chinese = is_chinese(evidence)
    options = []
    for m in (_INITIAL_NEGATION_ZH if chinese else _INITIAL_NEGATION_EN).finditer(evidence):
        rest = evidence[m.end():]
        options.append((evidence[:m.start()] + (rest if chinese or m.start() else rest[:1].upper() + rest[1:]), ""))
    for m in (_ZH_NEGATION if chinese else _EN_NEGATION).finditer(evidence):
        quote = evidence[m.end():].lstrip()
        if len(quote) >= (6 if chinese else 20) and quote[0].isalnum():  # not `, you may` after `not`
            options.append((quote, evidence[m.start():len(evidence) - len(quote)]))  # the negation and spaces
    if not options:
        return None
    quote, left_out = rng.choice(options)
    return _cut_at(passage, quote, left_out, False) if left_out else _not_in(quote, passage)


def _speakers(passage: str) -> list[re.Match]:
    return list((_SPEECH_ZH if is_chinese(passage) else _SPEECH_EN).finditer(passage))


def _other_names(passage: str, others: list[str]) -> list[str]:
    """Capitalised words of other passages that this passage does not hold."""
    return sorted({w for other in others for w in _CAPITALISED.findall(other) if w.lower() not in passage.lower()})


def _change_speaker(pre: str, passage: str, others: list[str], rng: random.Random) -> str | None:
    """A speaker changed: in English a capitalised word swapped for another passage's name or two of them swapped,
    in Chinese one character replaced."""
    if is_chinese(pre):
        places = [i for i, c in enumerate(pre) if "\u4e00" <= c <= "\u9fff"]
        for _ in range(10):
            i = rng.choice(places)
            new = pre[:i] + rng.choice(_PANGRAM_ZH) + pre[i + 1:]
            if new != pre and new not in passage:
                return new
        return None
    names = list(_CAPITALISED.finditer(pre))
    distinct = sorted({m.group() for m in names})
    if len(distinct) >= 2 and rng.random() < 0.5:
        a, b = rng.sample(distinct, 2)
        return re.sub(rf"\b(?:{a}|{b})\b", lambda m: b if m.group() == a else a, pre)
    pool = _other_names(passage, others)
    if not names or not pool:
        return None
    m = rng.choice(names)
    return pre[:m.start()] + rng.choice(pool) + pre[m.end():]


def speech(passage: str, others: list[str], changed: bool, rng: random.Random) -> str | None:
    """A speech framing of the passage and the quote it frames (`X said, "…"`, `X说：“…”`), with a changed speaker
    (`changed`) or as written but for its quote marks and colon."""
    found = _speakers(passage)
    if not found:
        return None
    m = rng.choice(found)
    pre = _change_speaker(m["pre"], passage, others, rng) if changed else m["pre"]
    if pre is None:
        return None
    if is_chinese(passage):
        marks = rng.choice((("：“", "”"), (":“", "”"), ("：「", "」"), ('："', '"')))
        return _not_in(f"{pre}{m['verb']}{marks[0]}{m['body']}{marks[1]}", passage) if changed else \
            f"{pre}{m['verb']}{marks[0]}{m['body']}{marks[1]}"
    colon = rng.choice((",", ":", m["colon"]))
    marks = rng.choice((('"', '"'), ("“", "”")))
    quote = f"{pre} {m['verb']}{colon} {marks[0]}{m['body']}{marks[1]}"
    return _not_in(quote, passage) if changed else quote


def _clause(evidence: str) -> tuple[str, str] | None:
    """The evidence split at its first comma after two to twelve words (English) or three to fifteen characters
    (Chinese), with at least four words or eight characters after it."""
    if is_chinese(evidence):
        at = next((i for i, c in enumerate(evidence) if c == "，" and 3 <= i <= 15), -1)
        return (evidence[:at], evidence[at + 1:]) if at > 0 and len(evidence) - at > 8 else None
    for m in re.finditer(r", ", evidence):
        words = len(evidence[:m.start()].split())
        if 2 <= words <= 12 and len(evidence[m.end():].split()) >= 4:
            return evidence[:m.start()], evidence[m.end():]
        if words > 12:
            break
    return None


def clause_framing(evidence: str, passage: str, others: list[str], changed: bool, rng: random.Random) -> str | None:
    """The evidence's clause before a comma written as the framing of the rest (`In March 2018, "…"`, `2019年：“…”`),
    with a number, negation or name of the clause changed (`changed`) or as it is."""
    split = _clause(evidence)
    if split is None:
        return None
    pre, rest = split
    if changed:
        options = [lambda: change_number(pre, rng), lambda: change_negation(pre, rng),
                   lambda: change_name(pre, passage, others, rng)]
        rng.shuffle(options)
        pre = next((new for make in options if (new := make()) not in (None, pre)), None)
        if pre is None:
            return None
    if is_chinese(evidence):
        quote = f"{pre}：“{rest}”"
    else:
        marks = rng.choice((('"', '"'), ("“", "”")))
        quote = f"{pre}, {marks[0]}{rest}{marks[1]}"
    return _not_in(quote, passage) if changed else quote


def name_swap(evidence: str, passage: str, rng: random.Random) -> str | None:
    """Two distinct capitalised words inside the evidence's sentences swapped."""
    found = [m for m in _CAPITALISED.finditer(evidence) if re.search(r"[\w,;]\s*$", evidence[:m.start()])]
    distinct = sorted({m.group() for m in found})
    if len(distinct) < 2:
        return None
    a, b = rng.sample(distinct, 2)
    return _not_in(re.sub(rf"\b(?:{a}|{b})\b", lambda m: b if m.group() == a else a, evidence), passage)


def swap_word(text: str, words: dict[str, str], rng: random.Random) -> str | None:
    """One word of `words` in `text` swapped for its pair (its case kept), or None when there is none."""
    if is_chinese(text):
        found = list(re.finditer("|".join(sorted(words, key=len, reverse=True)), text))
    else:  # a lowercase word: a capitalised one may be part of a name (`Big Band`, a heading)
        found = [m for m in re.finditer(r"\b[A-Za-z]+\b", text) if m.group().lower() in words and m.group().islower()]
    if not found:
        return None
    match = rng.choice(found)
    new = words[match.group().lower()] if not is_chinese(text) else words[match.group()]
    if match.group()[0].isupper():
        new = new[0].upper() + new[1:]
    return text[:match.start()] + new + text[match.end():]


def stitched(evidence: str, passage: str, start: int, end: int, rng: random.Random) -> str | None:
    """The start of the evidence (to a comma, or its first half) joined to the end of another sentence of the
    passage (from a comma, or its second half): a sentence the passage does not say."""
    chinese = is_chinese(evidence)
    sentences = [m for m in (_SENTENCE_ZH if chinese else _SENTENCE_EN).finditer(passage)
                 if (m.end() <= start or m.start() >= end) and len(m.group().strip()) >= (12 if chinese else 40)]
    if not sentences:
        return None
    other = rng.choice(sentences).group().strip()
    if re.search(r"…|\.\.\.|。。", evidence + other):
        return None  # an ellipsis in the stitched text would mark the join as text left out: no stitch
    comma = "，" if chinese else ", "
    head = evidence.split(comma)[0] if comma in evidence[4:] else _half(evidence, chinese, True)
    tail = other.split(comma, 1)[1] if comma in other[4:-4] else _half(other, chinese, False)
    if len(head.strip("，。, ")) < 4 or len(tail.strip("，。, ")) < 4:
        return None
    last, first = re.findall(r"\w+", head)[-1:], re.findall(r"\w+", tail)[:1]
    if not last or not first:
        return None
    joint = last[0][-1] + first[0][0] if chinese else f"{last[0]} {first[0]}"
    if re.search(r"\W*".join(map(re.escape, joint.split(" ") if not chinese else joint)), passage):
        return None  # the join is passage text (punctuation aside): the "stitch" may be a sentence the passage says
    if chinese:
        quote = head.rstrip("，。") + "，" + tail
    else:
        quote = head.rstrip(", ") + ", " + tail.lstrip()
    return _not_in(quote, passage)


def _half(text: str, chinese: bool, first: bool) -> str:
    """The first or second half of a text, cut between characters (Chinese) or words."""
    units = list(text) if chinese else text.split(" ")
    half = units[:len(units) // 2] if first else units[len(units) // 2:]
    return ("" if chinese else " ").join(half)


def cited(evidence: str, rng: random.Random) -> str:
    """Citation marks added after the quote (before or after its final stop), around it, at its start, or after
    each of its sentences."""
    mark = rng.choice(CITATION_MARKS)
    where = rng.choice(("after", "before stop", "around", "start", "sentences"))
    stop = re.search(r"[.。!?！？]$", evidence)
    if where == "before stop" and stop:
        return evidence[:-1] + (" " if rng.random() < 0.5 else "") + mark + evidence[-1]
    if where == "around":
        left, right = ("“", "”") if is_chinese(evidence) else rng.choice((('"', '"'), ("“", "”")))
        return f"{left}{evidence}{right} {mark}"
    if where == "start":
        return f"{mark} {evidence}"
    if where == "sentences":
        return re.sub(r"(?<=[.!?。！？])(?=\s|$)", lambda _: " " + rng.choice(CITATION_MARKS), evidence)
    return evidence + (" " if rng.random() < 0.7 else "") + mark


def html_marked(evidence: str, rng: random.Random) -> str:
    """HTML a model's reply may carry: one or two of a paragraph or bold tag, quote marks as `&quot;`, `&amp;` and
    `&#39;` for `&` and `'`, a no-break space as `&nbsp;`, a line break tag after a sentence."""
    ways = rng.sample(("paragraph", "bold", "quoted", "entities", "nbsp", "break"), rng.choice((1, 2)))
    text = evidence
    if "entities" in ways:
        text = text.replace("&", "&amp;").replace("'", "&#39;").replace("’", "&rsquo;").replace('"', "&quot;")
    if "nbsp" in ways and " " in text:
        at = rng.choice([m.start() for m in re.finditer(" ", text)])
        text = text[:at] + "&nbsp;" + text[at + 1:]
    if "bold" in ways:
        words = list(re.finditer(r"[^\s&;<>]+", text))
        if words:
            a = rng.randrange(len(words))
            b = min(len(words), a + rng.choice((1, 2, 3))) - 1
            text = (text[:words[a].start()] + rng.choice(("<b>", "<strong>")) + text[words[a].start():words[b].end()]
                    + rng.choice(("</b>", "</strong>")) + text[words[b].end():])
    if "break" in ways:
        text = re.sub(r"(?<=[.!?。！？])\s*(?=\S)", "<br>", text, count=1)
    if "quoted" in ways:
        text = f"&quot;{text}&quot;"
    if "paragraph" in ways:
        text = f"<p>{text}</p>"
    return text


_NEGATION_UNIT = re.compile(r"^\W*(?:not|never|no|nor|none|nothing|neither|nobody|nowhere|without|cannot|"
                            r"[不没未无非别勿])\W*$|n['’]t\W*$", re.IGNORECASE)


def bracketed_ellipsis(evidence: str, rng: random.Random) -> str | None:
    """A middle stretch (a fifth to a third) left out and marked by an ellipsis in brackets; a negation among its
    last units is kept (an ellipsis standing for it changes a fact)."""
    chinese = is_chinese(evidence)
    parts = list(evidence) if chinese else evidence.split()
    if len(parts) < 9:
        return None
    count = rng.randrange(max(1, len(parts) // 5), len(parts) // 3 + 1)
    start = rng.randrange(2, len(parts) - 2 - count + 1)
    while count > 1 and any(_NEGATION_UNIT.search(u) for u in parts[max(start, start + count - 2):start + count]):
        count -= 1
    if any(_NEGATION_UNIT.search(u) for u in parts[max(start, start + count - 2):start + count]):
        return None
    if chinese and any(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9,.]|[,.][0-9]", "".join(parts[k - 1:k + 1]))
                       for k in (start, start + count)):
        return None  # an honest ellipsis cuts no number or Latin word in two
    marks = ("（……）", "[……]", "（…）", "[…]") if chinese else ("[...]", "[…]", "(…)", "(...)", "[ ... ]")
    mark = rng.choice(marks)
    join = "".join if chinese else " ".join
    return join(parts[:start]) + ("" if chinese else " ") + mark + ("" if chinese else " ") + join(parts[start + count:])


def edge_fact_quote(kind: str, evidence: str, passage: str, span: tuple[int, int], others: list[str],
                    rng: random.Random) -> str | None:
    """`evidence` with one change of meaning of an EDGE_FACT_KINDS `kind`, or None when it allows none."""
    chinese = is_chinese(evidence)
    make = {"edge sign": lambda: edge_sign(evidence, passage, rng),
            "final negation": lambda: final_negation(evidence, passage, rng),
            "initial negation": lambda: initial_negation(evidence, passage, rng),
            "framed speech": lambda: speech(passage, others, True, rng),
            "framed clause": lambda: clause_framing(evidence, passage, others, True, rng),
            "name swap": lambda: None if chinese else name_swap(evidence, passage, rng),
            "modal": lambda: _not_in(swap_word(evidence, MODALS_ZH if chinese else MODALS_EN, rng), passage),
            "stitched": lambda: stitched(evidence, passage, span[0], span[1], rng)}
    return make[kind]()


def edge_honest_quote(kind: str, evidence: str, passage: str, others: list[str], rng: random.Random) -> str | None:
    """An honest quote of an EDGE_HONEST_KINDS `kind` (or a SYNONYM swap), or None when the evidence allows none."""
    if kind == SYNONYM:
        return _not_in(swap_word(evidence, SYNONYMS_ZH if is_chinese(evidence) else SYNONYMS_EN, rng), passage)
    if kind == "passage framing":
        if rng.random() < 0.3 and _speakers(passage):
            return speech(passage, others, False, rng)
        return clause_framing(evidence, passage, others, False, rng)
    make = {"cited": lambda: cited(evidence, rng), "html": lambda: html_marked(evidence, rng),
            "bracketed ellipsis": lambda: bracketed_ellipsis(evidence, rng)}
    return make[kind]()
