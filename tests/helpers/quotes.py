"""LLM-style quotes made from a gold evidence, for measuring grounding (tests and benchmarks/bench_grounding.py).

`faithful` quotes change only what a model changes when it quotes honestly (spacing, punctuation
width, quote marks, case, a few dropped words, an ellipsis for a left-out middle, a framing
sentence); `fabricated` quotes keep some of the evidence's words but assert something the passage
does not hold (spliced with another passage, runs or a quarter of the words swapped for others, a
restated question).
"""

from __future__ import annotations

import random
import re
import zlib

HALF_TO_FULL = {",": "，", ".": "。", ":": "：", ";": "；", "?": "？", "!": "！", "(": "（", ")": "）"}
FULL_TO_HALF = {v: k for k, v in HALF_TO_FULL.items()} | {"“": '"', "”": '"', "、": ","}
FRAMES_EN = ('The passage says: "{q}"', 'According to the passage, "{q}"', 'Evidence: "{q}"',
             'The relevant sentence is: "{q}".', 'As the text states, “{q}”', 'Quote: {q}')
FRAMES_ZH = ("原文写道：“{q}”", "文中提到：“{q}”", "根据原文：「{q}」", "证据：{q}", "文章中说：“{q}”。")
_CJK = re.compile(r"[\u4e00-\u9fff]")


def rng_for(key: str, salt: str) -> random.Random:
    """A generator seeded by a question id and a purpose, so every run makes the same quotes."""
    return random.Random(zlib.crc32(f"{salt}:{key}".encode()))


def is_chinese(text: str) -> bool:
    return len(_CJK.findall(text)) > len(text) / 4


def units(text: str) -> list[str]:
    """Words (English) or characters (Chinese), the units perturbations drop and swap."""
    return list(text) if is_chinese(text) else text.split()


def join(parts: list[str], chinese: bool) -> str:
    return "".join(parts) if chinese else " ".join(parts)


def spacing(text: str, rng: random.Random) -> str:
    if is_chinese(text):
        return "".join(ch + (" " if rng.random() < 0.15 else "") for ch in text)
    text = re.sub(r"\s+", lambda m: m.group() * rng.choice((1, 1, 2)), text)
    return re.sub(r"\s*([,.;:])(?!\d)", lambda m: (" " if rng.random() < 0.5 else "") + m.group(1), text)


def width(text: str, rng: random.Random) -> str:
    table = FULL_TO_HALF if is_chinese(text) else HALF_TO_FULL
    return "".join(table.get(ch, ch) if rng.random() < 0.8 else ch for ch in text)


def case(text: str, rng: random.Random) -> str:
    return rng.choice((str.lower, str.upper, str.title))(text)


def drop_words(text: str, rng: random.Random) -> str:
    """Drop about a tenth of the units (at least one), never the first or last two."""
    parts, chinese = units(text), is_chinese(text)
    if len(parts) < 8:
        return text
    count = max(1, len(parts) // 10)
    start = rng.randrange(2, len(parts) - 2 - count + 1)
    return join(parts[:start] + parts[start + count:], chinese)


_NEGATION_UNIT = re.compile(r"^(?:not|never|no|nor|none|nothing|neither|nobody|nowhere|without|cannot|[不没未无非别勿沒無別])$|"
                            r"n['’]t$",
                            re.IGNORECASE)


def ellipsis(text: str, rng: random.Random) -> str:
    """Leave out a middle stretch (a fifth to a third) and mark it with an ellipsis; a negation among its last two
    units is kept (an ellipsis standing for the negation of what follows it changes a fact, as grounding says)."""
    parts, chinese = units(text), is_chinese(text)
    if len(parts) < 9:
        return text
    count = rng.randrange(max(1, len(parts) // 5), len(parts) // 3 + 1)
    start = rng.randrange(2, len(parts) - 2 - count + 1)
    while count > 1 and any(_NEGATION_UNIT.search(u) for u in parts[max(start, start + count - 2):start + count]):
        count -= 1
    if any(_NEGATION_UNIT.search(u) for u in parts[max(start, start + count - 2):start + count]):
        return text  # only a negation could be left out: an honest quote leaves it in
    if chinese and any(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9,.]|[,.][0-9]", "".join(parts[k - 1:k + 1]))
                       for k in (start, start + count)):
        return text  # an honest ellipsis cuts no number or Latin word in two
    mark = rng.choice(("……", "…") if chinese else ("...", "…", " ... "))
    return join(parts[:start], chinese) + mark + join(parts[start + count:], chinese)


def framing(text: str, rng: random.Random) -> str:
    return rng.choice(FRAMES_ZH if is_chinese(text) else FRAMES_EN).format(q=text)


PERTURBATIONS = {"spacing": spacing, "width": width, "case": case, "drop_words": drop_words,
                 "ellipsis": ellipsis, "framing": framing}


def faithful(text: str, rng: random.Random) -> tuple[str, str]:
    """One honest LLM-style quote of `text`: one to three perturbations, and their names."""
    names = rng.sample(sorted(PERTURBATIONS), rng.choice((1, 1, 2, 3)))
    if "case" in names and is_chinese(text):
        names.remove("case")
    for name in sorted(names, key=lambda n: n == "framing"):  # framing last: it wraps the quote
        text = PERTURBATIONS[name](text, rng)
    return text, "+".join(sorted(names)) or "none"


def splice(text: str, other: str, rng: random.Random) -> str:
    """The first half of the evidence continued by the second half of another passage's sentence."""
    a, b, chinese = units(text), units(other), is_chinese(text)
    half = len(a) // 2
    return join(a[:half] + b[max(0, len(b) - (len(a) - half)):], chinese)


def swap(text: str, other: str, rng: random.Random) -> str:
    """Every second run of two or three units replaced by units from another passage's sentence."""
    a, b, chinese = units(text), units(other), is_chinese(text)
    out, i, keep = [], 0, True
    while i < len(a):
        step = rng.choice((2, 3))
        out += a[i:i + step] if keep else [rng.choice(b) for _ in range(step)] if b else []
        i, keep = i + step, not keep
    return join(out, chinese)


def substitute(text: str, other: str, rng: random.Random) -> str:
    """A quarter of the evidence's units (at least two), at random places, replaced by units of another passage."""
    a, b, chinese = units(text), units(other), is_chinese(text)
    for i in rng.sample(range(len(a)), max(2, len(a) // 4)):
        a[i] = rng.choice(b)
    return join(a, chinese)


def restate(text: str, question: str, other: str, rng: random.Random) -> str:
    """The question turned into a claim, finished with a few of the evidence's units and another passage's."""
    a, b, chinese = units(text), units(other), is_chinese(text)
    q = re.sub(r"[?？]\s*$", "", question.strip())
    start = rng.randrange(0, max(1, len(a) - 3))
    return q + ("，" if chinese else ", ") + join(a[start:start + 3] + b[:max(3, len(b) // 3)], chinese)


def fabricated(text: str, question: str, other: str, rng: random.Random) -> tuple[str, str]:
    """A quote that shares words with the evidence but is not in the passage, and how it was made."""
    name = rng.choice(("splice", "swap", "substitute", "restate"))
    if name == "restate":
        return restate(text, question, other, rng), name
    return {"splice": splice, "swap": swap, "substitute": substitute}[name](text, other, rng), name


def answer_variant(answer: str, rng: random.Random) -> str:
    """A span answer as a model may write it: case, spacing, width, quote marks or a final stop changed."""
    chinese = is_chinese(answer)
    choice = rng.choice(("case", "spacing", "width", "quoted", "stop", "none"))
    if choice == "case" and not chinese:
        return case(answer, rng)
    if choice == "spacing":
        return spacing(answer, rng) if not chinese else " ".join(answer)
    if choice == "width":
        return width(answer, rng)
    if choice == "quoted":
        return f"“{answer}”" if chinese else f'"{answer}"'
    if choice == "stop":
        return answer + ("。" if chinese else ".")
    return answer


def bare(text: str) -> str:
    """A text's normalized form without punctuation at either end, for comparing answers."""
    from expmrc.text.locate import normalized

    return re.sub(r"^[\W_]+|[\W_]+$", "", normalized(text)[0])


def iou(a: tuple[int, int], b: tuple[int, int]) -> float:
    """Character intersection over union of two spans."""
    inter = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    union = max(a[1], b[1]) - min(a[0], b[0])
    return inter / union if union else 0.0


def gold_cases(dataset) -> list[tuple[object, tuple[int, int]]]:
    """(question, span of its first gold evidence) for every question whose first evidence is found verbatim."""
    from expmrc.data.datasets import passage_of

    cases = []
    for q in dataset.questions:
        evidence = str((q.evidences or [""])[0]).strip()
        at = passage_of(q).find(evidence) if len(evidence) >= 8 else -1
        if at >= 0:
            cases.append((q, (at, at + len(evidence))))
    return cases


def longest_other(cases: list, k: int, length: int) -> str:
    """The gold evidence of another passage (the next one on from half the list away) at least `length` units long,
    else the longest of the ten tried."""
    from expmrc.data.datasets import passage_of

    tried = []
    for step in range(10):
        q, span = cases[(k + len(cases) // 2 + step) % len(cases)]
        text = passage_of(q)[span[0]:span[1]]
        if passage_of(q) != passage_of(cases[k][0]) and len(units(text)) >= length:
            return text
        tried.append(text)
    return max(tried, key=lambda t: len(units(t)))


def measure(dataset) -> dict[str, object]:
    """Ground a faithful and a fabricated quote of every usable gold evidence (and a variant of each span
    answer) of `dataset`; the located share (any located status, `altered` included: IoU >= 0.75), the share of
    fabricated quotes `unverified` and the share of answers repaired to their text, with misses."""
    from expmrc.data.datasets import SpanQuestion, passage_of
    from expmrc.text.grounding import LOCATED, VERBATIM, UNVERIFIED, ground_text

    cases = gold_cases(dataset)
    located, flagged, fakes, answers, answer_total = 0, 0, 0, 0, 0
    misses: dict[str, list] = {"located": [], "flagged": [], "answer": []}
    for k, (q, span) in enumerate(cases):
        passage = passage_of(q)
        evidence = passage[span[0]:span[1]]
        quote, how = faithful(evidence, rng_for(q.qid, "faithful"))
        found = ground_text(passage, quote)
        if found.status in LOCATED and iou(found.span, span) >= 0.75:
            located += 1
        else:
            misses["located"].append((q.qid, how, quote, found))
        if len(units(evidence)) >= 6:
            fakes += 1
            other = longest_other(cases, k, len(units(evidence)))
            fake, how = fabricated(evidence, q.question, other, rng_for(q.qid, "fabricated"))
            if ground_text(passage, fake).status == UNVERIFIED:
                flagged += 1
            else:
                misses["flagged"].append((q.qid, how, fake, ground_text(passage, fake)))
        if isinstance(q, SpanQuestion) and str(q.answers[0]).strip():  # answers: every usable case
            answer_total += 1
            variant = answer_variant(str(q.answers[0]).strip(), rng_for(q.qid, "answer"))
            got = ground_text(passage, variant, answer=True)
            if got.status in VERBATIM and bare(passage[got.start:got.end]) == bare(str(q.answers[0])):
                answers += 1
            else:
                misses["answer"].append((q.qid, variant, got))
    n = len(cases)
    return {"cases": n, "located": located / n, "flagged": flagged / fakes, "fabricated": fakes,
            "answers": answers / answer_total if answer_total else None, "answer_cases": answer_total,
            "misses": misses}
