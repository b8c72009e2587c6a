"""Property-based fuzzing of every reader: hostile JSON text, malformed datasets and malformed submissions,
fed in-process to read_json and to each command that reads them. Whatever the input, a command either
runs or refuses in one `error:` line with exit status 2, leaves no output behind when it refuses, and,
when it scores, gives the leaderboard's number (tests/helpers/hostile.py holds an independent reference).
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from helpers.common import CHOICE_DATA, SPAN_DATA, needs_punkt
from helpers.hostile import (LeaderboardCrash, assert_ok_or_refused, assert_refused, files_under,
                             leaderboard_reference, run_cli)
from expmrc.data.datasets import load_dataset
from expmrc.data.io import read_json
from expmrc.data.submissions import load_submission
from expmrc.errors import ExpmrcError
from expmrc.scoring.scorer import score
from eval_expmrc import main as eval_main

pytestmark = needs_punkt

# Random inputs on every run here; the same fixed sequence under CI (CI=true), so CI never flickers.
# EXPMRC_FUZZ_EXAMPLES raises the count for a longer hunt.
FUZZ = settings(max_examples=int(os.environ.get("EXPMRC_FUZZ_EXAMPLES", "150")), deadline=None, database=None,
                derandomize=bool(os.environ.get("CI")), suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------- hostile JSON text

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                            st.dictionaries(st.text(max_size=6), inner, max_size=4)),
                           max_leaves=20)


@st.composite
def hostile_text(draw) -> bytes:
    """Valid JSON, and JSON spoiled in the ways docs/bad-input.md lists (and random bytes)."""
    kind = draw(st.sampled_from(["valid", "deep", "bigint", "nan", "overflow", "surrogate", "truncated", "bytes",
                                 "latin1", "bom", "empty"]))
    value = draw(json_values)
    text = json.dumps(value, ensure_ascii=draw(st.booleans()))
    if kind == "deep":
        depth = draw(st.integers(90, 200_000))
        text = "[" * depth + "]" * depth if draw(st.booleans()) else '{"a":' * depth + "1" + "}" * depth
    elif kind == "bigint":
        text = json.dumps({"q1": {"answer": "x", "evidence": "y"}})[:-1] + ', "n": ' + "7" * draw(
            st.integers(4301, 20_000)) + "}"
    elif kind == "nan":
        text = f'{{"q1": {{"answer": {draw(st.sampled_from(["NaN", "Infinity", "-Infinity"]))}, "evidence": "y"}}}}'
    elif kind == "overflow":
        text = f'[1e{draw(st.integers(309, 100_000))}]'
    elif kind == "surrogate":
        text = f'{{"q1": {{"answer": "a\\u{draw(st.integers(0xD800, 0xDFFF)):04x}b", "evidence": "y"}}}}'
    elif kind == "truncated":
        text = text[:draw(st.integers(0, max(0, len(text) - 1)))]
    elif kind == "bytes":
        return draw(st.binary(max_size=40))
    elif kind == "latin1":
        return ('{"q1": {"answer": "caf\xe9", "evidence": "y"}}').encode("latin-1")
    elif kind == "bom":
        return b"\xef\xbb\xbf" + text.encode("utf-8")
    elif kind == "empty":
        return draw(st.sampled_from([b"", b"  \n"]))
    return text.encode("utf-8")


def _no_surrogates_or_nan(value) -> bool:
    if isinstance(value, str):
        return not any("\ud800" <= ch <= "\udfff" for ch in value)
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_no_surrogates_or_nan(v) for v in value)
    if isinstance(value, dict):
        return all(_no_surrogates_or_nan(k) and _no_surrogates_or_nan(v) for k, v in value.items())
    return True


@FUZZ
@given(raw=hostile_text())
def test_read_json_returns_clean_values_or_one_line_naming_the_file(raw):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "input.json"
        path.write_bytes(raw)
        try:
            value = read_json(str(path), "prediction file")
        except ExpmrcError as exc:
            message = str(exc)
            assert message.startswith(f"{path}: ") and "\n" not in message
            return
        assert _no_surrogates_or_nan(value)
        json.dumps(value, allow_nan=False).encode("utf-8")  # anything read can be written back


@FUZZ
@given(raw=hostile_text(), role=st.sampled_from(["predictions", "dataset", "answers", "train", "human"]))
def test_every_reading_command_survives_hostile_json(raw, role):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        hostile = root / "hostile.json"
        hostile.write_bytes(raw)
        span = root / "span.json"
        span.write_text(json.dumps(SPAN_DATA), encoding="utf-8")
        out = root / "out" / "result.json"
        argv = {
            "predictions": ["evaluate", str(span), str(hostile), "--details", str(out)],
            "dataset": ["evaluate", str(hostile), str(span), "--subset", "squad", "--details", str(out)],
            "answers": ["evidence", "--method", "most-similar", str(span), "--answers", str(hostile), "--output", str(out)],
            "train": ["pseudo", "--subset", "c3", str(hostile), "--output", str(out)],
            "human": ["human", str(hostile), "--subset", "squad"],
        }[role]
        before = files_under(root)
        status, _, err = run_cli(argv)
        assert_ok_or_refused(status, err)
        if status:
            assert files_under(root) == before  # a refusal writes nothing


# ---------------------------------------------------------------- malformed datasets and submissions

def _paths(value, prefix=()):
    """Every (path, value) inside a JSON document, the root included."""
    yield prefix, value
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, prefix + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _paths(child, prefix + (index,))


@st.composite
def mutated(draw, base: dict) -> dict:
    """`base` with one to three places replaced by a random JSON value, or deleted."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        places = [p for p, _ in _paths(doc) if p]
        if not places:
            break
        place = draw(st.sampled_from(places))
        parent = doc
        for key in place[:-1]:
            parent = parent[key]
        if isinstance(parent, dict) and draw(st.booleans()):
            del parent[place[-1]]
        else:
            parent[place[-1]] = draw(json_values)
    return doc


def _predictions(data: dict) -> dict:
    """A submission answering every question of the two test datasets, right or wrong by turns."""
    if data is SPAN_DATA:
        return {"q1": {"answer": "Melbourne", "evidence": "Melbourne is the sporting capital of Australia."},
                "q2": {"answer": "Sydney is", "evidence": "It hosts the Open."},
                "q3": {"answer": 1963, "evidence": "the Open"}}
    return {"m1-0": {"answer": "A", "evidence": "小明去北京。"}, "m1-1": {"answer": "B", "evidence": "长城"},
            "m2-0": {"answer": "B", "evidence": "天很蓝。"}}


def run_eval(dataset: Path, submission: Path) -> tuple[int, str, str]:
    """eval_expmrc.py (the leaderboard's drop-in) in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = eval_main([str(dataset), str(submission)])
    return status, out.getvalue(), err.getvalue()


def _check_scores(dataset_doc: dict, predictions: dict, status: int, out: str, err: str) -> None:
    """Scored: the leaderboard's numbers. The leaderboard crashes: we must have refused."""
    try:
        expected = leaderboard_reference(dataset_doc, predictions)
    except LeaderboardCrash:
        assert_refused(status, err)
        return
    assert_ok_or_refused(status, err)
    if status == 0:
        got = json.loads(out)
        assert {k: got[k] for k in expected} == expected


@FUZZ
@given(data=st.sampled_from([SPAN_DATA, CHOICE_DATA]).flatmap(lambda base: st.tuples(st.just(base), mutated(base))))
def test_malformed_datasets_are_scored_as_the_leaderboard_does_or_refused(data):
    base, doc = data
    predictions = _predictions(base)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        dataset, submission = root / "dev.json", root / "pred.json"
        dataset.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
        submission.write_text(json.dumps(predictions, ensure_ascii=False), encoding="utf-8")
        status, out, err = run_eval(dataset, submission)
        _check_scores(doc, predictions, status, out, err)
        for argv in (["evidence", "--method", "most-similar", str(dataset), "--output", str(root / "ev.json")],
                     ["pseudo", "--subset", "squad" if base is SPAN_DATA else "c3", str(dataset),
                      "--output", str(root / "ps.json")],
                     ["human", str(dataset)]):
            status, _, err_text = run_cli(argv)
            assert_ok_or_refused(status, err_text)


entries = st.one_of(json_values, st.fixed_dictionaries({"answer": json_values, "evidence": json_values}),
                    st.fixed_dictionaries({"answer": st.sampled_from(["A", "B", "Melbourne", "", 3, True]),
                                           "evidence": st.text(max_size=30)},
                                          optional={"answer_start": json_values, "evidence_start": json_values}))
ids = st.sampled_from(["q1", "q2", "q3", "q4", "m1-0", "m1-1", "m2-0", "m3-0", "", " q1"])


@FUZZ
@given(base=st.sampled_from([SPAN_DATA, CHOICE_DATA]), predictions=st.dictionaries(ids, entries, max_size=5))
def test_malformed_submissions_are_scored_as_the_leaderboard_does_or_refused(base, predictions):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        dataset, submission = root / "dev.json", root / "pred.json"
        dataset.write_text(json.dumps(base, ensure_ascii=False), encoding="utf-8")
        submission.write_text(json.dumps(predictions, ensure_ascii=False), encoding="utf-8")
        status, out, err = run_eval(dataset, submission)
        _check_scores(base, predictions, status, out, err)
        status, _, err = run_cli(["evaluate", str(dataset), str(submission)])
        assert_ok_or_refused(status, err)


def test_a_numeric_question_id_is_never_matched_as_on_the_leaderboard(write_json, capsys):
    doc = copy.deepcopy(SPAN_DATA)
    doc["data"][0]["paragraphs"][0]["qas"][0]["id"] = 5
    predictions = {"5": {"answer": "Melbourne", "evidence": "Melbourne is the sporting capital of Australia."},
                   "q2": {"answer": "Sydney", "evidence": "Sydney is larger."}}
    dataset = load_dataset(write_json("dev.json", doc))
    assert "1 question id(s) are JSON numbers" in capsys.readouterr().err
    report = score(dataset, load_submission(write_json("pred.json", predictions)))
    expected = leaderboard_reference(doc, predictions)
    assert report.official()["ALL_F1"] == expected["ALL_F1"] == "33.333"
    assert (report.skipped, report.unknown_ids) == (2, ["5"])


@pytest.mark.parametrize("options, answer, ok", [(12, "L", True), (26, "Z", True), (27, "A", False)])
def test_many_options_are_labelled_as_the_dataset_spells_them_in_every_command(write_json, tmp_path, options, answer,
                                                                             ok):
    doc = copy.deepcopy(CHOICE_DATA)
    doc["data"][1]["options"][0] = [f"option {k}" for k in range(options - 1)] + ["天很蓝"]
    doc["data"][1]["answers"][0] = answer
    dataset = write_json("dev.json", doc)
    submission = write_json("pred.json", {"m1-0": {"answer": "A", "evidence": "小明去北京。"},
                                          "m1-1": {"answer": "B", "evidence": "长城"},
                                          "m2-0": {"answer": answer, "evidence": "天很蓝。"}})
    runs = {"evaluate": ["evaluate", dataset, submission, "--json"],
            "evidence": ["evidence", "--method", "most-similar", dataset, "--answers", submission,
                         "--output", str(tmp_path / "ev.json")],
            "pseudo": ["pseudo", "--subset", "c3", dataset, "--output", str(tmp_path / "ps.json")]}
    for name, argv in runs.items():
        status, out, err = run_cli(argv)
        if not ok:
            assert_refused(status, err, names=f"question m2-0: {options} options; at most 26")
            continue
        assert status == 0, err
        if name == "evaluate":
            assert json.loads(out)["results"][0]["ANS_F1"] == round(200 / 3, 3)
        if name == "evidence":
            assert json.loads((tmp_path / "ev.json").read_text(encoding="utf-8"))["m2-0"]["answer"] == answer
