"""Turning a model's reply into an answer and an evidence quote, whatever shape the reply takes.

Reasoning is dropped first (`<think>…</think>` and its kin, `markup.strip_reasoning`; a block left open
ends only where an answer block opens, so nothing inside reasoning is ever read). Then every *statement*
of an answer is collected, in reply order: JSON objects holding an answer key (found and repaired by
`jsonscan`, nested ones such as `{"result": {...}}` included), XML-style elements (`<answer>…</answer>`,
`<答案>…</答案>`), markdown table rows (`| Answer | Evidence |` over its values, or `| Answer | C |`), and
statements in the text (`Answer: C`, `The answer is C`, `### Answer` over its value, `\\boxed{C}`,
`C is correct`, `答案：C`, `故选C`, `我选择C`, `正确选项为C`, `C项正确`). A field that frames its answer in
words (`{"answer": "The answer is C"}`, `<答案>答案是：上海</答案>`) states what the words state. The final
statement is the answer, by one rule for all; when earlier ones differ the status is `revised` and the
note lists them. With no statement, a multiple-choice reply whose lines name one option on their own
(`C`, `(C)`, `C. text`, an option's text) gives that option.

The evidence is the one stated with the final answer (same JSON object or table row), else the last one
stated anywhere (an evidence key, element or column, an `Evidence:`/`证据：` line, a numbered or bulleted
list under one, read as its items joined by spaces), else the last quotation the reply introduces as the
passage's (`The passage says "…"`, `原文说“…”`, a `>` block quote). A quotation holding a quotation in
the same marks (`“…“诚”字…”`) runs to its own closing mark; a note in parentheses after an answer
(`答案：X（原文：…）`) is no part of it.

For multiple choice the answer becomes a letter; an option's text is matched before a leading
letter-like word is read as a letter (`A clerk.` is the option whose text it is, not A). Nothing here
raises: a reply that yields no usable answer gets status `failed`, an empty answer and a note.
"""

from __future__ import annotations

import bisect
import contextvars
import functools
import re
import unicodedata
from dataclasses import dataclass, field

from expmrc.data.datasets import LABELS
from expmrc.llm.jsonscan import scan
from expmrc.llm.markup import (OPEN_QUOTES, Quotations, cells, elements, html_text, is_html, is_list_item, is_separator,
                                key, unlisted)
from expmrc.llm.markup import split_reasoning
from expmrc.llm.markup import strip_reasoning as strip_reasoning

STATUSES = ("json", "text", "revised", "failed")  # how the answer was found; `revised`: several differed
ANSWER_KEYS = ("answer", "final_answer", "correct_answer", "correct_option", "correct_choice", "answer_letter",
               "answer_option", "selected_option", "selected_answer", "chosen_option", "option", "choice",
               "prediction", "predicted_answer", "答案", "最终答案", "正确答案", "正确选项", "选项", "回答")
EVIDENCE_KEYS = ("evidence", "evidences", "supporting_evidence", "supporting_sentence", "supporting_sentences",
                 "supporting_text", "supporting_quote", "supporting_quotes", "quote", "quotes", "quotation",
                 "citation", "source_sentence", "relevant_sentence", "证据", "原文依据", "原文", "依据", "引文",
                 "原句", "文中原句", "证据句", "支持句", "相关原文", "出处")
_INNER_ANSWER_KEYS = ("letter", "label", "option", "choice", "answer", "text", "value", "content")
# Tag names and table headings that label an answer or evidence: every key, except the words a table of
# options or a list of them uses for itself (`| Option | Analysis |`, `<option>`)
_GENERIC = ("option", "choice", "选项", "prediction")
ROLES = {**{k: "answer" for k in ANSWER_KEYS if k not in _GENERIC}, "short_answer": "answer",
         **{k: "evidence" for k in EVIDENCE_KEYS}}
PLACEHOLDER = re.compile(r"<[^<>]*>")
MARKDOWN = re.compile(r"\*\*|__|`")


@dataclass(frozen=True)
class Parsed:
    """What a reply yields: the answer (a letter for choice), the evidence, and how they were found."""

    answer: str
    evidence: str
    status: str
    note: str = ""  # why parsing failed, what was revised or repaired


@dataclass(frozen=True)
class Statement:
    """One answer a reply states: where, the raw value, the evidence stated with it, and its source."""

    position: int
    value: str
    evidence: str | None
    source: str  # "json", "text", or "field" (an XML-style element or a table cell: as written, like JSON)


def fold(text: str) -> str:
    """Text compared loosely: NFKC, one space, lower case, no markdown, no surrounding quotes or stops."""
    text = re.sub(r"\s+", " ", MARKDOWN.sub("", unicodedata.normalize("NFKC", text))).strip().lower()
    return text.strip(" \"'“”‘’「」『』*`_").rstrip("。.!！").strip()


@functools.lru_cache(maxsize=256)
def _folds(options: tuple[str, ...]) -> list[str]:
    """The options folded, once per set of options (a run asks every question with its own few)."""
    return [fold(option) for option in options]


LETTER_PREFIX = re.compile(r"(?:(?:the\s+)?(?:option|choice)\s*|选项\s*|选择?\s*)?[(\[【]?\s*(?P<l>[A-Za-z])\s*"
                           r"(?P<close>[)\]】])?\s*(?:项|选项)?(?P<rest>.*)", re.IGNORECASE | re.DOTALL)


def _owner(text: str, folds: list[str], prefix: bool = True) -> int | None:
    """The option whose text `text` is or (with `prefix`) begins with (the longest such), or None."""
    text = fold(text)
    exact = [i for i, f in enumerate(folds) if f and f == text]
    if len(exact) == 1 or not prefix:
        return exact[0] if len(exact) == 1 else None
    starts = [i for i, f in enumerate(folds) if f and text.startswith(f) and not _word_goes_on(text, len(f))]
    if starts:
        longest = max(len(folds[i]) for i in starts)
        best = [i for i in starts if len(folds[i]) == longest]
        return best[0] if len(best) == 1 else None
    return None


def _word_goes_on(text: str, at: int) -> bool:
    """Whether an English word continues at `at` (`no` does not begin `not sure`)."""
    return text[at:at + 1].isascii() and text[at:at + 1].isalnum()


SEPARATORS = ".,:;、。)-–—"
CONNECTIVE = re.compile(r"(?:because|since|as|is|was|fits|matches)\b", re.IGNORECASE)  # `A because …`


def _letter_reading(text: str, folds: list[str]) -> tuple[int | None, str]:
    """The option index a leading letter names (`C`, `(C)`, `C.`, `C) text`, `Option C`, `选项C`, `C项`), or
    None: with a reason when the letter is out of range or its text is another option's, else without
    (no letter: `A clerk` begins with a word)."""
    m = LETTER_PREFIX.fullmatch(text)
    if m is None:
        return None, ""
    letter, rest = m.group("l").upper(), m.group("rest")
    index = LABELS.index(letter)
    body = rest.lstrip()
    if not body or m.group("close") or body[0] in SEPARATORS:
        separated = True
    elif not text[m.end("l")].isspace():  # directly before Chinese text a label, before Latin text a word's start
        separated = not _word_goes_on(text, m.end("l"))
    else:  # before a space and a word: `A`, `a` and `I` are English words (`A clerk`), other letters labels
        separated = m.group("l") not in "AaIi" or CONNECTIVE.match(body) is not None
    said = _owner(body.lstrip(SEPARATORS + " "), folds) if body.strip(SEPARATORS + " ") else None
    if not separated and said != index:
        return None, ""
    if said is not None and said != index:
        return None, f"letter {letter} but the text of option {LABELS[said]}"
    if index >= len(folds):
        return None, f"there is no option {letter}"
    return index, ""


def letter_of(answer: str, options: list[str]) -> tuple[str | None, str]:
    """The option letter an answer names, or None and why: an option's whole text first, then a letter
    followed by exactly its own text, then an option's text as the answer's beginning (`A clerk, as …`),
    then a letter in any common dress, then the one option whose text the answer contains."""
    text = unicodedata.normalize("NFKC", answer).replace("**", "").strip().strip("`").strip()
    if len(text) > 2 and text[0] in OPEN_QUOTES and text[-1] == OPEN_QUOTES[text[0]]:
        text = text[1:-1].strip()  # `"C"`, as YAML and prose quote it
    folds = _folds(tuple(options))
    if not fold(text):
        return None, "empty answer"
    owner = _owner(text, folds, prefix=False)
    if owner is None and (m := LETTER_PREFIX.fullmatch(text)) is not None:  # `D. t` when option D is `t`
        index = LABELS.index(m.group("l").upper())
        if index < len(folds) and fold(m.group("rest").lstrip(SEPARATORS + " ")) == folds[index]:
            owner = index
    if owner is None:
        owner = _owner(text, folds)
    if owner is None:
        owner, why = _letter_reading(text, folds)
        if why:
            return None, f"answer {answer[:60]!r}: {why}"
    if owner is None:
        folded = fold(text)
        inside = [i for i, f in enumerate(folds) if f and f in folded]
        inside = [i for i in inside if not any(i != j and folds[i] in folds[j] for j in inside)]
        owner = inside[0] if len(inside) == 1 else None
    if owner is None:
        return None, f"answer {answer[:60]!r} names no option"
    return LABELS[owner], ""


def _text_value(value: object) -> list[str]:
    """The answers a JSON value states: a string or number; each element of a list; a letter or text key."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, str | int | float):
        return [str(value)]
    if isinstance(value, list):
        return [text for element in value for text in _text_value(element)]
    if isinstance(value, dict):
        lowered = {key(str(k)): v for k, v in value.items()}
        for name in _INNER_ANSWER_KEYS:
            if isinstance(lowered.get(name), str | int) and not isinstance(lowered.get(name), bool):
                return [str(lowered[name])]
    return []


def _levels(obj: dict) -> list[list[dict]]:
    """The objects inside `obj`, level by level (itself first), through dict values and list elements."""
    levels, level = [], [obj]
    while level:
        levels.append(level)
        children: list[dict] = []
        for holder in level:
            for value in holder.values():
                items = value if isinstance(value, list) else [value]
                children.extend(v for v in items if isinstance(v, dict))
        level = children
    return levels


def _field(holder: dict, keys: tuple[str, ...]) -> object:
    lowered = {key(str(k)): v for k, v in holder.items()}
    return next((lowered[name] for name in keys if name in lowered), None)


def _evidence_value(value: object) -> str | None:
    """The quote a JSON value holds: a string (see `_evidence_text`) or number, a list of them joined."""
    items = value if isinstance(value, list) else [value]
    texts = [_evidence_text(str(v)) for v in items if isinstance(v, str | int | float) and not isinstance(v, bool)]
    return " ".join(t for t in texts if t) or None


def _json_statements(obj: dict, position: int) -> tuple[list[Statement], str | None]:
    """The answers an object states (the shallowest level holding an answer key), and its evidence."""
    levels = _levels(obj)
    evidence = next((e for level in levels for holder in level
                     if (e := _evidence_value(_field(holder, EVIDENCE_KEYS))) is not None), None)
    for level in levels:
        holders = [h for h in level if _field(h, ANSWER_KEYS) is not None]
        if holders:
            statements = []
            for holder in holders:
                own = _evidence_value(_field(holder, EVIDENCE_KEYS)) or evidence
                statements += [Statement(position, v, own, "json") for v in _text_value(_field(holder, ANSWER_KEYS))]
            return statements, evidence
    return [], evidence


# Text statements. Each pattern matches a keyword; the value runs from its end to the next match on the line
# (a `letter` group, where present, is the value). `lead`: what may stand before the keyword in its clause.
_I = re.IGNORECASE
_LETTER = r"(?<![A-Za-z'’])[(（\[【]?\s*+(?P<letter>[A-HＡ-Ｈ])(?![A-Za-z])(?:\s*+[)）\]】])?"
_AHEAD_LETTER = r"(?=\s*+[(（\[【]?\s*+[A-HＡ-Ｈa-h](?![A-Za-z]))"
_ADJECTIVE = (r"(?:final|correct|right|best|true|short|my|our|(?:most\s++)?(?:likely|appropriate|suitable|accurate|"
              r"reasonable|plausible))")
ANSWER_PATTERNS = [  # (pattern, lead rule, tasks)
    (re.compile(r"\b(?:" + _ADJECTIVE + r"\s++)?answer\b(?:\s++to\s++(?:the|this)\s++question)?(?:\s*+\([^()]{0,20}\))?\s*+(?:is\b|would\s++"
                r"be\b|should\s++be\b|must\s++be\b|will\s++be\b|[:：=]|[-–—](?=\s))", _I), "en", "span choice"),
    (re.compile(r"\b(?:" + _ADJECTIVE + r")\s++(?:option|choice|one)\s*+(?:is\b|would\s++be\b|[:：])", _I),
     "en", "choice"),
    (re.compile(r"\bI(?:\s++would|\s++will|'d|’d|'ll)?\s++(?:choose|pick|select|go\s++with)\b", _I), "any", "choice"),
    (re.compile(r"^A\s*+[:：]"), "any", "span"),  # "Q: …  A: …"
    (re.compile(r"(?:答案|回答)(?:选项)?(?:\s*+[(（][^()（）]{0,10}[)）])?\s*+(?:应该|应当|应|可能|还|仍然|仍|依然|确实|的确|就|也)?\s*+(?:是|为|选择|选|[:：]|[】\]])\s*+[:：]?"),
     "zh",
     "span choice"),
    (re.compile(r"(?<![回解])答\s*+[:：]"), "zh", "span choice"),
    (re.compile(r"(?<![回解问])答(?!案)" + _AHEAD_LETTER), "zh", "choice"),  # 所以答C, 故答C
    (re.compile(r"正确(?:的)?(?:选项|答案|选择|的)\s*+(?:应该|应)?\s*+(?:是|为|[:：])\s*+[:：]?"), "zh", "choice"),
    (re.compile(r"我(?:们)?(?:会|应该|最终)?(?:选择|选)\s*+[:：]?"), "zh", "choice"),
    (re.compile(r"(?:选择|选)(?!项)\s*+[:：]?" + _AHEAD_LETTER), "zh", "choice"),
    (re.compile(r"(?i:\b(?:option|choice)\s++)?" + _LETTER + r"\s++(?i:is\s++(?:still\s++|indeed\s++|definitely\s++)?(?:the\s++)?(?:(?:correct|right|best|true)\b"
                r"|answer\b))"), "any", "choice"),
    (re.compile(r"只有(?:选项)?" + _LETTER + r"\s*+(?:项|选项)?\s*+(?:是|为)?\s*+符合(?![吗？?])"), "zh", "choice"),  # 只有C符合原文
    (re.compile(r"(?:选项)?" + _LETTER + r"\s*+(?:项|选项)?\s*+(?:是|为)?\s*+(?:正确|对)(?:的|答案|选项)?(?![吗？?])"), "zh",
     "choice"),
    (re.compile(r"\\boxed\s*+\{(?P<boxed>(?:[^{}]|\{[^{}]*\})*)\}"), "any", "span choice"),
]
EVIDENCE_PATTERN = re.compile(
    r"\b(?:supporting\s++(?:evidence|sentences?|text|quotes?)|evidence|quote\s++from\s++(?:the\s++)?(?:passage|text|"
    r"article)|quotes?|quotation|citation|relevant\s++(?:sentence|text|quote)|source\s++sentence)\b(?:\s*+\([^()]{0,40}\))?"
    r"\s*+(?:is\b\s*+[:：]?|[:：]|[-–—](?=\s))|(?:原文依据|文中原句|相关原文|原文引用|证据句|支持句|证据|依据|原文|引文|原句|出处)\s*+(?:是|为)?\s*+"
    r"(?:[:：]|[】\]]|——?)", _I)
PROSE_QUOTE = re.compile(
    r"\b(?:passage|text|article|story|author)\s++(?:says|states|mentions|notes|reads|writes|tells\s++us)(?:\s++that)?"
    r"\s*+[:,]?\s*+(?=[\"“'‘])|\b(?:from|in)\s++the\s++(?:passage|text|article)\s*+[:：]\s*+(?=[\"“'‘])"
    r"|\bsupported\s++by\s++(?:the\s++)?(?:following\s++)?(?:sentence|passage|text|line)\s*+[:：]?\s*+(?=[\"“'‘])"
    r"|\baccording\s++to\s++the\s++(?:passage|text|article)\s*+[,:：]\s*+(?=[\"“'‘])"
    r"|(?:文中|原文|文章|短文|材料|作者)(?:中)?(?:明确)?(?:提到|说|写道|指出|讲到|表明)(?:了)?\s*+[:：,，]?\s*+(?=[“「\"『])"
    r"|(?:根据|原文|文中)(?:原文|文中|文章)?\s*+(?=[“「\"『])|\b(?:source|see)\s*+[:：]\s*+(?=[\"“'‘])", _I)
HEADING = re.compile(r"(?:final\s+|correct\s+)?answer|(?:最终|正确)?答案", _I)
EVIDENCE_HEADING = re.compile(r"(?:supporting\s+|relevant\s+)?(?:evidence|quotes?|sentences?)|quote\s+from\s+the\s+(?:passage|text)"
                              r"|citation|证据|原文依据|依据|原文|引文|原句|原文引用|引用|出处|相关原文", _I)
BOUNDARY = set(".!?;:,|()[]。！？；：，、【】「」“”\"—–")
EN_LEAD = re.compile(
    r"(?:(?:so|thus|therefore|hence|overall|finally|then|now|clearly|okay|ok|well|yes|no|wait|hmm+|oops|sorry|"
    r"correction|actually|in\s+(?:conclusion|summary|short)|to\s+conclude|i\s+(?:think|believe)|this\s+means|which\s+"
    r"means|that\s+means|it\s+follows\s+that)\s*[,—–-]?\s*)*(?:the|my|our|your)?\s*", _I)
ZH_VETO = re.compile(r"如果|假如|假设|若|是否|不|并非|而非|排除|没有")
SPAN_END = re.compile(
    r"[.!?;](?=\s|$)|[。！？；…]|[,，]\s*(?:as|because|since|which|according|so|given|based|though|although|but|however|"
    r"yet)\b|[,，]\s*(?:因为|由于|根据|所以|因此|故|这|文中|原文|不过|但是?|可是|然而|只是)|\s(?:because|since|according\s+to|as\s+(?:stated|mentioned|"
    r"described|shown))\b|——|\s[—–]\s|[,，]\s*(?:or\s+rather|rather|i\s+mean|或者说)", _I)
# A note in parentheses that closes an answer (`上海（原文：…）`, `B (the passage says "…")`, `1987年（见第二句）`):
# one opened by a note word or holding a quotation, running to the end of the value
NOTE = re.compile(
    r"[（(](?=\s*+(?:原文|证据|依据|出处|见|参见|详见|注|来源|引自|根据|文中|evidence|source|see|quote|according|cf\b|from\s+the)"
    r"|[^()（）]*+[“\"「『])[^()（）]*+[)）]?[\s。.]*+$", _I)
# A quotation's source named before it, with nothing else (`原文第一句“…”`, `the second sentence: "…"`)
SOURCE_NAME = re.compile(r"(?:原文|文中|文章|短文|材料)?中?的?第[一二三四五六七八九十\d]{1,3}[句段](?:话)?(?:中|里)?(?:说|写道|提到)?"
                         r"[:：,，]?|(?:the\s+)?(?:first|second|third|fourth|fifth|last|\w+th)\s+sentence(?:\s+(?:says|reads))?"
                         r"\s*[:,]?", _I)
# Words that frame a field's quote as the passage's (`According to the passage, "…"`, `原文：…`)
FRAME = re.compile(r"passage|text|article|story|paragraph|sentence|author|evidence|quote|according|原文|文中|文章|短文|材料|"
                   r"作者|根据|句|段", _I)
ANSWER_LINE_LEAD = re.compile(r"(?:最终|正确|标准|参考|我的|本题的?)?")  # `最终答案：…` begins a line with its answer
FINAL_WINDOW = 20_000  # characters at the end of reasoning left open looked at for a final statement
GENERIC_LABEL = re.compile(r"[^\W\d_][\w ]{0,30}[:：]|[\u4e00-\u9fff]{1,8}[:：]")  # `Explanation:`, `解析：`
MAYBE_STATED = re.compile(r"answer|option|choice|choose|pick|select|go\s+with|答|选|正确|boxed|^\s*A\s*[:：]", _I)


@dataclass
class _Found:
    """What one reply states: answers in order, and evidence quotes (strong: labelled; weak: introduced)."""

    statements: list[Statement]
    quotes: list[tuple[int, str]]
    weak_quotes: list[tuple[int, str]]
    labels: list[tuple[int, str]]  # lines that are an option label or text on their own
    retractions: list[tuple[int, str]] = field(default_factory=list)  # where the reply takes an answer back
    corrections: list[Statement] = field(default_factory=list)  # answers a correction states (`actually C`)


# Self-correction. A retraction takes back what was stated before it: an interjection or admission at a clause's
# start (`Wait,`, `Hmm,`, `Oops`, `Scratch that`, `Let me re-check`, `等等，`, `不对`, `我再核对一下`); a correction after
# one states the answer it commits to (`actually C`, `I mean near Rotterdam`, `应该是D`). The last answer stated is
# taken only when no retraction follows it: an answer taken back with none after it is refused.
_FILLER = (r"(?:(?:oh|ah|um+|uh+|well|okay|ok|so|but|though|no|嗯+|哦+|啊+|呃+|唔+|噢+|哎+|诶+|但是?|不过|可是|只是|然而)"
           r"\s*+[,，.。!！…]*+\s*+)*+")
RETRACTION = re.compile(
    r"(?:wait|hold\s++on|hmm++|oops|sorry|actually|correction|no\s++wait|never\s*+mind|(?:or\s++)?rather)"
    r"(?=\s*+[,，.。!！…:：;；—–-])"
    r"|(?:scratch\s++that|on\s++second\s++thought|my\s++mistake|i\s++mean[t]?|i\s++(?:was|am)\s++wrong|i\s++made\s++a\s++"
    r"mistake|i\s++misread|let\s++me\s++(?:re-?(?:check|read|consider|think|examine|evaluate)|double[-\s]?check|check\s++"
    r"again|look\s++again|think\s++again|verify)|i\s++(?:need|should|have)\s++to\s++(?:re-?check|look\s++again|check\s++"
    r"again|double[-\s]?check|reconsider)|i(?:'?m|\s++am)\s++(?:not\s++(?:(?:so|too|very|entirely|really|quite|"
    r"completely|100%)\s++)?(?:sure|certain|confident)|unsure))\b"
    r"|(?:等等|等一下|等一等|且慢|不对|错了|我错了|搞错|看错|选错|答错|抱歉|哦不|再看一遍|再看一下|再想想|再读一遍|重新看|重新读|"
    r"重新检查|重新考虑|(?:让我|我)再(?:看|想|读|检查|核对|确认|核实)|好像不(?:太)?对|不太对|我?(?:并|还)?不(?:太|是很|敢)?"
    r"(?:确定|肯定)|我?没(?:有)?(?:把握|信心)|拿不准|不(?=\s*+[，,！!])|(?:其实|实际上)(?=\s*+(?:是|应该|应|答案|选))|或者说|(?:更)?(?:确切|准确)(?:地)?说)(?!的)", _I)
# A doubt anywhere in a clause after an answer (`I have doubts about this answer`, `that is probably wrong`,
# `我对这个答案有些怀疑`, `不过这大概是错的`, `Answer: C (uncertain)`): a retraction too, said in too many words for a
# list of phrases, so any word of error or uncertainty counts; except, for a choice, in a clause that names an option
# (`Option A is wrong`, `其他选项都是错误的`, `A项不对`), which judges the option, not the answer
DOUBT = re.compile(
    r"\b(?:wrong|incorrect|mistakes?|mistaken|misread|misunderstood|doubts?|doubtful|unsure|uncertain|questionable|dubious"
    r"|not\s++(?:\w++\s++)?(?:sure|certain|confident|right|correct)|(?:low|little|no)\s++confidence|confidence\s++"
    r"(?:\w++\s++){0,3}?(?:is\s++)?low|can'?t\s++be\s++right|cannot\s++be\s++right|reconsider|(?:doesn'?t|does\s++not|"
    r"don'?t)\s++(?:\w++\s++)?(?:right|correct))\b"
    r"|(?<![没不无])错|(?<![无])误|不(?:太|大|一定)?(?:对|确定|肯定|准|可能)|怀疑|疑|把握|拿不准|有问题|信心不足|没(?:有)?信心|未必"
    r"|恐怕", _I)
OPTION_MENTION = re.compile(r"(?<![A-Za-z])[A-HＡ-Ｈ](?![A-Za-z'’])|\b(?i:options?|choices?|distractors?)\b|选项|项")
CLAUSE_STOP = re.compile(r"[.!?;,。！？；，…—()（）\n]")
# a retraction at a clause's start: after the line's start or a stop, and fillers (`oh,`, `嗯，`)
RETRACTION_AT = re.compile(r"(?:^|(?<=[.!?;:,|()\[\]。！？；：，、【】「」“”\"—–…]))\s*+" + _FILLER + r"(?P<word>"
                           + RETRACTION.pattern + ")", _I)
_CORRECTED_LETTER = (r"(?:actually|rather|instead|correction\s*+[:：]|it'?s|it\s++is|it\s++should\s++be|(?:that\s++)?should\s++be|must\s++be|"
                     r"make\s++(?:it|that)|i\s++mean[t]?|(?:change|switch)\s++(?:it\s++|that\s++|my\s++answer\s++)?to|"
                     r"i'?ll\s++go\s++with)\s*+[:,]?\s*+(?:option\s++)?")
CORRECTIONS = {
    "choice": (re.compile(r"\b(?i:" + _CORRECTED_LETTER + r")" + _LETTER + r"(?![\w'’])(?!\s++[a-z])"),
               re.compile(r"(?:应该|应当|应|其实|实际上|而)?(?:是|(?<![因认以作成])为|选|改选|改为|改成)\s*+[:：]?" + _LETTER
                          + r"(?:项|选项)?")),
    "span": (re.compile(r"\b(?:(?:(?:actually|rather|no|sorry|wait|oops)\s*+[,—–-]?\s*+)*+(?:it'?s|it\s++is|it\s++should\s++"
                       r"be)|i\s++mean[t]?|make\s++that|(?:it|that)\s++should\s++be|correction\s*+[:：]|(?:or\s++)?rather\s*+,)"
                       r"\s*+[:,]?\s*+|不是\s*+[，,]\s*+(?:而)?是|(?:应该|应当|应|其实|实际上)(?:是|为)|而是|"
                       r"改为|改成|更正为", _I),),
}
# a span correction that runs on into prose is no answer (`应该是因为…`, `actually it's about …`)
_PROSE_VALUE = re.compile(r"\s*+(?:because|since|about|that|mentioned|in\s++the\s++passage|因为|由于|根据|原文|文中|这|那|指)",
                          _I)


class _Spans:
    """Spans of a line (quotations, evidence values), merged, to ask whether a position lies inside one: a
    bisect step each."""

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        for start, end in sorted(spans):
            if self.ends and start <= self.ends[-1]:
                self.ends[-1] = max(self.ends[-1], end)
            else:
                self.starts.append(start)
                self.ends.append(end)

    def __contains__(self, at: int) -> bool:
        i = bisect.bisect_right(self.starts, at) - 1
        return i >= 0 and at < self.ends[i]


# Words one of which every retraction or doubt holds: a line holding none is not searched further (one search)
HINT = re.compile(r"wait|hold|hmm|oops|sorry|actually|correction|never|scratch|second|mistake|mean|wrong|misread|"
                  r"misunderstood|let\s++me|to\s++(?:re|look|check|double)|not|unsure|uncertain|doubt|questionable|dubious|"
                  r"confiden|can'?t|cannot|reconsider|rather|等|且慢|不|错|误|抱歉|哦|再|重新|疑|把握|拿不准|问题|信心|未必|恐怕|其实|"
                  r"实际上|或者说|确切|准确", _I)


def _doubts(line: str, task: str) -> list[re.Match[str]]:
    """The doubts of a line (DOUBT), the first of each clause; for a choice, none in a clause naming an option."""
    found: list[re.Match[str]] = []
    stops: list[int] | None = None
    last = -1
    for m in DOUBT.finditer(line):
        stops = stops if stops is not None else [s.start() for s in CLAUSE_STOP.finditer(line)]
        i = bisect.bisect_right(stops, m.start())
        if i == last:
            continue
        last = i
        start, end = stops[i - 1] + 1 if i else 0, stops[i] if i < len(stops) else len(line)
        if not (task == "choice" and OPTION_MENTION.search(line, start, end)):
            found.append(m)
    return found


def _self_corrections(found: _Found, line: str, offset: int, task: str, quoted: list[tuple[int, int]]) -> None:
    """Record the retractions and corrections of a line, outside its quotes (`quoted`: evidence values)."""
    retractions = list(RETRACTION_AT.finditer(line)) + _doubts(line, task) if HINT.search(line) else []
    corrections = [m for pattern in CORRECTIONS[task] for m in pattern.finditer(line)] \
        if retractions or found.retractions else []
    if not retractions and not corrections:
        return
    marks = Quotations(line)
    straight = marks.closers.get('"', [])  # `"…"`: each mark closes the one before it
    inside = _Spans(quoted + list(marks.pairs.items()) + list(zip(straight[::2], straight[1::2], strict=False)))
    for m in retractions:  # recorded where its clause starts, fillers included (`No wait, it's …` corrects there)
        word = m.groupdict().get("word") is not None
        if m.start("word" if word else 0) not in inside:
            found.retractions.append((offset + m.end() - len(m.group().lstrip()), m.group("word" if word else 0)))
    for m in corrections:
        if m.start() in inside or not _lead_ok(line, m.start(), "zh" if not m.group().isascii() else "any"):
            continue
        value = m.group("letter") if m.groupdict().get("letter") else line[m.end():]
        if task == "span" and (_PROSE_VALUE.match(value) or len(_span_answer(value)) > 80):
            continue
        found.corrections.append(Statement(offset + m.start(), value, None, "text"))


def _lead_ok(line: str, start: int, rule: str) -> bool:
    """Whether what stands before a keyword in its clause allows it to state an answer."""
    i = start
    while i > 0 and start - i < 60 and line[i - 1] not in BOUNDARY:
        i -= 1
    prefix = line[i:start].strip()
    if start - i >= 60:
        return False
    if rule == "en":
        return EN_LEAD.fullmatch(prefix) is not None
    if rule == "zh":
        return ZH_VETO.search(prefix) is None
    return True


def _hits(line: str, task: str) -> list[tuple[str, re.Match[str]]]:
    """The keyword matches of a line in order, not overlapping: ("answer" | "evidence", match). Answer
    keywords after an evidence label belong to the quote."""
    found = [(m, "answer") for pattern, rule, tasks in ANSWER_PATTERNS if task in tasks
             for m in pattern.finditer(line) if _lead_ok(line, m.start(), rule)]
    found += [(m, "evidence") for m in EVIDENCE_PATTERN.finditer(line)
              if not m.group().isascii() or _lead_ok(line, m.start(), "en")]
    found.sort(key=lambda hit: (hit[0].start(), -hit[0].end()))
    kept: list[tuple[str, re.Match[str]]] = []
    quoting = False
    for m, kind in found:
        if kept and m.start() < kept[-1][1].end() or quoting and kind == "answer":
            continue
        kept.append((kind, m))
        quoting = quoting or kind == "evidence"
    return kept


# Whether the reply being read cites sentences by number (`expmrc llm --evidence-form ids`): then a number in
# parentheses that leads an evidence item (`(3) It reaches …`) is a citation, kept, never a list marker
_CITING: contextvars.ContextVar[bool] = contextvars.ContextVar("citing", default=False)
CITED_MARK = re.compile(r"[(（]\s*+\d{1,6}\s*+[)）]")


def _unlisted(value: str) -> str:
    """A value without its list marker, unless the reply cites by number and the marker is `(3)`."""
    return value.strip() if _CITING.get() and CITED_MARK.match(value.strip()) else unlisted(value)


def _quote(value: str) -> str:
    """An evidence value without the dress around it: a list marker, and the quote marks it sits in."""
    value = _unlisted(value.strip().lstrip("> ").rstrip(" |"))
    close = OPEN_QUOTES.get(value[:1])
    if close and value.rfind(close) > 0:
        return value[1:value.rfind(close)].strip()
    return _unquoted(value).strip()  # `原文说“…”`: the quotation a framing introduces


def _unquoted(value: str) -> str:
    """A field's quote without the marks around it, only where one quotation is the whole of it (`"…"`, not
    `"Hello," she said.`); a framing before it (`According to the passage, "…"`, `原文：…`) dropped."""
    value = _unlisted(value)
    if (m := EVIDENCE_PATTERN.match(value)) is not None:
        value = value[m.end():].strip()
    marks = Quotations(value)
    opening = next((i for i, char in enumerate(value[:80]) if char in OPEN_QUOTES), -1)
    if opening < 0 or opening and not FRAME.search(value[:opening]):
        return value
    close = marks.close_of(opening)
    framed = not opening or value[:opening].rstrip()[-1:] in ":：,，" or any(
        m.end() == opening for m in PROSE_QUOTE.finditer(value[:opening + 1])) \
        or SOURCE_NAME.fullmatch(value[:opening].strip()) is not None
    if close > opening and framed and not value[close + 1:].strip(" .。,，;；"):
        return value[opening + 1:close].strip()
    return value


def _evidence_text(value: str) -> str:
    """The quote a field (JSON string, element, table cell) holds: its lines or list items, each without
    its list marker, framing and surrounding quote marks, joined by spaces."""
    lines = (line.strip() for line in re.split(r"\n|<br\s*/?>", value.strip()))
    return " ".join(text for line in lines if line and (text := _unquoted(MARKDOWN.sub("", line))))


def _clean(line: str) -> str:
    return MARKDOWN.sub("", line).strip().lstrip("#>*-•· \t").strip()


def _latex(value: str) -> str:
    return re.sub(r"\\(?:text|textbf|mathrm|mathbf)\s*\{([^{}]*)\}", r"\1", value).replace("$", "").strip()


def _without_note(value: str) -> str:
    """An answer without the note in parentheses that closes it (NOTE)."""
    m = NOTE.search(value)
    return value[:m.start()].rstrip() if m and value[:m.start()].strip() else value


def _span_answer(value: str) -> str:
    """A span answer stated in text, without its dress: a leading colon, quotes, LaTeX, a closing note,
    the rest of the sentence (`, because …`, `。`)."""
    value = _without_note(_latex(value.strip().lstrip(":：-–— ").rstrip(" |")))
    inner = Quotations(value).quoted_after(0)
    if inner:
        return inner
    if (m := SPAN_END.search(value)) is not None:
        value = value[:m.start()]
    return _unadorned(value).strip("*\"'“”‘’「」").rstrip("。.").strip()


def _unadorned(value: str) -> str:
    """A stated answer without an adverb before it (`the answer is still B`, `indeed the Swiss Alps`)."""
    return ADVERB.sub("", value.strip())


ADVERB = re.compile(r"^(?:indeed|still|really|definitely|certainly|clearly|simply)\s+", _I)


def _field_answer(value: str) -> str:
    """A span answer given as a field (element, table cell): as written, without markup or surrounding marks."""
    return " ".join(MARKDOWN.sub("", value).split()).strip("\"'“”‘’「」").strip()


def _label(line: str, options: list[str]) -> str | None:
    """The option a line names on its own: its text, or its letter alone or with its own text."""
    text = unicodedata.normalize("NFKC", line).strip()
    folds = _folds(tuple(options))
    folded = fold(text) if len(text) <= 200 else ""
    if not folded:
        return None
    exact = [i for i, f in enumerate(folds) if f == folded]
    if len(exact) == 1:
        return LABELS[exact[0]]
    m = LETTER_PREFIX.fullmatch(text)
    index, _ = _letter_reading(text, folds)
    if m is None or index is None:
        return None
    rest = m.group("rest").strip(SEPARATORS + " ")
    return LABELS[index] if not rest or _owner(rest, folds) == index else None


def _following(lines: list[str], raw: list[str], i: int, block: bool, task: str) -> tuple[str, list[int]]:
    """The value under a heading on line i, and the lines it takes: the next non-empty line, or with
    `block` every line up to a blank one (a list goes on past blank lines between its items); nothing
    when a labelled line comes first."""
    j, used = i + 1, list[int]()
    while j < len(lines) and not lines[j]:
        j += 1
    while j < len(lines):
        if not lines[j]:
            k = j
            while k < len(lines) and not lines[k]:
                k += 1
            if not (block and used and k < len(lines) and is_list_item(raw[used[-1]]) and is_list_item(raw[k])):
                break
            j = k
        hits = _hits(lines[j], task)
        if hits and hits[0][1].start() == 0 or HEADING.fullmatch(_heading(lines[j])) \
                or EVIDENCE_HEADING.fullmatch(_heading(lines[j])):
            break
        used.append(j)
        if not block:
            break
        j += 1
    return " ".join(_quote(lines[k]) for k in used), used


def _heading(line: str) -> str:
    return line.strip().strip("【】[]").rstrip(":：").strip()


def _in_parentheses(line: str, at: int) -> bool:
    """Whether `at` lies inside parentheses opened shortly before it (`答案：X（原文：…）`)."""
    before = line[max(0, at - 30):at]
    opened = max(before.rfind("("), before.rfind("（"))
    return opened >= 0 and opened > max(before.rfind(")"), before.rfind("）"))


def _line_hits(found: _Found, lines: list[str], raw: list[str], i: int, offset: int, task: str,
               options: list[str] | None = None) -> list[int]:
    """Record the statements and quotes of line i (at `offset` in the reply); return the lines a heading used."""
    line, used = lines[i], list[int]()
    hits = _hits(line, task)
    quoted = []  # evidence values and an answer's own words: what they hold takes back nothing (`the wrong train`)
    for n, (kind, m) in enumerate(hits):
        end = hits[n + 1][1].start() if n + 1 < len(hits) else len(line)
        groups = m.groupdict()
        value = groups.get("letter") or _latex(groups.get("boxed") or "") or line[m.end():end].rstrip(" |【[（(—–")
        quoted.append((m.end(), end if kind == "evidence" else _own_end(line, m.end(), end, options)))
        if kind == "evidence" and _in_parentheses(line, m.start()):
            value = re.sub(r"[)）][\s。.]*$", "", value.rstrip())
        if kind == "answer" and n + 1 < len(hits) and hits[n + 1][0] == "answer" \
                and EN_LEAD.fullmatch(value.strip(" :：")) is not None:
            continue  # `Final Answer: The final answer is C`: the next keyword states it
        if n == len(hits) - 1 and BLOCK_SCALAR.fullmatch(line[m.end():].strip()):  # YAML: `evidence: >-` over its lines
            value, used = _block_scalar(raw, i)
        elif not value.strip(" :：") and n == len(hits) - 1:  # a label with its value under it
            value, used = _following(lines, raw, i, kind == "evidence", task)
        if kind == "answer":
            found.statements.append(Statement(offset + m.start(), value, None, "text"))
        elif _quote(value):
            found.quotes.append((offset + m.start(), _quote(value)))
    if not hits and (HEADING.fullmatch(_heading(line)) or EVIDENCE_HEADING.fullmatch(_heading(line))):
        evidence = EVIDENCE_HEADING.fullmatch(_heading(line)) is not None
        value, used = _following(lines, raw, i, evidence, task)
        if value and evidence:
            found.quotes.append((offset, value))
        elif value:
            found.statements.append(Statement(offset, value, None, "text"))
    _self_corrections(found, line, offset, task, quoted)
    return used


# A YAML block scalar's indicator (`|`, `|-`, `>`, `>-`, `>+`, `|2`), a comment allowed after it
BLOCK_SCALAR = re.compile(r"[|>](?:[+-]?[1-9]?|[1-9][+-])(?:\s++#.*)?")


LEADING_LABEL = re.compile(r"[\s:：]*+[(（\[]?[A-HＡ-Ｈa-h](?![A-Za-z])[)）\]]?[.．、:：]?\s*+")


def _own_end(line: str, start: int, end: int, options: list[str] | None) -> int:
    """Where the words of an answer stated at `start` end: an option letter with the option's own text after
    it (`A. Never make mistakes`), else at the sentence's end, a clause that goes on (`, though …`, `, because
    …`) or a note in parentheses, whichever comes first before `end`."""
    label = LEADING_LABEL.match(line, start, end)
    if options is not None and label is not None:
        rest = line[label.end():end].lower()
        own = [len(o.strip()) for o in options if o.strip() and rest.startswith(o.strip().lower())]
        return label.end() + max(own, default=0)
    found = SPAN_END.search(line, start, end)
    stop = found.start() if found else end
    return min((i for i in (line.find("(", start, stop), line.find("（", start, stop)) if i >= 0), default=stop)


def _block_scalar(raw: list[str], i: int) -> tuple[str, list[int]]:
    """The value of a YAML block scalar opened on line i: the lines below indented deeper than line i (blank
    lines among them kept out), joined by spaces; and those lines."""
    indent = len(raw[i]) - len(raw[i].lstrip())
    used = []
    for j in range(i + 1, len(raw)):
        if raw[j].strip():
            if len(raw[j]) - len(raw[j].lstrip()) <= indent:
                break
            used.append(j)
    return " ".join(MARKDOWN.sub("", raw[j]).strip() for j in used), used


@functools.lru_cache(maxsize=1024)
def _role(cell: str) -> str | None:
    """Whether a table cell is a heading naming the answer or the evidence (`Answer`, `**证据**`, `原文依据`)."""
    name = cell.strip().strip("*_`【】[]:：").strip()
    if len(name) > 40:
        return None
    if HEADING.fullmatch(name):
        return "answer"
    return "evidence" if EVIDENCE_HEADING.fullmatch(name) else ROLES.get(key(name))


def _table_row(found: _Found, row: list[str], header: list[str | None] | None,
               position: int) -> tuple[list[str | None] | None, bool]:
    """Record what a table row states: a `| Answer | C |` row its value, a row under an `| Answer | Evidence |`
    header its cells. Returns the header for the rows below and whether the row was read as the table's."""
    if is_separator(row):
        return header, True
    roles = [_role(cell) for cell in row]
    filled = [(role, cell) for role, cell in zip(roles, row, strict=True) if cell]
    if len(filled) >= 2 and filled[0][0] and not any(role for role, _ in filled[1:]):
        header, named = None, {filled[0][0]: filled[1][1]}
    elif any(roles):
        return roles, True
    elif header is not None:
        named = {role: cell for role, cell in zip(header, row) if role and cell}
    else:
        return None, False
    evidence = _evidence_text(named["evidence"]) if "evidence" in named else None
    if evidence:
        found.quotes.append((position, evidence))
    if named.get("answer"):
        found.statements.append(Statement(position, named["answer"], evidence or None, "field"))
    return header, True


def _from_lines(text: str, task: str, options: list[str] | None) -> _Found:
    """Statements, quotes and option labels of the reply's text, line by line (JSON objects and elements
    blanked), table rows read as cells."""
    found = _Found([], [], [], [])
    raw = text.split("\n")
    lines = [_clean(line) for line in raw]
    offset, used, header = 0, set(), None
    for i, line in enumerate(lines):
        row = cells(line)
        table = False
        if row is not None:
            header, table = _table_row(found, row, header, offset)
        else:
            header = None
        if line and i not in used and not table:
            used.update(_line_hits(found, lines, raw, i, offset, task, options))
            marks = None  # built at the first quotation the line introduces
            for m in PROSE_QUOTE.finditer(line):
                marks = marks or Quotations(line)
                if (quoted := marks.quoted_after(m.end())) is not None:
                    found.weak_quotes.append((offset + m.start(), quoted))
            if raw[i].lstrip().startswith(">") and _quote(line):
                found.weak_quotes.append((offset, _quote(line)))
            if options is not None and (label := _label(line, options)) is not None:
                found.labels.append((offset, label))
        offset += len(raw[i]) + 1
    return found


def _masked(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with the given spans blanked (line breaks kept), so their insides are not read as text."""
    pieces, position = [], 0
    for start, end in sorted(spans):
        pieces += [text[position:start], re.sub(r"[^\n]", " ", text[start:end])]
        position = end
    return "".join(pieces) + text[position:]


def _restated(value: str, task: str) -> str | None:
    """What a field's words state as the answer (`The answer is C`, `答案是：上海`), or None if they state none."""
    if not MAYBE_STATED.search(value):
        return None
    said = [s.value for s in _from_lines(value, task, None).statements if s.value.strip(" :：")]
    return said[-1] if said else None


def _answer_of(statement: Statement, options: list[str] | None) -> tuple[str | None, str]:
    """The answer a statement names (a letter for choice), or None and why. A field stated in words is read
    as text; a JSON value or field otherwise as written."""
    value, source = statement.value, statement.source
    if source != "text" and (said := _restated(value, "span" if options is None else "choice")) is not None:
        value, source = said, "text"
    if options is not None:
        return letter_of(_unadorned(_without_note(value).lstrip(" :：")) if source == "text" else value, options)
    answer = {"text": _span_answer, "field": _field_answer}.get(source, str.strip)(value)
    if not answer or PLACEHOLDER.fullmatch(answer):
        return None, "empty answer"
    return answer, ""


def _usable(statements: list[Statement], options: list[str] | None) -> tuple[list[tuple[Statement, str]], str]:
    """Each statement that names an answer, with that answer (a letter for choice); and why the last
    one that did not, did not."""
    usable, why = [], ""
    read: dict[tuple[str, str], tuple[str | None, str]] = {}  # a value stated again is read once
    for statement in sorted(statements, key=lambda s: s.position):
        said = (statement.value, statement.source)
        answer, reason = read[said] if said in read else read.setdefault(said, _answer_of(statement, options))
        if answer is None:
            why = reason
        else:
            usable.append((statement, answer))
    return usable, why


def _evidence(final: Statement | None, found: _Found) -> str:
    """The evidence stated with the final answer (if any), else the last one stated, else the last quotation."""
    if final is not None and final.evidence:
        return final.evidence
    for quotes in (found.quotes, found.weak_quotes):
        if quotes:
            return max(quotes, key=lambda q: q[0])[1]
    return ""


def _tagged(text: str, found: _Found) -> list[tuple[int, int]]:
    """Record the answers and quotes of the reply's XML-style elements; return the spans to blank."""
    read, spans = elements(text, ROLES)
    for element in read:
        if element.role == "answer" and element.content.strip():
            found.statements.append(Statement(element.start, element.content, None, "field"))
        elif element.role == "evidence" and (quote := _evidence_text(element.content)):
            found.quotes.append((element.start, quote))
    return spans


def _read(text: str, options: list[str] | None) -> tuple[_Found, set[int], list[str]]:
    """Everything the reply states: JSON objects first (then blanked), then XML-style elements (then
    blanked), then its lines; the positions of repaired objects; and notes on objects refused."""
    result = scan(text)
    found = _Found([], [], [], [])
    spans, repaired = [], set()
    for obj in result.objects:
        stated, evidence = _json_statements(obj.value, obj.start)
        if stated or evidence is not None or not obj.repaired:
            spans.append((obj.start, obj.end))
        if obj.repaired:
            repaired.add(obj.start)
        found.statements += stated
        if evidence is not None:
            found.quotes.append((obj.start, evidence))
    text = _masked(text, spans)
    if is_html(text):
        text = html_text(text)
    text = _masked(text, _tagged(text, found))
    lines = _from_lines(text, "span" if options is None else "choice", options)
    found.statements += lines.statements
    found.quotes += lines.quotes
    found.weak_quotes, found.labels = lines.weak_quotes, lines.labels
    found.retractions, found.corrections = lines.retractions, lines.corrections
    return found, repaired, result.notes


def _committed(found: _Found) -> list[Statement]:
    """The answers stated, with each correction that follows a retraction of an earlier answer (`Answer: A …
    wait, actually C`); a correction with nothing before it to correct states nothing."""
    first = min((s.position for s in found.statements), default=None)
    if first is None:
        return []
    marks = [at for at, _ in found.retractions if at > first]
    return found.statements + [c for c in found.corrections if marks and marks[0] <= c.position]


def _final_after_reasoning(tail: str, task: str) -> str:
    """The final statement after reasoning left open, or "": a complete JSON object holding an answer, or lines
    of labelled statements (`Answer: …`, `答案：…`, `证据：…`, a heading over its value), that end the reply on
    lines of their own after the reasoning. Only the last FINAL_WINDOW characters are looked at."""
    window = tail[-FINAL_WINDOW:]
    if len(window) < len(tail):
        window = window[window.find("\n") + 1:] if "\n" in window else ""
    return _final_json(window) or _final_lines(window, task)


def _final_json(window: str) -> str:
    """A JSON object (fenced or not) holding an answer, on lines of its own at the end of `window`, after text."""
    body = window.rstrip()
    body = body[:-3].rstrip() if body.endswith("```") else body
    objects = scan(body).objects if body.endswith("}") else []
    if not objects or objects[-1].end != len(body) or not _json_statements(objects[-1].value, 0)[0]:
        return ""
    start = body.rfind("\n", 0, objects[-1].start) + 1
    if body[start:objects[-1].start].strip():
        return ""
    fence = body.rfind("\n", 0, max(start - 1, 0)) + 1
    if body[fence:start].strip().startswith("```"):
        start = fence
    return window[start:] if body[:start].strip() else ""


def _statement_line(raw: list[str], lines: list[str], i: int, task: str) -> str | None:
    """What line i is at the end of reasoning left open: "answer" (it states one at its start), "label" (any
    other labelled line, or what follows a label: a value, list item, block quote, fence or blank), or None
    (prose)."""
    line = lines[i]
    hits = _hits(line, task) if line else []
    if hits and hits[0][0] == "answer" and ANSWER_LINE_LEAD.fullmatch(line[:hits[0][1].start()]) \
            or HEADING.fullmatch(_heading(line)):
        return "answer"
    above = next((lines[k] for k in range(i - 1, -1, -1) if lines[k]), "")
    if not line or hits and hits[0][1].start() == 0 or EVIDENCE_HEADING.fullmatch(_heading(line)) \
            or GENERIC_LABEL.match(line) or is_list_item(raw[i]) or raw[i].lstrip()[:3] in ("```", "---", "***") \
            or raw[i].lstrip().startswith(">") or raw[i][:1] in " \t" or above.endswith((":", "：")) \
            or HEADING.fullmatch(_heading(above)) or EVIDENCE_HEADING.fullmatch(_heading(above)):
        return "label"
    return None


def _final_lines(window: str, task: str) -> str:
    """Statement lines that end `window`, holding an answer, from their first answer or evidence label on;
    reasoning must come before them (a block holding nothing but a statement states nothing after reasoning)."""
    raw = window.split("\n")
    lines = [_clean(line) for line in raw]
    first, answer = len(raw), False
    for i in range(len(raw) - 1, -1, -1):
        kind = _statement_line(raw, lines, i, task)
        if kind is None:
            break
        answer = answer or kind == "answer"
        if lines[i] and (kind == "answer" or _hits(lines[i], task) or EVIDENCE_HEADING.fullmatch(_heading(lines[i]))):
            first = i
    reasoned = any(line.strip() for line in raw[:first])
    return "\n".join(raw[first:]) if answer and reasoned else ""


def parse_reply(reply: str | None, options: list[str] | None = None, *, citing: bool = False) -> Parsed:
    """Answer and evidence of one reply; `options` (choice questions) turns the answer into a letter. With
    `citing` (the reply cites sentences by number) a leading `(3)` of an evidence item is kept as a citation."""
    token = _CITING.set(citing)
    try:
        return _parse(reply, options)
    finally:
        _CITING.reset(token)


def _parse(reply: str | None, options: list[str] | None) -> Parsed:
    """parse_reply's reading."""
    if not reply or not reply.strip():
        return Parsed("", "", "failed", "empty reply")
    text, tail = split_reasoning(reply)
    final_statement = _final_after_reasoning(tail, "span" if options is None else "choice") if tail else ""
    if final_statement:
        text = f"{text}\n\n{final_statement}".strip()
    if not text:
        return Parsed("", "", "failed", "nothing outside the reasoning block (the reply ended while reasoning)")
    found, repaired, notes = _read(text, options)
    usable, why = _usable(_committed(found), options)
    notes = list(dict.fromkeys(notes)) + (["the final statement after reasoning left open is read"]
                                          if final_statement else [])
    if not usable and found.labels and not found.statements:
        letters = list(dict.fromkeys(letter for _, letter in found.labels))
        if len(letters) == 1:
            usable = [(Statement(found.labels[-1][0], letters[0], None, "text"), letters[0])]
            notes.append("the answer is an option named on a line of its own")
        else:
            why = f"lines name options {', '.join(letters)} and no answer is stated"
    taken_back = [word for at, word in found.retractions if usable and at > usable[-1][0].position]
    if taken_back:
        why = f"answer {usable[-1][1][:40]!r} taken back ({taken_back[0]!r}) and no answer stated after it"
        usable = []
    if not usable:
        why = why or "no JSON object with an answer, no answer statement (`Answer:`, `答案：`, `选C`)"
        return Parsed("", _evidence(None, found), "failed", "; ".join([why, *notes]))
    return _outcome(usable, found, repaired, notes, options)


def _outcome(usable: list[tuple[Statement, str]], found: _Found, repaired: set[int], notes: list[str],
             options: list[str] | None) -> Parsed:
    """The final answer of a reply that states one, its evidence, its status and the notes on how it was read."""
    final, answer = usable[-1]
    stated = list(dict.fromkeys(a if options is not None else fold(a) for _, a in usable))
    if len(stated) > 1:
        shown = list(dict.fromkeys(a if options is not None else repr(a[:40]) for _, a in usable))
        notes.insert(0, f"answers stated in turn: {', '.join(shown)}; the last is taken")
    if final.source == "json" and final.position in repaired:
        notes.append("JSON repaired")
    status = "revised" if len(stated) > 1 else "json" if final.source == "json" else "text"
    return Parsed(answer, _evidence(final, found), status, "; ".join(notes))
