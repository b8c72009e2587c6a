"""Intervals and paired tests over questions (expmrc.scoring.stats, `evaluate --ci`, `compare`), checked against
direct computations written out here, one resample at a time."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest

from expmrc.cli import main as cli_main
from expmrc.data.datasets import load_dataset
from expmrc.errors import ExpmrcError
from expmrc.scoring import stats
from expmrc.scoring.scorer import score
from helpers.common import needs_punkt

pytestmark = needs_punkt


def choice_dataset(tmp_path, n: int, seed: int = 0):
    """A multiple-choice dev set of n questions (one passage), gold answers A-D at random."""
    rng = random.Random(seed)
    passage = {"id": "p", "article": "The sky is blue. Grass is green. Snow is white.",
               "questions": [f"Question {k}?" for k in range(n)],
               "options": [["blue", "red", "green", "white"]] * n,
               "answers": [rng.choice("ABCD") for _ in range(n)],
               "evidences": [["The sky is blue."]] * n}
    path = tmp_path / f"race-{n}.json"
    path.write_text(json.dumps({"version": "expmrc-race-dev", "data": [passage]}), encoding="utf-8")
    return load_dataset(str(path))


def submission(dataset, right: list[bool], evidence: list[str]) -> dict:
    """Right answers where `right`, a wrong label elsewhere; the given evidence per question."""
    wrong = {"A": "B", "B": "C", "C": "D", "D": "A"}
    return {q.qid: {"answer": q.answer if ok else wrong[q.answer], "evidence": text}
            for q, ok, text in zip(dataset.questions, right, evidence)}


def random_report(dataset, seed: int, accuracy: float = 0.6):
    rng = random.Random(seed)
    sentences = ["The sky is blue.", "Grass is green.", "Snow is white.", "The sky is blue. Grass is green."]
    n = len(dataset.questions)
    return score(dataset, submission(dataset, [rng.random() < accuracy for _ in range(n)],
                                     [rng.choice(sentences) for _ in range(n)]), "sub.json")


def direct_interval(values: list[float], rows: list[list[int]], confidence: float) -> tuple[float, float]:
    """The textbook bootstrap: for each resample, the mean of the chosen questions; then order statistics."""
    figures = sorted(100.0 * sum(values[i] for i in row) / len(row) for row in rows)
    cut = math.floor(len(figures) * (1 - confidence) / 2 + 1e-9)
    return figures[cut], figures[len(figures) - 1 - cut]


def test_intervals_agree_with_a_direct_computation_on_a_hand_built_case(tmp_path):
    dataset = choice_dataset(tmp_path, 7)
    report = score(dataset, submission(dataset, [True, True, False, True, False, True, True],
                                       ["The sky is blue."] * 3 + ["Snow is white."] * 4), "sub.json")
    settings = stats.Resampling(resamples=400, seed=7)
    rows = np.random.default_rng(7).integers(0, 7, size=(400, 7)).tolist()  # the documented draw
    got = stats.intervals(report, settings)
    for key, name in (("ALL_F1", "overall"), ("ANS_F1", "answer"), ("EVI_F1", "evidence")):
        values = [getattr(q, name) if q.answered else 0.0 for q in report.questions]
        assert got[key] == pytest.approx(direct_interval(values, rows, 0.95), abs=1e-9)
    assert got["ANS_F1"][0] < 100 * 5 / 7 < got["ANS_F1"][1]


def test_paired_bootstrap_p_value_agrees_with_a_direct_computation(tmp_path):
    dataset = choice_dataset(tmp_path, 30)
    base, system = random_report(dataset, 1), random_report(dataset, 2, accuracy=0.8)
    settings = stats.Resampling(resamples=300, seed=3)
    rows = np.random.default_rng(3).integers(0, 30, size=(300, 30)).tolist()
    a = [q.overall if q.answered else 0.0 for q in base.questions]
    b = [q.overall if q.answered else 0.0 for q in system.questions]
    observed = 100 * (sum(b) - sum(a)) / 30
    diffs = [100 * (sum(b[i] for i in row) - sum(a[i] for i in row)) / 30 for row in rows]
    mean_abs = sum(abs(d) for d in diffs) / len(diffs)
    expected = (sum(abs(d) - mean_abs >= abs(observed) - 1e-9 for d in diffs) + 1) / (len(diffs) + 1)
    result = stats.compare(base, system, "bootstrap", settings)["ALL_F1"]
    assert result.p == pytest.approx(expected)
    assert result.delta == pytest.approx(observed)
    assert result.ci == pytest.approx(direct_interval([y - x for x, y in zip(a, b)], rows, 0.95))


def test_randomization_p_value_agrees_with_a_direct_computation(tmp_path):
    dataset = choice_dataset(tmp_path, 25)
    base, system = random_report(dataset, 4), random_report(dataset, 5)
    a = [q.answer if q.answered else 0.0 for q in base.questions]
    b = [q.answer if q.answered else 0.0 for q in system.questions]
    swaps = np.random.default_rng(11).integers(0, 2, size=(500, 25)).tolist()
    observed = abs(sum(b) - sum(a)) / 25 * 100
    hits = 0
    for row in swaps:
        x = [bi if s else ai for ai, bi, s in zip(a, b, row)]
        y = [ai if s else bi for ai, bi, s in zip(a, b, row)]
        hits += abs(sum(y) - sum(x)) / 25 * 100 >= observed - 1e-9
    got = stats.compare(base, system, "randomization", stats.Resampling(seed=11), trials=500)["ANS_F1"]
    assert got.p == pytest.approx((hits + 1) / 501)


@pytest.mark.parametrize("test", stats.TESTS)
def test_identical_systems_differ_by_zero_with_p_one(tmp_path, test):
    dataset = choice_dataset(tmp_path, 40)
    report = random_report(dataset, 6)
    for key, result in stats.compare(report, report, test, trials=2000).items():
        assert (result.delta, result.p, result.ci) == (0.0, 1.0, (0.0, 0.0)), key


@pytest.mark.parametrize("test", stats.TESTS)
def test_a_system_better_on_every_question_has_p_below_one_in_a_thousand(tmp_path, test):
    dataset = choice_dataset(tmp_path, 200)
    n = len(dataset.questions)
    base = score(dataset, submission(dataset, [False] * n, ["Snow is white."] * n), "base.json")
    best = score(dataset, submission(dataset, [True] * n, ["The sky is blue."] * n), "best.json")
    result = stats.compare(base, best, test, stats.Resampling(resamples=2000))["ALL_F1"]
    assert result.delta == 100.0 and result.p < 0.001 and result.significant


def test_intervals_contain_the_point_and_narrow_as_questions_grow(tmp_path):
    widths = []
    for n in (50, 200, 800):
        report = random_report(choice_dataset(tmp_path, n, seed=n), seed=n)
        spans = stats.intervals(report)
        for key, name in stats.LEADERBOARD_KEYS.items():
            assert spans[key][0] <= report.mean(name) <= spans[key][1], (n, key)
        widths.append(spans["ANS_F1"][1] - spans["ANS_F1"][0])
    assert widths[0] > widths[1] > widths[2]


def test_a_fixed_seed_reproduces_the_figures_and_another_seed_moves_them(tmp_path):
    report = random_report(choice_dataset(tmp_path, 60), 8)
    same = [stats.intervals(report, stats.Resampling(seed=5)) for _ in range(2)]
    assert same[0] == same[1]
    assert stats.intervals(report, stats.Resampling(seed=6)) != same[0]
    pair = random_report(choice_dataset(tmp_path, 60), 9)
    assert stats.compare(report, pair) == stats.compare(report, pair)


def test_point_figures_are_the_scorers_to_the_last_bit(tmp_path):
    report = random_report(choice_dataset(tmp_path, 97), 10)
    for key, parts in stats.figure_parts(report).items():
        expected = report.mean(stats.LEADERBOARD_KEYS[key]) if key in stats.LEADERBOARD_KEYS \
            else report.extra_figures()[key]
        assert stats.point(parts) == expected


def test_evaluate_ci_and_compare_json_shapes(tmp_path, capsys):
    dataset = choice_dataset(tmp_path, 30)
    paths = []
    for k, accuracy in enumerate((0.3, 0.9)):
        rng = random.Random(k)
        sub = submission(dataset, [rng.random() < accuracy for _ in range(30)], ["The sky is blue."] * 30)
        paths.append(str(tmp_path / f"sub{k}.json"))
        (tmp_path / f"sub{k}.json").write_text(json.dumps(sub), encoding="utf-8")
    assert cli_main(["evaluate", dataset.path, paths[0], "--ci", "--json", "--metrics", ""]) == 0
    out = json.loads(capsys.readouterr().out)
    ci = out["results"][0]["CI"]
    assert set(ci) == {"ALL_F1", "ANS_F1", "EVI_F1", "ANS_EM"} and ci["ANS_F1"][0] <= out["results"][0]["ANS_F1"]
    assert "ci:bs-1000+seed-12345+conf-0.95" in out["signature"]
    assert cli_main(["evaluate", dataset.path, paths[0], "--ci", "--seed", "9", "--ci-resamples", "50"]) == 0
    text = capsys.readouterr().out
    assert "95% confidence intervals: bootstrap over questions, 50 resamples, seed 9" in text
    assert "|ci:bs-50+seed-9+conf-0.95" in text
    assert cli_main(["compare", dataset.path, paths[0], paths[1], "--json", "--metrics", ""]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"baseline", "test", "systems"} and out["test"] == "bootstrap"
    scores = out["systems"][0]["scores"]
    assert list(scores)[:3] == ["ALL_F1", "ANS_F1", "EVI_F1"]
    assert set(scores["ANS_F1"]) == {"baseline", "system", "delta", "ci", "p"}
    assert scores["ANS_F1"]["delta"] == pytest.approx(scores["ANS_F1"]["system"] - scores["ANS_F1"]["baseline"], abs=2e-3)
    assert cli_main(["compare", dataset.path, paths[0], paths[1]]) == 0
    text = capsys.readouterr().out
    assert "paired bootstrap resampling, 1000 resamples, seed 12345" in text and "signature: " in text


@pytest.mark.parametrize("args, message", [
    (["{base}"], "at least one system"),
    (["{base}", "{base}"], "also listed as a system"),
    (["{base}", "{other}"], "Wrong dataset or submission?"),
    (["{base}", "{base2}", "--ci-resamples", "0"], "--ci-resamples"),
    (["{base}", "{base2}", "--ci-resamples", "2.5"], "whole number"),
])
def test_compare_refuses_bad_input_in_one_line(tmp_path, capsys, args, message):
    dataset = choice_dataset(tmp_path, 10)
    files = {"base": {q.qid: {"answer": "A", "evidence": "x"} for q in dataset.questions},
             "base2": {q.qid: {"answer": "B", "evidence": "x"} for q in dataset.questions},
             "other": {"squad-1": {"answer": "A", "evidence": "x"}}}
    for name, obj in files.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(obj), encoding="utf-8")
    argv = ["compare", dataset.path] + [a.format(**{k: str(tmp_path / f"{k}.json") for k in files}) for a in args]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and message in err


def test_evaluate_refuses_zero_resamples(tmp_path, capsys):
    dataset = choice_dataset(tmp_path, 5)
    path = tmp_path / "s.json"
    path.write_text(json.dumps({q.qid: {"answer": "A", "evidence": "x"} for q in dataset.questions}), encoding="utf-8")
    assert cli_main(["evaluate", dataset.path, str(path), "--ci", "--ci-resamples", "0"]) == 2
    assert "--ci-resamples" in capsys.readouterr().err


def starred(text: str) -> dict[str, tuple[float, float, bool]]:
    """`expmrc compare`'s rows as score -> (interval low, high, starred)."""
    rows = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 7 and parts[4].startswith("["):
            rows[parts[0]] = (float(parts[4].strip("[,")), float(parts[5].strip("]")), parts[-1] == "*")
    return rows


@pytest.mark.parametrize("test", stats.TESTS)
def test_the_mark_follows_the_interval_beside_it_whatever_p_says(tmp_path, capsys, test):
    """Pairs of close submissions: at least one p falls below 0.05 with 0 in the interval, or above it with 0
    outside (the two measure different things); the * is where the interval excludes 0, never elsewhere."""
    dataset = choice_dataset(tmp_path, 60)
    disagreements = 0
    for seed in range(12):
        base, system = random_report(dataset, 100 + seed), random_report(dataset, 200 + seed, accuracy=0.75)
        for key, d in stats.compare(base, system, test, stats.Resampling(resamples=400), trials=400).items():
            assert d.ci is not None and d.significant == (d.ci[0] > 0 or d.ci[1] < 0), key
            disagreements += d.significant != (d.p < 0.05)
    assert disagreements > 0
    paths = []
    for k, accuracy in enumerate((0.6, 0.75)):
        rng = random.Random(k + 7)
        sub = submission(dataset, [rng.random() < accuracy for _ in range(60)],
                         [rng.choice(["The sky is blue.", "Snow is white."]) for _ in range(60)])
        paths.append(str(tmp_path / f"s{k}.json"))
        (tmp_path / f"s{k}.json").write_text(json.dumps(sub), encoding="utf-8")
    assert cli_main(["compare", dataset.path, *paths, "--test", test, "--metrics", ""]) == 0
    rows = starred(capsys.readouterr().out)
    assert set(rows) == {"ALL_F1", "ANS_F1", "EVI_F1", "ANS_EM"}
    assert all(star == (low > 0 or high < 0) for low, high, star in rows.values()), rows


@pytest.mark.parametrize("value", ["1e-12", "0.4", "0.9995", "1", "nan"])
def test_a_confidence_outside_half_to_0_999_is_one_line(tmp_path, capsys, value):
    dataset = choice_dataset(tmp_path, 10)
    path = tmp_path / "s.json"
    path.write_text(json.dumps({q.qid: {"answer": "A", "evidence": "x"} for q in dataset.questions}), encoding="utf-8")
    for argv in (["evaluate", dataset.path, str(path), "--ci"], ["compare", dataset.path, str(path), str(path)]):
        assert cli_main(argv + ["--confidence", value]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and "--confidence" in err and "from 0.5 to 0.999" in err
    with pytest.raises(ExpmrcError, match="from 0.5 to 0.999"):
        stats.Resampling(confidence=float(value))


@pytest.mark.parametrize("confidence", [0.5, 0.999])
@pytest.mark.parametrize("resamples", [1, 2, 3, 1000])
def test_intervals_are_never_inverted(tmp_path, confidence, resamples):
    report = random_report(choice_dataset(tmp_path, 40), 12)
    for key, span in stats.intervals(report, stats.Resampling(resamples, 5, confidence)).items():
        assert span is None or span[0] <= span[1], (key, span)
    other = random_report(choice_dataset(tmp_path, 40), 13)
    for key, d in stats.compare(report, other, settings=stats.Resampling(resamples, 5, confidence)).items():
        assert d.ci is None or d.ci[0] <= d.ci[1], (key, d)


def test_chunked_draws_give_the_figures_of_one_matrix(tmp_path, monkeypatch):
    """Resamples and trials drawn a few rows at a time are the rows of one (B, n) draw: same figures."""
    dataset = choice_dataset(tmp_path, 45)
    base, system = random_report(dataset, 14), random_report(dataset, 15, accuracy=0.8)
    settings = stats.Resampling(resamples=500, seed=21)
    whole = (stats.intervals(base, settings), stats.compare(base, system, "bootstrap", settings),
             stats.compare(base, system, "randomization", settings, trials=700))
    monkeypatch.setattr(stats, "CHUNK_DRAWS", 45 * 7 + 3)  # 7 rows at a time, a short last chunk
    chunked = (stats.intervals(base, settings), stats.compare(base, system, "bootstrap", settings),
               stats.compare(base, system, "randomization", settings, trials=700))
    assert chunked == whole


@pytest.mark.parametrize("test", stats.TESTS)
def test_many_resamples_and_trials_run_in_bounded_memory(tmp_path, test):
    """200,000 resamples (or trials) of 300 questions: 6·10⁷ draws, 480 MB as one float matrix; in chunks the
    peak stays under 64 MB (numpy reports its allocations to tracemalloc)."""
    import tracemalloc

    dataset = choice_dataset(tmp_path, 300)
    base, system = random_report(dataset, 16), random_report(dataset, 17)
    tracemalloc.start()
    try:
        result = stats.compare(base, system, test, stats.Resampling(resamples=200_000 if test == "bootstrap" else 10),
                               trials=200_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20, peak / 2**20
    assert 0 < result["ANS_F1"].p <= 1
