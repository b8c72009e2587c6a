"""Fresh cases for grounding's one rule (only form is repaired), made from the dev sets' gold evidences: quotes with
one change of meaning of each kind issue 30 lists, and honest quotes whose every difference is form or which say
less (tests/text/test_one_rule.py and benchmarks/bench_grounding.py).

Changes of meaning, beside those of tests/helpers/fact_quotes.py (`number`: a digit, a Chinese numeral or year,
an English number word; `negation`: one added or taken away; `name`: a Latin name swapped; each with a change of
form half of the time): `antonym` and
`quantifier` (a word of the lists below swapped for its opposite), `unit` (the unit after a number swapped),
`currency` (the sign before a number swapped), `decimal` (a decimal point dropped), `zh-name` (one character of a
Chinese name changed: the answer of a question asking who, or a name joined by a middle dot), `zh-swap` (`A比B` →
`B比A`) and `elided-negation` (a negation replaced by an ellipsis). Every case is made by a rule from the data,
seeded by the question id, the kind and a seed; none is picked by hand. Honest quotes whose every difference is
form: `verbatim`, `numbered` and `bulleted` (the evidence's sentence and the next one as a list), `grouping` (a
number of five digits or more written with or without grouping commas, the quote ending right after it half of the
time), `marked parenthetical` (a parenthetical left out, marked `(...)`), and `form` (tests/helpers/fact_quotes.py's
form-only rewrites). An honest quote that says less: `parenthetical` (one left out silently: `reworded`).
"""

from __future__ import annotations

import random
import re

from helpers.edge_quotes import (EDGE_FACT_KINDS, EDGE_HONEST_KINDS, PASSAGE_KINDS, SYNONYM, edge_fact_quote,
                                 edge_honest_quote, swap_pairs)
from helpers.fact_quotes import fact_changed, form_only, rng_for
from helpers.quotes import gold_cases, is_chinese

# The rules were tuned on seed 0 only. Seeds 2 and 3, each held out in its turn, showed misses that were then fixed,
# so they are held out no longer: seed 2 one change of meaning accepted as verbatim (RACE+: two sentences found
# apart, the whole quote changing a number), seed 3 another (RACE+: `You ca.` for `You can't.`, a match ending
# inside a word ending in n't) and a marked ellipsis read as eliding a negation (SQuAD: `(...)` for
# `(no compound)`). Seed 4 was run once, after issue 30's last change, for the figures of docs/grounding.md then.
# Issue 38's rules (and the kinds of tests/helpers/edge_quotes.py) were tuned on seed 0, with seeds 1 and 2 as
# further checks: seed 2 showed a quote ending in an ellipsis right after a cut number (`圣公会三[…]`) read as
# cutting it (an ellipsis at either end now leaves that edge open), seed 1 a sentence's start set before the text
# that precedes it in the passage taken for a speech tag moved first (only a short speech tag is, now); both also
# showed faults of the generators (an honest ellipsis leaving out `cannot` or cutting `1,000`, spacing splitting
# digit groups, a stitch whose join is passage text, one with no start), fixed there. Seed 4's figures were seen
# already, so seed 5 was held out for issue 38 and run once: it showed one change of meaning accepted as verbatim
# (C3: `同意：“…”` for `妇女不同意：“…”`, a framing starting right after a negation; the framing's start is now the
# quote's outer edge) and one stitch whose join was passage text but for empty parentheses (`祭遵（），加封…`: a
# fault of the generator, whose join test now skips punctuation). Both were fixed, so seed 6 was held out: run once,
# it showed one stitch accepted sentence by sentence (C3: `这种人生性不憨，?领导应更加关注老实人。`, a sentence ended
# where the passage goes on), fixed; seed 7 then showed one stitch ending on a quoted name the passage holds twice
# (RACE+: a framing that runs into the second occurrence), fixed; seed 8 is held out now, run once after both
# changes, for docs/grounding.md.
TUNING_SEED, HELD_OUT_SEED = 0, 8
FACT_KINDS = ("number", "negation", "name", "antonym", "quantifier", "unit", "currency", "decimal", "zh-name",
              "zh-swap", "elided-negation", *EDGE_FACT_KINDS)
HONEST_KINDS = ("verbatim", "numbered", "bulleted", "grouping", "marked parenthetical", "form", *EDGE_HONEST_KINDS)
SAYING_LESS = ("parenthetical",)  # honest, but not form: expected `reworded`
SWAPPED = (SYNONYM,)  # ordinary words swapped: no form and no fact, expected `reworded` (never `altered`)


ANTONYMS_EN = swap_pairs("""increase/decrease increased/decreased increases/decreases increasing/decreasing before/after
    largest/smallest larger/smaller large/small biggest/smallest bigger/smaller first/last early/late earlier/later
    earliest/latest high/low higher/lower highest/lowest long/short longer/shorter rise/fall rose/fell rising/falling
    open/closed win/lose won/lost success/failure successful/unsuccessful began/ended begin/end start/finish
    started/finished old/new older/newer oldest/newest north/south east/west northern/southern eastern/western
    inside/outside above/below good/bad better/worse best/worst happy/sad rich/poor strong/weak easy/difficult
    right/wrong true/false accepted/rejected accept/reject love/hate agree/disagree include/exclude
    included/excluded internal/external major/minor maximum/minimum positive/negative public/private
    remember/forget buy/sell bought/sold arrived/left push/pull same/different cheap/expensive full/empty hot/cold
    warm/cool fast/slow heavy/light wide/narrow deep/shallow strongest/weakest""")
ANTONYMS_ZH = swap_pairs("""增加/减少 上升/下降 提高/降低 最大/最小 之前/之后 以前/以后 开始/结束 成功/失败 喜欢/讨厌
    容易/困难 简单/复杂 主要/次要 同意/反对 接受/拒绝 记得/忘记 最早/最晚 最高/最低 扩大/缩小 加强/减弱 优点/缺点
    积极/消极 高兴/难过 热闹/安静 南方/北方 东部/西部 北部/南部 上午/下午 出口/进口 买入/卖出 胜利/失败 前面/后面
    里面/外面 上面/下面 便宜/昂贵 干净/肮脏 重要/次要 强大/弱小 进步/退步 开放/封闭 快乐/痛苦 年轻/年老 明天/昨天""")
QUANTIFIERS_EN = swap_pairs("""all/some always/sometimes may/will might/must many/few most/some every/some usually/rarely
    often/seldom everyone/someone everything/something several/many each/some certainly/probably definitely/possibly
    likely/unlikely mostly/partly should/could can/cannot frequently/occasionally generally/occasionally""")
QUANTIFIERS_ZH = swap_pairs("""很多/很少 所有/有些 总是/有时 可能/一定 必须/可以 经常/偶尔 大多数/少数 全部/部分 常常/偶尔
    许多/少数 应该/可能 大部分/小部分 每天/有时 一直/偶尔 完全/部分 多数/少数 到处/少数 肯定/也许 主要/部分""")
UNITS_EN = swap_pairs("""km/miles kilometers/miles kilometres/miles meters/feet metres/yards kg/pounds kilograms/pounds
    percent/points years/months days/weeks hours/minutes seconds/minutes dollars/euros acres/hectares tons/pounds
    inches/centimeters cm/inches mm/inches square/cubic degrees/percent""")
UNITS_ZH = swap_pairs("公里/英里 米/英尺 公斤/磅 元/美元 小时/分钟 天/周 岁/年 吨/公斤 平方米/平方英尺 度/分 倍/成 层/楼 亿/万")
CURRENCIES = "$€£¥"
_EN_NUMBER_UNIT = re.compile(r"(?<![\w.])(\d+(?:[.,]\d+)*)(\s*)(" + "|".join(sorted(UNITS_EN, key=len, reverse=True))
                             + r")\b|(\d)(%)")
_ZH_NUMBER_UNIT = re.compile(r"(\d+(?:\.\d+)?|[一二三四五六七八九十百千两]+)(" +
                             "|".join(sorted(UNITS_ZH, key=len, reverse=True)) + ")")
_CURRENCY = re.compile(rf"([{CURRENCIES}])(?=\s?\d)")
_DECIMAL = re.compile(r"(?<![\d.])\d+\.\d+(?![\d.])")
_ZH_SWAP = re.compile(r"(?:(?<=[，。、；：！？“”\s的在是了和与而但])|^)([\u4e00-\u9fff]{1,4}?)比([\u4e00-\u9fff]{1,4}?)"
                      r"(?=更|还|要|多|少|大|小|高|低|早|晚|好|差|长|短|快|慢|强|弱|重|轻|贵|远|近)")
_EN_NEGATION = re.compile(r"(?<=\w) (not|never) (?=\w)|(?<=\w)n't (?=\w)")
_ZH_NEGATION = re.compile(r"(?<=[\u4e00-\u9fff])[不没未](?=[\u4e00-\u9fff])")
_NOT_NEGATING = ("不过", "不但", "不仅", "不少", "不断", "不久", "不管", "不论", "未来", "差不多")
_WHO = re.compile(r"谁|哪位|什么人|叫什么")
_NAME_DOT = re.compile(r"[\u4e00-\u9fff]{2,}·[\u4e00-\u9fff]{2,}")
_GROUPED = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?![\d,]|\.\d)")
_PLAIN = re.compile(r"(?<![\d.,])\d{5,}(?![\d,]|\.\d)")
_PARENTHETICAL = re.compile(r"\s?[(（][^()（）]{2,40}[)）]")
_SENTENCE = re.compile(r"[^。！？!?]*?(?:[。！？!?]+[”」]?|\.(?=\s)|$)")


def _swap_word(text: str, words: dict[str, str], rng: random.Random, chinese: bool) -> str | None:
    """One word of `words` in `text` swapped for its pair (its case kept), or None when there is none."""
    if chinese:
        found = [m for m in re.finditer("|".join(sorted(words, key=len, reverse=True)), text)]
    else:
        found = [m for m in re.finditer(r"\b[A-Za-z]+\b", text) if m.group().lower() in words]
    if not found:
        return None
    match = rng.choice(found)
    new = words[match.group().lower()] if not chinese else words[match.group()]
    if not chinese and match.group()[0].isupper():
        new = new[0].upper() + new[1:]
    return text[:match.start()] + new + text[match.end():]


def antonym(text: str, rng: random.Random) -> str | None:
    chinese = is_chinese(text)
    return _swap_word(text, ANTONYMS_ZH if chinese else ANTONYMS_EN, rng, chinese)


def quantifier(text: str, rng: random.Random) -> str | None:
    chinese = is_chinese(text)
    return _swap_word(text, QUANTIFIERS_ZH if chinese else QUANTIFIERS_EN, rng, chinese)


def unit(text: str, rng: random.Random) -> str | None:
    """The unit after one number swapped (`12 km` → `12 miles`, `10%` → `10 points`, `6300公里` → `6300英里`)."""
    if is_chinese(text):
        found = [m for m in _ZH_NUMBER_UNIT.finditer(text) if not (m.group(2) == "岁" or len(m.group(1)) == 4)]
        if not found:
            return None
        m = rng.choice(found)
        return text[:m.start(2)] + UNITS_ZH[m.group(2)] + text[m.end(2):]
    found = list(_EN_NUMBER_UNIT.finditer(text))
    if not found:
        return None
    m = rng.choice(found)
    if m.group(5):
        return text[:m.start(5)] + " points" + text[m.end(5):]
    word = m.group(3)
    return text[:m.start(3)] + UNITS_EN[word.lower()] + text[m.end(3):]


def currency(text: str, rng: random.Random) -> str | None:
    found = list(_CURRENCY.finditer(text))
    if not found:
        return None
    m = rng.choice(found)
    return text[:m.start()] + rng.choice([c for c in CURRENCIES if c != m.group()]) + text[m.end():]


def decimal(text: str, rng: random.Random) -> str | None:
    found = list(_DECIMAL.finditer(text))
    if not found:
        return None
    m = rng.choice(found)
    return text[:m.start()] + m.group().replace(".", "") + text[m.end():]


def zh_names(question, evidence: str) -> list[str]:
    """Chinese names the data itself gives in an evidence: the answer of a question asking who (2 to 4 Han
    characters, found in the evidence), and names joined by a middle dot."""
    names = [m.group() for m in _NAME_DOT.finditer(evidence)]
    if _WHO.search(question.question):
        answers = [question.options["ABCD".index(question.answer)]] if hasattr(question, "options") \
            else [str(a) for a in question.answers]
        names += [a for a in answers if re.fullmatch(r"[\u4e00-\u9fff]{2,4}", a) and a in evidence]
    return names


def zh_name(text: str, names: list[str], passage: str, pool: str, rng: random.Random) -> str | None:
    """One character of one of `names` changed to another of `pool`, making a name the passage does not hold."""
    if not names:
        return None
    name = rng.choice(names)
    places = [i for i, c in enumerate(name) if c != "·"]
    for _ in range(10):
        i = rng.choice(places)
        new = name[:i] + rng.choice(pool) + name[i + 1:]
        if new != name and new not in passage:
            return text.replace(name, new, 1)
    return None


def zh_swap(text: str, rng: random.Random) -> str | None:
    found = [m for m in _ZH_SWAP.finditer(text) if m.group(1) != m.group(2)]
    if not found:
        return None
    m = rng.choice(found)
    return text[:m.start()] + m.group(2) + "比" + m.group(1) + text[m.end():]


def elided_negation(text: str, rng: random.Random) -> str | None:
    """A negation inside the quote replaced by an ellipsis (`had not fought` → `had ... fought`, `还没看过` →
    `还……看过`)."""
    if is_chinese(text):
        found = [m for m in _ZH_NEGATION.finditer(text)
                 if not any(text.startswith(w, m.start() - w.index(m.group())) for w in _NOT_NEGATING
                            if m.group() in w)]
        if not found:
            return None
        m = rng.choice(found)
        return text[:m.start()] + rng.choice(("……", "…")) + text[m.end():]
    found = list(_EN_NEGATION.finditer(text))
    if not found:
        return None
    m = rng.choice(found)
    return text[:m.start()] + rng.choice((" ... ", " … ", "... ")) + text[m.end():]


def fact_quote(kind: str, question, evidence: str, passage: str, others: list[str], pool: str,
               rng: random.Random) -> str | None:
    """`evidence` with one change of meaning of `kind`, or None when it has nothing to change so."""
    if kind in ("number", "negation", "name"):
        quote = fact_changed(kind, evidence, passage, others, rng)
        return None if quote is None or quote in passage else quote
    make = {"antonym": lambda: antonym(evidence, rng),
            "quantifier": lambda: quantifier(evidence, rng), "unit": lambda: unit(evidence, rng),
            "currency": lambda: currency(evidence, rng), "decimal": lambda: decimal(evidence, rng),
            "zh-name": lambda: zh_name(evidence, zh_names(question, evidence), passage, pool, rng),
            "zh-swap": lambda: zh_swap(evidence, rng), "elided-negation": lambda: elided_negation(evidence, rng)}
    quote = make[kind]()
    return None if quote is None or quote in passage else quote  # a "change" the passage also says is none


def _next_sentence(passage: str, end: int) -> str | None:
    """The passage sentence after position `end` (skipping spaces), or None at the end."""
    rest = passage[end:]
    lead = len(rest) - len(rest.lstrip())
    match = _SENTENCE.match(rest, lead)
    text = match.group().strip() if match else ""
    return text if len(text) >= 8 else None


def listed(evidence: str, passage: str, end: int, numbered: bool, rng: random.Random) -> str | None:
    """The evidence and the passage sentence after it, written as a numbered or bulleted list."""
    following = _next_sentence(passage, end)
    if following is None:
        return None
    if numbered:
        style = rng.choice(("{n}. ", "{n}) ", "({n}) ", "{c} ") + (("{z}、",) if is_chinese(evidence) else ()))
        marks = [style.format(n=n, c="①②"[n - 1], z="一二"[n - 1]) for n in (1, 2)]
    else:
        marks = [rng.choice(("- ", "* ", "• "))] * 2
    return "\n".join(m + s for m, s in zip(marks, (evidence, following)))


def grouping(evidence: str, rng: random.Random) -> str | None:
    """A number of five digits or more written with grouping commas, or one written with them without; half of the
    time the quote ends right after it (when its sign or scale does not follow it)."""
    from expmrc.text.facts import cuts_fact

    found = [(m, m.group().replace(",", "")) for m in _GROUPED.finditer(evidence)]
    found += [(m, f"{int(m.group()):,}") for m in _PLAIN.finditer(evidence)]
    if not found:
        return None
    m, new = rng.choice(found)
    whole = not cuts_fact(evidence, m.end(), True)  # the number, with its sign or scale, ends there
    end = m.end() if rng.random() < 0.5 and m.start() > 10 and whole else len(evidence)
    return evidence[:m.start()] + new + evidence[m.end():end]


def parenthetical(evidence: str, marked: bool, rng: random.Random) -> str | None:
    """A parenthetical left out, marked by an ellipsis in parentheses or silently."""
    found = [m for m in _PARENTHETICAL.finditer(evidence) if m.start() > 2]
    if not found:
        return None
    m = rng.choice(found)
    mark = ("（…）" if is_chinese(evidence) else " (...)") if marked else ""
    return evidence[:m.start()] + mark + evidence[m.end():]


def honest_quote(kind: str, evidence: str, passage: str, end: int, rng: random.Random) -> str | None:
    make = {"verbatim": lambda: evidence, "numbered": lambda: listed(evidence, passage, end, True, rng),
            "bulleted": lambda: listed(evidence, passage, end, False, rng), "grouping": lambda: grouping(evidence, rng),
            "marked parenthetical": lambda: parenthetical(evidence, True, rng),
            "parenthetical": lambda: parenthetical(evidence, False, rng), "form": lambda: form_only(evidence, rng)[0]}
    return make[kind]()


def rule_cases(dataset, seed: int) -> dict[str, list[tuple[str, str, str]]]:
    """(question id, passage, quote) per kind (FACT_KINDS, HONEST_KINDS, SAYING_LESS, SWAPPED), one per usable gold
    evidence that allows the kind (one per passage for PASSAGE_KINDS, made from the passage's own text). A gold
    evidence whose edge leaves part of a fact of its passage outside (`015年` of `2015年`, `3.2` of `3.2%`) or cuts a
    word in two (`T` of `The`) is left out: a fault of the data (copied as it is, it changes the fact)."""
    from expmrc.data.datasets import passage_of
    from expmrc.text.facts import cuts_fact, cuts_word

    cases = [(q, span) for q, span in gold_cases(dataset)
             if not any(cuts_fact(passage_of(q), at, end) or cuts_word(passage_of(q), at)
                        for at, end in ((span[0], False), (span[1], True)))]
    pool = "".join(sorted({c for q, span in cases for n in zh_names(q, passage_of(q)[span[0]:span[1]]) for c in n
                           if c != "·"})) or "明华国伟丽强军平芳敏"
    kinds = FACT_KINDS + HONEST_KINDS + SAYING_LESS + SWAPPED
    out: dict[str, list[tuple[str, str, str]]] = {kind: [] for kind in kinds}
    seen: set[str] = set()
    for k, (q, span) in enumerate(cases):
        passage = passage_of(q)
        first_of_passage = passage not in seen
        seen.add(passage)
        evidence = passage[span[0]:span[1]]
        others = [passage_of(cases[(k + j * 37) % len(cases)][0]) for j in range(1, 4)]
        for kind in kinds:
            if kind in PASSAGE_KINDS and not first_of_passage:
                continue
            rng = rng_for(q.qid, kind, seed)
            if kind in EDGE_FACT_KINDS:
                quote = edge_fact_quote(kind, evidence, passage, span, others, rng)
            elif kind in EDGE_HONEST_KINDS + SWAPPED:
                quote = edge_honest_quote(kind, evidence, passage, others, rng)
            elif kind in FACT_KINDS:
                quote = fact_quote(kind, q, evidence, passage, others, pool, rng)
            else:
                quote = honest_quote(kind, evidence, passage, span[1], rng)
            if quote is not None and not (kind in SAYING_LESS and quote in passage):
                out[kind].append((q.qid, passage, quote))
    return out


def measure_rule(dataset, seed: int) -> dict[str, dict[str, object]]:
    """Per kind: the cases, and how many were `verbatim` (exact or normalized: replaced by the passage text),
    `altered`, `reworded`, `unverified`; with the cases of the outcomes a kind must not have (a fact-change
    case verbatim, an honest one altered or unverified)."""
    from expmrc.text.grounding import ALTERED, REWORDED, UNVERIFIED, VERBATIM, ground_text

    result: dict[str, dict[str, object]] = {}
    for kind, cases in rule_cases(dataset, seed).items():
        counts = {"cases": len(cases), "verbatim": 0, ALTERED: 0, REWORDED: 0, UNVERIFIED: 0, "misses": []}
        for qid, passage, quote in cases:
            found = ground_text(passage, quote)
            outcome = "verbatim" if found.status in VERBATIM else found.status
            counts[outcome] = counts.get(outcome, 0) + 1
            if kind in FACT_KINDS:
                bad = outcome == "verbatim"
            elif kind in SWAPPED:
                bad = outcome in ("verbatim", ALTERED)
            else:
                bad = outcome in (ALTERED, UNVERIFIED) or (kind in SAYING_LESS and outcome == "verbatim")
            if bad:
                counts["misses"].append((qid, quote, found))
        result[kind] = counts
    return result
