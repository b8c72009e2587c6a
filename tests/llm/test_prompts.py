"""Chain-of-thought templates: one per task and language, never the default; a run with one sends the reasoning
prompt (and, with structured output, a schema whose `reasoning` comes first) and reads the final JSON after
the reasoning; its few-shot turns reason and end with JSON the parser reads back."""

from __future__ import annotations

import json

import pytest
from helpers.fake_openai import FakeChatServer
from helpers.llm_data import write_dataset

from expmrc.cli import main
from expmrc.data.datasets import LABELS, load_dataset
from expmrc.llm.parsing import parse_reply
from expmrc.llm.prompts import TEMPLATES, choose_template, default_template, shot_reply

COT = {"span-en-cot-v1": ("span", "en"), "span-zh-cot-v1": ("span", "zh"),
       "choice-en-cot-v1": ("choice", "en"), "choice-zh-cot-v1": ("choice", "zh")}


@pytest.mark.parametrize(("name", "where"), COT.items())
def test_cot_templates_exist_for_each_task_and_language_and_are_never_the_default(name, where):
    template = TEMPLATES[name]
    assert (template.task, template.language, template.reasoning) == (*where, True)
    assert default_template(*where).name == f"{where[0]}-{where[1]}-v1"
    assert choose_template(name, where[0], where[1]) is template


@pytest.mark.parametrize("name", COT)
def test_a_cot_shot_reasons_and_ends_with_json_the_parser_reads_back(name):
    template = TEMPLATES[name]
    options = ["Three pears", "Three apples and bread"] if template.task == "choice" else None
    answer, evidence = ("B" if options else "near Rotterdam"), "He bought three apples and a loaf of bread."
    turn = shot_reply(template, answer, evidence)
    assert "\n" in turn and not turn.startswith("{")  # reasoning first
    parsed = parse_reply(turn, options)
    assert (parsed.answer, parsed.evidence, parsed.status) == (answer, evidence, "json")


def cot_reply(dataset_path: str):
    """A server that reasons over every option (naming the wrong ones), then ends with the right JSON."""
    questions = {q.question: q for q in load_dataset(dataset_path).questions}

    def reply(body: dict) -> str:
        question = next(q for text, q in questions.items() if text in body["messages"][-1]["content"])
        steps = "\n".join(f"{LABELS[i]}. {text}: {'matches' if LABELS[i] == question.answer else 'not said'}"
                          for i, text in enumerate(question.options))
        final = json.dumps({"answer": question.answer, "evidence": question.evidences[0]}, ensure_ascii=False)
        return f"让我们逐项分析。\n{steps}\n所以答案是{question.answer}。\n{final}"
    return reply


def test_a_cot_run_sends_the_reasoning_prompt_and_reads_the_final_json(tmp_path):
    path = write_dataset(tmp_path, "c3")
    with FakeChatServer(cot_reply(path)) as server:
        assert main(["llm", path, "--model", "fake-model", "--base-url", server.url, "--no-cache", "--quiet",
                     "--template", "choice-zh-cot-v1", "--output", str(tmp_path / "run")]) == 0
    body = server.requests[0]
    assert body["messages"][0]["content"] == TEMPLATES["choice-zh-cot-v1"].system
    schema = body["response_format"]["json_schema"]["schema"]
    assert list(schema["properties"]) == ["reasoning", "answer", "evidence"] == schema["required"]
    scores = json.loads((tmp_path / "run" / "scores.json").read_text(encoding="utf-8"))
    assert scores["raw"]["ANS_F1"] == 100.0 and scores["parse"]["json"] == 2
    info = json.loads((tmp_path / "run" / "run_info.json").read_text(encoding="utf-8"))
    assert info["template"]["name"] == "choice-zh-cot-v1"


# Every built-in template's sha256 (name, version, system and user text), as run_info.json records it. A template's
# text never changes under its version: runs, caches and papers name it by version. A new template adds its line.
PINNED = {
    "span-en-v1": "7da9337ea305bfba", "choice-en-v1": "0ba617de83889a67",
    "span-zh-v1": "3af491781e982bf5", "choice-zh-v1": "c173d68bc08b6734",
    "span-en-cot-v1": "a2d83457bb502c03", "choice-en-cot-v1": "42c86b8ccd6971a2",
    "span-zh-cot-v1": "423ae9ac67bf23e8", "choice-zh-cot-v1": "bab50f82b7d403c8",
    "span-en-ids-v1": "c84f25527f408075", "choice-en-ids-v1": "e3235aff433e72a3",
    "span-zh-ids-v1": "32149dd701d352c0", "choice-zh-ids-v1": "22d7e383eed0e3e4",
    "span-en-ids-cot-v1": "d5a2a214b7e28c9b", "choice-en-ids-cot-v1": "dad63abc41144ff9",
    "span-zh-ids-cot-v1": "006935917e0c4ac6", "choice-zh-ids-cot-v1": "9789d1163620cbd4",
}


def test_built_in_templates_never_change_under_their_version():
    assert {name: template.sha256[:16] for name, template in TEMPLATES.items()} == PINNED
