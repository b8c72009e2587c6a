"""Quotes of a gold evidence that change one fact, and quotes that change only its form, for measuring whether
grounding tells them apart (tests/text/test_facts.py and benchmarks/bench_grounding.py).

A fact-changed quote copies the evidence but changes one number (a digit, a Chinese numeral before a
measure word, an English number word), one negation (adds `not` after an auxiliary or `不` before a
verb, or takes one away) or one name (a capitalised word swapped for another passage's that this
passage does not hold), then half the time changes its form once as well. A form-only quote changes
one to three of: spacing, punctuation and digit width, case, quote marks, an ellipsis for a left-out
middle, a framing sentence, a contraction (`did not` / `didn't`), and Chinese script (OpenCC,
simplified to traditional). Every choice is seeded by the question id, a purpose and a seed: the
tests use TEST_SEED, the benchmark a seed of its own (HELD_OUT_SEED), so its figures are on cases the
rules were not tuned on.
"""

from __future__ import annotations

import random
import re
import zlib
from functools import lru_cache

from helpers.quotes import ellipsis, framing, gold_cases, is_chinese, spacing

TEST_SEED, HELD_OUT_SEED = 0, 1
KINDS = ("number", "negation", "name")
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
    """A generator seeded by a question id, a purpose and a seed (TEST_SEED or HELD_OUT_SEED)."""
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


def fact_cases(dataset, seed: int) -> dict[str, list[tuple[str, str, str]]]:
    """(question id, passage, quote) per fact kind, one per usable gold evidence that has such a fact."""
    from expmrc.data.datasets import passage_of

    cases = gold_cases(dataset)
    out: dict[str, list[tuple[str, str, str]]] = {kind: [] for kind in KINDS}
    for k, (q, span) in enumerate(cases):
        passage = passage_of(q)
        evidence = passage[span[0]:span[1]]
        others = [passage_of(cases[(k + j * 37) % len(cases)][0]) for j in range(1, 4)]
        for kind in KINDS:
            quote = fact_changed(kind, evidence, passage, others, rng_for(q.qid, kind, seed))
            if quote is not None:
                out[kind].append((q.qid, passage, quote))
    return out


def form_cases(dataset, seed: int) -> list[tuple[str, str, str, tuple[int, int], tuple[str, ...]]]:
    """(question id, passage, quote, gold span, the form changes) for every usable gold evidence."""
    from expmrc.data.datasets import passage_of

    out = []
    for q, span in gold_cases(dataset):
        passage = passage_of(q)
        quote, names = form_only(passage[span[0]:span[1]], rng_for(q.qid, "form", seed))
        out.append((q.qid, passage, quote, span, names))
    return out


def measure_facts(dataset, seed: int) -> dict[str, object]:
    """The share of fact-changed quotes (per kind) neither accepted nor repaired (`altered` or `unverified`), and
    the share of form-only quotes located and repaired (exact, normalized or fuzzy; IoU >= 0.75), overall and
    for those in traditional script; with the misses."""
    from helpers.quotes import iou

    from expmrc.text.grounding import VERBATIM, ground_text

    result: dict[str, object] = {}
    misses: dict[str, list] = {}
    for kind, cases in fact_cases(dataset, seed).items():
        grounded = [(qid, quote, ground_text(passage, quote)) for qid, passage, quote in cases]
        caught = [g for g in grounded if g[2].status not in VERBATIM]
        result[kind] = (len(caught), len(grounded))
        misses[kind] = [g for g in grounded if g[2].status in VERBATIM]
    form = form_cases(dataset, seed)
    repaired, script, script_repaired, misses["form"] = 0, 0, 0, []
    for qid, passage, quote, span, names in form:
        found = ground_text(passage, quote)
        ok = found.status in VERBATIM and iou(found.span, span) >= 0.75
        repaired += ok
        script += "script" in names
        script_repaired += ok and "script" in names
        if not ok:
            misses["form"].append((qid, names, quote, found))
    result["form"] = (repaired, len(form))
    result["script"] = (script_repaired, script)
    result["misses"] = misses
    return result
