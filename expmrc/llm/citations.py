"""Evidence cited by sentence number (`expmrc llm --evidence-form ids`, the ALCE style).

The prompt shows the passage cut into sentences by the project's splitter (`expmrc.text.sentences`, rule
`refined`, both languages), one a line as `[1] …`, `[2] …`, and the model cites them. Citations are read
from the parsed evidence in the shapes models write: `[3]`, `[3][4]`, `[3, 4]`, `[3-5]`, `【3】`, `[S3]`,
`S3`, `Sentence 3`, `sentences 3 and 4`, `第3句`, `第三句`, `第3、4句`, `句子3`, a JSON list `[3, 4]` and a
bare list (`3, 4`, `(2), (3)`) when the whole evidence is one; else, when the reply gives no evidence at all, from
bracketed citations and sentence mentions in its text (`near Rotterdam [3].`). Citations are stripped from
a span answer. The evidence is the cited sentences' exact passage text, so it is verbatim by construction
(grounding status `exact`); a number that names no sentence (0, negative, fractional, beyond the last) makes
the evidence `unverified` (the sentences it did name are kept); a reply citing nothing is `missing`.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace
from typing import Any

from expmrc.data.datasets import Dataset, Question, SpanQuestion, passage_of
from expmrc.llm.parsing import Parsed, strip_reasoning
from expmrc.text.grounding import EXACT, MISSING, UNVERIFIED, Grounded, Grounding, ground_submission
from expmrc.text.locate import find
from expmrc.text.sentences import Sentence, split_sentences

SENTENCE_RULE = "refined"
SHOWN_INVALID = 20  # numbers naming no sentence kept in a record (the count covers them all)
SHOWN_CHARS = 24  # of each, as written
MAX_DIGITS = 6  # a longer number names no sentence (and is never converted: no int() of 10^5 digits)
# the most items one bracket or mention is read with (a longer one is not read as a citation), which keeps reading
# linear in the reply's length; a reply's whole evidence as a bare list (`3, 4`, a JSON list) has no such bound
MAX_GROUP = 32
_MORE = f"{{0,{MAX_GROUP - 1}}}+"

_NUM = r"(?:-?\d++(?:\.\d++)?|[零〇一二两三四五六七八九十百]++)"
_RANGE = r"\s*+(?:-|–|—|~|～|\bto\b|至|到)\s*+"
_PREFIX = r"(?:(?:sentences?|sent\.?|s|no\.?|#|第|句子|句)\s*+)?"
_ITEM = rf"{_PREFIX}{_NUM}(?:{_RANGE}{_PREFIX}{_NUM})?\s*+句?"
_SEP = r"\s*+(?:,|，|、|;|；|/|&|\band\b|和|及|与|以及|\]\s*+\[)?\s*+"
_LIST = rf"{_ITEM}(?:{_SEP}{_ITEM}){{0,{MAX_GROUP - 1}}}+"
_BRACKETED = rf"\[\s*+(?P<inside>{_LIST})\s*+[.。]?\s*+\]"
_MENTION = (  # a citation outside brackets needs its word: `Sentence 3`, `S3`, `第3句`, `句子3`
    rf"\b(?:sentences?|sent\.)\s*+(?:no\.?\s*+|number\s*+|#\s*+)?\d++(?:(?:{_RANGE}|{_SEP}){_PREFIX}\d++){_MORE}"
    rf"|\bS\d++\b(?:(?:{_RANGE}|{_SEP})S?\d++\b){_MORE}"
    rf"|第\s*+{_NUM}(?:(?:{_RANGE}|{_SEP})第?\s*+{_NUM}){_MORE}\s*+句(?:子|话)?"
    rf"|句子?\s*+\d++(?:(?:{_RANGE}|{_SEP})(?:句子?)?\s*+\d++){_MORE}")
CITATION = re.compile(rf"{_BRACKETED}|{_MENTION}", re.IGNORECASE)
_WRAPPED = rf"[\[(]?\s*+{_ITEM}\s*+[.。]?\s*+[\])]?"  # `3`, `[3]`, `(3)`, `S3`, `第3句`
BARE = re.compile(rf"\s*+{_WRAPPED}(?:{_SEP}{_WRAPPED})*+\s*+[.。]?\s*+", re.IGNORECASE)
_ITEM_PARTS = re.compile(rf"(?P<a>{_NUM})(?:{_RANGE}{_PREFIX}(?P<b>{_NUM}))?", re.IGNORECASE)
_STRIP = re.compile(rf"\s*+(?:{_BRACKETED}|[(]\s*+(?:{_MENTION})\s*+[)])", re.IGNORECASE)
_ZH_NUMERAL = re.compile("(?:(?P<h>[一二两三四五六七八九])百[零〇]?)?(?:(?P<t>[一二两三四五六七八九])?(?P<ten>十))?"
                         "(?P<u>[一二两三四五六七八九])?")
_ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}


@dataclass(frozen=True)
class Citation:
    """What a reply cited: the sentence numbers in range (passage order, once each), the numbers that name no
    sentence as written (the first SHOWN_INVALID) and their count, and where the citations were read."""

    cited: tuple[int, ...] = ()
    invalid: tuple[str, ...] = ()
    invalid_count: int = 0
    source: str = ""  # "evidence", "reply" or "" (none)

    @property
    def status(self) -> str:
        """`unverified` when a number names no sentence, `exact` when every one does, `missing` with none."""
        if self.invalid_count:
            return UNVERIFIED
        return EXACT if self.cited else MISSING


def passage_sentences(passage: str) -> list[Sentence]:
    """The passage's sentences as the prompt numbers them (from 1)."""
    return split_sentences(passage, SENTENCE_RULE)


def numbered(passage: str) -> list[dict[str, Any]]:
    """The `sentences` a template sees: `number` (from 1) and `text` of each."""
    return [{"number": n, "text": s.text} for n, s in enumerate(passage_sentences(passage), 1)]


def sentence_numbers(passage: str, evidence: str) -> list[int]:
    """The numbers of the sentences an evidence text covers (found verbatim or normalized), or [] when it is
    not in the passage: how a solved example cites its evidence."""
    found = find(passage, evidence, ("verbatim", "normalized")) if evidence.strip() else None
    if found is None:
        return []
    return [n for n, s in enumerate(passage_sentences(passage), 1) if s.start < found.end and found.start < s.end]


def _zh_number(text: str) -> int | None:
    """A Chinese numeral below 1000 (`三`, `十二`, `二十`, `一百零五`), or None."""
    m = _ZH_NUMERAL.fullmatch(text)
    if m is None or not text:
        return None
    hundreds, tens, units = (_ZH_DIGITS.get(m.group(g) or "", 0) for g in ("h", "t", "u"))
    if m.group("ten") and not m.group("t"):
        tens = 1  # 十二: twelve
    return 100 * hundreds + 10 * tens + units


def _number(text: str) -> int | None:
    """A cited number as an integer, or None when it cannot name a sentence (fractional, too long)."""
    if text[:1].isdigit() or text.startswith("-"):
        if "." in text or len(text.lstrip("-")) > MAX_DIGITS:
            return None
        return int(text)
    return _zh_number(text)


def _items(group: str, count: int) -> tuple[list[int], list[str]]:
    """The sentence numbers a citation group names (ranges expanded within 1..count), and those naming none."""
    cited: list[int] = []
    invalid: list[str] = []
    for m in _ITEM_PARTS.finditer(group):
        a = _number(m.group("a"))
        b = a if m.group("b") is None else _number(m.group("b"))
        if a is None or b is None or b < a or a < 1 or b > count:
            written = m.group()
            invalid.append(written if len(written) <= SHOWN_CHARS else written[:SHOWN_CHARS] + "…")
        else:
            cited.extend(range(a, b + 1))
    return cited, invalid


def _groups(text: str, whole: bool) -> list[str]:
    """The citation groups of a text: bracketed ones and mentions in order; with `whole`, the text itself when
    it is nothing but a list of numbers (`3, 4`; a JSON list reads so)."""
    if whole and BARE.fullmatch(text) is not None:
        return [text]
    return [m.group("inside") or m.group() for m in CITATION.finditer(text)]


def read_citations(text: str, count: int, whole: bool = True) -> Citation:
    """The citations of `text` against a passage of `count` sentences (see the module docstring)."""
    cited: list[int] = []
    invalid: list[str] = []
    for group in _groups(_folded(text), whole):
        numbers, wrong = _items(group, count)
        cited += numbers
        invalid += wrong
    distinct = tuple(dict.fromkeys(invalid))
    return Citation(tuple(sorted(set(cited))), distinct[:SHOWN_INVALID], len(distinct))


def _folded(text: str) -> str:
    """Full-width brackets, parentheses and digits as ASCII ones (`［３］`, `【3】`, `（第3句）`)."""
    return unicodedata.normalize("NFKC", text).replace("【", "[").replace("】", "]")


def strip_citations(answer: str) -> str:
    """A span answer without the citations written into it (`near Rotterdam [3]`, `上海（第2句）`); the answer as
    given when it holds nothing else, or none."""
    if not CITATION.search(_folded(answer)):
        return answer
    stripped = _STRIP.sub("", _folded(answer)).strip()
    return stripped if stripped else answer


def cite(parsed: Parsed, reply: str | None, question: Question) -> tuple[Parsed, Citation]:
    """A parsed reply of the ids form: the evidence becomes the cited sentences' passage text (a span answer
    loses its citations) and the citation says what was cited; see the module docstring."""
    passage = passage_of(question)
    sentences = passage_sentences(passage)
    citation = replace(read_citations(parsed.evidence, len(sentences)), source="evidence")
    notes = [parsed.note] if parsed.note else []
    if not parsed.evidence.strip() and reply:
        citation = replace(read_citations(strip_reasoning(reply), len(sentences), whole=False), source="reply")
        if citation.cited or citation.invalid_count:
            notes.append("citations read from the reply's text")
    elif parsed.evidence.strip() and not (citation.cited or citation.invalid_count):
        notes.append("evidence given as text, not as sentence numbers")
    if citation.invalid_count:
        notes.append(f"{citation.invalid_count} cited number(s) name no sentence of the {len(sentences)}: "
                      + ", ".join(citation.invalid[:5]))
    if not (citation.cited or citation.invalid_count):
        citation = Citation()
    answer = strip_citations(parsed.answer) if isinstance(question, SpanQuestion) else parsed.answer
    evidence = cited_text(passage, sentences, citation)
    return Parsed(answer, evidence, parsed.status, "; ".join(notes)), citation


def _grounding(sentences: list[Sentence], citation: Citation) -> Grounding:
    """The evidence grounding a citation gives: the cited sentences' spans (each a part when several), exact;
    unverified with a number naming no sentence; missing with none."""
    spans = [sentences[n - 1] for n in citation.cited]
    parts = tuple(Grounding(EXACT, s.start, s.end, 100.0) for s in spans) if len(spans) > 1 else ()
    if citation.status != EXACT:
        return Grounding(citation.status, parts=parts)
    return Grounding(EXACT, spans[0].start, spans[-1].end, 100.0, parts=parts)


def cited_text(passage: str, sentences: list[Sentence], citation: Citation) -> str:
    """The cited sentences' passage text: one substring when they run on, else their texts joined by spaces."""
    spans = [sentences[n - 1] for n in citation.cited]
    if not spans:
        return ""
    parts = tuple(Grounding(EXACT, s.start, s.end) for s in spans)
    return Grounding(EXACT, spans[0].start, spans[-1].end, parts=parts).placed(passage)[0]


def evidence_record(question: Question, citation: Citation) -> dict[str, Any]:
    """The evidence's grounding record (as `expmrc ground --details` writes it) with what was cited."""
    grounding = _grounding(passage_sentences(passage_of(question)), citation)
    return {**grounding.record(), "cited": list(citation.cited), "out_of_range": list(citation.invalid),
            "out_of_range_count": citation.invalid_count}


def ground_cited(dataset: Dataset, submission: dict[str, Any], cited: dict[str, Citation]) -> Grounded:
    """Grounding of an ids-form submission: span answers grounded as any answer is (inside the cited
    sentences first), each evidence by its citation (see `evidence_record`)."""
    by_id = {q.qid: q for q in dataset.questions}
    texts = {qid: [passage_of(by_id[qid])[s.start:s.end] for s in _cited_sentences(by_id[qid], cited.get(qid))]
             for qid in submission if qid in by_id}
    result = ground_submission(dataset, {qid: {**entry, "evidence": texts.get(qid) or ""}
                                         for qid, entry in submission.items()})
    counts = dict.fromkeys(result.counts, 0)
    counts[MISSING] = len(dataset.questions) - len(result.details)
    for record in result.details:
        qid = record["id"]
        citation = cited.get(qid, Citation())
        record["evidence"] = evidence_record(by_id[qid], citation)
        counts[citation.status] += 1
        entry = result.submission[qid]
        entry["evidence"] = submission[qid]["evidence"]
        entry.pop("evidence_start", None)
        if citation.status == EXACT and record["evidence"]["start"] is not None and not record["evidence"].get("parts"):
            entry["evidence_start"] = record["evidence"]["start"]
    return Grounded(result.submission, result.details, counts, result.answer_counts)


def _cited_sentences(question: Question, citation: Citation | None) -> list[Sentence]:
    sentences = passage_sentences(passage_of(question))
    return [sentences[n - 1] for n in (citation.cited if citation else ())]


def citation_summary(cited: dict[str, Citation]) -> dict[str, Any]:
    """Over the questions: how many cite only sentences, cite a number naming none, cite nothing; and the mean
    number of sentences cited where any is."""
    citing = [c for c in cited.values() if c.cited]
    return {"questions": len(cited), "cited": sum(c.status == EXACT for c in cited.values()),
            "out_of_range": sum(c.status == UNVERIFIED for c in cited.values()),
            "none": sum(c.status == MISSING for c in cited.values()),
            "mean_sentences": round(sum(len(c.cited) for c in citing) / len(citing), 3) if citing else None}
