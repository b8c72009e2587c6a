"""Grounding free-form quotes (an LLM's evidence and span answers) in their passage: docs/grounding.md.

One rule: a located quote is replaced by the passage text only when every difference is form. A quote
is first freed of HTML and of citation marks the passage does not hold (`&amp;`, `<b>`, `[1]`, `(S3)`,
`【1】`, `^1`); then tried verbatim, then normalized (the `locate` policies of those names: differences
of form folded away), as given and then without a framing sentence of the model's own (`The passage
says: "..."`, `原文写道：“...”`; a framing that is passage text, `X said, "..."`, is compared with the
passage like the rest of the quote) or list markers at line starts (`1.`, `(1)`, `①`, `一、`, `-`); a
quote of several sentences or list items is tried item by item too; then by fuzzy alignment (the
`fuzzy` policy), whose differences from the passage are listed and classified (`expmrc.text.facts`).
A match whose outer edge leaves part of a fact outside (`3.2` of `3.2%`, `did` of `did not`) is no
match. A quote with an ellipsis (`...`, `…`, `……`, `[...]`, `(…)`) is found piece by piece, in order,
and covers the pieces; a negation the ellipsis stands for is a change. Each field gets a status:
`exact`, `normalized` (every difference form), `reworded` (words added, left out or replaced, no fact
among them), `altered` (a number, negation or name changed), `unverified` (found nowhere well enough)
or `missing` (empty). Only `exact` and `normalized` fields are replaced by the passage text; a
reworded or altered one keeps the model's words, with its located offsets and its `changes`.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from expmrc.data.datasets import Dataset, SpanQuestion, passage_of
from expmrc.data.submissions import SCALAR_TYPES, parse_prediction
from expmrc.errors import ExpmrcError
from expmrc.text.facts import Change, cuts_fact, cuts_word, differences, elided_negation, framing_changes
from expmrc.text.locate import Found, Hint, find, is_cjk, normalized, tokens, trim
from expmrc.text.sentences import ASCII_TERMINATORS, CJK_TERMINATORS, split_sentences

EXACT, NORMALIZED, REWORDED, ALTERED = "exact", "normalized", "reworded", "altered"
UNVERIFIED, MISSING = "unverified", "missing"
STATUSES = (EXACT, NORMALIZED, REWORDED, ALTERED, UNVERIFIED, MISSING)  # from the best to the worst
VERBATIM = (EXACT, NORMALIZED)  # every difference is form: replaced by the passage text
LOCATED = VERBATIM + (REWORDED, ALTERED)  # with offsets; reworded and altered keep the model's words
UNTRUSTWORTHY = (UNVERIFIED, ALTERED, REWORDED)  # the untrustworthy-evidence rate counts these
DROPPED = (ALTERED, UNVERIFIED)  # what --drop-unverified empties
# Records written before the one rule may hold `fuzzy` (located fuzzily, no fact changed, replaced by the passage
# text even where words differed) and no `reworded`: docs/grounding.md says how they read.
FUZZY_THRESHOLD = 85.0  # the least share (%) of a quote's tokens a fuzzy alignment must match in order
MIN_FUZZY_TOKENS = 3  # shorter texts are located verbatim or normalized only: a fuzzy match of them means little
STAGES = (("offset", "verbatim"), ("normalized",), ("fuzzy",))  # tried in this order
_STATUS_OF = {"offset": EXACT, "verbatim": EXACT, "normalized": NORMALIZED, "fuzzy": NORMALIZED}  # no difference
_LIST_MARKER = re.compile(r"^[ \t]*(?:[(（]?\d{1,3}[)）]\s*|\d{1,3}[.．]\s+|\d{1,3}、\s*|[①-⑳]\s*|"
                          r"[一二三四五六七八九十]{1,3}、\s*|[-*•+]\s+)", re.MULTILINE)
_DOTS = r"(?:(?:[.。．]\s*){2,}[.。．]|[…⋯]+)"
_MARKED = rf"(?:[\[(（［【〔]\s*{_DOTS}\s*[\])）］】〕]|{_DOTS})"
_ELLIPSIS = re.compile(rf"\s*{_MARKED}\s*")  # `...`, `……`, `[…]`, `(...)`
_OPEN_START, _OPEN_END = re.compile(rf"^\W*{_MARKED}"), re.compile(rf"{_MARKED}\W*$")  # text left out beyond
# citation marks a model adds to a quote: `[1]`, `[1, 2]`, `[S3]`, `[source 2]`, `【1】`, `(S3)`, `(sentence 3)`, `^1`,
# `[^1]`, `¹`; a parenthesis holding a bare number only before punctuation or at the end (`… year (3).`)
_CITE_LABEL = (r"(?:(?:sources?|sentences?|sent|s|passages?|p|paragraphs?|para|refs?|references?|citations?|cite|"
               r"docs?|documents?|evidence|lines?|来源|出处|原文|句子?|段落?|第)\s*[:：#.]?\s*)")
_CITE_NUMBERS = r"\d{1,3}(?:\s*(?:[,，、;；&~\-–—]|to|and)\s*(?:s|第)?\d{1,3})*\s*(?:句|段)?"
_CITATION = re.compile(
    rf"\s*(?:[\[［【〔]\s*\^?\s*{_CITE_LABEL}*{_CITE_NUMBERS}\s*[\]］】〕]"
    rf"|[(（]\s*{_CITE_LABEL}+{_CITE_NUMBERS}\s*[)）]"
    rf"|[(（]\s*{_CITE_NUMBERS}\s*[)）](?=\s*(?:$|[^\w\s]))"
    r"|\^\[?\d{1,3}\]?|[¹²³⁴⁵⁶⁷⁸⁹⁰]+)", re.IGNORECASE)
_CITES = re.compile(r"[\[［【〔(（^¹²³⁴⁵⁶⁷⁸⁹⁰]")  # a quick test: can the text hold a citation mark?
_TAG = re.compile(r"</?([a-zA-Z][a-zA-Z0-9]*)(?:\s[^<>]*)?/?>")
_BLOCK_TAGS = frozenset("p br div li ul ol blockquote h1 h2 h3 h4 h5 h6 tr td th table hr".split())
_ENTITY = re.compile(r"&(?:#\d{1,7}|#x[0-9a-f]{1,6}|[a-z][a-z0-9]{1,31});", re.IGNORECASE)
_FRAMING_WORDS = re.compile(
    r"passage|text|article|context|paragraph|document|story|evidence|quote|according|says|said|states|stated|"
    r"reads|writes|wrote|mentions|notes|author|answer|support|原文|文章|文中|短文|材料|段落|上文|写道|提到|指出|说|"
    r"根据|证据|依据|表明|显示|可知|中有|一句", re.IGNORECASE)
# words by which a framing names its source (the model's own framing), not a speaker of the passage
_SOURCE_WORDS = re.compile(
    r"\b(?:passage|text|article|context|paragraph|document|story|evidence|quote|quotation|excerpt|sentence|line|"
    r"author|answer|support)s?\b|原文|文章|文中|短文|材料|段落|上文|证据|依据|原句|句子|一句|对话|文本", re.IGNORECASE)
_SPEECH = re.compile(r"\b(?:said|says|say|asked|asks|told|tells|replied|replies|added|adds|explained|explains|wrote|"
                     r"writes|answered|answers|shouted|cried|thought|thinks)\b|说|问|道|答|喊|叫|想|表示|指出|认为",
                     re.IGNORECASE)  # a speech tag's verb
_OPEN, _CLOSE = "\"“「『‘'«", "\"”」』’'»"
_QUOTED = re.compile(rf"^(?P<pre>[^{_OPEN}]*?)[{_OPEN}](?P<body>.+)[{_CLOSE}](?P<post>[^{_CLOSE}]*)$", re.DOTALL)
_PREFIX = re.compile(r"^(?P<pre>[^:：\n\"“「『«]{1,80})[:：]\s*(?P<body>.+)$", re.DOTALL)
_STOPS = re.compile(r"[\s.,;:!?。，、；：！？]+$")
_EDGES = re.compile(r"^[^\w$¢£¥€₠-₿%‰°]+|[^\w$¢£¥€₠-₿%‰°]+$")  # a currency or percent sign is no edge punctuation


def framing(text: str) -> tuple[str, str] | None:
    """(framing, quote) of a `text` framed by a sentence before a colon or around a quote, or None when it has
    none: the framing names the passage or the quoting (or, before a quote, ends in a colon or comma), is at most
    twelve words, holds no opening quote mark before a colon, and nothing but punctuation follows the closing
    quote."""
    text = text.strip()
    match = _PREFIX.match(text)
    if match and _FRAMING_WORDS.search(match["pre"]) and len(tokens(match["pre"])[0]) <= 12:
        return match["pre"], _unquoted(match["body"].strip())
    match = _QUOTED.match(text)
    if match and not tokens(match["post"])[0] and len(tokens(match["pre"])[0]) <= 12:
        pre = match["pre"].strip()
        if _FRAMING_WORDS.search(pre) or pre.endswith((":", "：", ",", "，")):
            return pre, match["body"].strip()
    return None


def unframed(passage: str, text: str) -> str | None:
    """`text` without its framing, or None when it has none, or when the "framing" is passage text (`_framed`)."""
    framed = _framed(passage, text)
    return None if framed is None or framed[2] else framed[1]


@lru_cache(maxsize=256)
def _framed(passage: str, text: str) -> tuple[str, str, bool] | None:
    """(framing, quote, whether the framing is passage text) of a framed `text` (`framing`), or None. A framing is
    the model's own, to be left out, when it is the passage's speech tag after the quote put before it (`Tom said,
    "…"` for `"…," Tom said`), or when it names its source (the passage, the text, 原文 …) and is short or no
    passage text. Any other framing is passage text, changed or not (`X said, "…"` for the passage's `Y said,
    "…"`, `小霞说：“…”`, `In March 2018, "…"`, the start of another sentence): it is compared like the rest of the
    quote."""
    framed = framing(text)
    if framed is None:
        return None
    pre, body = framed
    found = find(passage, body, STAGES[0] + STAGES[1] + STAGES[2])
    if found is None:
        return pre, body, False
    if any(_runs_into(passage, pre, start) for start in _occurrences(passage, passage[found.start:found.end])):
        return pre, body, True
    if _tag_after(passage, pre, found.end):
        return pre, body, False
    named = bool(_SOURCE_WORDS.search(pre))
    if named and len(tokens(pre)[0]) <= 6:
        return pre, body, False
    return pre, body, not named or _in_passage(passage, pre)


def _occurrences(passage: str, text: str) -> list[int]:
    """Where `text` starts in the passage, every time: a framing runs into the quote at any of them (the first
    `“The Centre”` of a passage is not the one `no teachers in “The Centre”` precedes)."""
    starts: list[int] = []
    at = passage.find(text)
    while at >= 0 and len(starts) < 64:
        starts.append(at)
        at = passage.find(text, at + 1)
    return starts


def _in_passage(passage: str, pre: str) -> bool:
    """Whether a framing of three tokens or more is passage text (fuzzily, as well as a quote must be)."""
    pre = _bare(pre)
    if len(tokens(pre)[0]) < MIN_FUZZY_TOKENS:
        return False
    found = find(passage, pre, ("normalized", "fuzzy"))
    return found is not None and found.score >= FUZZY_THRESHOLD


def _tag_after(passage: str, pre: str, end: int) -> bool:
    """Whether a framing is a speech tag of at most six tokens whose words are the passage's words right after the
    quote (`"…," Tom said`, `said Tom`, `“…”他说`)."""
    words = tokens(pre, is_cjk(passage))[0]
    if len(tokens(pre)[0]) > 6 or not _SPEECH.search(pre):
        return False
    after = tokens(passage[end:end + 3 * len(pre) + 20], is_cjk(passage))[0][:len(words)]
    return bool(words) and sorted(after) == sorted(words)


def _runs_into(passage: str, pre: str, start: int) -> bool:
    """Whether `pre` is (about half or more of it, fuzzily) the passage text just before `start`: what lies between
    its match and `start` is no more than the part of `pre` left unmatched (`妇女不反对：“…”` where the passage
    says `妇女不同意：“…”`)."""
    pre = _bare(pre)
    if not tokens(pre)[0]:
        return False
    before = passage[max(0, start - 3 * len(pre) - 20):start]
    found = find(before, pre, ("normalized", "fuzzy"))
    if found is None or found.score < 50:
        return False
    unmatched = round(len(tokens(pre, is_cjk(passage))[0]) * (100 - found.score) / 100)
    return len(tokens(before[found.end:], is_cjk(passage))[0]) <= unmatched


def _unquoted(text: str) -> str:
    """`text` without one pair of quote marks around all of it."""
    text = _STOPS.sub("", text) if len(text) > 2 and text.rstrip(".。!！")[-1:] in _CLOSE else text
    return text[1:-1].strip() if len(text) > 2 and text[0] in _OPEN and text[-1] in _CLOSE else text


def _bare(text: str) -> str:
    """`text` without punctuation, quote marks and whitespace at either end."""
    return _EDGES.sub("", text)


def _pieces(text: str) -> list[str]:
    """The parts of a quote between its ellipses, each with at least one word token."""
    return [p for p in _ELLIPSIS.split(text) if tokens(p)[0]]


def _accepted(found: Found, piece: str, threshold: float) -> bool:
    """Whether a piece's place is good enough: not empty, and a fuzzy one scores enough on enough tokens."""
    return found.end > found.start and (
        found.policy != "fuzzy" or (found.score >= threshold and len(tokens(piece)[0]) >= MIN_FUZZY_TOKENS))


def _keep(passage: str, stage: tuple[str, ...], first: bool, last: bool,
          signs: bool = True) -> Callable[[tuple[int, int]], bool] | None:
    """Of a verbatim or normalized match, keep only one whose outer edges leave no part of a fact outside
    (`facts.edge_fact`: `195` of `1956`, `did` of `didn't`, `3.2` of `3.2%`, `did` of `did not`) and cut no word in
    two; without `signs`, as for a span answer, only a number or `n't` cut in two counts. An edge beside an ellipsis
    may fall anywhere."""
    if stage == STAGES[2] or not (first or last):
        return None
    return lambda span: not (first and (cuts_fact(passage, span[0], False, signs) or signs and cuts_word(passage, span[0]))
                             or last and (cuts_fact(passage, span[1], True, signs) or signs and cuts_word(passage, span[1])))


def _locate_pieces(passage: str, pieces: list[str], stage: tuple[str, ...], threshold: float, hint: Hint,
                   signs: bool = True, outer: tuple[bool, bool] = (True, True)) -> list[Found] | None:
    """Where every piece lies, found in order by the stage's policies, or None: the longest piece first, then
    the pieces before it nearest to it on the left, and the pieces after it on the right. `outer`: whether the
    quote's start and end are its outer edges (no ellipsis before or after them)."""
    anchor = max(range(len(pieces)), key=lambda i: (len(tokens(pieces[i])[0]), -i))
    found = find(passage, pieces[anchor], stage, hint if len(pieces) == 1 else Hint(),
                 keep=_keep(passage, stage, anchor == 0 and outer[0], anchor == len(pieces) - 1 and outer[1], signs))
    if found is None or not _accepted(found, pieces[anchor], threshold):
        return None
    located = {anchor: found}
    for i in list(range(anchor - 1, -1, -1)) + list(range(anchor + 1, len(pieces))):
        left = i < anchor
        edge = located[i + 1].start if left else located[i - 1].end
        found = find(passage, pieces[i], stage, Hint(near=edge if left else None),
                     (0, edge) if left else (edge, len(passage)),
                     _keep(passage, stage, i == 0 and outer[0], i == len(pieces) - 1 and outer[1], signs))
        if found is None or not _accepted(found, pieces[i], threshold):
            return None
        located[i] = found
    return [located[i] for i in range(len(pieces))]


@dataclass(frozen=True)
class Grounding:
    """Where a field lies in its passage and how it was found: a status (STATUSES), its span (-1, -1 when not
    located), its score, its differences from the passage (reworded, altered: `facts.Change`, in passage order),
    and the parts it was grounded by (list items, or a quote grounded sentence by sentence)."""

    status: str
    start: int = -1
    end: int = -1
    score: float = 0.0
    changes: tuple[Change, ...] = ()
    parts: tuple[Grounding, ...] = ()

    @property
    def span(self) -> tuple[int, int]:
        return self.start, self.end

    @property
    def spans(self) -> list[tuple[int, int]]:
        """The passage spans the field covers: its parts' (when it has parts), else its own."""
        return [p.span for p in self.parts] if self.parts else [self.span]

    def record(self) -> dict[str, Any]:
        """The `--details` record: status, start, end (null unless located), score; changes and parts when any."""
        located = self.status in LOCATED
        out: dict[str, Any] = {"status": self.status, "start": self.start if located else None,
                               "end": self.end if located else None, "score": round(float(self.score), 3)}
        if self.changes:
            out["changes"] = [c.record() for c in self.changes]
        if self.parts:
            out["parts"] = [p.record() for p in self.parts]
        return out

    def placed(self, passage: str) -> tuple[str, int | None]:
        """A verbatim field's passage text and its start: one passage substring when its spans run on from one
        another (in any order), else the parts' passage texts in the order given, joined by spaces (no start)."""
        spans = sorted(self.spans)
        if all(not passage[a[1]:b[0]].strip() for a, b in zip(spans, spans[1:])):
            start, end = spans[0][0], max(e for _, e in spans)
            return passage[start:end], start
        return " ".join(passage[a:b] for a, b in self.spans), None


def _found(passage: str, pieces: list[str], parts: list[Found], outer: tuple[bool, bool] = (True, True)) -> Grounding:
    """The grounding of a quote from its pieces' places: their cover, the lowest score, the differences of the
    pieces located by fuzzy alignment and the negations its ellipses stand for (in passage order), and its status:
    `altered` when a change is of fact, `reworded` when there are changes, else the weakest piece's."""
    start, end = trim(passage, (parts[0].start, parts[-1].end))
    changes = [c for i, (piece, f) in enumerate(zip(pieces, parts)) if f.policy == "fuzzy"
               for c in differences(passage, f.span, piece, i == 0 and outer[0], i == len(parts) - 1 and outer[1])]
    changes += [c for a, b in zip(parts, parts[1:]) if (c := elided_negation(passage, (a.end, b.start))) is not None]
    changes.sort(key=lambda c: (c.start, c.end))
    if changes:
        status = ALTERED if any(c.fact for c in changes) else REWORDED
    else:
        status = max((_STATUS_OF[f.policy] for f in parts), key=STATUSES.index)
    return Grounding(status, start, end, min(f.score for f in parts), tuple(changes))


def _first_place(passage: str, plan: list[tuple[str, tuple[str, ...]]], hint: Hint, threshold: float,
                 answer: bool) -> Grounding | None:
    """The first place a (candidate, stage) of `plan` finds with no fact changed, else the first altered one, else
    None; a candidate with ellipses is tried piece by piece, then whole."""
    best = None
    for candidate, stage in plan:
        pieces = _pieces(candidate)
        outer = (not _OPEN_START.search(candidate), not _OPEN_END.search(candidate))
        for option in ([pieces, [candidate]] if len(pieces) > 1 or not all(outer) else [[candidate]]):
            parts = _locate_pieces(passage, option, stage, threshold, hint, not answer, outer)
            if parts is None:
                continue
            found = _found(passage, option, parts, outer)
            if found.end <= found.start:
                continue
            if found.status != ALTERED:
                return found
            best = best or found
    return best


def _ground_whole(passage: str, text: str, hint: Hint, threshold: float, answer: bool) -> Grounding:
    """Ground one quote as a whole (see `ground_text`): the first place found with no fact changed, else the first
    altered one; a quote (or its pieces) placed verbatim or normalized is not aligned fuzzily as well (a fuzzy
    alignment could place a piece farther on, past the negation its ellipsis stands for). A framing that is passage
    text is compared with the passage text before the place of the quote it frames."""
    first = _STOPS.sub("", _unquoted(text)) if answer else text
    framed = _framed(passage, text)
    inner = framed[1] if framed is not None and not framed[2] else None
    candidates = list(dict.fromkeys(c for c in (first, text, inner, _bare(text)) if c))
    placed = _first_place(passage, [(c, stage) for c in candidates for stage in STAGES[:2]], hint, threshold, answer)
    if placed is not None:
        return placed  # placed verbatim or normalized, with a negation its ellipsis stands for: not realigned
    if framed is not None and framed[2]:
        body = _ground_whole(passage, framed[1], hint, threshold, answer)
        if body.status in LOCATED:
            return _with_framing(passage, body, framed[0])
    fuzzy = list(dict.fromkeys(c for c in (inner, *candidates) if c))
    placed = _first_place(passage, [(c, STAGES[2]) for c in fuzzy], hint, threshold, answer)
    if placed is not None:
        return placed
    best_score = max((f.score for c in candidates if (f := find(passage, c, ("fuzzy",))) is not None), default=0.0)
    return Grounding(UNVERIFIED, score=round(best_score, 3))


def _with_framing(passage: str, body: Grounding, pre: str) -> Grounding:
    """A located quote with the framing before it that is passage text, compared with the passage text before it
    (`facts.framing_changes`): every change of either, and the cover of both. With no change the quote is at best
    `normalized` (as a whole it was not found verbatim)."""
    changes, start = framing_changes(passage, body.start, pre)
    every = tuple(sorted([*changes, *body.changes], key=lambda c: (c.start, c.end)))
    if every:
        status = ALTERED if any(c.fact for c in every) else REWORDED
    else:
        status = NORMALIZED if body.status == EXACT else body.status
    return Grounding(status, min(start, body.start), body.end, body.score, every, body.parts)


def combined(parts: list[Grounding]) -> Grounding:
    """One field grounded by parts: the weakest status (missing only when every part is), the lowest score, the
    cover of the parts (when located) and every change."""
    given = [p for p in parts if p.status != MISSING]
    if len(given) <= 1:
        return given[0] if given else Grounding(MISSING)
    status = max((p.status for p in given), key=STATUSES.index)
    start, end = (min(p.start for p in given), max(p.end for p in given)) if status in LOCATED else (-1, -1)
    return Grounding(status, start, end, min(p.score for p in given), tuple(c for p in given for c in p.changes),
                     tuple(given))


def list_items(text: str) -> list[str] | None:
    """The items of a quote written as a numbered or bulleted list (a marker at the start of a line: `1.`, `1)`,
    `(1)`, `1、`, `①`, `一、`, `-`, `*`, `•`, `+`), without their markers; None when no line starts with one."""
    if not _LIST_MARKER.search(text):
        return None
    items = [_LIST_MARKER.sub("", line, count=1).strip() for line in text.splitlines()]
    return [item for item in items if item] or None


def ground_text(passage: str, text: Any, hint: Hint = Hint(), threshold: float = FUZZY_THRESHOLD,
                answer: bool = False) -> Grounding:
    """Ground one quote: exactly, then normalized, as given (an `answer` without a final stop or enclosing quote
    marks first), then without its framing, then without edge punctuation; then fuzzily, without its framing
    first. A quote written as a list is also grounded item by item (its markers are form), and that is kept unless
    the whole quote does better. A quote of several sentences not found exactly or normalized as a whole is also
    grounded sentence by sentence, and that is kept when its status is better and the whole quote was not found,
    or its sentences lie out of order or apart and the whole quote, where found, writes no other fact in place of
    one of the passage's. Empty: `missing`."""
    text = "" if text is None else str(text).strip()
    if not text:
        return Grounding(MISSING)
    if not passage:
        return Grounding(UNVERIFIED)
    if text in passage:
        return _ground(passage, text, hint, threshold, answer)
    unmarked = _unmarked(passage, text)
    found = _ground(passage, _uncited(passage, unmarked), hint, threshold, answer)
    return replace(found, status=NORMALIZED) if unmarked != text and found.status == EXACT else found


def _unmarked(passage: str, text: str) -> str:
    """`text` without the HTML the passage does not hold: tags dropped (a block tag such as `<p>`, `<br>`, `<li>` as a
    line break), entities (`&amp;`, `&quot;`, `&#39;`, also escaped twice) decoded."""
    def tag(match: re.Match) -> str:
        return match.group() if _held(passage, match.group()) else "\n" if match[1].lower() in _BLOCK_TAGS else ""

    def entity(match: re.Match) -> str:
        return match.group() if _held(passage, match.group()) else html.unescape(match.group())

    if "<" in text:
        text = _TAG.sub(tag, text)
    for _ in range(2):  # `&amp;quot;` is `&quot;` escaped once more
        text = _ENTITY.sub(entity, text) if "&" in text else text
    return text.strip()


def _held(passage: str, mark: str) -> bool:
    """Whether the passage holds a mark (as written, or folded when it is longer than two characters)."""
    mark = mark.strip()
    key = normalized(mark)[0]
    return mark in passage or len(key) > 2 and key in normalized(passage)[0]


def _uncited(passage: str, text: str) -> str:
    """`text` without the citation marks a model adds around or after a quote (`[1]`, `(S3)`, `[source 2]`, `【1】`,
    `^1`) that the passage does not hold."""
    if not _CITES.search(text):
        return text
    return _CITATION.sub(lambda m: m.group() if _held(passage, m.group()) else "", text).strip()


def _ground(passage: str, text: str, hint: Hint, threshold: float, answer: bool) -> Grounding:
    """`ground_text` of a quote without markup and added citation marks."""
    whole = _ground_whole(passage, text, hint, threshold, answer)
    if answer or whole.status in VERBATIM:
        return whole
    items = list_items(unframed(passage, text) or text)
    if items is not None:
        listed = combined([ground_text(passage, item, Hint(holding=hint.holding), threshold) for item in items])
        return listed if STATUSES.index(listed.status) <= STATUSES.index(whole.status) else whole
    sentences = [s.text for s in split_sentences(unframed(passage, text) or text, "refined") if tokens(s.text)[0]]
    if len(sentences) < 2:
        return whole
    parts = combined([_ground_whole(passage, s, Hint(holding=hint.holding), threshold, False) for s in sentences])
    better = STATUSES.index(parts.status) < STATUSES.index(whole.status)
    usable = whole.status == UNVERIFIED or _apart(passage, parts) and not _replaced_fact(whole)
    return parts if better and usable and not _ends_added(passage, sentences, parts) else whole


_ENDS = ASCII_TERMINATORS + CJK_TERMINATORS + "…"
_CLOSERS = "\"'”’」』)）]】 \t\n"


def _ends_added(passage: str, sentences: list[str], parts: Grounding) -> bool:
    """Whether the quote ends a sentence where the passage goes on: a sentence of it, not its last, closes with a
    terminator while its passage text is followed by more of the same sentence. Two passage texts joined there
    (`这种人生性不憨，?领导应更加关注老实人。`, the first cut from `这种人生性不憨，头脑也不笨，…`) are a stitch, not a
    quote of two sentences, so they are never replaced by the passage text."""
    ends = [p.end for p in parts.parts]
    if len(ends) != len(sentences):
        return False
    for sentence, end in zip(sentences[:-1], ends[:-1]):
        if end < 0 or not sentence.rstrip(_CLOSERS).endswith(tuple(_ENDS)):
            continue
        before, after = passage[:end].rstrip(_CLOSERS), passage[end:].lstrip(_CLOSERS)
        if not (before.endswith(tuple(_ENDS)) or not after or after.startswith(tuple(_ENDS))):
            return True
    return False


def _replaced_fact(grounding: Grounding) -> bool:
    """Whether a located quote writes another fact where the passage has one (not merely leaves one out): then
    sentences of it found elsewhere do not excuse it (`… Barnes. Admission: 60 pence`, where that show costs 80
    pence and another 60)."""
    return any(c.fact and c.quote and c.passage for c in grounding.changes)


def _apart(passage: str, grounding: Grounding) -> bool:
    """Whether the parts lie out of order, or with three or more words between two of them: then the whole quote's
    alignment cannot judge them (next to one another, it sees what the joins left out, such as a `not`)."""
    spans = grounding.spans
    return any(b[0] < a[1] or len(tokens(passage[a[1]:b[0]])[0]) >= 3 for a, b in zip(spans, spans[1:]))


def ground_field(passage: str, value: Any, hint: Hint = Hint()) -> Grounding:
    """Ground an evidence field: one quote, or a list of quotes element by element (the weakest status)."""
    if isinstance(value, list):
        return combined([ground_text(passage, v, Hint(holding=hint.holding)) for v in value])
    return ground_text(passage, value, hint)


@dataclass
class Grounded:
    """A grounded submission, one details record per grounded question, and the status counts over the
    dataset's questions (a question without a prediction is `missing`)."""

    submission: dict[str, Any]
    details: list[dict[str, Any]]
    counts: dict[str, int]  # evidence status -> questions
    answer_counts: dict[str, int] = field(default_factory=dict)  # span answers' status -> questions (span subsets)

    @property
    def evidence_given(self) -> int:
        """The questions with a (non-empty) evidence."""
        return sum(self.counts.values()) - self.counts.get(MISSING, 0)

    def rate(self, statuses: tuple[str, ...]) -> float | None:
        """The share (0-1) of the questions with evidence whose evidence has one of `statuses`; None when no
        evidence is given."""
        given = self.evidence_given
        return sum(self.counts.get(s, 0) for s in statuses) / given if given else None

    def summary(self) -> dict[str, Any]:
        """The figures a run records (scores.json): the counts, each status's count over questions, the evidence
        given, and the verbatim (exact + normalized) and untrustworthy (unverified + altered + reworded) evidence
        rates over it (0-1, null when no evidence is given)."""
        return {"counts": self.counts, "answer_counts": self.answer_counts, "questions": sum(self.counts.values()),
                "evidence_given": self.evidence_given, **{s: self.counts.get(s, 0) for s in STATUSES},
                "verbatim_evidence_rate": self.rate(VERBATIM),
                "untrustworthy_evidence_rate": self.rate(UNTRUSTWORTHY)}


def trust_line(summary: dict[str, Any]) -> str:
    """The verbatim and untrustworthy evidence rates with what they count, from a grounding summary."""
    def shown(rate: float | None) -> str:
        return "n/a" if rate is None else f"{100 * rate:.1f}%"

    def terms(statuses: tuple[str, ...]) -> str:
        return " + ".join(f"{s} {summary[s]}" for s in statuses)

    return (f"verbatim evidence: {shown(summary['verbatim_evidence_rate'])} ({terms(VERBATIM)}); untrustworthy "
            f"evidence: {shown(summary['untrustworthy_evidence_rate'])} ({terms(UNTRUSTWORTHY)}); of "
            f"{summary['evidence_given']} questions with evidence; missing {summary['missing']} of "
            f"{summary['questions']}")


def check_subset(dataset: Dataset, submission: dict[str, Any], source: str = "submission") -> None:
    """Refuse a submission none (or under half) of whose ids are questions of `dataset`: it is for another subset."""
    known = {q.qid for q in dataset.questions}
    matching = sum(qid in known for qid in submission)
    if submission and 2 * matching < len(submission):
        first = next(qid for qid in submission if qid not in known)
        raise ExpmrcError(f"{source}: only {matching} of its {len(submission)} question ids are in {dataset.path} "
                          f"({dataset.subset}; first unknown: {first}); is it a submission for another subset?")


def check_entry(source: str, qid: str, entry: Any) -> None:
    """Refuse an entry the scorer would refuse, except an evidence that is a list of strings (grounded one by one)."""
    evidence = entry.get("evidence") if isinstance(entry, dict) else None
    if not isinstance(evidence, list):
        parse_prediction(source, qid, entry)
        return
    for value in evidence:
        if value is None or not isinstance(value, SCALAR_TYPES):
            kind = "null" if value is None else "an array" if isinstance(value, list) else "an object"
            raise ExpmrcError(f"{source}: question {qid}: `evidence` must be a string or a list of strings, got a "
                              f"list holding {kind}")
    parse_prediction(source, qid, {**entry, "evidence": ""})


def _answer_inside(passage: str, answer: Grounding, evidence: Grounding) -> Grounding:
    """A located answer moved to its occurrence inside the located evidence when it is not inside already."""
    if answer.status not in LOCATED or evidence.status not in LOCATED:
        return answer
    spans = evidence.spans
    if any(a <= answer.start and answer.end <= b for a, b in spans):
        return answer
    for a, b in spans:
        inside = find(passage[a:b], passage[answer.start:answer.end], ("verbatim",))
        if inside is not None:
            return replace(answer, start=inside.start + a, end=inside.end + a)
    return answer


def ground_question(question: Any, entry: dict[str, Any], drop_unverified: bool) -> tuple[dict, dict]:
    """One entry grounded (fields whose every difference is form replaced by passage text, offsets added; the
    others as the model wrote them) and its details record."""
    passage = passage_of(question)
    out = {k: v for k, v in entry.items() if k not in ("answer_start", "evidence_start")}
    record: dict[str, Any] = {"id": question.qid}
    answer = None
    if isinstance(question, SpanQuestion):
        answer = ground_text(passage, entry["answer"], Hint(start=entry.get("answer_start")), answer=True)
    holding = answer.span if answer is not None and answer.status in LOCATED else None
    evidence = ground_field(passage, entry["evidence"], Hint(start=entry.get("evidence_start"), holding=holding))
    if answer is not None:
        answer = _answer_inside(passage, answer, evidence)
    for key, grounding in (("evidence", evidence), ("answer", answer)):
        if grounding is None:
            continue
        record[key] = grounding.record()
        if grounding.status in VERBATIM:
            out[key], start = grounding.placed(passage)
            if start is not None:
                out[f"{key}_start"] = start
        elif drop_unverified and grounding.status in DROPPED:
            out[key] = ""
        elif isinstance(out[key], list):  # the model's own quotes, as one text the scorer reads
            out[key] = " ".join(str(v).strip() for v in out[key] if str(v).strip())
    return out, record


def ground_submission(dataset: Dataset, submission: dict[str, Any], drop_unverified: bool = False,
                      source: str = "submission") -> Grounded:
    """Ground every prediction of `submission` that names a question of `dataset` (in dataset order); a submission
    for another subset, or an entry the scorer would refuse, is an ExpmrcError naming `source` (and the question).
    `drop_unverified` empties the altered and unverified fields (DROPPED)."""
    check_subset(dataset, submission, source)
    grounded: dict[str, Any] = {}
    details: list[dict[str, Any]] = []
    counts = dict.fromkeys(STATUSES, 0)
    answer_counts = dict.fromkeys(STATUSES, 0) if dataset.kind == "span" else {}
    for question in dataset.questions:
        if question.qid not in submission:
            counts[MISSING] += 1
            if answer_counts:
                answer_counts[MISSING] += 1
            continue
        check_entry(source, question.qid, submission[question.qid])
        entry, record = ground_question(question, submission[question.qid], drop_unverified)
        grounded[question.qid] = entry
        details.append(record)
        counts[record["evidence"]["status"]] += 1
        if "answer" in record:
            answer_counts[record["answer"]["status"]] += 1
    return Grounded(grounded, details, counts, answer_counts)
