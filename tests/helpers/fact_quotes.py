"""Quotes of a gold evidence that change one fact, and quotes that change only its form, for measuring whether
grounding tells them apart (tests/helpers/rule_quotes.py draws its cases of these kinds from here).

A fact-changed quote copies the evidence but changes one number (a digit, a Chinese numeral before a
measure word, an English number word), one negation (adds `not` after an auxiliary or `不` before a
verb, or takes one away) or one name (a capitalised word swapped for another passage's that this
passage does not hold), then half the time changes its form once as well. A form-only quote changes
one to three of: spacing, punctuation and digit width, case, quote marks, an ellipsis for a left-out
middle, a framing sentence, a contraction (`did not` / `didn't`), and Chinese script (OpenCC,
simplified to traditional). Every choice is seeded by the question id, a purpose and a seed
(tests/helpers/rule_quotes.py: the tuning seed and a held-out one).
"""

from __future__ import annotations

import random
import re
import zlib
from functools import lru_cache

from helpers.quotes import ellipsis, framing, is_chinese, spacing

FORMS = ("spacing", "width", "case", "quote marks", "ellipsis", "framing", "contraction", "script")
NUMBER_WORDS = ("one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty forty fifty "
                "hundred thousand million").split()
_EN_NUMBER = re.compile(r"\d+(?:[.,]\d+)*|\b(?:" + "|".join(NUMBER_WORDS) + r")\b", re.IGNORECASE)
_ZH_DIGITS = "一二三四五六七八九"
_ZH_NUMBER = re.compile(r"\d+(?:\.\d+)?|第[一二三四五六七八九十]+|[一二三四五六七八九十两百千万]+(?=[个年月日天元次人岁名种位条家座本只件场届])")
_EN_AUX = re.compile(r"\b(?:is|was|are|were|can|could|will|would|should|has|have|had|does|did|must|may|might)\b"
                     r"(?!n?['’]|\s+not\b)")
_EN_NEGATION = re.compile(r"\b(?:not|never)\s+|n't\b", re.IGNORECASE)
_ZH_VERB = re.compile(r"(?<![不没未无非别])(?:是|会|能|要|在|可以|应该|想|喜欢|需要|知道|愿意)")
_ZH_NEGATION = re.compile(r"[不没未](?=[\u4e00-\u9fff])")
_CAPITALISED = re.compile(r"\b[A-Z][a-z]{2,}\b")
_CONTRACTIBLE = re.compile(r"\b(is|are|was|were|do|does|did|has|have|had|could|would|should) not\b")
_CONTRACTED = re.compile(r"\b(is|are|was|were|do|does|did|has|have|had|could|would|should)n't\b")
HALF_TO_FULL = {**{c: chr(ord(c) + 0xFEE0) for c in "0123456789,.:;?!()"}}
FULL_TO_HALF = {"，": ",", "。": ".", "：": ":", "；": ";", "？": "?", "！": "!", "（": "(", "）": ")", "“": '"', "”": '"'}


def rng_for(key: str, purpose: str, seed: int) -> random.Random:
    """A generator seeded by a question id, a purpose and a seed."""
    return random.Random(zlib.crc32(f"{purpose}:{seed}:{key}".encode()))


@lru_cache(maxsize=1)
def _traditional():
    import opencc

    return opencc.OpenCC("s2t").convert


def change_number(text: str, rng: random.Random) -> str | None:
    """One number of `text` changed (a digit, a Chinese numeral, a number word), or None when it has none."""
    found = list((_ZH_NUMBER if is_chinese(text) else _EN_NUMBER).finditer(text))
    if not found:
        return None
    match = rng.choice(found)
    old = match.group()
    digits = [i for i, c in enumerate(old) if c.isdigit()]
    if digits:
        i = rng.choice(digits)
        new = old[:i] + rng.choice([d for d in "0123456789" if d != old[i] and (d != "0" or i or len(old) == 1)]) \
            + old[i + 1:]
    elif old.lower() in NUMBER_WORDS:
        new = rng.choice([w for w in NUMBER_WORDS if w != old.lower()])
    else:
        places = [i for i, c in enumerate(old) if c in _ZH_DIGITS]
        if not places:
            return None
        i = rng.choice(places)
        new = old[:i] + rng.choice([d for d in _ZH_DIGITS if d != old[i]]) + old[i + 1:]
    return text[:match.start()] + new + text[match.end():]


def change_negation(text: str, rng: random.Random) -> str | None:
    """One negation added (after an auxiliary, before a Chinese verb) or taken away, or None when neither fits."""
    chinese = is_chinese(text)
    options = [("add", m) for m in (_ZH_VERB if chinese else _EN_AUX).finditer(text)]
    options += [("drop", m) for m in (_ZH_NEGATION if chinese else _EN_NEGATION).finditer(text)
                if re.search(r"\w", text[:m.start()])]  # a negation opening the quote: dropping it only shortens it
    if not options:
        return None
    how, match = rng.choice(options)
    if how == "drop":
        return text[:match.start()] + text[match.end():]
    if chinese:
        word = "没" if match.group() == "有" else "不"
        return text[:match.start()] + word + text[match.start():]
    return text[:match.end()] + " not" + text[match.end():]


def change_name(text: str, passage: str, others: list[str], rng: random.Random) -> str | None:
    """One capitalised word inside a sentence (after a word or a comma) swapped for another passage's that this
    passage does not hold."""
    found = [m for m in _CAPITALISED.finditer(text) if re.search(r"[\w,;]\s*$", text[:m.start()])]
    pool = sorted({w for other in others for w in re.findall(r"\b[A-Z][a-z]{2,}\b", other)
                   if w.lower() not in passage.lower()})
    if not found or not pool:
        return None
    match = rng.choice(found)
    return text[:match.start()] + rng.choice(pool) + text[match.end():]


def _width(text: str, rng: random.Random) -> str:
    table = FULL_TO_HALF if is_chinese(text) else HALF_TO_FULL
    digits = {c: chr(ord(c) + 0xFEE0) for c in "0123456789"}
    return "".join((table.get(c) or digits.get(c, c)) if rng.random() < 0.8 else c for c in text)


def _case(text: str, rng: random.Random) -> str:
    return rng.choice((str.lower, str.upper, str.title))(text)


def _quote_marks(text: str, rng: random.Random) -> str:
    inner = text.translate(str.maketrans({"“": "「", "”": "」"}))
    left, right = rng.choice((("“", "”"), ('"', '"'), ("「", "」"), ("『", "』")))
    return left + inner + right


def _contraction(text: str, rng: random.Random) -> str:
    if _CONTRACTED.search(text):
        return _CONTRACTED.sub(r"\1 not", text)
    return _CONTRACTIBLE.sub(r"\1n't", text)


def _script(text: str, rng: random.Random) -> str:
    return _traditional()(text)


_FORM = {"spacing": spacing, "width": _width, "case": _case, "quote marks": _quote_marks, "ellipsis": ellipsis,
         "framing": framing, "contraction": _contraction, "script": _script}


def applicable(text: str) -> list[str]:
    """The form changes that apply to `text`: case and contractions in English, script in Chinese."""
    chinese = is_chinese(text)
    skip = {"case", "contraction"} if chinese else {"script"}
    if not chinese and not (_CONTRACTED.search(text) or _CONTRACTIBLE.search(text)):
        skip.add("contraction")
    return [f for f in FORMS if f not in skip]


def form_only(text: str, rng: random.Random) -> tuple[str, tuple[str, ...]]:
    """One to three form changes of `text` (framing last: it wraps the quote), and their names."""
    names = rng.sample(applicable(text), rng.choice((1, 1, 2, 3)))
    for name in sorted(names, key=lambda n: (n == "framing", n == "quote marks")):
        text = _FORM[name](text, rng)
    return text, tuple(sorted(names))


def fact_changed(kind: str, text: str, passage: str, others: list[str], rng: random.Random) -> str | None:
    """`text` with one fact of `kind` changed and, half the time, one form change (not an ellipsis, which could
    leave the change out), or None when `text` has no such fact."""
    changed = {"number": lambda: change_number(text, rng), "negation": lambda: change_negation(text, rng),
               "name": lambda: change_name(text, passage, others, rng)}[kind]()
    if changed is None or changed == text:
        return None
    if rng.random() < 0.5:
        form = rng.choice([f for f in applicable(changed) if f not in ("ellipsis", "contraction")])
        changed = _FORM[form](changed, rng)
    return changed
