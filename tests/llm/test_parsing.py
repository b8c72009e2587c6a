"""Reply parsing on a corpus of realistic replies: English and Chinese, span and choice, every dress a model
puts its answer in (helpers/reply_corpus.py, one test per style); answers stated twice; option text that
looks like a letter; JSON found and repaired in one linear pass; and the replies nothing can be made of,
which must fail softly and be counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.common import dev_set
from helpers.reply_corpus import STYLES, cases, same_quote

from expmrc.data.datasets import LABELS, load_dataset
from expmrc.llm.jsonscan import MAX_DEPTH, scan
from expmrc.llm.parsing import EVIDENCE_KEYS, letter_of, parse_reply, strip_reasoning

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
    ('{"answer": "B. Only bread", "evidence": "letter and text disagree"}', OPTIONS_EN),
    ("A. Three pears\nB. Three apples and bread\nC. Only bread", OPTIONS_EN),  # options restated, none chosen
    ("If we chose A, the passage would have to mention pears.", OPTIONS_EN),
    ("如果选A，文中应该提到梨。", OPTIONS_ZH),
    ("Let me find where the answer is located in the passage.", None),
    ('Reply format: {"answer": "<the shortest span>", "evidence": "<a sentence>"}', None),
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


def test_a_failed_reply_keeps_its_evidence_by_the_same_rule_as_a_read_one():
    stated_then_quoted = 'Evidence: "It began to rain."\nThe passage says "Tom ran home."'
    assert parse_reply(stated_then_quoted + "\nAnswer: Tom").evidence == "It began to rain."
    failed = parse_reply(stated_then_quoted)  # no answer: the labelled quote still wins over the later one
    assert (failed.status, failed.evidence) == ("failed", "It began to rain.")


def test_reasoning_is_dropped_even_when_the_template_opened_it():
    assert strip_reasoning("step one, step two</think>\nAnswer: B") == "Answer: B"
    assert strip_reasoning("<THINK>a</THINK>b<think>c</think>d") == "bd"


def test_ambiguous_option_text_names_no_letter():
    assert letter_of("apples", ["red apples", "green apples"])[0] is None
    assert letter_of("red apples", ["red apples", "green apples"])[0] == "A"


@pytest.mark.parametrize("case", cases(STYLES), ids=lambda c: c.style)
def test_every_style_of_the_corpus_is_read(case):
    parsed = parse_reply(case.reply, list(case.item.options) if case.item.options else None)
    assert parsed.answer == case.answer, parsed
    assert case.evidence is None or same_quote(parsed.evidence, case.evidence), parsed
    assert (parsed.status == "revised") == case.revised, parsed


RACE_LIKE = ["A clerk.", "A teacher.", "An actor.", "a nurse"]


@pytest.mark.parametrize(("answer", "letter"), [
    ("A clerk.", "A"), ("A teacher.", "B"), ("a teacher", "B"), ("An actor.", "C"), ("a nurse", "D"),
    ("A nurse, as the passage says", "D"), ("A teacher. She works at a school.", "B"), ("B. A teacher.", "B"),
    ("(B) A teacher.", "B"), ("B", "B"), ("b", "B"), ("Option D", "D"), ("D) a nurse", "D"), ("A", "A"),
    ("A because she works at a bank", "A"), ("B whatever follows", "B"), ("C  (the third)", "C"),
])
def test_option_text_is_matched_before_a_leading_letter_like_word(answer, letter):
    assert letter_of(answer, RACE_LIKE)[0] == letter
    assert parse_reply(f'{{"answer": "{answer}", "evidence": "x"}}', RACE_LIKE).answer == letter


def test_an_article_before_words_that_are_no_option_is_no_letter():
    assert letter_of("A clerk at the bank", ["A teacher.", "A nurse."]) == \
        (None, "answer 'A clerk at the bank' names no option")


def test_a_letter_whose_text_is_another_options_is_refused_with_the_reason():
    letter, why = letter_of("C. A teacher.", RACE_LIKE)
    assert letter is None and "letter C" in why and "option B" in why
    assert letter_of("E", RACE_LIKE) == (None, "answer 'E': there is no option E")


@pytest.mark.parametrize("reply", [
    'Answer: A\n\n{"answer": "C", "evidence": "x"}',
    '{"answer": "A", "evidence": "x"}\nOn second thought, the answer is C.',
    "Answer: A\nActually, the answer is C.",
    '{"answer": "A"}\n{"answer": "C", "evidence": "x"}',
    '{"answer": ["A", "C"], "evidence": "x"}',
    "选A。\n不对，应选C。",
])
def test_the_final_stated_answer_is_taken_and_the_revision_is_said(reply):
    parsed = parse_reply(reply, OPTIONS_EN)
    assert (parsed.answer, parsed.status) == ("C", "revised")
    assert "A, C" in parsed.note and "last" in parsed.note


def test_an_answer_restated_the_same_is_no_revision():
    reply = 'The answer is (B).\n\n```json\n{"answer": "B", "evidence": "He bought three apples."}\n```\nSo: B.'
    assert parse_reply(reply, OPTIONS_EN) == parse_reply(reply, OPTIONS_EN)
    parsed = parse_reply(reply, OPTIONS_EN)
    assert (parsed.answer, parsed.evidence, parsed.status, parsed.note) == ("B", "He bought three apples.", "json", "")


def test_answer_words_inside_a_quote_are_part_of_the_quote():
    parsed = parse_reply('Answer: B. Evidence: "Tom said the answer is A." (line 2)', OPTIONS_EN)
    assert (parsed.answer, parsed.evidence, parsed.status) == ("B", "Tom said the answer is A.", "text")


def test_words_inside_a_json_string_are_not_read_as_statements():
    reply = '{"reasoning": "The answer is A? No: the answer is C.", "answer": "C", "evidence": "x"}'
    assert parse_reply(reply, OPTIONS_EN).status == "json"


def test_repairs_are_named_in_the_note():
    parsed = parse_reply('{"answer": "B", "evidence": "cut off here', OPTIONS_EN)
    assert (parsed.answer, parsed.evidence, parsed.status, parsed.note) == ("B", "cut off here", "json", "JSON repaired")


@pytest.mark.parametrize("text", [
    'prose {"a": "}"} {"answer": "B", "evidence": "x \\" } y"} tail',
    'stray { brace, then {"answer": "B", "evidence": "x \\" } y"}',
    '[{"answer": "B", "evidence": "x \\" } y"}]',
])
def test_objects_are_found_whatever_braces_and_quotes_surround_them(text):
    values = [found.value for found in scan(text).objects]
    assert {"answer": "B", "evidence": 'x " } y'} in values


def test_a_reply_nested_past_the_depth_limit_fails_in_one_note():
    reply = "{" * 50_000 + '"answer": "B"' + "}" * 50_000
    parsed = parse_reply(reply, OPTIONS_EN)
    assert parsed.status == "failed" and f"deeper than {MAX_DEPTH}" in parsed.note
    shallow = '{"a": ' * (MAX_DEPTH - 1) + '{"answer": "B"}' + "}" * (MAX_DEPTH - 1)
    assert parse_reply(shallow, OPTIONS_EN).answer == "B"


def test_a_megabyte_reply_parses():
    filler = "The passage is long. " * 50_000
    parsed = parse_reply(filler + '\n{"answer": "C", "evidence": "Only bread was left."}', OPTIONS_EN)
    assert (parsed.answer, parsed.evidence) == ("C", "Only bread was left.")


def test_every_evidence_key_is_documented():
    docs = (Path(__file__).resolve().parents[2] / "docs" / "llm.md").read_text(encoding="utf-8")
    assert [key for key in EVIDENCE_KEYS if f"`{key}`" not in docs] == []


@pytest.mark.data
@pytest.mark.parametrize("subset", ["race", "c3"])
def test_every_dev_set_option_given_by_its_text_or_letter_reads_back_as_its_own_letter(subset):
    dataset = load_dataset(dev_set(subset))
    wrong = []
    for question in dataset.questions:
        texts = [option.strip() for option in question.options]
        if not all(texts) or len(set(texts)) < len(texts):
            continue  # blank or repeated options name no single letter
        for i, option in enumerate(question.options):
            for reply in (json.dumps({"answer": option, "evidence": "x"}, ensure_ascii=False),
                          f"Answer: {LABELS[i]}. {option}", f"答案：{option}"):
                if parse_reply(reply, question.options).answer != LABELS[i]:
                    wrong.append((question.qid, reply))
    assert wrong == []
