"""The markup of a chat model's reply, each found in one linear pass: reasoning blocks, XML-style elements
(`<answer>…</answer>`, `<证据>…</证据>`), markdown table rows, list markers and paired quotation marks.

Nothing here knows what an answer is: `parsing` names the tags and headings it reads and decides what
they state. Every function is linear in its input, whatever the input holds (tags nested 100,000 deep, a
table of 100,000 rows, marks that never close).
"""

from __future__ import annotations

import bisect
import functools
import html
import re
import unicodedata
from dataclasses import dataclass

_REASONING_NAMES = r"think|thinking|thought|thoughts|reasoning|scratchpad"
# Where reasoning opens or closes, in the dresses models use (`<think>`, `<|begin_of_thought|>`, `◁think▷`,
# `[THINK]`, `<seed:think>`), and the openings of an answer block, which end reasoning left unclosed.
REASONING = re.compile(
    r"<\s{0,3}(?P<c1>/)?\s{0,3}(?:" + _REASONING_NAMES + r")\s{0,3}>|<\|(?:begin|(?P<c2>end))_of_thought\|>"
    r"|◁(?P<c3>/)?think▷|\[(?P<c4>/)?THINK\]|<(?P<c5>/)?seed:think>"
    r"|(?P<answer><\s{0,3}(?:answer|final[\s_-]?answer|output|答案|最终答案)(?:\s[^<>]{0,200})?>|<\|begin_of_solution\|>)",
    re.IGNORECASE)


def strip_reasoning(reply: str) -> str:
    """The reply without its reasoning. A closed block is dropped; so is everything before a lone closing
    mark (a block the chat template opened). A block left open ends at an answer block that opens after
    it (`<answer>`, `<|begin_of_solution|>`), else runs to the end of the reply: what follows the last
    reasoning mark is read, and nothing inside the reasoning ever is. One pass."""
    return split_reasoning(reply)[0]


def split_reasoning(reply: str) -> tuple[str, str]:
    """The reply without its reasoning (as `strip_reasoning`), and the text of a reasoning block left open
    at the end of the reply ("" when none is), for the caller to look for a final statement in. One pass."""
    kept, position, inside, opened = [], 0, False, 0
    for mark in REASONING.finditer(reply):
        closing = any(mark.group(g) for g in ("c1", "c2", "c3", "c4", "c5"))
        if mark.group("answer"):
            if inside:  # the answer begins: the reasoning left open ends here
                inside, position = False, mark.start()
        elif not closing and not inside:
            kept.append(reply[position:mark.start()])
            inside, opened = True, mark.end()
        elif closing and inside:
            inside, position = False, mark.end()
        elif closing:  # a close without an open: everything so far was reasoning
            kept, position = [], mark.end()
    if not inside:
        kept.append(reply[position:])
    return "".join(kept).strip(), reply[opened:] if inside else ""


_HTML_NAMES = ("p|div|br|hr|li|ul|ol|h[1-6]|table|thead|tbody|tfoot|tr|td|th|blockquote|pre|section|article|header|"
               "footer|main|figure|figcaption|details|summary|dl|dt|dd|strong|b|em|i|u|s|span|code|mark|small|sup|sub|"
               "a|font|del|ins|kbd|samp|var|abbr|cite|q|label|big|tt")
HTML_TAG = re.compile(r"<\s{0,3}(?P<close>/)?\s{0,3}(?P<name>" + _HTML_NAMES + r")(?:\s[^<>\n]{0,200})?/?>", re.IGNORECASE)
ENTITY = re.compile(r"&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,9});")
_HTML_BREAKS = {"li": "\n- ", "blockquote": "\n> ", "tr": "\n", "td": "|", "th": "|"}  # opening tags; others: below
_HTML_INLINE = {"strong", "b", "em", "i", "u", "s", "span", "code", "mark", "small", "sup", "sub", "a", "font", "del",
                "ins", "kbd", "samp", "var", "abbr", "cite", "q", "label", "big", "tt", "thead", "tbody", "tfoot"}


def is_html(text: str) -> bool:
    """Whether a reply is written in HTML: it holds an HTML tag, other than a `<br>` in a markdown table row
    (which markdown tables use for a line break inside a cell)."""
    return "<" in text and any(tag.group("name").lower() != "br" or not line.lstrip().startswith("|")
                               for line in text.split("\n") for tag in HTML_TAG.finditer(line))


def _html_tag(tag: re.Match[str], in_table: bool) -> str:
    """What an HTML tag becomes in text: nothing (inline), a line break (a block), a list or quote marker,
    a table row's cell bar; `<br>` of a markdown table row stays for the row's reader."""
    name = tag.group("name").lower()
    if name in _HTML_INLINE or name == "br" and in_table:
        return "" if name != "br" else tag.group()
    if tag.group("close"):
        return "|" if name == "tr" else "" if name in ("td", "th") else "\n"
    return _HTML_BREAKS.get(name, "\n")


def html_text(text: str) -> str:
    """An HTML reply as text a reader sees (`<p><strong>答案：</strong>C</p>` is the line `答案：C`): tags dropped
    or made line breaks, `<li>` a list item, `<blockquote>` a `>` quote, table rows `|a|b|`, entities decoded.
    Every line keeps its length (what a line loses is padded with spaces at its end), so positions of lines
    stay those of the reply. Linear."""
    out = []
    for line in text.split("\n"):
        done = HTML_TAG.sub(functools.partial(_html_tag, in_table=line.lstrip().startswith("|")), line)
        done = ENTITY.sub(lambda m: m.group() if len(u := html.unescape(m.group())) > len(m.group()) else u, done)
        done = done.strip("\n").replace("\xa0", " ")  # a block at a line's edge: the reply's own line break
        out.append(done + " " * (len(line) - len(done)))
    return "\n".join(out)


TAG = re.compile(r"<\s{0,3}(/?)\s{0,3}([^\W\d][\w\-]{0,40})(?:\s[^<>]{0,200})?>")


@dataclass(frozen=True)
class Element:
    """An XML-style element whose tag `parsing` asked for: its role, where it lies, what it holds."""

    role: str
    start: int
    end: int
    content: str


def elements(text: str, role_of: dict[str, str]) -> tuple[list[Element], list[tuple[int, int]]]:
    """The elements of `text` whose tag names (as `key` folds them) have a role in `role_of`, and the spans
    of every such tag, elements included, for the caller to blank. An element ends at its own closing
    tag, at a closing tag of another known name (mismatched), at the next known opening tag (left open),
    or at the end of the text. Unknown tags are text."""
    found: list[Element] = []
    spans: list[tuple[int, int]] = []
    opened: tuple[str, int, int] | None = None  # role, tag start, content start
    for tag in TAG.finditer(text):
        role = role_of.get(key(tag.group(2)))
        if role is None:
            continue
        if opened is not None:
            found.append(Element(opened[0], opened[1], tag.end() if tag.group(1) else tag.start(),
                                 text[opened[2]:tag.start()]))
            spans.append((opened[1], found[-1].end))
            opened = None
            if tag.group(1):
                continue
        if tag.group(1):
            spans.append((tag.start(), tag.end()))  # a stray closing tag
        else:
            opened = (role, tag.start(), tag.end())
    if opened is not None:
        found.append(Element(opened[0], opened[1], len(text), text[opened[2]:]))
        spans.append((opened[1], len(text)))
    return found, spans


@functools.lru_cache(maxsize=1024)
def key(name: str) -> str:
    """A key, tag or heading name compared loosely: NFKC, lower case, spaces and hyphens as `_`."""
    return re.sub(r"[\s\-]+", "_", unicodedata.normalize("NFKC", name).strip().lower())


SEPARATOR_CELL = re.compile(r":?-{2,}:?|:?-:?")


def cells(line: str) -> list[str] | None:
    """The cells of a markdown table row (`| a | b |`), or None when the line is no table row."""
    stripped = line.strip()
    if not stripped.startswith("|") or stripped.count("|") < 2:
        return None
    return [cell.strip() for cell in stripped.strip("|").split("|")]


def is_separator(row: list[str]) -> bool:
    """Whether a table row is the `|---|:---:|` line under a header."""
    return all(SEPARATOR_CELL.fullmatch(cell.replace(" ", "")) or not cell for cell in row) and any(row)


# A list marker opens an item's text: a bullet before a space; a number before a space and more (`1. text`),
# or, for `(1)` and `1、` that need no space, before a letter or quote mark: `(2), (3)`, `（3）、（5）`, `(3)(4)` and
# `3、4` are numbers, not a list
_ITEM_TEXT = r"(?=\s++[^\s,，、;；.。:：(（\[【]|[^\W\d_]|[\"“「『‘'*])"
LIST_MARK = re.compile(r"(?:[-*•·+‣▪◦](?=\s)|\d{1,3}[.)．](?=\s++\S)|(?:\d{1,3}、|[(（]\d{1,3}[)）])" + _ITEM_TEXT
                       + r"|[①-⑳]|[一二三四五六七八九十]{1,3}、)\s*")


def unlisted(line: str) -> str:
    """A line without the list marker it starts with (`1.`, `1)`, `(1)`, `①`, `一、`, `-`, `*`, `•`)."""
    line = line.strip()
    mark = LIST_MARK.match(line)
    return line[mark.end():] if mark else line


def is_list_item(line: str) -> bool:
    return LIST_MARK.match(line.strip()) is not None


OPEN_QUOTES = {'"': '"', "“": "”", "'": "'", "「": "」", "『": "』", "‘": "’", "«": "»"}
_CLOSES = {close: opening for opening, close in OPEN_QUOTES.items() if close != opening}
QUOTE_MARK = re.compile("[" + re.escape("".join(OPEN_QUOTES) + "".join(_CLOSES)) + "]")


class Quotations:
    """Where each quotation of a line closes: a mark that has its own closing mark (`“…”`, `「…」`) is paired
    by nesting, so `“…“诚”字…”` closes at its last mark; a mark that closes itself (`"`) at its next
    occurrence. Built in one pass over the line; each lookup is a dictionary or bisect step."""

    def __init__(self, line: str) -> None:
        self.line = line
        self.pairs: dict[int, int] = {}
        self.closers: dict[str, list[int]] = {}
        stacks: dict[str, list[int]] = {}
        for mark in QUOTE_MARK.finditer(line):
            at, char = mark.start(), mark.group()
            self.closers.setdefault(char, []).append(at)
            if char in _CLOSES and stacks.get(_CLOSES[char]):
                self.pairs[stacks[_CLOSES[char]].pop()] = at
            elif OPEN_QUOTES.get(char, char) != char:
                stacks.setdefault(char, []).append(at)

    def close_of(self, at: int) -> int:
        """The index of the mark closing the quotation opened at `at`, or -1 (no quotation opens there)."""
        close = OPEN_QUOTES.get(self.line[at:at + 1])
        if close is None:
            return -1
        if at in self.pairs:
            return self.pairs[at]
        positions = self.closers.get(close, [])  # unpaired: the next closing mark, as a reader would guess
        i = bisect.bisect_right(positions, at)
        return positions[i] if i < len(positions) else -1

    def quoted_after(self, at: int) -> str | None:
        """The quotation that opens at `at` (up to its closing mark), or None."""
        end = self.close_of(at)
        return self.line[at + 1:end].strip() if end > at + 1 else None
