"""Turning a model's reply into an answer and an evidence quote, whatever shape the reply takes.

Reasoning blocks (`<think>…</think>`) are dropped first. Then the last JSON object holding an answer is
taken, inside a code fence or amid prose; failing that, labelled lines (`Answer: (C)`, `答案：C`,
`Evidence: …`, `证据：…`). For multiple choice the answer becomes a letter: `C`, `(C)`, `C.`,
`Option C`, `选项C`, or the text of one option. Nothing here raises: a reply that yields no usable answer
gets status `failed` and an empty answer, which the run counts.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass

from expmrc.data.datasets import LABELS

STATUSES = ("json", "text", "failed")  # how the answer was found; `failed`: none was
THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
ANSWER_KEYS = ("answer", "答案", "final_answer", "option", "choice")
EVIDENCE_KEYS = ("evidence", "证据", "quote", "依据", "原文", "supporting_text")
ANSWER_LINE = re.compile(r"(?:\b(?:final\s+answer|answer)\b|答案|应选)\s*(?:(?:is|为|是)\s*[:：]?|[:：])\s*(.+)",
                         re.IGNORECASE)
EVIDENCE_LINE = re.compile(r"(?:evidence|quote|证据|依据|原文)\s*(?:is|为|是)?\s*[:：]\s*(.+)", re.IGNORECASE)
LETTER = re.compile(r"^(?:option|choice|选项|选)?\s*[(（\[]?\s*([A-Z])\s*[)）\]]?(?:\s*(?:项|选项))?(?:$|[\s.．。,，、:：)）])",
                    re.IGNORECASE)


@dataclass(frozen=True)
class Parsed:
    """What a reply yields: the answer (a letter for choice), the evidence, and how they were found."""

    answer: str
    evidence: str
    status: str
    note: str = ""  # why parsing failed, or what was repaired


def strip_reasoning(reply: str) -> str:
    """The reply without reasoning blocks; text after a lone `</think>` (template-opened block) only."""
    text = THINK.sub("", reply)
    if "</think>" in text.lower():
        text = re.split(r"</think>", text, flags=re.IGNORECASE)[-1]
    if re.search(r"<think>", text, re.IGNORECASE):  # opened and never closed: the reply ran out while reasoning
        text = re.split(r"<think>", text, flags=re.IGNORECASE)[0]
    return text.strip()


def _objects(text: str) -> list[dict]:
    """Every JSON object found in `text`, fenced ones first, then any starting at a `{`, in order."""
    decoder = json.JSONDecoder()
    found: list[dict] = []
    for chunk in [m.group(1) for m in FENCE.finditer(text)] + [text]:
        position = chunk.find("{")
        while position != -1:
            try:
                value, end = decoder.raw_decode(chunk, position)
            except ValueError:
                position = chunk.find("{", position + 1)
                continue
            if isinstance(value, dict):
                found.append(value)
            position = chunk.find("{", end)
    return found


def _field(obj: dict, keys: tuple[str, ...]) -> str | None:
    lowered = {str(k).strip().lower(): v for k, v in obj.items()}
    for key in keys:
        value = lowered.get(key)
        if isinstance(value, list):
            value = " ".join(str(v) for v in value)
        if value is not None and not isinstance(value, dict):
            return str(value).strip()
    return None


def _from_json(text: str) -> tuple[str, str] | None:
    for obj in reversed(_objects(text)):
        answer = _field(obj, ANSWER_KEYS)
        if answer is not None:
            return answer, _field(obj, EVIDENCE_KEYS) or ""
    return None


def _unquote(text: str) -> str:
    text = text.strip().rstrip("。.").strip() if len(text) < 4 else text.strip()
    pairs = {'"': '"', "“": "”", "'": "'", "「": "」", "『": "』", "‘": "’"}
    if len(text) >= 2 and pairs.get(text[0]) == text[-1]:
        text = text[1:-1]
    return text.strip().strip("*").strip()


def _from_lines(text: str) -> tuple[str, str] | None:
    answer = evidence = None
    for line in text.splitlines():
        line = line.strip().lstrip("#*-> ").replace("**", "")
        if evidence is None and (m := EVIDENCE_LINE.search(line)):
            evidence = _unquote(m.group(1))
        elif answer is None and (m := ANSWER_LINE.search(line)):
            answer = _unquote(m.group(1)).rstrip("。.").strip()  # the sentence's stop is not the answer's
    return (answer, evidence or "") if answer else None


def _fold(text: str) -> str:
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip().strip("。.").lower()


def choice_letter(answer: str, options: list[str]) -> str | None:
    """The option letter an answer names: a letter in any common dress, or one option's text."""
    m = LETTER.match(unicodedata.normalize("NFKC", answer).strip())
    if m and m.group(1).upper() in LABELS[:len(options)]:
        return m.group(1).upper()
    folded = _fold(answer)
    if not folded:
        return None
    exact = [i for i, option in enumerate(options) if _fold(option) == folded]
    if len(exact) == 1:
        return LABELS[exact[0]]
    containing = [i for i, option in enumerate(options) if _fold(option) and _fold(option) in folded]
    if len(containing) == 1:
        return LABELS[containing[0]]
    return None


def parse_reply(reply: str | None, options: list[str] | None = None) -> Parsed:
    """Answer and evidence of one reply; `options` (choice questions) turns the answer into a letter."""
    if not reply or not reply.strip():
        return Parsed("", "", "failed", "empty reply")
    text = strip_reasoning(reply)
    status, found = "json", _from_json(text)
    if found is None:
        status, found = "text", _from_lines(text)
    if found is None:
        return Parsed("", "", "failed", "no JSON object with an answer and no `Answer:` line")
    answer, evidence = found
    if options is not None:
        letter = choice_letter(answer, options)
        if letter is None:
            return Parsed("", evidence, "failed", f"answer {answer[:60]!r} names no option")
        answer = letter
    if not answer:
        return Parsed("", evidence, "failed", "empty answer")
    return Parsed(answer, evidence, status)
