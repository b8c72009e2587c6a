"""Grounding free-form quotes (an LLM's evidence and span answers) in their passage: docs/grounding.md.

A quote is tried verbatim, then normalized (the `locate` policies of those names), as given and then
without a framing sentence around it (`The passage says: "..."`, `原文写道：“...”`); then by fuzzy
alignment (the `fuzzy` policy). A quote with an ellipsis (`...`, `…`, `……`) is found piece by piece, in order, and
covers the pieces. Each field gets a status: `exact`, `normalized`, `fuzzy` (with its score) or
`unverified` (found nowhere well enough, or empty), and a located field is replaced by the exact
passage substring.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from expmrc.data.datasets import Dataset, SpanQuestion, passage_of
from expmrc.data.submissions import parse_prediction
from expmrc.errors import ExpmrcError
from expmrc.text.locate import Found, Hint, find, tokens, trim

EXACT, NORMALIZED, FUZZY, UNVERIFIED = "exact", "normalized", "fuzzy", "unverified"
STATUSES = (EXACT, NORMALIZED, FUZZY, UNVERIFIED)
FUZZY_THRESHOLD = 85.0  # the least share (%) of a quote's tokens a fuzzy alignment must match in order
MIN_FUZZY_TOKENS = 3  # shorter texts are located verbatim or normalized only: a fuzzy match of them means little
_STATUS_OF = {"offset": EXACT, "verbatim": EXACT, "normalized": NORMALIZED, "fuzzy": FUZZY}
_ELLIPSIS = re.compile(r"\s*(?:(?:[.。．]\s*){2,}[.。．]|…+)\s*")
_FRAMING_WORDS = re.compile(
    r"passage|text|article|context|paragraph|document|story|evidence|quote|according|says|said|states|stated|"
    r"reads|writes|wrote|mentions|notes|author|answer|support|原文|文章|文中|短文|材料|段落|上文|写道|提到|指出|说|"
    r"根据|证据|依据|表明|显示|可知|中有|一句", re.IGNORECASE)
_OPEN, _CLOSE = "\"“「『‘'«", "\"”」』’'»"
_QUOTED = re.compile(rf"^(?P<pre>[^{_OPEN}]*?)[{_OPEN}](?P<body>.+)[{_CLOSE}](?P<post>[^{_CLOSE}]*)$", re.DOTALL)
_PREFIX = re.compile(r"^(?P<pre>[^:：\n]{1,80})[:：]\s*(?P<body>.+)$", re.DOTALL)
_STOPS = re.compile(r"[\s.,;:!?。，、；：！？]+$")
_EDGES = re.compile(r"^[\W_]+|[\W_]+$")


def unframed(text: str) -> str | None:
    """`text` without a framing sentence before a colon or around a quote, or None when it has none: the framing
    names the passage or the quoting (or, before a quote, ends in a colon or comma), is at most twelve words,
    and nothing but punctuation follows the closing quote."""
    text = text.strip()
    match = _PREFIX.match(text)
    if match and _FRAMING_WORDS.search(match["pre"]):
        return _unquoted(match["body"].strip())
    match = _QUOTED.match(text)
    if match and not tokens(match["post"])[0] and len(tokens(match["pre"])[0]) <= 12:
        pre = match["pre"].strip()
        if _FRAMING_WORDS.search(pre) or pre.endswith((":", "：", ",", "，")):
            return match["body"].strip()
    return None


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


def _locate_pieces(passage: str, pieces: list[str], stage: tuple[str, ...], threshold: float,
                   hint: Hint) -> Found | None:
    """The span covering every piece found in order by the stage's policies, or None: the longest piece
    first, then the pieces before it nearest to it on the left, and the pieces after it on the right."""
    anchor = max(range(len(pieces)), key=lambda i: (len(tokens(pieces[i])[0]), -i))
    found = find(passage, pieces[anchor], stage, hint if len(pieces) == 1 else Hint())
    if found is None or not _accepted(found, pieces[anchor], threshold):
        return None
    located = {anchor: found}
    for i in list(range(anchor - 1, -1, -1)) + list(range(anchor + 1, len(pieces))):
        left = i < anchor
        edge = located[i + 1].start if left else located[i - 1].end
        found = find(passage, pieces[i], stage, Hint(near=edge if left else None),
                     (0, edge) if left else (edge, len(passage)))
        if found is None or not _accepted(found, pieces[i], threshold):
            return None
        located[i] = found
    parts = [located[i] for i in range(len(pieces))]
    start, end = trim(passage, (parts[0].start, parts[-1].end))
    return Found(start, end, max((_STATUS_OF[f.policy] for f in parts), key=STATUSES.index),
                 min(f.score for f in parts))


STAGES = (("offset", "verbatim"), ("normalized",), ("fuzzy",))


def ground_text(passage: str, text: Any, hint: Hint = Hint(), threshold: float = FUZZY_THRESHOLD,
                answer: bool = False) -> Found:
    """Ground one quote: exactly, then normalized, as given (an `answer` without a final stop or enclosing quote
    marks first), then without its framing, then without edge punctuation; then fuzzily, without its framing
    first. A Found whose `policy` is its status (`unverified`: start = end = -1, score the best fuzzy score seen)."""
    text = "" if text is None else str(text).strip()
    if not text or not passage:
        return Found(-1, -1, UNVERIFIED, 0.0)
    first = _STOPS.sub("", _unquoted(text)) if answer else text
    inner = unframed(text)
    candidates = list(dict.fromkeys(c for c in (first, text, inner, _bare(text)) if c))
    fuzzy = list(dict.fromkeys(c for c in (inner, *candidates) if c))
    plan = [(c, stage) for c in candidates for stage in STAGES[:2]] + [(c, STAGES[2]) for c in fuzzy]
    for candidate, stage in plan:
        pieces = _pieces(candidate)
        for option in ([pieces, [candidate]] if len(pieces) > 1 else [[candidate]]):
            found = _locate_pieces(passage, option, stage, threshold, hint)
            if found is not None and found.end > found.start:
                return found
    best = max((f.score for c in candidates if (f := find(passage, c, ("fuzzy",))) is not None), default=0.0)
    return Found(-1, -1, UNVERIFIED, round(best, 3))


def field_record(found: Found) -> dict[str, Any]:
    """The `--details` record of one field: status, start, end (null when unverified) and score."""
    located = found.policy != UNVERIFIED
    return {"status": found.policy, "start": found.start if located else None, "end": found.end if located else None,
            "score": round(float(found.score), 3)}


@dataclass
class Grounded:
    """A grounded submission, one details record per grounded question, and the status counts."""

    submission: dict[str, Any]
    details: list[dict[str, Any]]
    counts: dict[str, int]  # evidence status -> questions
    answer_counts: dict[str, int] = field(default_factory=dict)  # span answers' status -> questions (span subsets)

    @property
    def unverified_rate(self) -> float:
        """The share (0-1) of grounded questions whose evidence is unverified."""
        total = sum(self.counts.values())
        return self.counts.get(UNVERIFIED, 0) / total if total else 0.0


def check_subset(dataset: Dataset, submission: dict[str, Any], source: str = "submission") -> None:
    """Refuse a submission none (or under half) of whose ids are questions of `dataset`: it is for another subset."""
    known = {q.qid for q in dataset.questions}
    matching = sum(qid in known for qid in submission)
    if submission and 2 * matching < len(submission):
        first = next(qid for qid in submission if qid not in known)
        raise ExpmrcError(f"{source}: only {matching} of its {len(submission)} question ids are in {dataset.path} "
                          f"({dataset.subset}; first unknown: {first}); is it a submission for another subset?")


def ground_question(question: Any, entry: dict[str, Any], drop_unverified: bool) -> tuple[dict, dict]:
    """One entry grounded (located fields replaced by passage substrings, offsets added) and its details record."""
    passage = passage_of(question)
    out = {k: v for k, v in entry.items() if k not in ("answer_start", "evidence_start")}
    record: dict[str, Any] = {"id": question.qid}
    answer = None
    if isinstance(question, SpanQuestion):
        answer = ground_text(passage, entry["answer"], Hint(start=entry.get("answer_start")), answer=True)
    evidence = ground_text(passage, entry["evidence"], Hint(start=entry.get("evidence_start"),
                                                            holding=None if answer is None or answer.start < 0
                                                            else answer.span))
    if answer is not None and answer.policy != UNVERIFIED and evidence.policy != UNVERIFIED \
            and not (evidence.start <= answer.start and answer.end <= evidence.end):
        inside = find(passage[evidence.start:evidence.end], passage[answer.start:answer.end], ("verbatim",))
        if inside is not None:
            answer = Found(inside.start + evidence.start, inside.end + evidence.start, answer.policy, answer.score)
    for key, found in (("evidence", evidence), ("answer", answer)):
        if found is None:
            continue
        record[key] = field_record(found)
        if found.policy != UNVERIFIED:
            out[key], out[f"{key}_start"] = passage[found.start:found.end], found.start
        elif drop_unverified:
            out[key] = ""
    return out, record


def ground_submission(dataset: Dataset, submission: dict[str, Any], drop_unverified: bool = False,
                      source: str = "submission") -> Grounded:
    """Ground every prediction of `submission` that names a question of `dataset` (in dataset order); a submission
    for another subset, or an entry the scorer would refuse, is an ExpmrcError naming `source` (and the question)."""
    check_subset(dataset, submission, source)
    grounded: dict[str, Any] = {}
    details: list[dict[str, Any]] = []
    counts = dict.fromkeys(STATUSES, 0)
    answer_counts = dict.fromkeys(STATUSES, 0) if dataset.kind == "span" else {}
    for question in dataset.questions:
        if question.qid not in submission:
            continue
        parse_prediction(source, question.qid, submission[question.qid])  # refuses what the scorer would
        entry, record = ground_question(question, submission[question.qid], drop_unverified)
        grounded[question.qid] = entry
        details.append(record)
        counts[record["evidence"]["status"]] += 1
        if "answer" in record:
            answer_counts[record["answer"]["status"]] += 1
    return Grounded(grounded, details, counts, answer_counts)


