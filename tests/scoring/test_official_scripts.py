"""The CMRC 2018 and SQuAD v1.1 answer metrics against numbers their official scripts printed.

Each submission below is built deterministically from a dev set (gold answers kept, wrapped in
punctuation, cut, widened into the passage, re-cased, emptied, swapped with another question's,
or left out) and was scored by the official scripts, unchanged, with this repository's NLTK
(3.10.4) and Punkt data. To rebuild the expected values:

    PYTHONPATH=$PWD:tests:tests/scoring python -m test_official_scripts OUT_DIR
    python cmrc2018_evaluate_v5_py3.py  $EXPMRC_CMRC2018_DEV OUT_DIR/cmrc2018-official.json
    python cmrc2018_evaluate_v5_py3.py  $EXPMRC_DATA/cmrc2018/expmrc-cmrc2018-dev.json OUT_DIR/cmrc2018-expmrc.json
    python evaluate-v1.1.py             $EXPMRC_DATA/squad/expmrc-squad-dev.json OUT_DIR/squad-expmrc.json

(cmrc2018_evaluate_v5_py3.py is the CMRC 2018 repository's SQuAD-style v5 script with its Python 2
lines (`reload(sys)`, `.decode('utf-8')`, `ur''`) made Python 3; its v6 script prints the same
figures for these files. evaluate-v1.1.py is SQuAD's.)
"""

from __future__ import annotations

import json
import os
import random
import sys

import pytest

from helpers.common import dev_set, needs_punkt, official_cmrc2018_dev
from expmrc.data.datasets import Dataset, load_dataset
from expmrc.metrics.registry import METRICS
from expmrc.scoring.scorer import score

pytestmark = [needs_punkt, pytest.mark.data]

WRAPS = [("《", "》"), ("“", "”"), ("(", ")"), ("", "。"), ("The ", "."), ("  ", " \n"), ("「", "」、"), ("‘", "’")]


def perturbed_answers(dataset: Dataset, seed: int) -> dict[str, str]:
    """A deterministic answer per question (some questions left out) that exercises the metrics' rules."""
    rng = random.Random(seed)
    answers = {}
    for q in dataset.questions:
        gold = str(rng.choice(q.answers))
        kind = rng.randrange(9)
        if kind == 0:
            continue  # left out: counts 0
        if kind == 1:
            answer = gold
        elif kind == 2:
            left, right = rng.choice(WRAPS)
            answer = left + gold + right
        elif kind == 3:
            start = q.context.find(gold)
            start = max(start, 0)
            answer = q.context[max(0, start - rng.randrange(6)):start + len(gold) + rng.randrange(6)]
        elif kind == 4:
            answer = gold[:max(1, int(len(gold) * rng.random()))]
        elif kind == 5:
            cut = rng.randrange(len(gold) + 1)
            answer = (gold[:cut] + " " + gold[cut:]).upper()
        elif kind == 6:
            answer = rng.choice(["", " ", "。", "……", "the", "-"])
        elif kind == 7:
            answer = str(rng.choice(dataset.questions).answers[0])
        else:
            answer = gold[rng.randrange(len(gold)):] + rng.choice(["", "的", " of", "年"])
        answers[q.qid] = answer
    return answers


def _datasets() -> dict[str, tuple[str, str | None]]:
    """name -> (dataset path, subset to pass), each read lazily so a missing one skips only its case."""
    return {"cmrc2018-official": (os.environ.get("EXPMRC_CMRC2018_DEV", ""), "cmrc2018"),
            "cmrc2018-expmrc": (os.path.join(os.environ.get("EXPMRC_DATA", ""), "cmrc2018", "expmrc-cmrc2018-dev.json"),
                                None),
            "squad-expmrc": (os.path.join(os.environ.get("EXPMRC_DATA", ""), "squad", "expmrc-squad-dev.json"), None)}


SEED = 2018

# What the official scripts printed for perturbed_answers(dataset, SEED) (the command is at the top).
EXPECTED = {
    # {"AVERAGE": "37.722", "F1": "52.548", "EM": "22.895", "TOTAL": 3219, "SKIP": 357}
    "cmrc2018-official": ("cmrc2018", {"CMRC2018_AVERAGE": "37.722", "CMRC2018_F1": "52.548", "CMRC2018_EM": "22.895"}),
    # {"AVERAGE": "37.943", "F1": "52.585", "EM": "23.301", "TOTAL": 515, "SKIP": 50}
    "cmrc2018-expmrc": ("cmrc2018", {"CMRC2018_AVERAGE": "37.943", "CMRC2018_F1": "52.585", "CMRC2018_EM": "23.301"}),
    # {"exact_match": 23.952095808383234, "f1": 38.28145646281687}
    "squad-expmrc": ("squad", {"SQUAD_EM": "23.952", "SQUAD_F1": "38.281"}),
}


def _load(name: str) -> Dataset:
    if name == "cmrc2018-official":
        return load_dataset(official_cmrc2018_dev(), "cmrc2018")
    return load_dataset(dev_set(name.split("-")[0]))


@pytest.mark.parametrize("name", list(EXPECTED))
def test_figures_equal_the_official_scripts_to_three_decimals(name):
    dataset = _load(name)
    metric, expected = EXPECTED[name]
    answers = perturbed_answers(dataset, SEED)
    submission = {qid: {"answer": answer, "evidence": ""} for qid, answer in answers.items()}
    report = score(dataset, submission, name, [METRICS[metric]], answers_only=True)
    figures = report.extra_figures()
    assert {key: f"{figures[key]:.3f}" for key in expected} == expected
    assert report.skipped == len(dataset.questions) - len(answers) > 0


def write_official_inputs(out_dir: str) -> None:
    """Write each perturbed submission as the official scripts read it ({id: answer})."""
    os.makedirs(out_dir, exist_ok=True)
    for name in EXPECTED:
        path, subset = _datasets()[name]
        answers = perturbed_answers(load_dataset(path, subset), SEED)
        with open(os.path.join(out_dir, f"{name}.json"), "w", encoding="utf-8") as out:
            json.dump(answers, out, ensure_ascii=False)


if __name__ == "__main__":
    write_official_inputs(sys.argv[1])
