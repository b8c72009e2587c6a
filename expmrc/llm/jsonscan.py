"""The JSON objects in a chat model's reply, found in one linear pass and decoded once each.

One scan over the reply's brackets and quotes finds every outermost `{…}` (inside code fences, amid
prose, or the object a cut-off reply left open). Each is decoded by the standard library; one that
fails is mended by `json-repair` (single quotes, trailing commas, comments, unquoted keys, full-width
quotes and colons, a missing closing brace). Nothing here is quadratic: a reply nested 50,000 deep or a
megabyte long costs one pass; objects nested deeper than MAX_DEPTH are skipped, and repair, which is
linear but slow, is spent on at most REPAIR_BUDGET characters of a reply, latest objects first.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import json_repair

MAX_DEPTH = 32  # an answer object needs two or three levels; deeper ones are refused, not recursed into
REPAIR_LIMIT = 20_000  # characters: a larger broken object is not repaired
REPAIR_BUDGET = 60_000  # characters repaired per reply at most
STRUCTURE = re.compile(r'[{}\[\]"\\]')
# `"答案"："C"，"证据"：…`: full-width colons and commas between ASCII-quoted keys and values, which
# json-repair reads as part of the strings; only those touching a quote are structural
FULL_WIDTH_COLON = re.compile(r'(?<=["”])\s*：\s*')
FULL_WIDTH_COMMA = re.compile(r'(?<=["”\d])\s*，\s*(?=["“])')


@dataclass(frozen=True)
class Found:
    """A JSON object of the reply: where it lies (`end` exclusive) and what it holds."""

    start: int
    end: int
    value: dict
    repaired: bool


@dataclass
class Scan:
    """The result of scanning a reply: the objects decoded, and notes on those refused."""

    objects: list[Found] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class _Open:
    position: int
    bracket: str
    depth: int
    deepest: int
    parent: int | None  # position of the enclosing `{`


def _spans(text: str) -> tuple[list[tuple[int, int, int]], tuple[int, int] | None]:
    """(start, end, depth) of every object no closed object encloses, and (start, depth) of the innermost
    object left open at the end of the reply, if any. Strings are followed only inside an object."""
    stack: list[_Open] = []
    counts = {"{": 0, "[": 0}  # brackets open on the stack, so a stray closer costs O(1)
    closed: list[tuple[int, int, int, int | None]] = []
    in_string, skip_to = False, -1
    for match in STRUCTURE.finditer(text):
        char, at = match.group(), match.start()
        if at < skip_to or not stack and char != "{":
            continue
        if in_string:
            if char == "\\":
                skip_to = at + 2
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            top = stack[-1] if stack else None
            parent = None if top is None else top.position if top.bracket == "{" else top.parent
            stack.append(_Open(at, char, len(stack) + 1, len(stack) + 1, parent))
            counts[char] += 1
        elif char in "}]" and counts["{" if char == "}" else "["]:
            _close(stack, counts, "{" if char == "}" else "[", at, closed)
    open_positions = {o.position for o in stack if o.bracket == "{"}
    spans = [(start, end, depth) for start, end, depth, parent in closed if parent is None or parent in open_positions]
    inner = next((i for i in range(len(stack) - 1, -1, -1) if stack[i].bracket == "{"), None)
    if inner is None:
        return spans, None
    deepest = max(o.deepest for o in stack[inner:])  # brackets still open inside it count too
    return spans, (stack[inner].position, deepest - stack[inner].depth + 1)


def _close(stack: list[_Open], counts: dict[str, int], want: str, at: int,
           closed: list[tuple[int, int, int, int | None]]) -> None:
    """Pop up to the open bracket `want` (a `}` also closes any `[` left open inside it); record objects."""
    while stack:
        entry = stack.pop()
        counts[entry.bracket] -= 1
        if stack:
            stack[-1].deepest = max(stack[-1].deepest, entry.deepest)
        if entry.bracket == want:
            if want == "{":
                closed.append((entry.position, at + 1, entry.deepest - entry.depth + 1, entry.parent))
            return


def _decode(chunk: str, budget: list[int]) -> tuple[dict | None, bool]:
    """The object `chunk` holds: by the standard decoder, else repaired while the budget lasts."""
    try:
        value = json.loads(chunk, strict=False)
        return (value, False) if isinstance(value, dict) else (None, False)
    except RecursionError:  # deeper than the decoder's stack, past what the scan measured: not an answer
        return None, False
    except ValueError:
        pass
    if len(chunk) > REPAIR_LIMIT or len(chunk) > budget[0]:
        return None, False
    budget[0] -= len(chunk)
    mended = FULL_WIDTH_COMMA.sub(", ", FULL_WIDTH_COLON.sub(": ", chunk))
    try:
        value = json_repair.loads(mended, skip_json_loads=True)
    except Exception:  # a third-party repairer on arbitrary text: any failure means "no object here"
        return None, False
    return (value, True) if isinstance(value, dict) and value else (None, False)


def scan(text: str) -> Scan:
    """Every JSON object of `text` in reply order; an object left open at the end is repaired and, if it
    decodes, stands for the objects closed inside it."""
    spans, tail = _spans(text)
    result, budget = Scan(), [REPAIR_BUDGET]
    found: list[Found] = []
    if tail is not None:
        start, depth = tail
        if depth > MAX_DEPTH:
            result.notes.append(f"a JSON object nested deeper than {MAX_DEPTH} levels was skipped")
        else:
            value, _ = _decode(text[start:], budget)
            if value is not None:
                found.append(Found(start, len(text), value, True))
                spans = [s for s in spans if s[0] < start]
    for start, end, depth in reversed(spans):  # latest first: the repair budget goes to the final answer
        if depth > MAX_DEPTH:
            result.notes.append(f"a JSON object nested deeper than {MAX_DEPTH} levels was skipped")
            continue
        value, repaired = _decode(text[start:end], budget)
        if value is not None:
            found.append(Found(start, end, value, repaired))
    result.objects = sorted(found, key=lambda f: f.start)
    return result
