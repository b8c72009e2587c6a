"""The metric registry: what `--metrics` accepts, what it refuses, and how figures are averaged."""

import pytest

from helpers.common import SPAN_DATA, CHOICE_DATA
from expmrc.data.datasets import load_dataset
from expmrc.errors import ExpmrcError
from expmrc.metrics.registry import METRICS, Metric, percent_mean, select


def test_the_leaderboard_metric_is_registered_first_and_never_selected_as_an_extra(write_json):
    assert next(iter(METRICS)) == "expmrc"
    dataset = load_dataset(write_json("d.json", SPAN_DATA))
    assert all(m.name != "expmrc" for m in select(None, dataset))
    with pytest.raises(ExpmrcError, match="unknown metric 'expmrc'"):
        select("expmrc", dataset)


def test_unknown_names_are_one_line_listing_the_known_ones(write_json):
    dataset = load_dataset(write_json("d.json", CHOICE_DATA))
    with pytest.raises(ExpmrcError, match=r"^unknown metric 'bleu'; choose one of loca, lexical-loca, squad, cmrc2018, grounding$"):
        select("bleu", dataset)


def test_a_metric_of_the_other_task_is_refused_naming_the_file(write_json, monkeypatch):
    span_only = Metric("span-only", "x", ("span",), ("X",), lambda q, p: {"x": 1.0}, percent_mean(("x",), ("X",)))
    monkeypatch.setitem(METRICS, "span-only", span_only)
    path = write_json("c.json", CHOICE_DATA)
    with pytest.raises(ExpmrcError, match=r"c\.json: metric span-only applies to span data, this is c3 \(choice\)"):
        select("span-only", load_dataset(path))


def test_percent_mean_counts_a_left_out_question_as_zero():
    aggregate = percent_mean(("em",), ("EM",))
    assert aggregate([{"em": 1.0}, None, {"em": 0.5}, {"em": 0.0}]) == {"EM": 37.5}
