"""Reply parsing on a corpus of realistic replies: English and Chinese, span and choice, every dress a model
puts its answer in; and the replies nothing can be made of, which must fail softly and be counted."""

from __future__ import annotations

import pytest

from expmrc.llm.parsing import choice_letter, parse_reply, strip_reasoning

OPTIONS_EN = ["Three pears", "Three apples and bread", "Only bread", "Nothing"]
OPTIONS_ZH = ["走路", "坐公交车", "骑自行车", "坐地铁"]

SPAN_REPLIES = [  # reply, answer, evidence, status
    ('{"answer": "near Rotterdam", "evidence": "It reaches the North Sea near Rotterdam."}',
     "near Rotterdam", "It reaches the North Sea near Rotterdam.", "json"),
    ('```json\n{\n  "answer": "the Swiss Alps",\n  "evidence": "The Rhine rises in the Swiss Alps."\n}\n```',
     "the Swiss Alps", "The Rhine rises in the Swiss Alps.", "json"),
    (('Here is my answer in the requested format:\n\n{"answer": "Rotterdam", "evidence": "near Rotterdam"}\n\n'
     "Let me know if you need anything else!"), "Rotterdam", "near Rotterdam", "json"),
    (("<think>The question asks where it rises. {\"answer\": \"Germany\"} would be wrong.</think>\n"
     '{"answer": "the Swiss Alps", "evidence": "The Rhine rises in the Swiss Alps."}'),
     "the Swiss Alps", "The Rhine rises in the Swiss Alps.", "json"),
    ("**Answer:** near Rotterdam\n**Evidence:** \"It reaches the North Sea near Rotterdam\"",
     "near Rotterdam", "It reaches the North Sea near Rotterdam", "text"),
    ("The answer is the Swiss Alps.\nEvidence: The Rhine rises in the Swiss Alps.",
     "the Swiss Alps", "The Rhine rises in the Swiss Alps.", "text"),
    ('{"Answer": "1,230 kilometres", "Evidence": ["after a course of", "about 1,230 kilometres"]}',
     "1,230 kilometres", "after a course of about 1,230 kilometres", "json"),
    ('```\n{"答案": "上海", "证据": "它发源于青藏高原，最终在上海注入东海。"}\n```',
     "上海", "它发源于青藏高原，最终在上海注入东海。", "json"),
    ("答案：6300公里\n证据：“长江是中国第一长河，全长约6300公里。”", "6300公里", "长江是中国第一长河，全长约6300公里。", "text"),
    ("根据文章，答案是上海。\n原文：最终在上海注入东海。", "上海", "最终在上海注入东海。", "text"),
    ('好的，以下是回答：{"answer": "上海", "evidence": "最终在上海注入东海"}', "上海", "最终在上海注入东海", "json"),
]

CHOICE_REPLIES = [  # reply, options, letter, status
    ('{"answer": "B", "evidence": "He bought three apples and a loaf of bread."}', OPTIONS_EN, "B", "json"),
    ('{"answer": "(C)", "evidence": ""}', OPTIONS_EN, "C", "json"),
    ('{"answer": "B. Three apples and bread", "evidence": "x"}', OPTIONS_EN, "B", "json"),
    ('{"answer": "Three apples and bread", "evidence": "x"}', OPTIONS_EN, "B", "json"),
    ('{"answer": "three apples and bread.", "evidence": "x"}', OPTIONS_EN, "B", "json"),
    ("Answer: (C)\nEvidence: Only bread was left.", OPTIONS_EN, "C", "text"),
    ("After reading the passage carefully, the answer is D.", OPTIONS_EN, "D", "text"),
    ("The correct answer is option A) Three pears", OPTIONS_EN, "A", "text"),
    ("<think>Tom bought apples... maybe A? no.</think>\nAnswer: B", OPTIONS_EN, "B", "text"),
    ('```json\n{"answer": "c", "evidence": "..."}\n```', OPTIONS_EN, "C", "json"),
    ("答案：C\n证据：吃完早饭后，他骑自行车去学校。", OPTIONS_ZH, "C", "text"),
    ("答案是（C）。", OPTIONS_ZH, "C", "text"),
    ('{"answer": "骑自行车", "evidence": "他骑自行车去学校"}', OPTIONS_ZH, "C", "json"),
    ('{"答案": "C选项", "证据": "他骑自行车去学校"}', OPTIONS_ZH, "C", "json"),
    ("正确答案：选项B", OPTIONS_ZH, "B", "text"),
    ('{"answer": "Ｃ", "evidence": "全角字母"}', OPTIONS_ZH, "C", "json"),
]

FAILURES = [  # reply, options: nothing usable
    ("", None), ("   \n", None), (None, None),
    (", 城 河 question 么 says 上 : 河 question 么", None),
    ("I cannot answer this question.", OPTIONS_EN),
    ('{"answer": "E", "evidence": "there is no option E"}', OPTIONS_EN),
    ('{"answer": "apples", "evidence": "matches no option by itself"}', ["red apples", "green apples"]),
    ("<think>Let me think about it step by step. The passage says", OPTIONS_EN),
    ('{"evidence": "an object without any answer"}', None),
    ('{"answer": "B", "evidence": "unclosed', OPTIONS_EN),
]


@pytest.mark.parametrize(("reply", "answer", "evidence", "status"), SPAN_REPLIES)
def test_span_replies(reply, answer, evidence, status):
    parsed = parse_reply(reply)
    assert (parsed.answer, parsed.evidence, parsed.status) == (answer, evidence, status)


@pytest.mark.parametrize(("reply", "options", "letter", "status"), CHOICE_REPLIES)
def test_choice_replies_become_letters(reply, options, letter, status):
    parsed = parse_reply(reply, options)
    assert (parsed.answer, parsed.status) == (letter, status)


@pytest.mark.parametrize(("reply", "options"), FAILURES)
def test_unusable_replies_fail_softly(reply, options):
    parsed = parse_reply(reply, options)
    assert parsed.status == "failed" and parsed.answer == "" and parsed.note


def test_reasoning_is_dropped_even_when_the_template_opened_it():
    assert strip_reasoning("step one, step two</think>\nAnswer: B") == "Answer: B"
    assert strip_reasoning("<THINK>a</THINK>b<think>c</think>d") == "bd"


def test_ambiguous_option_text_names_no_letter():
    assert choice_letter("apples", ["red apples", "green apples"]) is None
    assert choice_letter("red apples", ["red apples", "green apples"]) == "A"
