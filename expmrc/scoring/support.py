"""Does the evidence support the answer? What `expmrc judge` needs besides the judge itself: the labels, the
statement templates (a question and its answer as one statement, versioned), each question's pair (premise:
the evidence; hypothesis: the statement), the pairs of the check of the judge (the gold evidence, and a
passage sentence apart from it, each with the gold answer), and the figures: the support rate with a
bootstrap interval, by question type and by the evidence's grounding status, and the check's two rates.

The judges (a local NLI model, a chat model) are in expmrc/llm/judges.py; docs/coupling.md explains.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from expmrc import __version__
from expmrc.data.datasets import LABELS as OPTION_LABELS
from expmrc.data.datasets import ChoiceQuestion, Dataset, Question, SpanQuestion, gold_option_text, passage_of
from expmrc.data.submissions import parse_prediction
from expmrc.errors import ExpmrcError
from expmrc.registry import Registry
from expmrc.scoring.scorer import question_type
from expmrc.scoring.stats import Difference, Resampling, order_interval, paired_bootstrap, randomization, resampled_figures
from expmrc.text.locate import find
from expmrc.text.sentences import split_sentences

if TYPE_CHECKING:  # numpy is imported where a rate is resampled: plain scoring, which imports this module, never needs it
    import numpy as np

SUPPORTED, NOT_SUPPORTED, CONTRADICTED = "supported", "not-supported", "contradicted"
NO_EVIDENCE, NO_ANSWER, UNJUDGED = "no-evidence", "no-answer", "unjudged"
VERDICTS = (SUPPORTED, NOT_SUPPORTED, CONTRADICTED, UNJUDGED)  # what judging a pair gives (unjudged: no verdict)
LABELS = (SUPPORTED, NOT_SUPPORTED, CONTRADICTED, NO_EVIDENCE, NO_ANSWER, UNJUDGED)  # a question's label
CHECK_GAP = 30.0  # the check warns when the gold evidence is supported by fewer points more than another sentence
KEY = "SUPPORT"  # the figure's name beside the leaderboard's (evaluate, compare, collect)


@dataclass(frozen=True)
class StatementTemplate:
    """How a question and an answer become one statement: a cloze question (one with a blank) gets the answer in
    its blank, any other question is followed by `text`'s sentence naming the answer."""

    name: str
    version: int
    language: str
    text: str  # with {question} and {answer}
    blank: str  # a regular expression matching a question's blank

    @property
    def sha256(self) -> str:
        """Hash of everything that shapes the statements, in the signature."""
        text = json.dumps([self.name, self.version, self.language, self.text, self.blank], ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def statement(self, question: str, answer: str) -> str:
        """The statement that `answer` answers `question`."""
        question, answer = " ".join(question.split()), " ".join(answer.split()).rstrip(" .。．")
        if re.search(self.blank, question):
            return re.sub(self.blank, lambda _: answer, question, count=1)
        return self.text.format(question=question, answer=answer)


STATEMENTS: Registry[StatementTemplate] = Registry.of("statement template", {
    "statement-en-v1": StatementTemplate("statement-en-v1", 1, "en", "{question} The answer is: {answer}.",
                                         r"(?<![A-Za-z0-9])_+(?![A-Za-z0-9])"),
    "statement-zh-v1": StatementTemplate("statement-zh-v1", 1, "zh", "{question}答案是：{answer}。",
                                         r"_+|＿+|（\s*）|\(\s*\)"),
})


def choose_statement(name: str | None, language: str) -> StatementTemplate:
    """The template named (it must be of the dataset's language), else the newest one of the language."""
    if name is None:
        return max((t for t in STATEMENTS.values() if t.language == language), key=lambda t: t.version)
    template = STATEMENTS.lookup(name, "--statement: ")
    if template.language != language:
        raise ExpmrcError(f"--statement {name} is for {template.language} questions, this dataset is {language}")
    return template


@dataclass(frozen=True)
class Pair:
    """What a judge judges: does the premise (evidence) support the hypothesis (the statement)?"""

    premise: str
    hypothesis: str


@dataclass(frozen=True)
class Verdict:
    """A judge's verdict on one pair (VERDICTS), with the entailment probability (an NLI judge) or the reply (a
    chat judge), and why there is none (`unjudged`)."""

    label: str
    probability: float | None = None
    reply: str | None = None
    note: str | None = None


@dataclass
class Case:
    """One question to judge: its pair, or the label it has without a judge (no evidence, no answer)."""

    qid: str
    type: str
    pair: Pair | None
    label: str | None = None
    grounding: str | None = None  # the evidence's grounding status (expmrc.text.grounding.STATUSES)


def chosen_text(question: Question, answer: Any) -> str | None:
    """The answer a statement states: a span answer's text, a choice answer's option text; None when there is none
    (an empty answer, a label naming no option)."""
    if isinstance(question, ChoiceQuestion):
        index = OPTION_LABELS.find(answer) if isinstance(answer, str) and len(answer) == 1 else -1
        return question.options[index] if 0 <= index < len(question.options) else None
    text = str(answer).strip()
    return text or None


def system_cases(dataset: Dataset, submission: dict[str, Any], template: StatementTemplate,
                 source: str) -> list[Case]:
    """Each question's case, in dataset order: a question without evidence (left out, or empty) is `no-evidence`,
    one without a usable answer `no-answer`; an entry the scorer refuses is one line naming `source`."""
    cases = []
    for question in dataset.questions:
        qtype = question_type(question.question, dataset.language)
        if question.qid not in submission:
            cases.append(Case(question.qid, qtype, None, NO_EVIDENCE))
            continue
        prediction = parse_prediction(source, question.qid, submission[question.qid])
        evidence, answer = str(prediction.evidence).strip(), chosen_text(question, prediction.answer)
        if not evidence:
            cases.append(Case(question.qid, qtype, None, NO_EVIDENCE))
        elif answer is None:
            cases.append(Case(question.qid, qtype, None, NO_ANSWER))
        else:
            cases.append(Case(question.qid, qtype, Pair(evidence, template.statement(question.question, answer))))
    return cases


def gold_answer(question: Question) -> str | None:
    """The gold answer a check statement states: a span question's first answer, a choice question's option."""
    if isinstance(question, SpanQuestion):
        return next((str(a).strip() for a in question.answers if str(a).strip()), None)
    return gold_option_text(question)


def other_sentence(question: Question, seed: int) -> str | None:
    """A passage sentence apart from the gold evidence, drawn by `seed` and the question id: it does not overlap
    where a gold evidence lies, holds no gold evidence, lies inside none, and (span questions) does not hold the
    gold answer; None when the passage has no such sentence."""
    passage = passage_of(question)
    golds = [str(e).strip() for e in question.evidences or [] if str(e).strip()]
    placed = [found.span for e in golds if (found := find(passage, e, ("verbatim", "normalized"))) is not None]
    answer = (gold_answer(question) or "").lower() if isinstance(question, SpanQuestion) else ""
    candidates = [s.text for s in split_sentences(passage)
                  if len(s.text) >= 4 and not any(s.start < end and start < s.end for start, end in placed)
                  and not any(e in s.text or s.text in e for e in golds)
                  and not (answer and answer in s.text.lower())]
    return random.Random(f"{seed}:{question.qid}").choice(candidates) if candidates else None


def check_cases(dataset: Dataset, template: StatementTemplate, seed: int) -> tuple[list[Case], list[Case]]:
    """The check of the judge: per question with gold evidence and a gold answer, the gold evidence with the gold
    answer (it should be supported), and another passage sentence with the gold answer (it should mostly not)."""
    gold, other = [], []
    for question in dataset.questions:
        answer = gold_answer(question)
        evidence = next((str(e).strip() for e in question.evidences or [] if str(e).strip()), None)
        if answer is None or evidence is None:
            continue
        qtype = question_type(question.question, dataset.language)
        statement = template.statement(question.question, answer)
        gold.append(Case(question.qid, qtype, Pair(evidence, statement)))
        sentence = other_sentence(question, seed)
        if sentence is not None:
            other.append(Case(question.qid, qtype, Pair(sentence, statement)))
    return gold, other


def pairs_of(*groups: Sequence[Case]) -> list[Pair]:
    """Every distinct pair of the cases, in first-seen order: a judge judges each once."""
    return list(dict.fromkeys(c.pair for group in groups for c in group if c.pair is not None))


# ---------------------------------------------------------------- the figures


@dataclass
class Judged:
    """One question's label and what gave it."""

    id: str
    type: str
    label: str
    evidence: str | None = None
    statement: str | None = None
    probability: float | None = None
    reply: str | None = None
    note: str | None = None
    grounding: str | None = None


def judged(cases: Sequence[Case], verdicts: dict[Pair, Verdict]) -> list[Judged]:
    """The cases with their verdicts (a case labelled without a judge keeps its label)."""
    out = []
    for case in cases:
        if case.pair is None:
            out.append(Judged(case.qid, case.type, case.label or NO_EVIDENCE, grounding=case.grounding))
            continue
        verdict = verdicts[case.pair]
        out.append(Judged(case.qid, case.type, verdict.label, case.pair.premise, case.pair.hypothesis,
                          verdict.probability, verdict.reply, verdict.note, case.grounding))
    return out


def _rate(labels: Sequence[str]) -> dict[str, Any]:
    """Count, supported count and the share supported (×100; None of nothing, and None where the judge was asked
    and gave no verdict on any)."""
    supported = sum(label == SUPPORTED for label in labels)
    silent = UNJUDGED in labels and not any(label in (SUPPORTED, NOT_SUPPORTED, CONTRADICTED) for label in labels)
    return {"count": len(labels), "supported": supported,
            "rate": round(100.0 * supported / len(labels), 3) if labels and not silent else None}


@dataclass
class Check:
    """The check of the judge: the gold evidence's and another sentence's labels, per question."""

    gold: list[Judged]
    other: list[Judged]

    def summary(self) -> dict[str, Any]:
        """Both rates, their gap in points, and whether it is below CHECK_GAP (the judge did not separate them)."""
        gold, other = _rate([j.label for j in self.gold]), _rate([j.label for j in self.other])
        gap = None if gold["rate"] is None or other["rate"] is None else round(gold["rate"] - other["rate"], 3)
        return {"gold_evidence": gold, "other_sentence": other, "gap": gap, "min_gap": CHECK_GAP,
                "warning": gap is not None and gap < CHECK_GAP,
                "unjudged": sum(j.label == UNJUDGED for j in self.gold + self.other)}

    def line(self) -> str:
        """The line every run prints."""
        s = self.summary()
        gap = "n/a" if s["gap"] is None else f"{s['gap']:.1f} points"
        return (f"judge check: gold evidence supported {_percent(s['gold_evidence'])} of "
                f"{s['gold_evidence']['count']}, another passage sentence {_percent(s['other_sentence'])} of "
                f"{s['other_sentence']['count']} (gap {gap})")

    def warning(self) -> str | None:
        """The one-line warning when the judge does not separate the gold evidence from another sentence."""
        s = self.summary()
        if not s["warning"]:
            return None
        return (f"the judge does not separate the gold evidence from another passage sentence (gap {s['gap']:.1f} "
                f"points, under {CHECK_GAP:g}): its labels on this data cannot be trusted")


@dataclass
class Support:
    """The judge's labels of one submission on one dataset, the check of the judge, and the figures."""

    subset: str
    dataset_path: str
    predictions_path: str
    questions: list[Judged]
    check: Check
    settings: Resampling = field(default_factory=Resampling)
    signature: str = ""
    statement: StatementTemplate | None = None
    predictions_sha256: str | None = None  # the fingerprint of the file judged (`expmrc judge`), in its details

    @property
    def total(self) -> int:
        return len(self.questions)

    @property
    def asked(self) -> int:
        """The questions the judge was asked about (with evidence and an answer)."""
        return sum(j.label not in (NO_EVIDENCE, NO_ANSWER) for j in self.questions)

    @property
    def verdicts(self) -> int:
        """The questions the judge gave a verdict on (supported, not supported or contradicted)."""
        return sum(j.label in (SUPPORTED, NOT_SUPPORTED, CONTRADICTED) for j in self.questions)

    @property
    def no_verdict(self) -> bool:
        """Whether the judge was asked about some questions and gave a verdict on none: then there is no rate."""
        return self.asked > 0 and self.verdicts == 0

    def no_verdict_line(self) -> str:
        """Why there is no rate: the questions asked about, and the first reason given (a chat reply's)."""
        note = next((j.note for j in self.questions if j.label == UNJUDGED and j.note), None)
        return (f"{self.predictions_path}: the judge gave no verdict on any of the {self.asked} questions it was "
                f"asked about ({self.subset}){f'; first: {note}' if note else ''}; no support rate")

    def vector(self) -> np.ndarray:
        """1 where a question's evidence was judged to support its answer, else 0, in dataset order."""
        import numpy as np

        return np.array([float(j.label == SUPPORTED) for j in self.questions])

    def parts(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The support rate as per-question ratios, for expmrc.scoring.stats."""
        import numpy as np

        return {KEY: (self.vector(), np.ones(self.total))}

    def rate(self) -> float | None:
        """100 × supported / questions (a question without evidence or answer counts as not supported); None when
        the judge gave no verdict (`no_verdict`)."""
        return None if self.no_verdict else 100.0 * float(sum(self.vector().tolist())) / self.total

    def interval(self) -> tuple[float, float] | None:
        if self.no_verdict:
            return None
        figures = resampled_figures(self.parts(), self.total, self.settings)
        return order_interval(figures[KEY], self.settings.confidence)

    def summary(self) -> dict[str, Any]:
        """Every figure: the rate and its interval, label counts, by question type, by grounding status, the check."""
        ci = self.interval()
        by_type: dict[str, list[str]] = {}
        for j in self.questions:
            by_type.setdefault(j.type, []).append(j.label)
        rate = self.rate()
        return {"subset": self.subset, "dataset": self.dataset_path, "predictions": self.predictions_path,
                **({"predictions_sha256": self.predictions_sha256} if self.predictions_sha256 else {}),
                "questions": self.total, "asked": self.asked, "verdicts": self.verdicts,
                "rate": None if rate is None else round(rate, 3),
                "ci": None if ci is None else [round(ci[0], 3), round(ci[1], 3)], "resampling": self.settings.as_dict(),
                "labels": {label: sum(j.label == label for j in self.questions) for label in LABELS},
                "by_type": {name: _rate(labels) for name, labels in sorted(by_type.items(),
                                                                           key=lambda kv: (-len(kv[1]), kv[0]))},
                "by_grounding": self.by_grounding(), "check": self.check.summary(), "signature": self.signature}

    def by_grounding(self) -> dict[str, Any]:
        """The rate among questions of each grounding status of the evidence, in the order grounding lists them."""
        from expmrc.text.grounding import STATUSES

        groups = {status: [j.label for j in self.questions if j.grounding == status] for status in STATUSES}
        return {status: _rate(labels) for status, labels in groups.items() if labels}

    def details(self) -> list[dict[str, Any]]:
        """One record per question, dataset order, with the check's labels of that question."""
        gold = {j.id: j for j in self.check.gold}
        other = {j.id: j for j in self.check.other}
        records = []
        for j in self.questions:
            check = {}
            if j.id in gold:
                check["gold_evidence"] = {"label": gold[j.id].label, "probability": gold[j.id].probability}
            if j.id in other:
                check["other_sentence"] = {"label": other[j.id].label, "probability": other[j.id].probability,
                                           "sentence": other[j.id].evidence}
            mark = {"predictions": self.predictions_path, "predictions_sha256": self.predictions_sha256} \
                if self.predictions_sha256 else {}
            records.append({**asdict(j), "check": check, **mark})
        return records

    def lines(self) -> list[str]:
        """What a run prints: the rate, the labels, by type and grounding, the check and its warning."""
        s = self.summary()
        ci = "" if s["ci"] is None else (f" [{s['ci'][0]:.1f}, {s['ci'][1]:.1f}] "
                                         f"({100 * self.settings.confidence:g}% bootstrap)")
        figure = "no verdict (n = 0)" if s["rate"] is None else f"{s['rate']:.1f}%{ci}"
        lines = [f"{self.subset} ({self.predictions_path}): support {figure} of {self.total} questions",
                 "  labels: " + ", ".join(f"{k} {v}" for k, v in s["labels"].items() if v)]
        if s["rate"] is None:
            return lines + [f"  {self.no_verdict_line()}", self.check.line()]
        lines.append("  by question type: " + ", ".join(f"{k} {_shown(v)}" for k, v in s["by_type"].items()))
        if s["by_grounding"]:
            lines.append("  by evidence grounding: " + ", ".join(f"{k} {_shown(v)}" for k, v in s["by_grounding"].items()))
        lines.append(self.check.line())
        return lines


def _percent(rate: dict[str, Any]) -> str:
    return "n/a" if rate["rate"] is None else f"{rate['rate']:.1f}%"


def _shown(rate: dict[str, Any]) -> str:
    return f"{rate['rate']:.1f}% of {rate['count']}" if rate["rate"] is not None else "n/a"


def compare_support(base: Support, system: Support, test: str, settings: Resampling, trials: int) -> Difference:
    """Two systems' support rates on the same questions by the same judge: the paired bootstrap's interval of Δ,
    and its p-value or approximate randomization's (as `expmrc compare` tests every score)."""
    if [j.id for j in base.questions] != [j.id for j in system.questions]:
        raise ExpmrcError(f"{base.predictions_path} and {system.predictions_path} were judged on different questions")
    if base.signature != system.signature:
        raise ExpmrcError(f"{base.predictions_path} and {system.predictions_path} were judged differently "
                          f"({base.signature} against {system.signature}); judge both with one judge")
    result = paired_bootstrap(base.parts(), system.parts(), base.total, settings)[KEY]
    if test == "randomization":
        p = randomization(base.parts(), system.parts(), base.total, trials, settings.seed)[KEY]
        result = Difference(result.baseline, result.system, result.ci, p)
    return result


def read_details(path: str, dataset: Dataset) -> dict[str, dict[str, Any]]:
    """A judge's details file (`expmrc judge --details`) by question id; one line naming the file (and the line) for
    a file that is not one, or that does not cover exactly the dataset's questions (a file of another subset)."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ExpmrcError(f"{path}: cannot read the judge's details: {exc}") from None
    found: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not (isinstance(record, dict) and isinstance(record.get("id"), str) and record.get("label") in LABELS):
            raise ExpmrcError(f"{path}: line {number}: not a record of `expmrc judge --details` (an object with an "
                              f"`id` and a `label`, one of {', '.join(LABELS)})")
        found[record["id"]] = record
    known = [q.qid for q in dataset.questions]
    if unknown := [qid for qid in found if qid not in set(known)]:
        raise ExpmrcError(f"{path}: question {unknown[0]} is not in {dataset.path} ({dataset.subset}); the judge's "
                          "details of another dataset?")
    if missing := [qid for qid in known if qid not in found]:
        raise ExpmrcError(f"{path}: covers {len(found)} of the {len(known)} questions of {dataset.path} (first "
                          f"missing: {missing[0]}); judge the whole submission")
    return found


def details_owner(path: str, records: dict[str, dict[str, Any]], predictions: Sequence[str],
                  position: int) -> tuple[int, str | None]:
    """Which of `predictions` (the submissions shown, in order) a judge's details file judged: the one whose sha256
    its records carry (the one at `position` when two are the same file), with no note; a file of another
    submission, or of several, is one line. A file written before details carried the fingerprint is taken for the
    submission at `position`, with the note saying it could not be checked."""
    marks = {record.get("predictions_sha256") for record in records.values()}
    if marks == {None}:
        return position, (f"{path}: written before the judge's details named the submission they judged, so they "
                          f"cannot be checked; shown for {predictions[position]}")
    mark = next(iter(marks))
    if len(marks) != 1 or not isinstance(mark, str) or not re.fullmatch(r"[0-9a-f]{64}", mark):
        raise ExpmrcError(f"{path}: its lines do not name one submission (predictions_sha256): not one run of "
                          "`expmrc judge --details`")
    matches = [k for k, given in enumerate(predictions) if file_sha256(given) == mark]
    if not matches:
        judged = next((r.get("predictions") for r in records.values() if isinstance(r.get("predictions"), str)), None)
        raise ExpmrcError(f"{path}: the judge's details of another submission ({judged or 'a file'} with sha256 "
                          f"{mark[:12]}…), not of {' or '.join(predictions)}; judge the submission shown and give "
                          "its details")
    return (position if position in matches else matches[0]), None


def file_sha256(path: str) -> str:
    """The sha256 of a file's bytes: which predictions a support record judged."""
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError as exc:
        raise ExpmrcError(f"{path}: cannot read: {exc.strerror}") from None


def support_signature(judge: str, template: StatementTemplate, seed: int, settings: Resampling) -> str:
    """What computed a support rate, to quote beside it: the judge's identity, the statement template and its hash,
    the check's draw, the resampling behind the interval."""
    return "|".join([f"expmrc:{__version__}", f"judge:{judge}", f"statement:{template.name}+sha-{template.sha256[:12]}",
                     f"check:seed-{seed}+gap-{CHECK_GAP:g}", settings.describe()])
