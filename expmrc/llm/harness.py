"""ExpMRC as lm-evaluation-harness tasks: the functions the task files in `lm_eval_tasks/` name.

`load_subset` gives lm-eval a subset's dev set (found as `expmrc evaluate` finds it: $EXPMRC_DATA, then
data/) as rows carrying the system and user messages of a registered prompt template, the very messages
`expmrc llm` sends; `process_results` reads one reply as `expmrc llm` does (parsing, the citations of
the ids evidence form's templates, which the `expmrc_ids` tasks pin, grounding) and
scores it with the leaderboard's scorer, so each per-sample figure is the one `expmrc evaluate
--details` gives that question, and `percent` turns them into the same 0-100 figures.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from expmrc.data.datasets import Dataset, load_dataset, passage_of
from expmrc.data.rows import dataset_rows, question_of
from expmrc.llm.chat import SystemPrompt, render, with_system
from expmrc.llm.completion import Reply
from expmrc.llm.prompts import TEMPLATES, choose_template, cited_evidence, reply_json
from expmrc.llm.shots import labelled

TASKS_FOLDER = "lm_eval_tasks"
EXTRA_COLUMNS = ("system", "prompt", "target", "template")  # added to the exported rows for lm-eval


def tasks_path() -> str:
    """The folder of the task files, for lm-eval's --include_path."""
    return str(resources.files("expmrc.llm") / TASKS_FOLDER)


def prompt_columns(dataset: Dataset, template_name: str) -> list[dict[str, str]]:
    """Per question: the system and user messages `expmrc llm` sends with the template (zero-shot, the
    template's own system message), the JSON reply a solved example would give (its gold answer and first
    evidence; empty when it lacks one) and the template's name."""
    template = choose_template(template_name, dataset.kind, dataset.language)
    columns = []
    for question in dataset.questions:
        messages = with_system(render(template, question, dataset.language, []), SystemPrompt())
        system, user = (m["content"] for m in messages)
        shot = labelled(question)
        target = reply_json(shot[1], cited_evidence(template, passage_of(question), shot[2])) if shot else ""
        columns.append({"system": system, "prompt": user, "target": target, "template": template.name})
    return columns


def load_subset(subset: str, template: str, split: str = "dev", **_metadata: Any) -> Any:
    """lm-eval's `custom_dataset`: the subset's dev set as a DatasetDict with one split, `split`."""
    import datasets

    from expmrc.data.export import features

    dataset = load_dataset(subset, subset)
    rows = [{**row, **extra} for row, extra in zip(dataset_rows(dataset), prompt_columns(dataset, template))]
    types = features()
    for name in EXTRA_COLUMNS:
        types[name] = datasets.Value("string")
    return datasets.DatasetDict({split: datasets.Dataset.from_list(rows, features=types)})


def rate_of(grounding: dict[str, Any], key: str) -> float | None:
    """Of one reply, from `expmrc llm`'s grounding summary: its `verbatim_evidence_rate` or
    `untrustworthy_evidence_rate`, 1.0 or 0.0, or None when it gives no evidence (`percent_given` leaves it out)."""
    rate = grounding[key]
    return None if rate is None else float(rate)


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, float | None]:
    """One reply read and scored as `expmrc llm` reads and scores it: answer F1 (accuracy for multiple
    choice), evidence F1 and overall as `expmrc evaluate --details` gives them (0-1), and whether grounding finds
    the evidence verbatim (only form differs) and whether it does not trust it (0 or 1; None without evidence)."""
    from expmrc.llm.replies import ground, read_reply, submission_of
    from expmrc.scoring.scorer import score

    question = question_of(doc)
    dataset = Dataset(path=f"lm-eval:{doc['subset']}", version=doc["version"], subset=doc["subset"],
                      questions=[question])
    reply = Reply(text=str(results[0] or "")) if results else None
    form = TEMPLATES.lookup(doc["template"]).evidence_form
    parsed, citation = read_reply(reply, question, form)
    submission = submission_of({question.qid: parsed})
    scored = score(dataset, submission).questions[0]
    _, _, grounding = ground(dataset, submission, form, None if citation is None else {question.qid: citation})
    return {"ANS_F1": scored.answer, "EVI_F1": float(scored.evidence or 0.0),
            "ALL_F1": float(scored.overall or 0.0), "EVI_VERBATIM": rate_of(grounding, "verbatim_evidence_rate"),
            "EVI_UNTRUSTWORTHY": rate_of(grounding, "untrustworthy_evidence_rate")}


def percent(values: list[float]) -> float:
    """100 × the mean, as the scorer averages: the sum over questions / the number of questions."""
    return 100.0 * sum(values) / len(values) if values else 0.0


def percent_given(values: list[float | None]) -> float:
    """100 × the mean over the replies that gave evidence, as `expmrc llm`'s verbatim and untrustworthy evidence
    rates are taken over the evidence given; NaN when none did."""
    given = [v for v in values if v is not None]
    return 100.0 * sum(given) / len(given) if given else float("nan")
