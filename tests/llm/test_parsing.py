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


# The shapes of issue 30, one test each: every reply below was misread, or not read at all, before them.
OPTIONS_RAIN = ["He was late", "It began to rain", "He was hungry", "A dog chased him"]
RAIN = "On the way home it began to rain, so he ran."


@pytest.mark.parametrize(("reply", "options", "answer", "evidence"), [
    ("<answer>B</answer>\n<evidence>On the way home it began to rain, so he ran.</evidence>", OPTIONS_RAIN, "B", RAIN),
    ("<ANSWER>\n(B) It began to rain\n</ANSWER>\n<REJECTED>\n(A) He was late\n</REJECTED>", OPTIONS_RAIN, "B", ""),
    ('<answer type="letter">B</answer><quote source="passage">It began to rain.</quote>', OPTIONS_RAIN, "B",
     "It began to rain."),
    ("<final_answer>near Rotterdam</final_answer>\n<supporting_quote>It reaches the North Sea.</supporting_quote>",
     None, "near Rotterdam", "It reaches the North Sea."),
    ("<答案>上海</答案>\n<证据>最终在上海注入东海。</证据>", None, "上海", "最终在上海注入东海。"),
    ("<evidence>It began to rain.</evidence>\n<answer>B", OPTIONS_RAIN, "B", "It began to rain."),  # left open
    ("<answer>B</evidence>\n<quote>It began to rain.</answer>", OPTIONS_RAIN, "B", "It began to rain."),  # mismatched
])
def test_xml_style_elements_state_the_answer_and_the_evidence(reply, options, answer, evidence):
    parsed = parse_reply(reply, options)
    assert (parsed.answer, parsed.evidence, parsed.status) == (answer, evidence, "text")


def test_elements_stated_twice_are_a_revision_and_an_option_tag_is_no_answer():
    parsed = parse_reply("<answer>A</answer>\nNo, wait.\n<answer>B</answer>", OPTIONS_RAIN)
    assert (parsed.answer, parsed.status) == ("B", "revised")
    assert parse_reply("<option>A</option>\n<option>C</option>\nAnswer: B", OPTIONS_RAIN).status == "text"


@pytest.mark.parametrize(("reply", "options", "answer"), [
    ("<think>\nIt could be A.\n<answer>B</answer>", OPTIONS_RAIN, "B"),  # the answer block ends the reasoning
    ("<think>\n可能是A？不对。\n<答案>B</答案>", OPTIONS_RAIN, "B"),
    ("<|begin_of_thought|>\nAnswer: A?\n<|end_of_thought|>\n<|begin_of_solution|>\nAnswer: B\n<|end_of_solution|>",
     OPTIONS_RAIN, "B"),
    ("[THINK]Answer: A? No.[/THINK]\nAnswer: B", OPTIONS_RAIN, "B"),
    ("◁think▷答案是A？◁/think▷答案：B", OPTIONS_RAIN, "B"),
    ("<think>The answer is A.</thinking>\nAnswer: B", OPTIONS_RAIN, "B"),  # closed by another name
    ("<reasoning>Answer: the Swiss Alps</reasoning>\n<answer>near Rotterdam</answer>", None, "near Rotterdam"),
])
def test_reasoning_in_any_dress_is_dropped_and_an_answer_block_ends_one_left_open(reply, options, answer):
    parsed = parse_reply(reply, options)
    assert (parsed.answer, parsed.status) == (answer, "text")  # what the reasoning said is no revision


@pytest.mark.parametrize(("reply", "options"), [
    ('<thinking>\nThe passage says "It began to rain." So the answer is B.', OPTIONS_RAIN),
    ("◁think▷原文说“它发源于青藏高原，最终在上海注入东海。”，所以答案是上海。", None),
    ('<thinking>{"answer": "B", "evidence": "x"}', OPTIONS_RAIN),
    ("<|begin_of_thought|>\nAnswer: B", OPTIONS_RAIN),
    ("[THINK]\n答案：B", OPTIONS_RAIN),
])
def test_an_answer_inside_reasoning_left_open_is_never_taken(reply, options):
    parsed = parse_reply(reply, options)
    assert (parsed.answer, parsed.evidence, parsed.status) == ("", "", "failed")
    assert "reasoning" in parsed.note


@pytest.mark.parametrize(("reply", "options", "answer", "evidence"), [
    ("| Answer | Evidence |\n| --- | --- |\n| B | It began to rain. |", OPTIONS_RAIN, "B", "It began to rain."),
    ("| # | Answer | Supporting sentence |\n|:-:|:--|:--|\n| 1 | near Rotterdam | It reaches the sea. |", None,
     "near Rotterdam", "It reaches the sea."),
    ("| Field | Value |\n|---|---|\n| **Answer** | B |\n| **Evidence** | \"It began to rain.\" |", OPTIONS_RAIN, "B",
     "It began to rain."),
    ("| 答案 | 上海 |\n| 原文依据 | 最终在上海注入东海。 |", None, "上海", "最终在上海注入东海。"),
    ("| 答案 | 证据 |\n| --- | --- |\n| C | 他骑自行车去学校。 |", OPTIONS_ZH, "C", "他骑自行车去学校。"),
    ("| Answer | Evidence |\n|---|---|\n| B | 1. It began to rain.<br>2. He ran. |", OPTIONS_RAIN, "B",
     "It began to rain. He ran."),
])
def test_markdown_tables_state_the_answer_and_the_evidence(reply, options, answer, evidence):
    parsed = parse_reply(reply, options)
    assert (parsed.answer, parsed.evidence) == (answer, evidence)


def test_a_table_of_the_options_states_no_answer_but_its_answer_row_does():
    table = "| Option | Analysis |\n|---|---|\n| A | not stated |\n| C | not stated |\n| B | stated |"
    assert parse_reply(table, OPTIONS_RAIN).status == "failed"
    parsed = parse_reply(table + "\n| **Answer** | B |", OPTIONS_RAIN)
    assert (parsed.answer, parsed.status) == ("B", "text")


@pytest.mark.parametrize("listed", [
    "1. It flows north.\n2. It reaches the sea.", "1) It flows north.\n2) It reaches the sea.",
    '- "It flows north."\n- "It reaches the sea."', "* It flows north.\n* It reaches the sea.",
    "• It flows north.\n• It reaches the sea.", "(1) It flows north.\n\n(2) It reaches the sea.",
    "① It flows north.\n② It reaches the sea.", "一、It flows north.\n二、It reaches the sea.",
])
def test_a_numbered_or_bulleted_evidence_list_is_its_items_joined(listed):
    for reply in (f"Answer: the sea\nEvidence:\n{listed}", f"### Answer\nthe sea\n\n### Evidence\n{listed}",
                  f"<answer>the sea</answer>\n<evidence>\n{listed}\n</evidence>",
                  json.dumps({"answer": "the sea", "evidence": listed})):
        assert parse_reply(reply).evidence == "It flows north. It reaches the sea.", reply


def test_a_chinese_evidence_list_is_its_items_joined():
    parsed = parse_reply("答案：上海\n证据：\n1、它发源于青藏高原。\n2、最终在上海注入东海。")
    assert (parsed.answer, parsed.evidence) == ("上海", "它发源于青藏高原。 最终在上海注入东海。")


@pytest.mark.parametrize(("reply", "options", "answer", "evidence"), [
    ('{"answer": "The answer is B.", "evidence": "It began to rain."}', OPTIONS_RAIN, "B", "It began to rain."),
    ('{"answer": "The correct answer is (B)."}', OPTIONS_RAIN, "B", ""),
    ('{"答案": "正确答案为C项"}', OPTIONS_ZH, "C", ""),
    ('{"answer": "The final answer is near Rotterdam.", "evidence": "x"}', None, "near Rotterdam", "x"),
    ('{"答案": "答案是：上海", "证据": "原文：最终在上海注入东海。"}', None, "上海", "最终在上海注入东海。"),
    ('{"answer": "near Rotterdam", "evidence": "According to the passage, \\"It reaches the sea.\\""}', None,
     "near Rotterdam", "It reaches the sea."),
    ("<answer>The answer is B</answer>", OPTIONS_RAIN, "B", ""),
])
def test_a_field_that_frames_its_answer_in_words_states_what_they_state(reply, options, answer, evidence):
    parsed = parse_reply(reply, options)
    assert (parsed.answer, parsed.evidence) == (answer, evidence)


def test_a_field_is_taken_as_written_unless_its_words_state_an_answer():
    framed = parse_reply('{"answer": "So the answer is: near Rotterdam", "evidence": "The passage says \\"x.\\""}')
    assert (framed.answer, framed.evidence) == ("near Rotterdam", "x.")
    assert parse_reply('{"answer": "He did not answer the letter", "evidence": "x"}').answer == \
        "He did not answer the letter"
    quoted = '{"answer": "x", "evidence": "\\"Hello,\\" she said."}'  # a passage sentence that opens with a quote
    assert parse_reply(quoted).evidence == '"Hello," she said.'


@pytest.mark.parametrize(("reply", "options", "answer"), [
    ("Let's look at each option:\n- **A. He was late**: Incorrect.\n- **B. It began to rain**: Correct.\n"
     "- **C. He was hungry**: Incorrect.\n\nThe best answer is: B", OPTIONS_RAIN, "B"),
    ("Option A (He was late) is inconsistent with the passage.\nOption B (It began to rain) is consistent.\n\n"
     "The correct answer is: (B)", OPTIONS_RAIN, "B"),
    ("Final Answer: The final answer is near Rotterdam. I hope it is correct.", None, "near Rotterdam"),
    ("Considering each option, the most likely answer is B.", OPTIONS_RAIN, "B"),
    ("所以答B。", OPTIONS_RAIN, "B"),
])
def test_the_verdict_after_an_analysis_or_in_an_evaluation_harness_line_is_read(reply, options, answer):
    parsed = parse_reply(reply, options)
    assert (parsed.answer, parsed.status) == (answer, "text")  # one answer stated: no revision


@pytest.mark.parametrize(("reply", "options", "answer", "evidence"), [
    ("答案：上海（原文：它发源于青藏高原，最终在上海注入东海。）", None, "上海", "它发源于青藏高原，最终在上海注入东海。"),
    ("答案为上海（原文：“最终在上海注入东海。”）。", None, "上海", "最终在上海注入东海。"),
    ("答案：1987年（见第二句）", None, "1987年", ""),
    ("答案：C（依据：吃完早饭后，他骑自行车去学校。）", OPTIONS_ZH, "C", "吃完早饭后，他骑自行车去学校。"),
    ('Answer: A (evidence: "He was late.")', OPTIONS_RAIN, "A", "He was late."),
    ('The answer is near Rotterdam (source: "It reaches the sea.").', None, "near Rotterdam", "It reaches the sea."),
])
def test_a_note_in_parentheses_after_an_answer_is_no_part_of_it(reply, options, answer, evidence):
    parsed = parse_reply(reply, options)
    assert (parsed.answer, parsed.evidence) == (answer, evidence)


@pytest.mark.parametrize(("reply", "evidence"), [
    ("根据原文“古人讲“诚”字，认为诚是立身之本。”，答案是诚。", "古人讲“诚”字，认为诚是立身之本。"),
    ("文中提到：“孔子非常重视“信”，他说“人而无信，不知其可也”。”因此答案为信。", "孔子非常重视“信”，他说“人而无信，不知其可也”。"),
    ("原文说「黄山被誉为「天下第一奇山」。」所以答案是天下第一奇山。", "黄山被誉为「天下第一奇山」。"),
])
def test_a_quotation_holding_a_quotation_in_the_same_marks_runs_to_its_own_closing_mark(reply, evidence):
    assert parse_reply(reply).evidence == evidence


@pytest.mark.parametrize(("reply", "options", "answer"), [
    ("<answer><evidence>" * 50_000, OPTIONS_RAIN, ""),  # elements left open 100,000 deep
    ("<answer>" * 100_000 + "B", OPTIONS_RAIN, "B"),
    ("<answer>A</evidence>" * 50_000 + "<answer>B</answer>", OPTIONS_RAIN, "B"),  # mismatched throughout
    ("</answer><answer>" * 50_000, None, ""),
    ("| Answer | Evidence |\n|---|---|\n" + "| A | x |\n" * 100_000 + "| B | It began to rain. |", OPTIONS_RAIN, "B"),
    ("<think>" * 10_000 + "Answer: A", OPTIONS_RAIN, ""),
    ("| Answer | A |\n" * 10_000, OPTIONS_RAIN, "A"),
    ("Evidence:\n" + "1. x\n\n" * 10_000, None, ""),
    ("原文“" * 10_000, None, ""),
])
def test_hostile_markup_is_read_in_one_pass_and_never_crashes(reply, options, answer):
    assert parse_reply(reply, options).answer == answer


@pytest.mark.parametrize("reply, evidence", [
    ('{"answer": "B", "evidence": "-40 degrees is the record."}', "-40 degrees is the record."),
    ('{"answer": "B", "evidence": ["+5% a year"]}', "+5% a year"),
    ("Answer: B\nEvidence:\n- the first line\n* the second line", "the first line the second line"),
])
def test_a_sign_is_part_of_the_quote_and_a_bullet_needs_its_space(reply, evidence):
    """A minus or plus sign before a number is the quote's own text (a fact), not a list bullet; a bullet is a
    marker followed by a space, as markdown writes it."""
    assert parse_reply(reply, ["A", "B", "C", "D"]).evidence == evidence


# Issue 38: a reply is read right or refused, never misread.

@pytest.mark.parametrize(("reply", "options", "answer"), [
    ("Answer: A … wait, actually C", OPTIONS_RAIN, "C"),
    ("答案：A。等等，再看一遍原文，应该是D。", OPTIONS_ZH, "D"),
    ("Answer: B. Hmm, wait — make that C.", OPTIONS_RAIN, "C"),
    ("I'd pick A. Scratch that, it should be B.", OPTIONS_RAIN, "B"),
    ("The answer is the Swiss Alps — sorry, I mean near Rotterdam.", None, "near Rotterdam"),
    ("答案：青藏高原。等一下，应该是上海。", None, "上海"),
    ("Answer: the Swiss Alps. No wait, it's near Rotterdam.", None, "near Rotterdam"),
    ("Answer: the Swiss Alps\n\nHmm, no — the answer is near Rotterdam.", None, "near Rotterdam"),
    ("Answer: A\nCorrection: B", OPTIONS_RAIN, "B"),
    ("答案：C\n不好意思，看错了，应该是B。", OPTIONS_ZH, "B"),
    ("The answer is A, or rather, B.", OPTIONS_RAIN, "B"),
    ("答案是青藏高原，或者说，应该是上海。", None, "上海"),
    ("答案：D\n嗯，其实是C。", OPTIONS_ZH, "C"),
    ("答案：青藏高原\n\n等等，不是，是上海。", None, "上海"),
    ("Answer: the Swiss Alps\n\nWait, no. It's near Rotterdam.", None, "near Rotterdam"),
])
def test_a_self_correction_takes_the_answer_committed_last(reply, options, answer):
    parsed = parse_reply(reply, options)
    assert (parsed.answer, parsed.status) == (answer, "revised")
    assert "the last is taken" in parsed.note


@pytest.mark.parametrize(("reply", "options"), [
    ("Answer: A\nWait, that's wrong.", OPTIONS_RAIN),
    ("答案：A。等等，好像不对。", OPTIONS_ZH),
    ("Answer: near Rotterdam\n\nHmm, let me re-read the passage.", None),
    ('{"answer": "B", "evidence": "It began to rain."}\n\nOops, I should double-check that.', OPTIONS_RAIN),
    ("B\n\nWait, no.", OPTIONS_RAIN),  # an option named on its own line, then taken back
    ("Answer: near Rotterdam\nWait, actually it's mentioned in the third sentence.", None),  # prose is no answer
    ("答案：上海\n不对，应该是因为原文第二句说的。", None),
    ("我选C，但我不太确定。", OPTIONS_ZH),
    ("Answer: A. Wait, that's wrong.", OPTIONS_RAIN),
    ("我的答案是上海。不过我没有把握。", None),
    ("Answer: B\nBut I'm not entirely sure.", OPTIONS_RAIN),
    ("Answer: near Rotterdam\n\nI have doubts about this answer.", None),  # a doubt in any words
    ("The answer is B, though that is probably wrong.", OPTIONS_RAIN),
    ("Answer: B (uncertain)", OPTIONS_RAIN),
    ("答案：C\n\n我对这个答案有些怀疑。", OPTIONS_ZH),
    ("答案是C，不过这大概是错的。", OPTIONS_ZH),
    ("答案是上海。嗯……感觉不太对。", None),
])
def test_an_answer_taken_back_with_none_after_it_is_refused_with_the_reason(reply, options):
    parsed = parse_reply(reply, options)
    assert (parsed.answer, parsed.status) == ("", "failed")
    assert "taken back" in parsed.note and "no answer stated after it" in parsed.note


@pytest.mark.parametrize(("reply", "options", "answer"), [
    ('Answer: B\nEvidence: "Wait, it began to rain."', OPTIONS_RAIN, "B"),  # inside the quote
    ("Answer: B\nThe passage says: \"Hold on, it began to rain.\"", OPTIONS_RAIN, "B"),
    ("答案：C\n解析：原文提到了跑步、吃早饭等等。", OPTIONS_ZH, "C"),  # 等等 meaning "and so on"
    ("Answer: B\nOption A is wrong, the wait was not long.", OPTIONS_RAIN, "B"),
    ("Answer: B\nIt's a short passage about rain.", OPTIONS_RAIN, "B"),  # no retraction: `It's a` corrects nothing
    ("Wait, let me read the passage again. The answer is B.", OPTIONS_RAIN, "B"),  # before any answer
    ("Answer: B\nHold on, let me re-check. Yes, B is correct.", OPTIONS_RAIN, "B"),
    ("答案：上海\n等等，再核对一下……没错，答案还是上海。", None, "上海"),
    ("Answer: B\nHmm, let me reconsider. No, B is still the best answer.", OPTIONS_RAIN, "B"),
    ("答案：C\n解析：原文中对A项的描述不确定。", OPTIONS_ZH, "C"),  # a doubt about an option, not the answer
    ("Answer: B\n\nThe other options are wrong because the passage never mentions them.", OPTIONS_RAIN, "B"),
    ("Answer: B\n\nOption A is incorrect: the passage does not say so.", OPTIONS_RAIN, "B"),
    ("答案：C\n\n其他选项都是错误的，原文没有提到。", OPTIONS_ZH, "C"),
    ("Answer: B\n\nLet me double-check... the answer is still B.", OPTIONS_RAIN, "B"),
    ("答案：C（确认无误）", OPTIONS_ZH, "C"),
    ("Answer: the wrong train\nEvidence: He took the wrong train.", None, "the wrong train"),  # the answer's own words
    ("答案：误会\n证据：这是一场误会。", None, "误会"),
    ("Answer: A. Never make mistakes.", ["Never make mistakes", "Always be late", "Run home", "Buy bread"], "A"),
])
def test_a_retraction_that_takes_nothing_back_changes_nothing(reply, options, answer):
    parsed = parse_reply(reply, options)
    assert (parsed.answer, parsed.status) == (answer, "text"), parsed


@pytest.mark.parametrize(("reply", "options", "answer", "evidence"), [
    ('<think>\nLet me check the passage.\n\n{"answer": "B", "evidence": "It began to rain."}', OPTIONS_RAIN, "B",
     "It began to rain."),
    ('<think>\nCheck each option.\n```json\n{"answer": "B"}\n```\n', OPTIONS_RAIN, "B", ""),
    ("<think>\n先看原文。\n\n答案：上海\n证据：最终在上海注入东海。", None, "上海", "最终在上海注入东海。"),
    ("<think>\n逐一排除。\n答案：B\n证据：\n1. It began to rain.", OPTIONS_RAIN, "B", "It began to rain."),
    ("<think>\nReasoning.\n\n**Final Answer**\n\\boxed{B}", OPTIONS_RAIN, "B", ""),
    ("<think>\nReasoning.\n\nAnswer: B\nExplanation: it rained.", OPTIONS_RAIN, "B", ""),
    ("<think>\n分析：选项C与原文不符。\n\n答案：B\n依据：It began to rain.", OPTIONS_RAIN, "B", "It began to rain."),
    ("<think>\n根据原文，应该是上海。\n\n最终答案：上海\n原文依据：最终在上海注入东海。", None, "上海", "最终在上海注入东海。"),
])
def test_the_final_statement_after_reasoning_left_open_is_read(reply, options, answer, evidence):
    parsed = parse_reply(reply, options)
    assert (parsed.answer, parsed.evidence) == (answer, evidence)
    assert "the final statement after reasoning left open is read" in parsed.note


@pytest.mark.parametrize(("reply", "options"), [
    ('<think>\nA draft {"answer": "B"} and more thinking', OPTIONS_RAIN),  # JSON inside prose
    ("<think>\nAnswer: B\nBut the passage also says he was late, so maybe A", OPTIONS_RAIN),  # prose after it
    ("<think>\nReasoning.\n\nAnswer: B\n\nWait, is that right?", OPTIONS_RAIN),
    ('<think>\n{"answer": "B"}', OPTIONS_RAIN),  # no reasoning before it: nothing is stated after reasoning
    ("<think>\n" + "Answer: B\n" * 5_000, OPTIONS_RAIN),
])
def test_reasoning_left_open_without_a_final_statement_gives_no_answer(reply, options):
    assert (parse_reply(reply, options).answer, parse_reply(reply, options).status) == ("", "failed")


@pytest.mark.parametrize("indicator", [">-", ">", ">+", "|", "|-", "|2", ">-  # folded"])
def test_a_yaml_block_scalar_is_the_lines_under_it(indicator):
    reply = f"answer: near Rotterdam\nevidence: {indicator}\n  It reaches the North Sea\n  near Rotterdam.\nnote: done"
    parsed = parse_reply(reply)
    assert (parsed.answer, parsed.evidence) == ("near Rotterdam", "It reaches the North Sea near Rotterdam.")
    assert parse_reply("```yaml\nanswer: |-\n  B\nevidence: >\n  It began\n  to rain.\n```", OPTIONS_RAIN).evidence \
        == "It began to rain."


@pytest.mark.parametrize(("reply", "options", "answer", "evidence"), [
    ("<p><strong>答案：</strong>C</p><p><strong>证据：</strong>吃完早饭后，他骑自行车去学校。</p>", OPTIONS_ZH, "C",
     "吃完早饭后，他骑自行车去学校。"),
    ("<p><strong>Answer:</strong> near <em>Rotterdam</em></p>\n<p><strong>Evidence:</strong> &quot;It reaches the "
     "North Sea &amp; more.&quot;</p>", None, "near Rotterdam", "It reaches the North Sea & more."),
    ("<table><tr><th>Answer</th><th>Evidence</th></tr><tr><td>B</td><td>It began to rain.</td></tr></table>",
     OPTIONS_RAIN, "B", "It began to rain."),
    ("<table>\n<tr><td>答案</td><td>C</td></tr>\n<tr><td>证据</td><td>他骑自行车去学校。</td></tr>\n</table>", OPTIONS_ZH,
     "C", "他骑自行车去学校。"),
    ("<h3>Answer</h3><p>B</p><h3>Evidence</h3><blockquote>It began to rain.</blockquote>", OPTIONS_RAIN, "B",
     "It began to rain."),
    ("<ul><li>Answer: B</li><li>Evidence: It began to rain.</li></ul>", OPTIONS_RAIN, "B", "It began to rain."),
    ('{"answer": "B", "evidence": "It began to <b>rain</b>."}', OPTIONS_RAIN, "B", "It began to <b>rain</b>."),
])
def test_html_replies_are_read_as_the_text_they_show(reply, options, answer, evidence):
    """Tags are dropped or made line breaks, entities decoded; a JSON string is the model's own text, kept."""
    parsed = parse_reply(reply, options)
    assert (parsed.answer, parsed.evidence) == (answer, evidence)


@pytest.mark.parametrize(("reply", "options", "answer"), [
    ("Among options A, B, C and D, the correct one is C.", OPTIONS_RAIN, "C"),
    ("The right one would be B.", OPTIONS_RAIN, "B"),
    ("The best one is B, since it mentions rain.", OPTIONS_RAIN, "B"),
    ('answer: "B"', OPTIONS_RAIN, "B"),
    ("The supporting evidence is: \"It began to rain.\"\nAnswer: B", OPTIONS_RAIN, "B"),
    ("四个选项中只有B符合原文。", OPTIONS_RAIN, "B"),
    ("Answer: B\n\nFrom the passage: \"It began to rain.\"", OPTIONS_RAIN, "B"),
    ("B. It began to rain\n\nThis is supported by the sentence: \"It began to rain.\"", OPTIONS_RAIN, "B"),
    ("Answer: B\n\nExplanation: According to the passage, \"It began to rain.\"", OPTIONS_RAIN, "B"),
    ("答：B\n依据：原文第二句“It began to rain.”", OPTIONS_RAIN, "B"),
    ("**答案：** B\n\n**原文引用：** “It began to rain.”", OPTIONS_RAIN, "B"),
    ("答案：B\n\n证据——“It began to rain.”", OPTIONS_RAIN, "B"),
    ("## 答案\nB\n\n## 引文\n“It began to rain.”", OPTIONS_RAIN, "B"),
])
def test_more_answer_lines_are_read(reply, options, answer):
    parsed = parse_reply(reply, options)
    assert parsed.answer == answer, parsed
    assert not any(word in reply for word in ("vidence", "passage", "sentence", "依据")) \
        or parsed.evidence == "It began to rain."


@pytest.mark.parametrize(("evidence", "read"), [
    ("(3)", "(3)"), ("（3）", "（3）"), ("(2), (3)", "(2), (3)"), ("（3）、（5）", "（3）、（5）"), ("(3)(4)", "(3)(4)"),
    ("3、4", "3、4"), ("(1) It began to rain.", "It began to rain."), ("(1)它发源于青藏高原", "它发源于青藏高原"),
    ("1、它发源于青藏高原", "它发源于青藏高原"), ("1. It began to rain.", "It began to rain."),
])
def test_a_number_is_a_list_marker_only_before_an_items_text(evidence, read):
    assert parse_reply(json.dumps({"answer": "x", "evidence": evidence}, ensure_ascii=False)).evidence == read


def test_a_reply_that_cites_by_number_keeps_a_leading_number_in_parentheses():
    reply = '{"answer": "x", "evidence": "(3) It reaches the sea.\\n(4) It flows north."}'
    assert parse_reply(reply).evidence == "It reaches the sea. It flows north."
    assert parse_reply(reply, citing=True).evidence == "(3) It reaches the sea. (4) It flows north."
    labelled = "Answer: x\nEvidence:\n(3) It reaches the sea."
    assert (parse_reply(labelled).evidence, parse_reply(labelled, citing=True).evidence) == (
        "It reaches the sea.", "(3) It reaches the sea.")


@pytest.mark.parametrize(("reply", "options", "answer"), [
    ("Wait, " * 5_000 + "Answer: B", OPTIONS_RAIN, "B"),
    ("Answer: A. Wait, actually B. " * 2_000, OPTIONS_RAIN, "B"),
    ("答案：A。等等，" * 2_000, OPTIONS_RAIN, ""),
    ("“等等，”" * 5_000 + "答案：B", OPTIONS_RAIN, "B"),
    ("<p><b>" * 5_000 + "Answer: B", OPTIONS_RAIN, "B"),
    ("answer: B\nevidence: >-\n" + "  x\n" * 5_000, OPTIONS_RAIN, "B"),
    ("<think>\n" + "x\n" * 50_000 + "\nAnswer: B", OPTIONS_RAIN, "B"),
])
def test_self_corrections_html_yaml_and_open_reasoning_never_crash(reply, options, answer):
    """Read without a traceback (`python benchmarks/bench_llm.py --parse-only` shows each costs linear time)."""
    assert parse_reply(reply, options).answer == answer
