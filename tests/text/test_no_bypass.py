"""Issue 38: no bypass of "only form is repaired", and honest form stays form. A framing that is passage text is
compared like the rest of the quote; a number's sign, scale or currency and a negation just outside a quote's edge
count as inside it; citation marks, HTML and bracketed ellipses are form; a swap of ordinary words is `reworded`,
never `altered` (Chinese names and units are recognised without taking common words for them). English and Chinese,
written for these tests."""

import pytest

from expmrc.text.facts import chinese_names
from expmrc.text.grounding import ALTERED, EXACT, NORMALIZED, REWORDED, VERBATIM, ground_text

NEWS = ("Revenue grew 3.2% last year. The ticket cost $45 at the door, and the hall held 102 million visitors. "
        'Jane Smith, leader of Ansell, said, "We will win the next election easily." The team tried to finish '
        "early, which they did not. Not all of the students passed the test. It rained. No one came to the party.")
SCHOOL = ("小丽说：“我明天不去上学了。”因为下雨，比赛推迟了。这项工程耗资3亿元，产量增长了15%。我们都不同意这个方案。"
          "他答应要来，结果却没有。")


def changes(found):
    return [(c.quote, c.passage, c.kind) for c in found.changes]


# (passage, quote, the changes it must list): a framing that is passage text, changed, is compared
FRAMINGS = [
    (NEWS, 'Jane Sleep Scotland, leader of Ansell, said, "We will win the next election easily."',
     [("Sleep Scotland", "Smith", "name")]),
    (NEWS, 'Jane Smith, leader of Ansell, said: "We will not win the next election easily."', [("not", "", "negation")]),
    (SCHOOL, "小霞说：“我明天不去上学了。”", [("霞", "丽", "word")]),
]


@pytest.mark.parametrize("passage, quote, listed", FRAMINGS)
def test_a_framing_that_is_passage_text_is_compared_like_the_rest_of_the_quote(passage, quote, listed):
    found = ground_text(passage, quote)
    assert found.status not in VERBATIM and changes(found) == listed, found
    assert passage[found.start:found.end].startswith(("Jane", "小丽"))  # it covers the framing's passage text


def test_a_framing_taken_from_elsewhere_in_the_passage_is_compared():
    story = ("The first story about a monster in Loch Ness was told over 1,500 years ago. Today the lake is famous: "
             "there are a lot of tourists there.")
    stitched = "The first story about a monster in Loch Ness was told over 1,500 years ago: there are a lot of tourists"
    assert ground_text(story, stitched).status not in VERBATIM  # names `story`, but it is passage text
    bases = 'The city has two US Navy bases. Its people are called "Jacksonvillians" or "Jaxsons".'
    assert ground_text(bases, 'The two US Navy bases, "Jacksonvillians" or "Jaxsons".').status not in VERBATIM
    name = 'The old name was "Chinggis". It is likely that the 13th century form was different.'
    assert ground_text(name, 'It is likely that the 13th century, "Chinggis".').status not in VERBATIM  # no tag
    # the passage's speech tag after the quote, put before it by the model, is its own framing
    tag = 'Tom was late. "I helped an old woman cross the road," Tom said. His teacher smiled.'
    assert ground_text(tag, 'Tom said, "I helped an old woman cross the road."').status in VERBATIM
    assert ground_text(tag, 'Mary said, "I helped an old woman cross the road."').status == ALTERED
    tagged = 'Tom was late. "I helped an old woman cross the road," Mrs. Green said. His teacher smiled.'
    assert ground_text(tagged, 'Mrs. Green said: "I helped an old woman cross the road."').status in VERBATIM


def test_an_unchanged_passage_framing_is_form_and_a_framing_of_the_model_is_left_out():
    speech = ground_text(NEWS, 'Jane Smith, leader of Ansell, said: “We will win the next election easily.”')
    assert speech.status == NORMALIZED and NEWS[speech.start:speech.end].startswith("Jane Smith")
    said = ground_text(SCHOOL, "小丽说:「我明天不去上学了。」")
    assert said.status == NORMALIZED and SCHOOL[said.start:said.end].startswith("小丽说")
    own = ground_text(NEWS, 'The passage says: "We will win the next election easily."')
    assert own.status == EXACT and NEWS[own.start:own.end] == "We will win the next election easily."
    assert ground_text(SCHOOL, "原文写道：“我明天不去上学了。”").status == EXACT


# (passage, quote, the change): a sign, scale or currency of a number, or a negation, just outside the quote's edge
EDGES = [
    (NEWS, "Revenue grew 3.2", ("3.2", "3.2%", "number")),                                     # % at the end
    (NEWS, "45 at the door, and the hall held", ("45", "$45", "number")),                      # $ at the start
    (NEWS, "and the hall held 102", ("102", "102 million", "number")),                          # a scale word
    (NEWS, "The team tried to finish early, which they did.", ("did", "did not", "negation")),  # a final negation
    (NEWS, "all of the students passed the test.", ("all", "Not all", "negation")),             # an initial one
    (SCHOOL, "这项工程耗资3亿", ("3亿", "3亿元", "number")),                                 # a currency character
    (SCHOOL, "产量增长了15", ("15", "15%", "number")),
    (SCHOOL, "他答应要来，结果却", ("却", "却没", "negation")),
    (SCHOOL, "同意这个方案", ("同", "不同", "negation")),
]


@pytest.mark.parametrize("passage, quote, change", EDGES)
def test_a_sign_or_negation_left_just_outside_the_quote_is_a_changed_fact(passage, quote, change):
    found = ground_text(passage, quote)
    assert found.status == ALTERED and change in changes(found), found
    assert all(passage[c.start:c.end] == c.passage for c in found.changes)


def test_a_negation_ending_a_sentence_inside_the_quote_is_a_fact_and_the_next_sentence_is_no_negation():
    inside = ground_text(NEWS, "The team tried to finish early, which they did. Not all of the students passed")
    assert inside.status == ALTERED and "negation" in {c.kind for c in inside.changes}
    assert ground_text(NEWS, "It rained.").status == EXACT  # `No one came` starts the next sentence
    assert ground_text(SCHOOL, "因为下雨，比赛推迟了。").status == EXACT


def test_a_framing_starting_right_after_a_negation_changes_a_fact():
    passage = "他问妇女。妇女不同意：“我们何不邀请成功呢？”然后走了。"
    found = ground_text(passage, "同意：“我们何不邀请成功呢？”")
    assert found.status == ALTERED and changes(found) == [("同", "不同", "negation")]
    assert ground_text(passage, "妇女不同意:“我们何不邀请成功呢？”").status == NORMALIZED


def test_a_span_answer_is_not_cut_off_from_its_sign():
    found = ground_text(NEWS, "3.2", answer=True)
    assert found.status == EXACT and NEWS[found.start:found.end] == "3.2"


def test_a_quote_starting_or_ending_inside_a_word_is_not_that_word():
    passage = "Prior to European settlement, the area was inhabited by many peoples, collectively known as the Koori."
    assert ground_text(passage, "T, the area was inhabited by many peoples, collectively known as the Koori."
                       ).status not in VERBATIM


@pytest.mark.parametrize("mark", ["[1]", " [1]", " [1][3]", " [1, 2]", " (S3)", " [source 2]", " (sentence 4)",
                                  "【1】", "^1", "[^2]", " [S3]"])
def test_a_citation_mark_added_after_around_or_before_a_quote_is_form(mark):
    quote = "Revenue grew 3.2% last year."
    for cited in (quote + mark, quote[:-1] + mark + ".", f'"{quote}"{mark}', f"{mark.strip()} {quote}"):
        found = ground_text(NEWS, cited)
        assert found.status in VERBATIM and NEWS[found.start:found.end] == quote, (cited, found)
    assert ground_text(SCHOOL, "因为下雨，比赛推迟了。" + mark.strip()).status == EXACT
    both = ground_text(NEWS, f"It rained.{mark} No one came to the party.{mark}")
    assert both.status == EXACT and NEWS[both.start:both.end] == "It rained. No one came to the party."


def test_a_mark_the_passage_holds_is_compared_like_any_text():
    passage = "The first rule (3) was written in 1990. The second rule was written later."
    assert ground_text(passage, "The first rule (3) was written in 1990.").status == EXACT
    assert ground_text(passage, "The second rule was written later (4).").status == EXACT  # no such mark: added
    assert ground_text(passage, "The second rule was written later (3).").status == ALTERED  # a number it holds
    assert ground_text(passage, "The first rule (4) was written in 1990.").status not in VERBATIM


@pytest.mark.parametrize("quote", [
    "Jane Smith, leader of Ansell, said, &quot;We will win the next election easily.&quot;",
    "<p>The ticket cost $45 at the door, and the hall held 102 million visitors.</p>",
    "The ticket cost <b>$45</b> at the door,&nbsp;and the hall held 102 million visitors.",
    "It rained.<br>No one came to the party.",
    "&amp;quot;It rained.&amp;quot;",
])
def test_html_entities_and_tags_are_form(quote):
    found = ground_text(NEWS, quote)
    assert found.status == NORMALIZED and not found.changes, found


def test_html_the_passage_holds_is_kept():
    passage = "《<nowiki>结他杂志</nowiki>》于1983年举办了比赛。"
    assert ground_text(passage, "《<nowiki>结他杂志</nowiki>》于１９８３年举办了比赛").status in VERBATIM


@pytest.mark.parametrize("passage, quote", [
    (NEWS, "The ticket cost $45 [...] held 102 million visitors."),
    (NEWS, "The ticket cost $45 […] held 102 million visitors."),
    (NEWS, "The ticket cost $45 (…) held 102 million visitors."),
    (SCHOOL, "这项工程耗资3亿元（……）增长了15%。"),
    (SCHOOL, "这项工程耗资3亿元[…]增长了15%。"),
])
def test_a_bracketed_ellipsis_is_form(passage, quote):
    assert ground_text(passage, quote).status == EXACT


def test_a_bracketed_ellipsis_standing_for_a_negation_changes_a_fact():
    found = ground_text(NEWS, "The team tried to finish early, which they did [...]. Not all of the students passed")
    assert found.status != EXACT
    assert ground_text(SCHOOL, "我们都（……）同意这个方案").status == ALTERED


# (passage, quote, the change): ordinary words swapped, next to a name or a number: reworded, never altered
SYNONYMS = [
    ("由于长向相似于罗密·施奈德，她将参与该片的演出。", "因为长向相似于罗密·施奈德，她将参与该片的演出。", ("因为", "由于")),
    ("该剧从2009年4月14日开始，到2009年6月，于每周星期二播出。", "该剧从2009年4月14日起初，到2009年6月，于每周星期二播出。",
     ("起初", "开始")),
    ("特别肥胖的人一开始选择一些简单的运动来做。", "特别肥胖的人一起初选择一些简单的运动来做。", ("起初", "开始")),
    ("One important rock found during the program on the moon is dubbed the Genesis Rock by the crew.",
     "One significant rock found during the program on the moon is dubbed the Genesis Rock by the crew.",
     ("significant", "important")),
    ("Most people read for two main reasons, pleasure or knowledge.",
     "Most people read for two primary reasons, pleasure or knowledge.", ("primary", "main")),
    ("There are rights of children: Children have the right to play and to rest after school every day.",
     "Kids have the right to play and to rest after school every day.", ("Kids", "Children")),
]


@pytest.mark.parametrize("passage, quote, change", SYNONYMS)
def test_a_synonym_next_to_a_name_or_number_is_reworded(passage, quote, change):
    found = ground_text(passage, quote)
    assert found.status == REWORDED and changes(found) == [(*change, "word")], found


def test_units_and_dotted_names_are_still_facts():
    cost = "The final cost was 102 million Australian dollars, paid largely by a state lottery."
    assert changes(ground_text(cost, "The final cost was 102 million Australian euros, paid largely by a state "
                                     "lottery.")) == [("euros", "dollars", "number")]
    area = "流域面积约180万平方公里，学校目前共有教职工两万余人。"
    assert changes(ground_text(area, "流域面积约180万平方英里，学校目前共有教职工两万余人。")) == [("英", "公", "number")]
    assert changes(ground_text(area, "流域面积约180万平方公里，学校目前共有教职工两万余位。")) == [("位", "人", "number")]
    text = "和奥斯卡·罗伯特森等人成为了队友，由莱特那·维特莫在宾夕法尼亚大学创立。"
    assert [text[a:b] for a, b in chinese_names(text) if "·" in text[a:b]] == ["奥斯卡·罗伯特森", "莱特那·维特莫"]
    assert changes(ground_text(text, "和奥斯卡·罗伯特林等人成为了队友，由莱特那·维特莫在宾夕法尼亚大学创立。")) == [
        ("林", "森", "name")]


STITCHED = ("大家都知道不应该让老实人吃亏。另一种是“修来”的老实。这种人生性不憨，头脑也不笨，是非观念明确。"
            "那么，怎么扭转这一局面呢?领导应更加关注老实人。领导的价值取向对一个单位的影响是很大的。")


@pytest.mark.parametrize("quote, verbatim", [
    ("这种人生性不憨，?领导应更加关注老实人。", False),  # a clause cut mid-sentence, then another sentence
    ("这种人生性不憨。领导应更加关注老实人。", False),
    ("Revenue grew 3.2%. No one came to the party.", False),
    ("这种人生性不憨，头脑也不笨，是非观念明确。领导应更加关注老实人。", True),  # two whole sentences, apart
    ("另一种是“修来”的老实。领导应更加关注老实人。", True),
    ("Revenue grew 3.2% last year. No one came to the party.", True),
])
def test_a_sentence_end_the_passage_does_not_have_joins_two_texts_never_replaced(quote, verbatim):
    """A quote of two passage sentences from apart is verbatim; a sentence of it cut off where the passage goes on
    and closed by a terminator of the model's is a stitch (held-out seed 6, C3 m13-102-0), never passage text."""
    passage = STITCHED if "。" in quote else NEWS
    assert (ground_text(passage, quote).status in VERBATIM) is verbatim


def test_a_framing_that_runs_into_a_later_occurrence_of_the_quote_is_passage_text():
    """The quoted text stands twice in the passage; the framing is passage text before the second one, so it is
    compared (held-out seed 7, RACE+ 079c6078-2), while a framing naming its source stays the model's own."""
    passage = ("Not many people live in “The Centre”. Every morning she calls each student on the radio. When all "
               "students answer, lessons begin. There are no schools with desks and no teachers in “The Centre”.")
    assert ground_text(passage, "When all students answer, desks and no teachers in “The Centre”.").status \
        not in VERBATIM
    assert ground_text(passage, "There are no schools with desks and no teachers in “The Centre”.").status == EXACT
    assert ground_text(passage, "The passage says: “The Centre”.").status in VERBATIM
