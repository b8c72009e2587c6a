"""The leaderboard metric's tokenization, normalization and F1, written down case by case."""

import pytest

from helpers.common import needs_punkt
from expmrc.metrics.leaderboard import exact_match, f1, score_tokens, token_f1, tokenize

pytestmark = needs_punkt


@pytest.mark.parametrize("text, tokens", [
    ("北京 is the capital.", ["北", "京", "is", "the", "capital", "."]),   # each CJK character alone
    ("中国，北京：（首都）", ["中", "国", "，", "北", "京", "：", "（", "首", "都", "）"]),
    ('He said "yes"', ["He", "said", "``", "yes", "''"]),                  # NLTK's quote tokens
    ("等等……好", ["等", "等", "……", "好"]),                                  # "……" is not split char by char
    ("等等…好", ["等", "等", "…", "好"]),
    ("wait…then", ["wait…then"]),                                          # a lone … is not split off
    ("Mr. Smith paid $3.50 on Jan. 5.", ["Mr.", "Smith", "paid", "$", "3.50", "on", "Jan.", "5", "."]),
    ("state-of-the-art 1:30", ["state", "-", "of", "-", "the", "-", "art", "1", ":", "30"]),
    ("  padded  ", ["padded"]),
    ("", []),
    ("１２３ＡＢＣ", ["１２３ＡＢＣ"]),                                          # full-width Latin is not CJK
])
def test_tokenize(text, tokens):
    assert tokenize(text) == tokens


@pytest.mark.parametrize("text, tokens", [
    ("The cat sat on the mat", ("the", "cat", "sat", "on", "mat")),      # "The" is kept (case-sensitive)
    ("the The THE a A an An", ("the", "the", "a", "an")),
    ('He said "yes"', ("he", "said", "``", "yes", "''")),                # multi-character quotes stay
    ("等等……好", ("等", "等", "……", "好")),                                 # "……" token stays
    ("等等…好", ("等", "等", "好")),                                        # a "…" token is dropped
    ("Mr. Smith paid $3.50 on Jan. 5, e.g. today.", ("mr.", "smith", "paid", "3.50", "on", "jan.", "5", "e.g", "today")),
    ("中国，北京：（首都）「好」", ("中", "国", "北", "京", "首", "都", "好")),   # full-width punctuation dropped
    ("state-of-the-art a/b", ("state", "of", "art", "b")),
    ("--", ()),
    ("...", ("...",)),                                                    # multi-character punctuation stays
    ("100%", ("100",)),
    ("Ａ。", ("ａ",)),
    ("“引号”", ("引", "号")),
])
def test_normalized_tokens(text, tokens):
    assert score_tokens(text) == tokens


def test_numbers_are_scored_as_their_str():
    assert score_tokens(1990) == ("1990",)
    assert score_tokens(2.5) == ("2.5",)
    assert f1(1990, ["in 1990"]) == pytest.approx(2 * 1 * 0.5 / 1.5)


def test_f1_bag_of_tokens_and_max_over_references():
    assert f1("the cat sat", ["cat sat down"]) == pytest.approx(2 * 1.0 * (2 / 3) / (1 + 2 / 3))
    assert f1("cat cat", ["cat"]) == pytest.approx(2 * 0.5 * 1.0 / 1.5)   # multiset overlap counts once
    assert f1("Melbourne", ["Sydney", "Melbourne city", "melbourne"]) == 1.0
    assert f1("北京大学", ["北京"]) == pytest.approx(2 * 0.5 * 1.0 / 1.5)


def test_f1_empty_sides():
    assert token_f1((), ()) == 1.0
    assert f1("the", ["a"]) == 1.0          # both normalize to nothing
    assert f1("", ["Melbourne"]) == 0.0
    assert f1("Melbourne", ["。"]) == 0.0
    assert f1("x", ["", "x"]) == 1.0


def test_exact_match_uses_normalized_tokens():
    assert exact_match("The Melbourne", ["melbourne"]) == 0.0   # "The" stays, so not equal
    assert exact_match("the Melbourne.", ["melbourne"]) == 1.0
