"""The one text-location module: its policies agree where they must, and each caller's rule holds."""

import pytest
from hypothesis import assume, given, settings, strategies as st

from expmrc.text.locate import (POLICIES, Hint, choose, find, locate_answer, locate_evidence, normalized,
                                occurrences, token_occurrences)

# small alphabets make repeats (several occurrences) common; spaces, full-width marks and CJK included
ALPHABET = st.sampled_from(list("aab  .,，。A好"))
TEXT = st.text(ALPHABET, min_size=1, max_size=40)


def needle_of(passage, data):
    """A substring of `passage` drawn by hypothesis."""
    start = data.draw(st.integers(0, len(passage) - 1))
    end = data.draw(st.integers(start + 1, len(passage)))
    return start, passage[start:end]


def test_every_policy_is_registered_by_name():
    assert {"offset", "verbatim", "whitespace", "normalized", "fuzzy"} <= set(POLICIES)


@settings(max_examples=300, deadline=None)
@given(passage=TEXT, data=st.data())
def test_a_verbatim_substring_is_found_by_every_policy_at_an_occurrence(passage, data):
    start, text = needle_of(passage, data)
    assume(text.strip())
    verbatim = occurrences(passage, text)
    assert (start, start + len(text)) in verbatim
    assert all(passage[a:b] == text for a, b in verbatim)
    # the offset policy agrees with the verbatim one exactly where the offset is an occurrence
    assert find(passage, text, ("offset",), Hint(start=start)).span == (start, start + len(text))
    # whitespace-tolerant matching finds a text found verbatim, no later than its first occurrence, and only
    # stretches that differ from it in whitespace alone
    tolerant = [span for span, _ in POLICIES["whitespace"](passage, text, Hint())]
    assert tolerant and tolerant[0][0] <= verbatim[0][0] + len(text) - len(text.lstrip())
    assert all(passage[a:b].split() == text.split() for a, b in tolerant)
    # normalized matching finds a span that normalizes to the same text
    key = normalized(text)[0]
    if key:
        spans = [span for span, _ in POLICIES["normalized"](passage, text, Hint())]
        assert spans and all(normalized(passage[a:b])[0] == key for a, b in spans)


@settings(max_examples=200, deadline=None)
@given(passage=TEXT, data=st.data())
def test_the_first_policy_that_finds_wins_and_choosing_respects_the_hint(passage, data):
    start, text = needle_of(passage, data)
    found = find(passage, text, ("verbatim", "whitespace", "normalized"))
    assert found.policy == "verbatim" and found.span == occurrences(passage, text)[0]
    near = data.draw(st.integers(0, len(passage)))
    chosen = find(passage, text, ("verbatim",), Hint(near=near)).span
    assert abs(chosen[0] - near) == min(abs(a - near) for a, _ in occurrences(passage, text))
    holding = find(passage, text, ("verbatim",), Hint(holding=(start, start))).span
    assert holding[0] <= start <= holding[1]


@settings(max_examples=200, deadline=None)
@given(passage=TEXT, data=st.data())
def test_training_labels_match_the_offset_and_nearest_rules(passage, data):
    start, text = needle_of(passage, data)
    assume(text.strip())
    assert locate_answer(passage, text, start) == ((start, start + len(text)), False)
    wrong = data.draw(st.integers(0, len(passage)))
    span, moved = locate_answer(passage, text, wrong)
    assert passage[span[0]:span[1]] == text and moved == (passage[wrong:wrong + len(text)] != text)
    if text == text.strip():  # evidence is stripped: only then is the answer's own span an occurrence of it
        assert locate_evidence(passage, [text], (start, start + len(text))) == ((start, start + len(text)), "found")
    evidence, status = locate_evidence(passage, [text], (wrong, wrong))
    nearest = choose(occurrences(passage, text.strip()), Hint(holding=(wrong, wrong), near=wrong))
    assert status == "found" and evidence == nearest


def test_locating_rules_worked_through():
    passage = "Paris is big. Lyon is  near\nParis. Paris again."
    assert locate_evidence(passage, ["Lyon is near Paris."]) == ((14, 34), "repaired")
    assert locate_evidence(passage, ["nope", "Paris"], answer=(28, 33)) == ((28, 33), "found")
    assert locate_evidence(passage, ["Paris"], answer=(30, 31)) == ((28, 33), "found")  # the one holding it
    assert locate_evidence(passage, [" "]) == (None, "missing")
    assert locate_evidence(passage, ["Marseille"]) == (None, "not_found")
    assert locate_answer(passage, "Paris", 28) == ((28, 33), False)
    assert locate_answer(passage, "Paris", 36) == ((35, 40), True)  # moved to the nearest occurrence
    assert locate_answer(passage, "Paris", None) == ((0, 5), True)
    assert find(passage, "Paris", ("verbatim",), Hint(within=(14, 34))).span == (28, 33)
    assert find(passage, "PARIS  IS BIG", ("verbatim", "normalized")).span == (0, 12)
    assert find("北京，是首都。", "北京,是首都.", ("normalized",)).span == (0, 7)
    assert token_occurrences(["a", "b", "a", "b"], ["a", "b"]) == [0, 2] and token_occurrences(["a"], []) == []


@pytest.mark.parametrize("text", ["", "   "])
def test_nothing_is_found_for_an_empty_text(text):
    assert find("some passage", text, tuple(POLICIES)) is None
