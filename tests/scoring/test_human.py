"""Human performance by cross-validation over references."""

import json
import subprocess
import sys

import pytest

from helpers.common import CHOICE_DATA, SPAN_DATA, dev_set, needs_punkt
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
