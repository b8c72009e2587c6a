"""Reworded and altered quotes split by entailment: is a quote whose words differ from the passage still the
passage's meaning? Grounding (expmrc/text/grounding.py) can only say that words changed; an entailment judge
(the support judges of expmrc/llm/judges.py) reads each `reworded` or `altered` evidence against the passage
text it covers, both ways, and labels it:

- `paraphrase`: each entails the other (the passage text supports the quote, and the quote the passage text);
- `contradicted`: either way the judge finds a contradiction;
- `unsupported`: anything else (the quote adds, drops or changes what the passage text says);
- `unjudged`: no verdict one way or the other (a chat reply without one), counted apart, never in a share.

The shares are over the quotes with a verdict. The check of the judge runs on the same spans, as the support
judge's does: the passage span with itself (which should be a paraphrase), with its negation by a versioned
template (which should not) and with another passage sentence (which should not); when the judge does not
separate the first from the other two by CHECK_GAP points, one warning says its labels cannot be trusted here.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from expmrc import __version__
from expmrc.data.datasets import Dataset, passage_of
from expmrc.scoring.support import CHECK_GAP, CONTRADICTED, SUPPORTED, UNJUDGED, Pair, Verdict
from expmrc.text.grounding import ALTERED, REWORDED, unframed
from expmrc.text.sentences import split_sentences

PARAPHRASE, UNSUPPORTED = "paraphrase", "unsupported"
SPLIT_LABELS = (PARAPHRASE, UNSUPPORTED, CONTRADICTED)  # the labels a share is given of, in this order
SPLIT_STATUSES = (REWORDED, ALTERED)  # the grounding statuses whose quotes are split
CHECKS = ("itself", "negated", "other_sentence")  # the check's pairs: a span with itself, its negation, another
NEGATION_VERSION = 1
NEGATIONS = {"en": "It is not true that {text}", "zh": "“{text}”这个说法是错误的。"}  # {text}: the passage span


def negation_sha256() -> str:
    """The hash of the negation templates, in the signature."""
    return hashlib.sha256(json.dumps([NEGATION_VERSION, NEGATIONS], ensure_ascii=False).encode("utf-8")).hexdigest()


def pair_label(there: Verdict, back: Verdict) -> str:
    """A quote's label from the judge's verdicts on (passage text ⇒ quote) and (quote ⇒ passage text)."""
    labels = (there.label, back.label)
    if CONTRADICTED in labels:
        return CONTRADICTED
    if UNJUDGED in labels:
        return UNJUDGED
    return PARAPHRASE if labels == (SUPPORTED, SUPPORTED) else UNSUPPORTED


def _both(a: str, b: str) -> tuple[Pair, Pair]:
    return Pair(a, b), Pair(b, a)


@dataclass(frozen=True)
class Rewording:
    """One reworded or altered evidence to split: the model's words (its framing left out), the passage text they
    cover, and another passage sentence for the check (None when the passage has none apart from it)."""

    qid: str
    status: str
    quote: str
    passage: str
    other: str | None

    def pairs(self) -> tuple[Pair, Pair]:
        """(passage text ⇒ quote, quote ⇒ passage text)."""
        return _both(self.passage, self.quote)

    def check_pairs(self, language: str) -> dict[str, tuple[Pair, Pair]]:
        """The check's pairs, both ways: the span with itself, with its negation and with another sentence."""
        found = {"itself": _both(self.passage, self.passage),
                 "negated": _both(self.passage, NEGATIONS[language].format(text=self.passage))}
        if self.other is not None:
            found["other_sentence"] = _both(self.passage, self.other)
        return found

    def every_pair(self, language: str) -> list[Pair]:
        return [*self.pairs(), *(p for two in self.check_pairs(language).values() for p in two)]


def covered_text(passage: str, record: dict[str, Any]) -> tuple[str, list[tuple[int, int]]]:
    """The passage text a located grounding record covers, and its spans: its parts' (several sentences or list
    items), joined by a space where they lie apart, else its own."""
    spans = [(int(p["start"]), int(p["end"])) for p in (record.get("parts") or [record])]
    ordered = sorted(spans)
    if all(not passage[a[1]:b[0]].strip() for a, b in zip(ordered, ordered[1:])):
        return passage[ordered[0][0]:max(end for _, end in ordered)], spans
    return " ".join(passage[a:b] for a, b in spans), spans


def sentence_apart(passage: str, spans: Sequence[tuple[int, int]], seed: int, qid: str) -> str | None:
    """A passage sentence overlapping none of `spans`, drawn by `seed` and the question id; None when there is
    none."""
    candidates = [s.text for s in split_sentences(passage)
                  if len(s.text) >= 4 and not any(s.start < end and start < s.end for start, end in spans)]
    return random.Random(f"{seed}:{qid}").choice(candidates) if candidates else None


def rewordings(dataset: Dataset, details: dict[str, dict[str, Any]], texts: dict[str, Any],
               seed: int) -> list[Rewording]:
    """Each question whose evidence grounding (`details`, by question id, as expmrc/text/grounding.py writes it)
    is reworded or altered, with its evidence as the model wrote it (`texts`, by question id), in dataset order."""
    found = []
    for question in dataset.questions:
        record = (details.get(question.qid) or {}).get("evidence") or {}
        if record.get("status") not in SPLIT_STATUSES or question.qid not in texts:
            continue
        passage = passage_of(question)
        covered, spans = covered_text(passage, record)
        value = texts[question.qid]
        text = " ".join(str(v).strip() for v in value if str(v).strip()) if isinstance(value, list) else str(value)
        quote = unframed(passage, text.strip()) or text.strip()
        found.append(Rewording(question.qid, record["status"], quote, covered,
                               sentence_apart(passage, spans, seed, question.qid)))
    return found


def split_pairs(quotes: Sequence[Rewording], language: str) -> list[Pair]:
    """Every distinct pair the split and its check ask about, in first-seen order: a judge judges each once."""
    return list(dict.fromkeys(p for q in quotes for p in q.every_pair(language)))


def split_signature(judge: str, seed: int) -> str:
    """What computed a split, to quote beside it: the judge's identity, the split's rule, the check's negation
    templates (their hash) and draw."""
    return "|".join([f"expmrc:{__version__}", f"judge:{judge}", "split:entailment-both-ways-v1",
                     f"check:negation-v{NEGATION_VERSION}+sha-{negation_sha256()[:12]}+seed-{seed}+gap-{CHECK_GAP:g}"])


# ---------------------------------------------------------------- the figures


def _verdict(verdict: Verdict) -> dict[str, Any]:
    return {k: v for k, v in (("label", verdict.label), ("probability", verdict.probability), ("reply", verdict.reply),
                              ("note", verdict.note)) if v is not None}


@dataclass
class SplitQuote:
    """One quote's label, the verdicts that gave it and its check's labels."""

    rewording: Rewording
    label: str
    there: Verdict
    back: Verdict
    check: dict[str, str]

    def record(self) -> dict[str, Any]:
        """What the quote's grounding details gain (`entailment`)."""
        return {"label": self.label, "quote": self.rewording.quote, "passage": self.rewording.passage,
                "passage_entails_quote": _verdict(self.there), "quote_entails_passage": _verdict(self.back),
                "check": dict(self.check)}


def _counts(labels: Sequence[str]) -> dict[str, int]:
    return {label: sum(x == label for x in labels) for label in (*SPLIT_LABELS, UNJUDGED)}


def _share(labels: Sequence[str], label: str) -> float | None:
    """100 × the share of `label` among the labels with a verdict; None when none has one."""
    given = [x for x in labels if x != UNJUDGED]
    return round(100.0 * sum(x == label for x in given) / len(given), 3) if given else None


@dataclass
class Split:
    """The split of a submission's reworded and altered evidence, with the check of the judge."""

    quotes: list[SplitQuote]
    signature: str

    def summary(self) -> dict[str, Any]:
        """Every figure: counts and shares (over the quotes with a verdict), by grounding status, the check."""
        labels = [q.label for q in self.quotes]
        return {"quotes": len(labels), "verdicts": sum(x != UNJUDGED for x in labels), "counts": _counts(labels),
                "shares": {label: _share(labels, label) for label in SPLIT_LABELS},
                "by_status": {status: _counts([q.label for q in self.quotes if q.rewording.status == status])
                              for status in SPLIT_STATUSES},
                "check": self.check(), "signature": self.signature}

    def check(self) -> dict[str, Any]:
        """The paraphrase share of each check pair kind, the gap between a span with itself and the likelier of
        the other two, and whether it is under CHECK_GAP."""
        kinds = {kind: [q.check[kind] for q in self.quotes if kind in q.check] for kind in CHECKS}
        found: dict[str, Any] = {kind: {"count": len(labels), "paraphrase": _share(labels, PARAPHRASE),
                                        "unjudged": labels.count(UNJUDGED)} for kind, labels in kinds.items()}
        found["negated"]["contradicted"] = _share(kinds["negated"], CONTRADICTED)
        apart = [v for v in (found["negated"]["paraphrase"], found["other_sentence"]["paraphrase"]) if v is not None]
        itself = found["itself"]["paraphrase"]
        gap = None if itself is None or not apart else round(itself - max(apart), 3)
        return {**found, "gap": gap, "min_gap": CHECK_GAP, "warning": gap is not None and gap < CHECK_GAP}

    def records(self) -> dict[str, dict[str, Any]]:
        """Each split question's `entailment` record, by question id."""
        return {q.rewording.qid: q.record() for q in self.quotes}

    def annotate(self, details: dict[str, dict[str, Any]]) -> None:
        """Give each split question's grounding details (by question id) its evidence's `entailment` record."""
        for qid, record in self.records().items():
            details[qid]["evidence"]["entailment"] = record

    def lines(self) -> list[str]:
        """What a run prints beside the verbatim and untrustworthy rates: the shares, and the check's line."""
        s = self.summary()
        head = "entailment of reworded and altered evidence"
        if not s["quotes"]:
            return [f"{head}: none to judge (n = 0)"]
        if not s["verdicts"]:
            note = next((q.there.note or q.back.note for q in self.quotes if q.there.note or q.back.note), None)
            return [f"{head}: no verdict (n = 0) on the {s['quotes']} quotes{f' (first: {note})' if note else ''}"]
        shares = ", ".join(f"{label} {s['shares'][label]:.1f}%" for label in SPLIT_LABELS)
        statuses = "; ".join(f"{status} {sum(c.values())}: " + " / ".join(str(c[k]) for k in SPLIT_LABELS)
                             for status, c in s["by_status"].items() if sum(c.values()))
        unjudged = f"; unjudged {s['counts'][UNJUDGED]}" if s["counts"][UNJUDGED] else ""
        return [f"{head}: {shares} of {s['verdicts']} judged ({statuses}, as {'/'.join(SPLIT_LABELS)}){unjudged}",
                self.check_line()]

    def check_line(self) -> str:
        c = self.check()

        def shown(kind: str) -> str:
            value = c[kind]["paraphrase"]
            return f"{'n/a' if value is None else f'{value:.1f}%'} of {c[kind]['count']}"
        gap = "n/a" if c["gap"] is None else f"{c['gap']:.1f} points"
        return (f"entailment check: paraphrase of a passage span with itself {shown('itself')}, with its negation "
                f"{shown('negated')}, with another passage sentence {shown('other_sentence')} (gap {gap})")

    def warning(self) -> str | None:
        """The one-line warning when the judge does not tell a span's paraphrase from its negation or another
        sentence."""
        c = self.check()
        if not c["warning"]:
            return None
        return (f"the judge does not tell a passage span with itself from its negation or another sentence (gap "
                f"{c['gap']:.1f} points, under {CHECK_GAP:g}): its entailment labels on this data cannot be trusted")


def split_of(quotes: Sequence[Rewording], verdicts: dict[Pair, Verdict], language: str, signature: str) -> Split:
    """The quotes labelled from the judge's verdicts on their pairs (`split_pairs`)."""
    judged = []
    for quote in quotes:
        there, back = (verdicts[p] for p in quote.pairs())
        check = {kind: pair_label(verdicts[a], verdicts[b]) for kind, (a, b) in quote.check_pairs(language).items()}
        judged.append(SplitQuote(quote, pair_label(there, back), there, back, check))
    return Split(judged, signature)
