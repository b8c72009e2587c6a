"""The official CMRC 2018 and SQuAD v1.1 answer metrics, edge case by edge case.

Every expected value was worked out by hand and agrees with the official scripts
(cmrc2018_evaluate.py v6 and evaluate-v1.1.py) run on the same input.
"""

import pytest

from helpers.common import needs_punkt
from expmrc.metrics.cmrc2018 import (
    cmrc2018_exact_match, cmrc2018_f1, cmrc2018_normalize, cmrc2018_segments, longest_common_run,
)
from expmrc.metrics.squad import squad_exact_match, squad_f1, squad_normalize


def f1_of(common: int, pred_len: int, ref_len: int) -> float:
    p, r = common / pred_len, common / ref_len
    return 2 * p * r / (p + r)


# ---- CMRC 2018: pure Chinese and punctuation never reach NLTK, so these need no Punkt data ----

@pytest.mark.parametrize("prediction, references, em, f1", [
    ("“北京”。", ["北京"], 1.0, 1.0),                  # full-width quotes and full stop are ignored
    ("（北京）", ["北京"], 1.0, 1.0),
    ("《北京》、", ["北京"], 1.0, 1.0),
    ("，", ["。"], 1.0, 0.0),                          # punctuation-only sides: EM 1, F1 0
    ("", ["。"], 1.0, 0.0),                            # an empty prediction matches a punctuation-only answer
    ("北京", ["。"], 0.0, 0.0),
    ("", ["北京"], 0.0, 0.0),                          # empty prediction
    ("   ", ["北京"], 0.0, 0.0),                       # whitespace only is empty after strip
    ("  北京 ", ["北京"], 1.0, 1.0),                   # surrounding whitespace is stripped
    ("北京市", ["北京", "北京市政府"], 0.0, 0.8),        # max over references: 0.8 against "北京", 0.75 the other
    ("北京。", ["上海", "北京"], 1.0, 1.0),
    ("北上京", ["北京"], 0.0, f1_of(1, 3, 2)),          # contiguous run, not subsequence: 0.4, not 0.8
])
def test_cmrc2018_chinese_and_punctuation(prediction, references, em, f1):
    assert cmrc2018_exact_match(prediction, references) == em
    assert cmrc2018_f1(prediction, references) == pytest.approx(f1)


def test_cmrc2018_punctuation_list_is_the_scripts():
    assert cmrc2018_normalize(" A-B:C_D*E^F/G\\H~I`J+K=L ") == "abcdefghijkl"
    assert cmrc2018_normalize("，。：？！“”；’《》·、「」（）－～『』") == ""
    # not on the list: ASCII , . ? ! ' " ( ) %, the opening quote ‘, 【】, the em dash and a lone …
    assert cmrc2018_normalize("a,b.c?d!e'f\"g(h)i%") == "a,b.c?d!e'f\"g(h)i%"
    assert cmrc2018_normalize("‘【—…") == "‘【—…"
    assert cmrc2018_exact_match("北京……", ["北京"]) == 0.0     # "……" in the list never matches one character
    assert cmrc2018_exact_match("‘北京’", ["北京"]) == 0.0


def test_cmrc2018_whitespace_inside_counts_for_em_only():
    assert cmrc2018_exact_match("北 京", ["北京"]) == 0.0
    assert cmrc2018_exact_match("2008年", ["2008 年"]) == 0.0


def test_cmrc2018_full_width_letters_are_lowercased_not_folded():
    assert cmrc2018_normalize("ＡＢＣ") == "ａｂｃ"
    assert cmrc2018_exact_match("ＡＢＣ", ["abc"]) == 0.0
    assert cmrc2018_exact_match("ＡＢＣ", ["ａｂｃ"]) == 1.0


def test_cmrc2018_em_with_no_references_is_zero_and_f1_refuses():
    assert cmrc2018_exact_match("北京", []) == 0.0
    with pytest.raises(ValueError):
        cmrc2018_f1("北京", [])


def test_longest_common_run():
    assert longest_common_run(("a", "b", "c", "d"), ("x", "b", "c", "y", "d")) == 2
    assert longest_common_run((), ("a",)) == 0
    assert longest_common_run(("a", "a"), ("a", "a", "a")) == 2


# ---- CMRC 2018: runs of non-CJK text go through NLTK's word_tokenize ----

@needs_punkt
@pytest.mark.parametrize("text, tokens", [
    ("iPhone 6手机", ("iphone", "6", "手", "机")),
    ("北 京", ("北", "京")),                           # the space between CJK characters vanishes
    ("光荣和ω-force", ("光", "荣", "和", "ωforce")),   # a skipped "-" does not end the run
    ("Mr. Smith", ("mr.", "smith")),
    ("【北京】", ("【", "北", "京", "】")),
    ("ＡＢＣ", ("ａｂｃ",)),
])
def test_cmrc2018_segments(text, tokens):
    assert cmrc2018_segments(text) == tokens


@needs_punkt
@pytest.mark.parametrize("prediction, references, em, f1", [
    ("iPhone 6手机", ["iphone 6 手机"], 0.0, 1.0),          # mixed text; the inner space matters for EM only
    ("苹果公司的iPhone", ["iPhone"], 0.0, f1_of(1, 6, 1)),   # 2/7
    ("光荣和ω-force", ["光荣和ω force"], 0.0, f1_of(3, 4, 5)),  # 2/3
    ("New York", ["new york"], 1.0, 1.0),                   # English case is ignored
    ("NEW YORK", ["New York"], 1.0, 1.0),
    ("new york", ["newyork"], 0.0, 0.0),
    ("北 京", ["北京"], 0.0, 1.0),                          # whitespace inside an answer
    ("2008年", ["2008 年"], 0.0, 1.0),
    ("‘北京’", ["北京"], 0.0, f1_of(2, 3, 2)),              # "‘" is not on the list: a token of its own
    ("【北京】", ["北京"], 0.0, f1_of(2, 4, 2)),
    ("北京……", ["北京"], 0.0, f1_of(2, 3, 2)),
    ("ＡＢＣ", ["abc"], 0.0, 0.0),                           # full-width letters are other tokens
    ("Mr. Smith", ["mr smith"], 0.0, f1_of(1, 2, 2)),      # ASCII "." stays: "mr." is not "mr"
])
def test_cmrc2018_mixed_text(prediction, references, em, f1):
    assert cmrc2018_exact_match(prediction, references) == em
    assert cmrc2018_f1(prediction, references) == pytest.approx(f1)


@needs_punkt
@pytest.mark.parametrize("prediction, reference, em, f1", [
    (2018, "2018", 1.0, 1.0),          # non-strings are scored as str(value), like the script
    (None, "none", 1.0, 1.0),
    (True, "true", 1.0, 1.0),
    (1.0, "1", 0.0, 0.0),              # str(1.0) == "1.0"
    (["北京"], "北京", 0.0, f1_of(2, 6, 2)),   # "['北京']": [ ' 北 京 ' ]
])
def test_cmrc2018_non_string_predictions(prediction, reference, em, f1):
    assert cmrc2018_exact_match(prediction, [reference]) == em
    assert cmrc2018_f1(prediction, [reference]) == pytest.approx(f1)


# ---- SQuAD v1.1 ----

@pytest.mark.parametrize("text, normalized", [
    ("The Eiffel Tower", "eiffel tower"),
    ("an apple a day", "apple day"),
    ("Theater", "theater"),              # articles only as whole words
    ("The A-Team", "ateam"),             # punctuation goes first, so "a-team" is one word
    ("the.", ""),
    ("Denver Broncos!", "denver broncos"),
    ("rock'n'roll", "rocknroll"),
    ("“Hello”", "“hello”"),              # only ASCII punctuation is removed
    ("  New \t York\n", "new york"),
    ("théa", "théa"),                    # \b is Unicode-aware: no article inside "théa"
])
def test_squad_normalize(text, normalized):
    assert squad_normalize(text) == normalized


@pytest.mark.parametrize("prediction, references, em, f1", [
    ("the Eiffel Tower", ["Eiffel Tower"], 1.0, 1.0),               # articles
    ("Denver Broncos.", ["denver broncos"], 1.0, 1.0),              # punctuation
    ("PARIS", ["paris"], 1.0, 1.0),                                 # case
    ("  New   York\n", ["new york"], 1.0, 1.0),                     # whitespace
    ("newyork", ["new york"], 0.0, 0.0),
    ("“Hello”", ["hello"], 0.0, 0.0),
    ("", ["Paris"], 0.0, 0.0),                                      # empty prediction
    ("", ["the"], 1.0, 0.0),                                        # both empty: EM 1, F1 0
    ("Denver Broncos", ["Broncos", "Denver Broncos team", "Carolina"], 0.0, 0.8),   # several references
    ("Denver Broncos", ["Carolina", "the Denver Broncos"], 1.0, 1.0),
    ("the cat the cat", ["cat"], 0.0, f1_of(1, 2, 1)),              # a word counts as often as on both sides
    ("Broncos", ["Denver Broncos"], 0.0, f1_of(1, 1, 2)),
])
def test_squad_metrics(prediction, references, em, f1):
    assert squad_exact_match(prediction, references) == em
    assert squad_f1(prediction, references) == pytest.approx(f1)


@pytest.mark.parametrize("prediction, reference, em", [(2018, "2018", 1.0), (1.0, "1", 0.0), (True, "true", 1.0)])
def test_squad_scores_non_strings_as_their_text(prediction, reference, em):
    # the official script stops on them (it calls .lower()); the leaderboard scores str(value)
    assert squad_exact_match(prediction, [reference]) == em
    assert squad_f1(prediction, [reference]) == em


def test_squad_f1_needs_references():
    with pytest.raises(ValueError):
        squad_f1("x", [])
