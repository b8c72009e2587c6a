"""Prompt templates, registered by name: one per task (span, choice) and language (en, zh), versioned.

A template renders the user message of one question from its fields (`passage`, `question`, `options`:
a list of `{"label", "text"}`, `task`, `language`, and `sentences`: the passage's sentences as a list of
`{"number", "text"}`); the system message is fixed per template. Each template asks for evidence in one
form (`evidence_form`, a name of `FORMS` in expmrc/llm/forms.py): `quote`, the supporting sentences copied
verbatim, or `ids` (`-ids-` templates), the numbers of the supporting sentences, the passage being shown one
numbered sentence a line (expmrc/llm/citations.py reads the citations). Few-shot
examples become earlier user/assistant turns rendered with the same template, the assistant turn being
the reply the template asks for. Chain-of-thought templates (`…-cot-v1`, `reasoning`) ask the model to
reason first and end with the JSON object; the parser takes that final object. `--prompt FILE` replaces the user message with a Jinja2 template
of the user's; every variable it names must exist (StrictUndefined) and it must render the question.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import jinja2
import jinja2.meta

from expmrc.data.datasets import (
    LABELS,
    ChoiceQuestion,
    Question,
    SpanQuestion,
    passage_of,
)
from expmrc.errors import ExpmrcError
from expmrc.llm.citations import numbered, sentence_numbers
from expmrc.llm.forms import DEFAULT_FORM, FORMS
from expmrc.registry import Registry

VARIABLES = ("passage", "question", "options", "task", "language", "sentences")


@dataclass(frozen=True)
class PromptTemplate:
    """A named, versioned prompt: the system message and the Jinja2 source of the user message."""

    name: str
    version: int
    task: str  # "span" or "choice"
    language: str  # "en" or "zh"
    system: str
    user: str
    reasoning: bool = False  # the reply reasons first and ends with the JSON object
    evidence_form: str = DEFAULT_FORM  # a name of FORMS: evidence quoted, or cited by sentence number (`ids`)

    @property
    def sha256(self) -> str:
        """Hash of everything that shapes the messages, recorded in run_info.json."""
        text = json.dumps([self.name, self.version, self.system, self.user], ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


TEMPLATES: Registry[PromptTemplate] = Registry("prompt template")


def register(template: PromptTemplate) -> PromptTemplate:
    """Add a template to the registry (names are unique)."""
    return TEMPLATES.add(template.name, template)


# The pieces the built-in templates share, per language. A template's text never changes under its version (its
# sha256 is pinned in tests/llm/test_prompts.py), so a shared piece is never edited; a new version gets its own.
ROLE_SPAN_EN = "You answer reading comprehension questions. The answer is a short span copied from the passage. "
ROLE_CHOICE_EN = "You answer multiple-choice reading comprehension questions. "
ROLE_SPAN_ZH = "你是阅读理解答题助手。答案是从文章中原样摘取的一个简短片段。"
ROLE_CHOICE_ZH = "你是阅读理解选择题答题助手。"
QUESTION_EN = "Question: {{ question }}\n\n"
QUESTION_ZH = "问题：{{ question }}\n\n"
PASSAGE_EN = "Passage:\n{{ passage }}\n\n" + QUESTION_EN
PASSAGE_ZH = "文章：\n{{ passage }}\n\n" + QUESTION_ZH
OPTIONS_EN = "Options:\n{% for option in options %}{{ option.label }}. {{ option.text }}\n{% endfor %}\n"
OPTIONS_ZH = "选项：\n{% for option in options %}{{ option.label }}. {{ option.text }}\n{% endfor %}\n"
JSON_ONLY_EN = "Reply with JSON only, no other text: "
JSON_ONLY_ZH = "只回复 JSON，不要其他内容："
JSON_LAST_EN = "Then end your reply with one JSON object on a line of its own, with nothing after it: "  # chain of thought
JSON_LAST_ZH = "最后单独一行给出一个 JSON 对象，其后不要再写任何内容："

# The JSON reply every template asks for, per task and language.
SPAN_JSON_EN = ('{"answer": "<the shortest passage span that answers the question>", '
                '"evidence": "<the supporting sentence(s), copied verbatim from the passage>"}')
CHOICE_JSON_EN = ('{"answer": "<the letter of the correct option>", '
                  '"evidence": "<the supporting sentence(s), copied verbatim from the passage>"}')
SPAN_JSON_ZH = '{"answer": "<文章中能回答问题的最短片段>", "evidence": "<支持答案的句子，从文章中逐字照抄>"}'
CHOICE_JSON_ZH = '{"answer": "<正确选项的字母>", "evidence": "<支持答案的句子，从文章中逐字照抄>"}'

register(PromptTemplate(
    name="span-en-v1", version=1, task="span", language="en",
    system=ROLE_SPAN_EN + "Also quote, word for word, the passage sentence(s) that support the answer.",
    user=PASSAGE_EN + JSON_ONLY_EN + SPAN_JSON_EN,
))
register(PromptTemplate(
    name="choice-en-v1", version=1, task="choice", language="en",
    system=ROLE_CHOICE_EN + "Also quote, word for word, the passage sentence(s) that support the answer.",
    user=PASSAGE_EN + OPTIONS_EN + JSON_ONLY_EN + CHOICE_JSON_EN,
))
register(PromptTemplate(
    name="span-zh-v1", version=1, task="span", language="zh",
    system=ROLE_SPAN_ZH + "同时请逐字引用文章中支持该答案的句子。",
    user=PASSAGE_ZH + JSON_ONLY_ZH + SPAN_JSON_ZH,
))
register(PromptTemplate(
    name="choice-zh-v1", version=1, task="choice", language="zh",
    system=ROLE_CHOICE_ZH + "同时请逐字引用文章中支持该答案的句子。",
    user=PASSAGE_ZH + OPTIONS_ZH + JSON_ONLY_ZH + CHOICE_JSON_ZH,
))

# Chain of thought: the same questions, the reasoning first, the JSON object last (and nothing after it).
register(PromptTemplate(
    name="span-en-cot-v1", version=1, task="span", language="en", reasoning=True,
    system=ROLE_SPAN_EN + "Think step by step before answering, then quote, word for word, the passage sentence(s) "
                          "that support the answer.",
    user=PASSAGE_EN + "First reason step by step: find the passage sentence(s) that answer the question and say "
                      "briefly how they answer it. " + JSON_LAST_EN + SPAN_JSON_EN,
))
register(PromptTemplate(
    name="choice-en-cot-v1", version=1, task="choice", language="en", reasoning=True,
    system=ROLE_CHOICE_EN + "Think step by step before answering, then quote, word for word, the passage "
                            "sentence(s) that support the answer.",
    user=PASSAGE_EN + OPTIONS_EN + "First reason step by step: find the passage sentence(s) that bear on the "
                                   "question and check each option against them. " + JSON_LAST_EN + CHOICE_JSON_EN,
))
register(PromptTemplate(
    name="span-zh-cot-v1", version=1, task="span", language="zh", reasoning=True,
    system=ROLE_SPAN_ZH + "请先逐步思考再作答，并逐字引用文章中支持该答案的句子。",
    user=PASSAGE_ZH + "请先逐步推理：找出文章中能回答问题的句子，并简要说明它们如何回答问题。" + JSON_LAST_ZH + SPAN_JSON_ZH,
))
register(PromptTemplate(
    name="choice-zh-cot-v1", version=1, task="choice", language="zh", reasoning=True,
    system=ROLE_CHOICE_ZH + "请先逐步思考再作答，并逐字引用文章中支持该答案的句子。",
    user=PASSAGE_ZH + OPTIONS_ZH + "请先逐步推理：找出文章中与问题相关的句子，并逐一核对各选项。" + JSON_LAST_ZH
         + CHOICE_JSON_ZH,
))

# Citations by sentence number (`--evidence-form ids`): the passage one numbered sentence a line, the evidence a
# list of those numbers.
NUMBERED_EN = "Passage, one numbered sentence a line:\n{% for s in sentences %}[{{ s.number }}] {{ s.text }}\n{% endfor %}\n"
NUMBERED_ZH = "文章（每行一句，已编号）：\n{% for s in sentences %}[{{ s.number }}] {{ s.text }}\n{% endfor %}\n"
SPAN_IDS_EN = ('{"answer": "<the shortest passage span that answers the question>", '
               '"evidence": [<the number(s) of the sentence(s) that support the answer>]}')
CHOICE_IDS_EN = ('{"answer": "<the letter of the correct option>", '
                 '"evidence": [<the number(s) of the sentence(s) that support the answer>]}')
SPAN_IDS_ZH = '{"answer": "<文章中能回答问题的最短片段>", "evidence": [<支持答案的句子的编号>]}'
CHOICE_IDS_ZH = '{"answer": "<正确选项的字母>", "evidence": [<支持答案的句子的编号>]}'
CITE_EN = "Also cite, by their numbers, the passage sentence(s) that support the answer."
CITE_ZH = "同时请按编号引用文章中支持该答案的句子。"

register(PromptTemplate(
    name="span-en-ids-v1", version=1, task="span", language="en", evidence_form="ids",
    system=ROLE_SPAN_EN + CITE_EN,
    user=NUMBERED_EN + QUESTION_EN + JSON_ONLY_EN + SPAN_IDS_EN,
))
register(PromptTemplate(
    name="choice-en-ids-v1", version=1, task="choice", language="en", evidence_form="ids",
    system=ROLE_CHOICE_EN + CITE_EN,
    user=NUMBERED_EN + QUESTION_EN + OPTIONS_EN + JSON_ONLY_EN + CHOICE_IDS_EN,
))
register(PromptTemplate(
    name="span-zh-ids-v1", version=1, task="span", language="zh", evidence_form="ids",
    system=ROLE_SPAN_ZH + CITE_ZH,
    user=NUMBERED_ZH + QUESTION_ZH + JSON_ONLY_ZH + SPAN_IDS_ZH,
))
register(PromptTemplate(
    name="choice-zh-ids-v1", version=1, task="choice", language="zh", evidence_form="ids",
    system=ROLE_CHOICE_ZH + CITE_ZH,
    user=NUMBERED_ZH + QUESTION_ZH + OPTIONS_ZH + JSON_ONLY_ZH + CHOICE_IDS_ZH,
))
register(PromptTemplate(
    name="span-en-ids-cot-v1", version=1, task="span", language="en", reasoning=True, evidence_form="ids",
    system=ROLE_SPAN_EN + "Think step by step before answering, then cite, by their numbers, the passage "
                          "sentence(s) that support the answer.",
    user=NUMBERED_EN + QUESTION_EN + "First reason step by step: find the numbered sentence(s) that answer the "
                                     "question and say briefly how they answer it. " + JSON_LAST_EN + SPAN_IDS_EN,
))
register(PromptTemplate(
    name="choice-en-ids-cot-v1", version=1, task="choice", language="en", reasoning=True, evidence_form="ids",
    system=ROLE_CHOICE_EN + "Think step by step before answering, then cite, by their numbers, the passage "
                            "sentence(s) that support the answer.",
    user=NUMBERED_EN + QUESTION_EN + OPTIONS_EN + "First reason step by step: find the numbered sentence(s) that "
         "bear on the question and check each option against them. " + JSON_LAST_EN + CHOICE_IDS_EN,
))
register(PromptTemplate(
    name="span-zh-ids-cot-v1", version=1, task="span", language="zh", reasoning=True, evidence_form="ids",
    system=ROLE_SPAN_ZH + "请先逐步思考再作答，并按编号引用文章中支持该答案的句子。",
    user=NUMBERED_ZH + QUESTION_ZH + "请先逐步推理：找出能回答问题的编号句子，并简要说明它们如何回答问题。" + JSON_LAST_ZH
         + SPAN_IDS_ZH,
))
register(PromptTemplate(
    name="choice-zh-ids-cot-v1", version=1, task="choice", language="zh", reasoning=True, evidence_form="ids",
    system=ROLE_CHOICE_ZH + "请先逐步思考再作答，并按编号引用文章中支持该答案的句子。",
    user=NUMBERED_ZH + QUESTION_ZH + OPTIONS_ZH + "请先逐步推理：找出与问题相关的编号句子，并逐一核对各选项。" + JSON_LAST_ZH
         + CHOICE_IDS_ZH,
))

def default_template(task: str, language: str, form: str = DEFAULT_FORM) -> PromptTemplate:
    """The newest registered template for a task, language and evidence form that asks for the JSON reply alone."""
    fitting = [t for t in TEMPLATES.values() if (t.task, t.language, t.evidence_form) == (task, language, form)
               and not t.reasoning]
    return max(fitting, key=lambda t: t.version)


def choose_template(name: str | None, task: str, language: str, form: str | None = None) -> PromptTemplate:
    """The template named (it must fit the task, and the evidence form when one is given), else the default for
    the task, language and form (quote when none is given)."""
    if form is not None and form not in FORMS:
        raise ExpmrcError(f"evidence form {form!r}: choose one of {', '.join(FORMS)}")
    if name is None:
        return default_template(task, language, form or DEFAULT_FORM)
    template = TEMPLATES.lookup(name)
    if template.task != task:
        raise ExpmrcError(f"prompt template {name} is for {template.task} questions, this subset is {task}")
    if form is not None and template.evidence_form != form:
        fitting = default_template(task, template.language, form).name
        raise ExpmrcError(f"prompt template {name} asks for evidence as {template.evidence_form}, but --evidence-form "
                          f"is {form}; pick a template of that form (e.g. {fitting}) or leave one of the two flags out")
    return template


def template_from_file(path: str, base: PromptTemplate) -> PromptTemplate:
    """A user's Jinja2 file as the user message, with `base`'s system message; refused if it does not parse."""
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ExpmrcError(f"{path}: cannot read prompt template: {exc}") from None
    try:
        _environment().from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise ExpmrcError(f"{path}: line {exc.lineno}: not a Jinja2 template: {exc.message}") from None
    if FORMS.lookup(base.evidence_form).numbered and "sentences" not in jinja2.meta.find_undeclared_variables(
            _environment().parse(source)):
        raise ExpmrcError(f"{path}: shows no numbered sentences, which --evidence-form {base.evidence_form} asks the "
                          "model to cite; render them with {% for s in sentences %}[{{ s.number }}] {{ s.text }}\n"
                          "{% endfor %}")
    return PromptTemplate(name=f"file:{path}", version=0, task=base.task, language=base.language,
                          system=base.system, user=source, evidence_form=base.evidence_form)


def _environment() -> jinja2.Environment:
    return jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True)


def fields(question: Question) -> dict[str, Any]:
    """The variables a template sees for one question."""
    options = []
    if isinstance(question, ChoiceQuestion):
        options = [{"label": LABELS[i], "text": text} for i, text in enumerate(question.options)]
    passage = passage_of(question)
    return {"passage": passage, "question": question.question, "options": options,
            "task": "span" if isinstance(question, SpanQuestion) else "choice", "sentences": numbered(passage)}


def render_user(template: PromptTemplate, question: Question, language: str) -> str:
    """The user message for one question; a missing variable or a render without the question is one line."""
    try:
        text = _environment().from_string(template.user).render(**fields(question), language=language)
    except jinja2.UndefinedError as exc:
        raise ExpmrcError(f"prompt template {template.name}: {exc.message}; the variables are "
                          f"{', '.join(VARIABLES)}") from None
    except jinja2.TemplateError as exc:
        raise ExpmrcError(f"prompt template {template.name}: cannot render question {question.qid}: {exc}") from None
    if question.question.strip() and question.question.strip() not in text:
        raise ExpmrcError(f"prompt template {template.name}: renders no question (question {question.qid}'s "
                          "text is not in the message; use {{ question }})")
    return text


def reply_json(answer: str, evidence: str | list[int]) -> str:
    """The JSON object the templates ask for (evidence: a quote, or sentence numbers for the ids form)."""
    return json.dumps({"answer": answer, "evidence": evidence}, ensure_ascii=False)


def cited_evidence(template: PromptTemplate, passage: str, evidence: str) -> str | list[int]:
    """A solved example's evidence as `template` asks for it: the text, or the numbers of the sentences it covers
    ([] when it is not in the passage)."""
    return FORMS.lookup(template.evidence_form).example(passage, evidence)


def shot_reply(template: PromptTemplate, answer: str, evidence: str, passage: str = "") -> str:
    """The assistant turn of a few-shot example: the JSON object (for the ids form, citing the sentences of
    `passage` the evidence covers), after one line of reasoning from the evidence where the template asks the
    model to reason first."""
    given = cited_evidence(template, passage, evidence)
    if not template.reasoning:
        return reply_json(answer, given)
    said = "".join(f"[{n}]" for n in given) if isinstance(given, list) else ""
    if template.language == "zh":
        step = f"文章中{said}说：“{evidence}”这句话回答了问题，所以答案是{answer}。"
    else:
        step = f'The passage says{" in " + said if said else ""}: "{evidence}" This sentence answers the question, ' \
               f"so the answer is {answer}."
    return f"{step}\n{reply_json(answer, given)}"


def build_messages(template: PromptTemplate, question: Question, language: str,
                   shots: list[tuple[Question, str, str]]) -> list[dict[str, str]]:
    """System message, one user/assistant pair per shot (question, answer, evidence), then the question; a shot
    whose evidence the ids form cannot cite (not in its passage) is one line."""
    messages = [{"role": "system", "content": template.system}]
    for shot, answer, evidence in shots:
        passage = passage_of(shot)
        if FORMS.lookup(template.evidence_form).numbered and not sentence_numbers(passage, evidence):
            raise ExpmrcError(f"few-shot example {shot.qid}: its evidence is not in its passage, so the "
                              f"{template.evidence_form} form cannot cite its sentences; use a --shots-file whose "
                              "evidence is passage text")
        messages.append({"role": "user", "content": render_user(template, shot, language)})
        messages.append({"role": "assistant", "content": shot_reply(template, answer, evidence, passage)})
    messages.append({"role": "user", "content": render_user(template, question, language)})
    return messages


def answer_schema(task: str, n_options: int = 0, reasoning: bool = False, form: str = DEFAULT_FORM) -> dict[str, Any]:
    """The JSON schema of a reply, sent as `response_format` where the server supports it; with `reasoning`
    (chain-of-thought templates) a `reasoning` string comes first, since a schema leaves no room for
    text before the object and the keys are generated in order. The evidence is as the form asks (`FORMS`: the
    ids form's a list of sentence numbers)."""
    answer: dict[str, Any] = {"type": "string"}
    if task == "choice" and n_options:
        answer["enum"] = list(LABELS[:n_options])
    properties = {"reasoning": {"type": "string"}} if reasoning else {}
    properties.update({"answer": answer, "evidence": FORMS.lookup(form).evidence_schema()})
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}
