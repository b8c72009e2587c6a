"""What many tests share: the checkout's paths, skips for data that may be absent, tiny datasets, the
environment the baseline scripts run in."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"


def _punkt_available() -> bool:
    """Whether the scorer finds NLTK's English Punkt tables: NLTK's own search (NLTK_DATA, ~/nltk_data, ...), else the
    copy the package ships; only an install that lost that copy, without NLTK_DATA, lacks them."""
    from expmrc.metrics.leaderboard import find_punkt

    return find_punkt() is not None


# Every test that tokenizes English through the scorer carries this mark: one skip reason where Punkt is absent.
needs_punkt = pytest.mark.skipif(not _punkt_available(),
                                 reason="NLTK's English Punkt tables not found (neither NLTK_DATA nor the package's copy)")


def whole_nltk():
    """NLTK imported whole, the reference the scorer's tokens are checked against, finding the English Punkt tables
    where the scorer does: NLTK's own search, then the package's copy (the scorer's private NLTK parts add that copy
    to their own search path, never to the whole NLTK's)."""
    import nltk

    from expmrc.metrics.leaderboard import SHIPPED_NLTK_DATA

    if str(SHIPPED_NLTK_DATA) not in nltk.data.path:
        nltk.data.path.append(str(SHIPPED_NLTK_DATA))
    return nltk


def dev_set(subset: str) -> str:
    """Path of an official dev set under $EXPMRC_DATA, or skip the test."""
    root = os.environ.get("EXPMRC_DATA")
    path = Path(root or "") / subset / f"expmrc-{subset}-dev.json"
    if not root or not path.is_file():
        pytest.skip("official dev sets not available (set EXPMRC_DATA)")
    return str(path)


def official_cmrc2018_dev() -> str:
    """Path of the original CMRC 2018 dev set named by $EXPMRC_CMRC2018_DEV, or skip the test."""
    path = os.environ.get("EXPMRC_CMRC2018_DEV")
    if not path or not Path(path).is_file():
        pytest.skip("the original CMRC 2018 dev set is not available (set EXPMRC_CMRC2018_DEV)")
    return path


def _whole_number(name: str, default: int, least: int) -> int:
    value = os.environ.get(name, "").strip() or str(default)
    if not value.isdigit() or int(value) < least:
        raise pytest.UsageError(f"{name} must be a whole number of at least {least}, not {value!r}")
    return int(value)


def seeded(base: int) -> int:
    """A learning test's seed `base` moved by $EXPMRC_TEST_SEED (default 0), so that scripts/check_flaky.sh can
    train every learning test from other initial weights and batch orders."""
    return base + _whole_number("EXPMRC_TEST_SEED", 0, 0)


def torch_threads() -> int:
    """Torch threads for the learning tests and the scripts they run: $EXPMRC_TEST_THREADS, else 1 (the CI machine
    is small and shared; more threads only contend). Each thread count is another floating-point path."""
    return _whole_number("EXPMRC_TEST_THREADS", 1, 1)


def record_figures(**figures: Any) -> None:
    """Print a learning test's figures and, when $EXPMRC_TEST_FIGURES names a file, append them to it as a JSON
    line with the seed offset and thread count (scripts/check_flaky.sh summarises that file)."""
    test = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" (", 1)[0]
    print(f"figures: {figures}")
    path = os.environ.get("EXPMRC_TEST_FIGURES")
    if path:
        row = {"test": test, "seed": seeded(0), "threads": torch_threads(), "figures": figures}
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(row) + "\n")


def environment() -> dict[str, str]:
    """The environment the baseline scripts run in under test: $EXPMRC_TEST_THREADS threads (default 1), this
    checkout's expmrc, one process."""
    env = dict(os.environ, OMP_NUM_THREADS=str(torch_threads()), PYTHONPATH=str(ROOT))
    env.pop("WORLD_SIZE", None)
    return env


def without_stdout(argv: list[str]) -> list[str]:
    """`argv` started with its stdout closed, as a shell's `>&-` does (through `sh`: closing it in the child between
    fork and exec, `preexec_fn`, can deadlock a child forked from a test process that has threads)."""
    return ["sh", "-c", 'exec "$@" >&-', "sh", *argv]


def predictions(run_dir) -> dict:
    """A run directory's dev_predictions.json."""
    return json.loads((Path(run_dir) / "dev_predictions.json").read_text(encoding="utf-8"))


SPAN_DATA = {
    "version": "expmrc-squad-dev",
    "data": [{"title": "T", "paragraphs": [{
        "context": "Melbourne is the sporting capital of Australia. It hosts the Open. Sydney is larger.",
        "qas": [
            {"id": "q1", "question": "What city is the sporting capital?",
             "answers": [{"text": "Melbourne", "answer_start": 0}, {"text": "Melbourne city", "answer_start": 0}],
             "evidences": ["Melbourne is the sporting capital of Australia."]},
            {"id": "q2", "question": "Which city is larger?",
             "answers": [{"text": "Sydney", "answer_start": 67}],
             "evidences": ["Sydney is larger.", "Sydney is larger"]},
            {"id": "q3", "question": "How many opens?",
             "answers": [{"text": "the Open", "answer_start": 57}],
             "evidences": ["It hosts the Open."]},
        ]}]}],
}

CHOICE_DATA = {
    "version": "expmrc-c3-dev",
    "data": [
        {"id": "m1", "article": "小明去北京。他喜欢长城。", "questions": ["小明去哪里？", "他喜欢什么？"],
         "options": [["北京", "上海"], ["长城", "故宫", "天坛"]], "answers": ["A", "A"],
         "evidences": [["小明去北京。"], ["他喜欢长城。", "喜欢长城"]]},
        {"id": "m2", "article": "天很蓝。", "questions": ["天什么颜色？"],
         "options": [["红", "蓝", "绿", "黄"]], "answers": ["B"], "evidences": [["天很蓝。"]]},
    ],
}


def load_benchmark(name: str) -> Any:
    """benchmarks/NAME.py imported as its own run imports it: beside its sibling scripts (`_common`, `bench_gpu`)."""
    import importlib.util
    import sys

    folder = str(ROOT / "benchmarks")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(f"{name}_under_test", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass of the script looks its module up
    spec.loader.exec_module(module)
    return module
