"""Human performance by cross-validation over references."""

import json
import subprocess
import sys

import pytest

from helpers.common import CHOICE_DATA, SPAN_DATA, dev_set, needs_punkt, official_cmrc2018_dev
from expmrc.data.datasets import load_dataset
from expmrc.scoring.human import human_performance, rotation_f1

pytestmark = needs_punkt


def test_rotation_f1():
    assert rotation_f1(["a b", "a b", "a b"]) == 1.0
    assert rotation_f1(["x"]) is None
    # "cat" vs {"cat sat"} = 2/3; "cat sat" vs {"cat"} = 2/3
    assert rotation_f1(["cat", "cat sat"]) == pytest.approx(2 / 3)


def test_span_and_choice_fixtures(write_json):
    span = human_performance(load_dataset(write_json("s.json", SPAN_DATA)))
    # answers: only q1 has two references: "Melbourne" vs "Melbourne city" both ways = 2/3.
    assert span.answer == pytest.approx(100 * 2 / 3)
    # evidences: only q2 has two ("Sydney is larger." and "Sydney is larger"): identical tokens.
    assert span.evidence == pytest.approx(100.0)
    assert span.overall is None  # no question has two answers and two evidences to rotate over
    choice = human_performance(load_dataset(write_json("c.json", CHOICE_DATA)))
    assert choice.answer is None and choice.overall is None
    # m1-1: "他喜欢长城" vs "喜欢长城": 8/9 both ways
    assert choice.evidence == pytest.approx(100 * 8 / 9)


@pytest.mark.data
@pytest.mark.parametrize("subset, published", [
    ("squad", (90.8, 92.1, 83.6)),
    ("cmrc2018", (97.7, 94.6, 92.4)),
    ("race", (None, 92.4, None)),
    ("c3", (None, 95.7, None)),
])
def test_published_human_figures(subset, published):
    result = subprocess.run([sys.executable, "-m", "expmrc.cli", "human", dev_set(subset), "--json"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    for key, expected in zip(("ANS_F1", "EVI_F1", "ALL_F1"), published):
        if expected is None:
            assert out[key] is None
        else:
            assert out[key] == pytest.approx(expected, abs=0.3)


CMRC_THREE = {"version": "expmrc-cmrc2018-dev", "data": [{"paragraphs": [{"context": "北京和上海市", "qas": [
    # two annotators agree (up to the full stop), the third wrote more: 北京 vs 北京和 = EM 0, F1 0.8
    {"id": "a", "question": "哪里？", "answers": [{"text": "北京"}, {"text": "北京。"}, {"text": "北京和"}]},
    # all three differ in the CMRC punctuation only
    {"id": "b", "question": "哪里？", "answers": [{"text": "上海市"}, {"text": "“上海市”"}, {"text": "上海市。"}]},
]}]}]}


def test_cmrc2018_protocol_rotates_each_answer_against_the_other_two(write_json):
    human = human_performance(load_dataset(write_json("c.json", CMRC_THREE)))
    # a: answers 1 and 2 each match another exactly (EM 1, F1 1); answer 3 matches neither (EM 0, F1 0.8)
    assert human.cmrc2018_em == pytest.approx(100 * (2 / 3 + 1) / 2)
    assert human.cmrc2018_f1 == pytest.approx(100 * ((1 + 1 + 0.8) / 3 + 1) / 2)
    assert human.evidence is None and human.overall is None  # no evidences: absent, not 0
    squad = human_performance(load_dataset(write_json("s.json", SPAN_DATA)))
    assert squad.cmrc2018_em is None and squad.cmrc2018_f1 is None


@pytest.mark.data
def test_the_original_cmrc2018_dev_set_under_its_own_protocol():
    result = subprocess.run([sys.executable, "-m", "expmrc.cli", "human", official_cmrc2018_dev(), "--subset",
                             "cmrc2018", "--json"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    # docs/scoring.md: answers 1 and 2 agree after CMRC normalization in every question, so only the third
    # differs: (100 + 100 + 77.788) / 3 and (100 + 100 + 93.440) / 3; the paper's 91.083 / 97.348 differ.
    assert json.loads(result.stdout) == {"ANS_F1": 97.879, "EVI_F1": None, "ALL_F1": None, "CMRC2018_EM": 92.596,
                                         "CMRC2018_F1": 97.813, "TOTAL": 3219}
