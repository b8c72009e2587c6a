"""`expmrc report`: one self-contained HTML page showing a submission (or two) against a dataset.

The page holds a summary (the official figures, answer EM, every extra metric's figures, the
signature, scores by question type, the distribution of per-question evidence F1 and the four
quadrants answer right/wrong × evidence good/poor) and every question with its passage, where the
gold evidence, the predicted evidence and the answers are highlighted. Passages are stored once each
as JSON in the page and drawn only when a question is opened, so a full dev set stays light.

Highlights are located in the passage by `expmrc.text.locate`, the module that places training
labels and LOCA too: a given `answer_start`/`evidence_start` when the text is there; else the first
verbatim occurrence (of a predicted answer, one inside its predicted evidence first; of a gold
answer without a usable offset, one inside the first gold evidence found first); else the same
match letting any run of whitespace stand for any other. A text found nowhere is listed as not
found in the passage. Offsets in the page are in
UTF-16 code units, as the page's script counts them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any
from collections.abc import Sequence

from expmrc import __version__
from expmrc.data.datasets import LABELS, Dataset, Question, SpanQuestion, load_dataset, passage_of
from expmrc.data.submissions import Prediction, load_submission, parse_prediction
from expmrc.errors import ExpmrcError, warn
from expmrc.metrics.registry import Metric, select
from expmrc.reports.llm_replies import attach_llm_replies, llm_run
from expmrc.reports.pages import asset, json_value, pyplot, render, svg
from expmrc.scoring.scorer import QuestionScore, Report, no_match_problem, score, signature
from expmrc.scoring.stats import Resampling, compare
from expmrc.scoring.support import details_owner, read_details
from expmrc.text.locate import Hint, find

ANSWER_THRESHOLD = 0.5  # answer right when its score is at least this (multiple choice: 1 right, 0 wrong)
EVIDENCE_THRESHOLD = 0.5  # evidence good when its F1 is at least this
LETTERS = "AB"
SCORE_KEYS = ("answer", "evidence", "overall", "exact")
QUADRANTS = ("right-good", "right-poor", "wrong-good", "wrong-poor", "unanswered")
HISTOGRAM_BINS = 10
BAR_COLOURS = ("#4477aa", "#cc6677")  # A, B; B is hatched as well, for readers who cannot tell the colours apart
BAR_HATCHES = ("", "//")
DECIDING = 10  # the questions with the largest gains and losses of B against A shown under the paired test


@dataclass
class Submission:
    """One submission on the page: a short name, its scores and its parsed predictions."""

    name: str
    report: Report
    predictions: dict[str, Prediction]
    run: str = ""  # the `expmrc llm` run it comes from (model, template, evidence form), if any
    support: dict[str, dict[str, Any]] | None = None  # a judge's labels by question id (`--judge-details`)
    support_source: str | None = None  # the details file they come from

    def support_rate(self) -> float | None:
        """100 × the questions the judge labelled supported / the questions, or None unjudged."""
        if self.support is None:
            return None
        return 100.0 * sum(r["label"] == "supported" for r in self.support.values()) / len(self.support)


def load_submissions(dataset: Dataset, paths: Sequence[str], metrics: list[Metric],
                     names: Sequence[str] | None = None) -> list[Submission]:
    """Score each submission file on `dataset` (leaderboard rules plus `metrics`) and keep its predictions."""
    if not 1 <= len(paths) <= len(LETTERS):
        raise ExpmrcError(f"a report shows one or two submissions, got {len(paths)}")
    if names is not None and len(names) != len(paths):
        raise ExpmrcError(f"--names gives {len(names)} name(s) for {len(paths)} submission(s)")
    submissions = []
    for k, path in enumerate(paths):
        entries = load_submission(path)
        report = score(dataset, entries, path, metrics)
        if problem := no_match_problem(report):
            raise ExpmrcError(problem)
        attach_llm_replies(report, path)  # an `expmrc llm` run's replies, shown per question
        predictions = {q.qid: parse_prediction(path, q.qid, entries[q.qid])
                       for q in dataset.questions if q.qid in entries}
        submissions.append(Submission(names[k] if names else path, report, predictions, llm_run(path)))
    return submissions


def check_threshold(value: float, what: str) -> float:
    """A quadrant threshold must be a finite number in [0, 1]."""
    if not isinstance(value, (int, float)) or not math.isfinite(value) or not 0 <= value <= 1:
        raise ExpmrcError(f"the {what} threshold must be a number from 0 to 1, got {value}")
    return float(value)


def quadrant(answered: bool, answer: float, evidence: float, answer_threshold: float,
             evidence_threshold: float) -> str:
    """Which of the four quadrants a question falls in (or `unanswered`)."""
    if not answered:
        return "unanswered"
    return ("right" if answer >= answer_threshold else "wrong") + "-" + (
        "good" if evidence >= evidence_threshold else "poor")


def _evidence_of(report: Report, q: QuestionScore) -> float:
    """A question's evidence F1: set, as the page scores only datasets with gold evidence."""
    if q.evidence is None:
        raise ExpmrcError(f"{report.dataset_path}: question {q.id}: no evidence score; the page needs a dataset "
                          "with gold evidence")
    return q.evidence


def quadrant_counts(report: Report, answer_threshold: float, evidence_threshold: float) -> dict[str, int]:
    """How many questions of `report` fall in each quadrant, in QUADRANTS order."""
    counts = dict.fromkeys(QUADRANTS, 0)
    for q in report.questions:
        counts[quadrant(q.answered, q.answer, _evidence_of(report, q), answer_threshold, evidence_threshold)] += 1
    return counts


# ---------------------------------------------------------------- locating texts in passages

HIGHLIGHT_POLICIES = ("offset", "verbatim", "whitespace")  # expmrc.text.locate, in this order


def highlight(passage: str, text: Any, start: Any = None,
              within: tuple[int, int] | None = None) -> tuple[int, int] | None:
    """Where to highlight `text` in `passage` (character offsets), by the rules in the module docstring, or None.

    `start` is a given offset, used when the text is there; of several occurrences, one inside `within` first.
    """
    text = "" if text is None else str(text)
    if not text.strip():
        return None
    found = find(passage, text, HIGHLIGHT_POLICIES, Hint(start=start, within=within))
    return None if found is None else found.span


def utf16_offsets(text: str) -> list[int] | None:
    """For each character offset of `text`, its offset in UTF-16 code units; None when they are equal."""
    if all(ord(ch) <= 0xFFFF for ch in text):
        return None
    offsets, position = [], 0
    for ch in text:
        offsets.append(position)
        position += 2 if ord(ch) > 0xFFFF else 1
    offsets.append(position)
    return offsets


def _marks(spans: list[tuple[tuple[int, int] | None, str]], units: list[int] | None) -> list[list[Any]]:
    """[start, end, kind] for every located span, once each, in UTF-16 units, sorted."""
    marks = set()
    for where, kind in spans:
        if where is not None and where[1] > where[0]:
            start, end = where if units is None else (units[where[0]], units[where[1]])
            marks.add((start, end, kind))
    return [list(mark) for mark in sorted(marks)]


# ---------------------------------------------------------------- the page's data


def _gold(question: Question, passage: str) -> tuple[dict[str, Any], list[tuple[tuple[int, int] | None, str]]]:
    """The gold texts of a question (each distinct text once) and the spans to highlight for them."""
    evidences = [str(e) for e in question.evidences or []]
    evidence_spans = [highlight(passage, e) for e in evidences]
    spans = [(where, "ge") for where in evidence_spans]
    answers: list[str] = []
    answer_spans: list[tuple[int, int] | None] = []
    label = None
    if isinstance(question, SpanQuestion):
        answers = [str(a) for a in question.answers]
        within = next((span for span in evidence_spans if span is not None), None)
        answer_spans = [highlight(passage, answer, start, within)
                        for answer, start in zip(answers, question.answer_starts)]
        spans += [(where, "ga") for where in answer_spans]
    else:
        label = question.answer
    return {"answers": _distinct(answers, answer_spans), "evidences": _distinct(evidences, evidence_spans),
            "label": label}, spans


def _distinct(texts: list[str], spans: list[tuple[int, int] | None]) -> list[list[Any]]:
    """[text, found in the passage] for each distinct text, in first-seen order (annotators often agree)."""
    found: dict[str, bool] = {}
    for text, where in zip(texts, spans):
        found[text] = found.get(text, False) or where is not None
    return [[text, located] for text, located in found.items()]


def _index(texts: list[list[Any]], text: str | None) -> int | None:
    """Where `text` is among the distinct gold texts, or None."""
    return next((k for k, (t, _) in enumerate(texts) if t == text), None)


def _predicted(question: Question, passage: str, prediction: Prediction | None,
               letter: str) -> tuple[dict[str, Any], list[tuple[tuple[int, int] | None, str]]]:
    """One submission's texts for a question, which of them could not be found, and the spans to highlight."""
    if prediction is None:
        return {"answer": None, "evidence": None, "option": None, "notFound": []}, []
    key = letter.lower()
    evidence = highlight(passage, prediction.evidence, prediction.evidence_start)
    spans = [(evidence, key + "e")]
    not_found = [] if evidence else ["evidence"]
    option = None
    if isinstance(question, SpanQuestion):
        answer = highlight(passage, prediction.answer, prediction.answer_start, evidence)
        spans.append((answer, key + "a"))
        if answer is None:
            not_found.append("answer")
    elif isinstance(prediction.answer, str) and len(prediction.answer) == 1 and prediction.answer in LABELS:
        index = LABELS.index(prediction.answer)
        option = index if index < len(question.options) else None
    return {"answer": str(prediction.answer), "evidence": str(prediction.evidence), "option": option,
            "notFound": not_found}, spans


def _values(submissions: list[Submission], k: int) -> dict[str, Any]:
    """The sortable numbers of question k: each submission's scores and extra values, and B − A."""
    values: dict[str, Any] = {}
    for letter, sub in zip(LETTERS, submissions):
        q = sub.report.questions[k]
        for key in SCORE_KEYS:
            values[f"{letter}:{key}"] = getattr(q, key) if q.answered else 0.0
        for metric in sub.report.metrics:
            for name, value in (q.extra.get(metric.name) or {}).items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    values[f"{letter}:{metric.name}:{name}"] = value
    if len(submissions) == 2:
        for key in SCORE_KEYS:
            values[f"B-A:{key}"] = values[f"B:{key}"] - values[f"A:{key}"]
    return json_value(values)


def _key_label(key: str) -> str:
    letter, rest = key.split(":", 1)
    if letter == "B-A":
        return f"B − A {rest}"
    return f"{letter} {rest.replace(':', ' ')}"


def page_data(dataset: Dataset, submissions: list[Submission], answer_threshold: float,
              evidence_threshold: float) -> dict[str, Any]:
    """Everything the page's script needs, as JSON-ready data: passages once each, then the questions."""
    passages: dict[str, int] = {}
    questions = []
    keys: dict[str, None] = {}
    for k, question in enumerate(dataset.questions):
        passage = passage_of(question)
        index = passages.setdefault(passage, len(passages))
        gold, spans = _gold(question, passage)
        subs = []
        for letter, sub in zip(LETTERS, submissions):
            scored = sub.report.questions[k]
            texts, more = _predicted(question, passage, sub.predictions.get(question.qid), letter)
            spans += more
            judged = (sub.support or {}).get(question.qid)
            texts["support"] = None if judged is None else json_value(
                {k: judged.get(k) for k in ("label", "probability", "reply", "note")})
            subs.append({**texts, "answered": scored.answered, "extra": json_value(scored.extra),
                         "bestAnswer": _index(gold["answers"], scored.best_answer_reference),
                         "bestEvidence": _index(gold["evidences"], scored.best_evidence_reference)})
        values = _values(submissions, k)
        keys.update(dict.fromkeys(values))
        questions.append({
            "id": question.qid, "type": submissions[0].report.questions[k].type, "question": question.question,
            "passage": index, "options": None if isinstance(question, SpanQuestion) else question.options,
            "gold": gold, "subs": subs, "values": values, "marks": _marks(spans, utf16_offsets(passage)),
        })
    return {
        "passages": list(passages),
        "questions": questions,
        "letters": list(LETTERS[:len(submissions)]),
        "names": [sub.name for sub in submissions],
        "keys": [[key, _key_label(key)] for key in keys],
        "thresholds": {"answer": answer_threshold, "evidence": evidence_threshold},
        "quadrants": list(QUADRANTS),
        "kind": dataset.kind,
    }


# ---------------------------------------------------------------- figures

def type_figure(submissions: list[Submission]) -> Any:
    """Answer, evidence and overall by question type: a bar per type (A solid, B hatched), most frequent on top."""
    plt = pyplot()
    tables = [sub.report.by_type() for sub in submissions]
    types = list(tables[0])
    fig, axes = plt.subplots(1, 3, figsize=(9.0, 0.9 + 0.3 * len(types) * len(submissions)), sharey=True)
    height = 0.8 / len(submissions)
    for ax, (key, title) in zip(axes, (("ANS_F1", "answer"), ("EVI_F1", "evidence"), ("ALL_F1", "overall"))):
        for s, (letter, table) in enumerate(zip(LETTERS, tables)):
            y = [t + (s - (len(submissions) - 1) / 2) * height for t in range(len(types))]
            ax.barh(y, [table[name][key] for name in types], height, label=letter, color=BAR_COLOURS[s],
                    hatch=BAR_HATCHES[s], edgecolor="black", linewidth=0.5)
        ax.set_title(title, fontsize=10)
        ax.set_xlim(0, 100)
        ax.tick_params(labelsize=8)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(range(len(types)), [f"{name} ({tables[0][name]['count']})" for name in types])
    axes[0].invert_yaxis()
    axes[1].set_xlabel("mean score (×100)", fontsize=8)
    if len(submissions) > 1:
        axes[-1].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def evidence_histogram(submissions: list[Submission]) -> Any:
    """How many questions have each evidence F1 (10 bins over 0–1; unanswered count as 0)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.6, 2.8))
    width = 0.8 / len(submissions)
    for s, (letter, sub) in enumerate(zip(LETTERS, submissions)):
        counts = [0] * HISTOGRAM_BINS
        for q in sub.report.questions:
            value = _evidence_of(sub.report, q) if q.answered else 0.0
            counts[min(int(value * HISTOGRAM_BINS), HISTOGRAM_BINS - 1)] += 1
        x = [b + 0.5 + (s - (len(submissions) - 1) / 2) * width for b in range(HISTOGRAM_BINS)]
        ax.bar(x, counts, width, label=letter, color=BAR_COLOURS[s], hatch=BAR_HATCHES[s],
               edgecolor="black", linewidth=0.5)
    ax.set_xticks(range(HISTOGRAM_BINS + 1), [f"{b / HISTOGRAM_BINS:.1f}" for b in range(HISTOGRAM_BINS + 1)],
                  fontsize=8)
    ax.set_xlabel("evidence F1 of a question (last bin includes 1.0)")
    ax.set_ylabel("questions")
    ax.grid(axis="y", alpha=0.3)
    if len(submissions) > 1:
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------- the page

def _summary_rows(submissions: list[Submission]) -> tuple[list[str], list[dict[str, Any]]]:
    """The summary table's columns (a submission, and B − A), each with every figure: the leaderboard's four, then
    the extra metrics'."""
    extra_keys: dict[str, None] = {}
    for sub in submissions:
        extra_keys.update(dict.fromkeys(sub.report.extra_figures()))
    rows: list[dict[str, Any]] = []
    for letter, sub in zip(LETTERS, submissions):
        figures: dict[str, Any] = {}
        for key, name in (("ALL_F1", "overall"), ("ANS_F1", "answer"), ("EVI_F1", "evidence"), ("ANS_EM", "exact")):
            figures[key] = sub.report.mean(name)  # printed to 3 decimals, as the leaderboard prints them
        figures.update(json_value(sub.report.extra_figures()))
        if sub.support is not None:
            figures["SUPPORT"] = sub.support_rate()
        rows.append({"label": letter, "name": sub.name, "path": sub.report.prediction_path, "figures": figures,
                     "total": sub.report.total, "skipped": sub.report.skipped,
                     "unknown": len(sub.report.unknown_ids)})
    if len(rows) == 2:
        diff = {}
        for key, a in rows[0]["figures"].items():
            b = rows[1]["figures"].get(key)
            numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
            diff[key] = b - a if numbers else None  # of the figures themselves, as the paired test's Δ
        rows.append({"label": "B − A", "name": "", "path": "", "figures": diff, "total": None, "skipped": None,
                     "unknown": None})
    judged = ["SUPPORT"] if any(sub.support is not None for sub in submissions) else []
    return ["ALL_F1", "ANS_F1", "EVI_F1", "ANS_EM", *[k for k in extra_keys if k not in ("ALL_F1", "ANS_F1",
                                                                                          "EVI_F1", "ANS_EM")],
            *judged], rows


def paired_test(submissions: list[Submission]) -> dict[str, Any] | None:
    """With two submissions: the paired bootstrap of B against A per score (expmrc compare's defaults), and
    the questions that decide the difference, the largest per-question gains and losses in overall score."""
    if len(submissions) != 2:
        return None
    settings = Resampling()
    a, b = (sub.report for sub in submissions)
    rows = [{"key": key, "a": d.baseline, "b": d.system, "delta": d.delta, "ci": d.ci, "p": d.p,
             "significant": d.significant} for key, d in compare(a, b, "bootstrap", settings).items()]
    changes: list[dict[str, Any]] = []
    for qa, qb in zip(a.questions, b.questions):
        before, after = (q.overall if q.answered and q.overall is not None else 0.0 for q in (qa, qb))
        if after != before:
            changes.append({"id": qa.id, "question": qa.question, "a": before, "b": after, "delta": after - before})
    changes.sort(key=lambda c: (-c["delta"], c["id"]))
    gains = [c for c in changes if c["delta"] > 0][:DECIDING]
    losses = sorted((c for c in changes if c["delta"] < 0), key=lambda c: (c["delta"], c["id"]))[:DECIDING]
    return {"rows": rows, "gains": gains, "losses": losses, "resamples": settings.resamples, "seed": settings.seed,
            "confidence": settings.confidence, "changed": len(changes)}


def render_report(dataset: Dataset, submissions: list[Submission], answer_threshold: float = ANSWER_THRESHOLD,
                  evidence_threshold: float = EVIDENCE_THRESHOLD, title: str | None = None) -> str:
    """The whole page as one HTML string: styles, script, data and figures inline, nothing fetched."""
    answer_threshold = check_threshold(answer_threshold, "answer")
    evidence_threshold = check_threshold(evidence_threshold, "evidence")
    data = page_data(dataset, submissions, answer_threshold, evidence_threshold)
    columns, summary = _summary_rows(submissions)
    by_type = [sub.report.by_type() for sub in submissions]
    return render(
        "report.html.j2",
        title=title or f"ExpMRC report: {dataset.subset}, " + " vs ".join(sub.name for sub in submissions),
        version=__version__, dataset=dataset, language=dataset.language,
        signature=signature([sub.report for sub in submissions]),
        submissions=[{"letter": letter, "name": sub.name, "path": sub.report.prediction_path, "run": sub.run}
                     for letter, sub in zip(LETTERS, submissions)],
        columns=columns, summary=summary,
        types=list(by_type[0]), by_type=by_type,
        quadrants=[quadrant_counts(sub.report, answer_threshold, evidence_threshold) for sub in submissions],
        thresholds={"answer": answer_threshold, "evidence": evidence_threshold},
        type_svg=svg(type_figure(submissions), "types"), histogram_svg=svg(evidence_histogram(submissions), "histogram"),
        questions=data["questions"], data=data, css=asset("report.css"), script=asset("report.js"),
        paired=paired_test(submissions),
    )


def build_report(dataset_arg: str, submission_paths: Sequence[str], subset: str | None = None,
                 metric_names: str | None = None, names: Sequence[str] | None = None,
                 answer_threshold: float = ANSWER_THRESHOLD, evidence_threshold: float = EVIDENCE_THRESHOLD,
                 title: str | None = None, judge_details: Sequence[str] = ()) -> tuple[str, list[Submission]]:
    """Load a dataset and one or two submissions, score them and render the page (not written yet).

    `metric_names` chooses the extra metrics as `evaluate --metrics` does (None: the subset's defaults);
    `judge_details`, a judge's details file per submission in order (`expmrc judge --details`), shows each
    question's support label beside its evidence.
    """
    check_threshold(answer_threshold, "answer")
    check_threshold(evidence_threshold, "evidence")
    if len(judge_details) > len(submission_paths):
        raise ExpmrcError(f"--judge-details gives {len(judge_details)} files for {len(submission_paths)} submission(s)")
    dataset = load_dataset(dataset_arg, subset)
    submissions = load_submissions(dataset, submission_paths, select(metric_names, dataset), names)
    attach_judge_details(dataset, submissions, judge_details)
    return render_report(dataset, submissions, answer_threshold, evidence_threshold, title), submissions


def attach_judge_details(dataset: Dataset, submissions: list[Submission], judge_details: Sequence[str]) -> None:
    """Give each details file's labels to the submission it judged (the fingerprint its lines carry; one written
    before they did goes to the submission in its place, with a warning); two files for one submission, or a file
    of another submission, are one line."""
    paths = [sub.report.prediction_path for sub in submissions]
    for position, path in enumerate(judge_details):
        records = read_details(path, dataset)
        owner, note = details_owner(path, records, paths, position)
        if note is not None:
            warn(note)
        sub = submissions[owner]
        if sub.support_source is not None:
            raise ExpmrcError(f"{sub.support_source} and {path} both hold the judge's labels of {paths[owner]}")
        sub.support, sub.support_source = records, path
