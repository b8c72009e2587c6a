"""Answer–evidence coupling from a submission alone: is the answer where the evidence is?

ExpMRC scores answer and evidence separately; these figures ask whether the two belong together
(Schuff et al., "F1 is Not Enough", EMNLP 2020). docs/coupling.md has the definitions and why.

Span subsets (`loca`): each answered question's answer is `inside` its evidence, `outside` it,
`straddling` its boundary, or not counted (`empty answer`: no scorer tokens; `not in passage`).
By character offsets when the prediction gives both `answer_start` and `evidence_start`, else by the
scorer's normalized tokens (an offset that does not point at its own text in the passage is ignored, and
a note counts such questions and names the first): inside when the answer's
tokens are a contiguous run of the evidence's, straddling when some occurrence of the answer in the
passage overlaps some occurrence of the evidence without lying within it. A = the counted answers,
LOCA = I / (A + O).

Multiple choice (`lexical-loca`), a lexical stand-in: the passage sentences most similar to the chosen
option (the leaderboard's token F1; all that tie) stand for where the answer lies, and the question
is `inside` when the evidence overlaps one of them; an option sharing no token with any sentence is
not counted. Beside it, whether the evidence is more similar to the chosen option than to every other.

Both split by answer correctness (span: exact match with a gold answer; choice: the right label)
unless some answered question has no gold answer, in which case a note says the split is omitted.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable, Sequence

from expmrc.data.datasets import LABELS, ChoiceQuestion, SpanQuestion
from expmrc.metrics.leaderboard import common_count, exact_match, score_bag, score_tokens
from expmrc.metrics.registry import Metric, Values, register
from expmrc.text.locate import at_offset, occurrences, token_occurrences, trim
from expmrc.text.sentences import split_sentences

INSIDE, OUTSIDE, STRADDLING = "inside", "outside", "straddling"
EMPTY_ANSWER, NOT_IN_PASSAGE = "empty answer", "not in passage"
NO_OPTION, OPTION_NOT_IN_PASSAGE = "no option", "option not in passage"
IGNORED = "offset_ignored"  # a per-question value, only where an offset was ignored: the warning
NO_GOLD = "the split by correct / wrong answers is omitted: {n} answered question(s) have no gold answer"


# --- where a text lies -----------------------------------------------------------------------------


def usable_offset(passage: str, text: str, start: int | None, field: str, qid: str) -> tuple[int | None, str | None]:
    """`start` when it points at `text` in the passage (or is None); else None and the warning that it was ignored."""
    if start is None or at_offset(passage, text, start) is not None:
        return start, None
    return None, (f"question {qid}: `{field}_start` {start} does not point at the {field} in the passage "
                  f"(the passage reads {passage[start:start + len(text)][:40]!r} there)")


def _placed(passage: str, text: str, start: int) -> tuple[int, int]:
    """The span of `text` at its (checked) offset, without whitespace at either end."""
    return trim(passage, (start, start + len(text)))


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def span_location(passage: str, answer: str, evidence: str, answer_start: int | None = None,
                  evidence_start: int | None = None) -> tuple[str, str]:
    """Where the answer lies relative to the evidence, and how that was decided (`offsets`/`containment`).

    Returns one of inside, outside, straddling, `empty answer`, `not in passage` (module docstring).
    """
    if answer_start is not None and evidence_start is not None:
        a = _placed(passage, answer, answer_start)
        e = _placed(passage, evidence, evidence_start)
        if not score_tokens(answer):
            return EMPTY_ANSWER, "offsets"
        if e[0] == e[1] or not _overlap(a, e):
            return OUTSIDE, "offsets"
        return (INSIDE if e[0] <= a[0] and a[1] <= e[1] else STRADDLING), "offsets"
    answer_tokens = score_tokens(answer)
    if not answer_tokens:
        return EMPTY_ANSWER, "containment"
    passage_tokens = score_tokens(passage)
    at = token_occurrences(passage_tokens, answer_tokens)
    if not at:
        return NOT_IN_PASSAGE, "containment"
    evidence_tokens = score_tokens(evidence)
    if token_occurrences(evidence_tokens, answer_tokens):
        return INSIDE, "containment"
    n, m = len(answer_tokens), len(evidence_tokens)
    for j in token_occurrences(passage_tokens, evidence_tokens):
        if any(_overlap((i, i + n), (j, j + m)) for i in at):
            return STRADDLING, "containment"
    return OUTSIDE, "containment"


def evidence_spans(passage: str, evidence: str, evidence_start: int | None) -> list[tuple[int, int]]:
    """The character spans the evidence covers: at `evidence_start` when given (checked by the caller), else
    every verbatim occurrence of the stripped evidence; empty when it is empty or not found verbatim."""
    if evidence_start is not None:
        span = _placed(passage, evidence, evidence_start)
        return [span] if span[0] < span[1] else []
    return occurrences(passage, evidence.strip())


def evidence_sentences(passage: str, evidence: str, evidence_start: int | None) -> set[int]:
    """The indices of the passage sentences the evidence overlaps: by characters when it is found
    verbatim (or given by offset), else where its normalized tokens run across the sentences' tokens."""
    sentences = split_sentences(passage)
    spans = evidence_spans(passage, evidence, evidence_start)
    if spans:
        return {i for i, s in enumerate(sentences) if any(_overlap((s.start, s.end), span) for span in spans)}
    tokens: list[str] = []
    owner: list[int] = []
    for i, s in enumerate(sentences):
        sentence_tokens = score_tokens(s.text)
        tokens += sentence_tokens
        owner += [i] * len(sentence_tokens)
    key = score_tokens(evidence)
    return {owner[k] for j in token_occurrences(tokens, key) for k in range(j, j + len(key))}


def similarity(a: Any, b: Any) -> float:
    """The leaderboard's token F1 of the scorer's normalized tokens of two texts, as 2·common / (|a| + |b|): one
    correctly rounded division of integers, so equal F1s compare equal (ties and "more similar" are exact)."""
    size_a, size_b = len(score_tokens(a)), len(score_tokens(b))
    if not size_a or not size_b:
        return float(size_a == size_b)
    return 2.0 * common_count(score_bag(a), score_bag(b)) / (size_a + size_b)


def most_similar_sentences(passage: str, text: str) -> list[int]:
    """The passage sentences with the highest token F1 to `text` (all that tie); none when that F1 is 0."""
    scores = [similarity(s.text, text) for s in split_sentences(passage)]
    best = max(scores, default=0.0)
    return [i for i, value in enumerate(scores) if value == best] if best > 0 else []


# --- per question ----------------------------------------------------------------------------------


def _span_correct(question: SpanQuestion, answer: Any) -> bool | None:
    if not any(str(a).strip() for a in question.answers):
        return None
    return exact_match(answer, question.answers) == 1.0


def option_index(label: Any, options: Sequence[str]) -> int | None:
    """The index of the option a label letter names, or None (not a one-letter string, or out of range)."""
    index = LABELS.find(label) if isinstance(label, str) and len(label) == 1 else -1
    return index if 0 <= index < len(options) else None


def span_question(question: SpanQuestion, prediction: Any) -> Values:
    """LOCA's per-question values: where the answer lies, how that was decided, correctness, and (only when
    there is one) the warning that an offset was ignored because it does not point at its text."""
    answer, evidence = str(prediction.answer), str(prediction.evidence)
    answer_start, bad_answer = usable_offset(question.context, answer, prediction.answer_start, "answer", question.qid)
    evidence_start, bad_evidence = usable_offset(question.context, evidence, prediction.evidence_start, "evidence",
                                                 question.qid)
    location, how = span_location(question.context, answer, evidence, answer_start, evidence_start)
    values: Values = {"location": location, "located_by": how, "correct": _span_correct(question, prediction.answer)}
    if bad_answer or bad_evidence:
        values[IGNORED] = bad_answer or bad_evidence
    return values


def choice_question(question: ChoiceQuestion, prediction: Any) -> Values:
    """The lexical stand-in's per-question values: is the chosen option's sentence in the evidence, does
    the evidence favor the chosen option over the others, and correctness."""
    correct = None if option_index(question.answer, question.options) is None else prediction.answer == question.answer
    chosen = option_index(prediction.answer, question.options)
    if chosen is None:
        return {"location": NO_OPTION, "evidence_favors_choice": None, "correct": correct}
    evidence = str(prediction.evidence)
    evidence_start, bad = usable_offset(question.passage, evidence, prediction.evidence_start, "evidence",
                                        question.qid)
    near = most_similar_sentences(question.passage, question.options[chosen])
    if not near:
        location = OPTION_NOT_IN_PASSAGE
    else:
        location = INSIDE if evidence_sentences(question.passage, evidence, evidence_start) & set(near) else OUTSIDE
    scores = [similarity(evidence, option) for option in question.options]
    favors = all(scores[chosen] > value for i, value in enumerate(scores) if i != chosen)
    values: Values = {"location": location, "evidence_favors_choice": favors, "correct": correct}
    if bad:
        values[IGNORED] = bad
    return values


# --- over a dataset --------------------------------------------------------------------------------


def loca(locations: Sequence[str]) -> tuple[float | None, float | None, float | None]:
    """LOCA = I / (A + O), I / A and O / A as percentages (None when no answer is counted)."""
    inside, outside = locations.count(INSIDE), locations.count(OUTSIDE)
    counted = inside + outside + locations.count(STRADDLING)
    if counted == 0:
        return None, None, None
    return 100.0 * inside / (counted + outside), 100.0 * inside / counted, 100.0 * outside / counted


def _share(flags: Sequence[bool]) -> float | None:
    return 100.0 * sum(flags) / len(flags) if flags else None


def _split(answered: Sequence[Values]) -> tuple[list[Values], list[Values]] | None:
    """Answered questions with a right and a wrong answer; None when some have no gold answer."""
    if any(v["correct"] is None for v in answered):
        return None
    return [v for v in answered if v["correct"]], [v for v in answered if not v["correct"]]


def span_aggregate(values: Sequence[Values | None]) -> Values:
    """LOCA, the inside/outside shares of the counted answers, the counted share of all questions,
    and LOCA over right and wrong answers."""
    answered = [v for v in values if v is not None]
    located = [v["location"] for v in answered]
    figures: Values = dict(zip(("LOCA", "LOCA_INSIDE", "LOCA_OUTSIDE"), loca(located)))
    counted = sum(where in (INSIDE, OUTSIDE, STRADDLING) for where in located)
    figures["LOCA_COUNTED"] = 100.0 * counted / len(values) if values else None
    split = _split(answered)
    figures["LOCA_CORRECT"], figures["LOCA_WRONG"] = (None, None) if split is None else (
        loca([v["location"] for v in group])[0] for group in split)
    return figures


def choice_aggregate(values: Sequence[Values | None]) -> Values:
    """The lexical LOCA share, the share whose evidence favors the chosen option, the counted share of all
    questions, and both over right and wrong answers."""
    answered = [v for v in values if v is not None]

    def lexical(group: Sequence[Values]) -> float | None:
        return _share([v["location"] == INSIDE for v in group if v["location"] in (INSIDE, OUTSIDE)])

    def favors(group: Sequence[Values]) -> float | None:
        return _share([v["evidence_favors_choice"] for v in group if v["evidence_favors_choice"] is not None])

    counted = sum(v["location"] in (INSIDE, OUTSIDE) for v in answered)
    figures: Values = {"LEX_LOCA": lexical(answered), "EVI_FAVORS_CHOICE": favors(answered),
                       "LEX_LOCA_COUNTED": 100.0 * counted / len(values) if values else None}
    split = _split(answered)
    for name, i in (("CORRECT", 0), ("WRONG", 1)):
        figures[f"LEX_LOCA_{name}"] = None if split is None else lexical(split[i])
        figures[f"EVI_FAVORS_CHOICE_{name}"] = None if split is None else favors(split[i])
    return figures


def _ratios(values: Sequence[Values | None], share: Callable[[Values], tuple[float, float]], name: str,
            counted: Callable[[Values], bool]) -> dict[str, tuple[list[float], list[float]]]:
    """A share as per-question (numerator, denominator), over all answered questions and over right and wrong
    ones (when every answered question has a gold answer), plus the counted share of all questions."""
    answered = [v for v in values if v is not None]
    groups = {"": lambda v: True}
    if _split(answered) is not None:
        groups.update({"_CORRECT": lambda v: bool(v["correct"]), "_WRONG": lambda v: not v["correct"]})
    figures = {}
    for suffix, member in groups.items():
        pairs = [share(v) if v is not None and member(v) else (0.0, 0.0) for v in values]
        figures[name + suffix] = ([a for a, _ in pairs], [b for _, b in pairs])
    figures[name + "_COUNTED"] = ([float(v is not None and counted(v)) for v in values], [1.0] * len(values))
    return figures


def span_parts(values: Sequence[Values | None]) -> dict[str, tuple[list[float], list[float]]]:
    """LOCA's figures as per-question ratios (LOCA = I / (A + O): an outside answer weighs twice below)."""
    def counted(v: Values) -> bool:
        return v["location"] in (INSIDE, OUTSIDE, STRADDLING)

    inside = lambda v: float(v["location"] == INSIDE)  # noqa: E731
    outside = lambda v: float(v["location"] == OUTSIDE)  # noqa: E731
    figures = _ratios(values, lambda v: (inside(v), float(counted(v)) + outside(v)), "LOCA", counted)
    answered = [(inside(v), outside(v), float(counted(v))) if v is not None else (0.0, 0.0, 0.0) for v in values]
    figures["LOCA_INSIDE"] = ([a for a, _, _ in answered], [c for _, _, c in answered])
    figures["LOCA_OUTSIDE"] = ([o for _, o, _ in answered], [c for _, _, c in answered])
    return figures


def choice_parts(values: Sequence[Values | None]) -> dict[str, tuple[list[float], list[float]]]:
    """The lexical LOCA and evidence-favours-choice shares as per-question ratios."""
    def counted(v: Values) -> bool:
        return v["location"] in (INSIDE, OUTSIDE)

    figures = _ratios(values, lambda v: (float(v["location"] == INSIDE), float(counted(v))), "LEX_LOCA", counted)
    favors = _ratios(values, lambda v: (float(v["evidence_favors_choice"] is True),
                                        float(v["evidence_favors_choice"] is not None)), "EVI_FAVORS_CHOICE", counted)
    figures.update({k: v for k, v in favors.items() if not k.endswith("_COUNTED")})
    return figures


def _notes(values: Sequence[Values | None]) -> list[str]:
    answered = [v for v in values if v is not None]
    lines = []
    no_option = sum(v["location"] == NO_OPTION for v in answered)
    if no_option:
        lines.append(f"{no_option} answered question(s) choose a label that names none of their options; "
                     "they are not counted")
    no_gold = sum(v["correct"] is None for v in answered)
    if no_gold:
        lines.append(NO_GOLD.format(n=no_gold))
    ignored = [v[IGNORED] for v in answered if v.get(IGNORED)]
    if ignored:
        lines.append(f"{len(ignored)} answered question(s) give an offset that does not point at its own "
                     f"text; it is ignored and the text placed without it (first: {ignored[0]})")
    return lines


LOCA = register(Metric(
    name="loca",
    summary="LOCA: is the answer inside its evidence, split by right/wrong (docs/coupling.md)",
    tasks=("span",),
    keys=("LOCA", "LOCA_INSIDE", "LOCA_OUTSIDE", "LOCA_COUNTED", "LOCA_CORRECT", "LOCA_WRONG"),
    question=span_question,
    aggregate=span_aggregate,
    notes=_notes,
    parts=span_parts,
))

LEXICAL_LOCA = register(Metric(
    name="lexical-loca",
    summary="a lexical stand-in for LOCA: is the chosen option's sentence in the evidence",
    tasks=("choice",),
    keys=("LEX_LOCA", "EVI_FAVORS_CHOICE", "LEX_LOCA_COUNTED", "LEX_LOCA_CORRECT", "EVI_FAVORS_CHOICE_CORRECT",
          "LEX_LOCA_WRONG", "EVI_FAVORS_CHOICE_WRONG"),
    question=choice_question,
    aggregate=choice_aggregate,
    notes=_notes,
    parts=choice_parts,
))
