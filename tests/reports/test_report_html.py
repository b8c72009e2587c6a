"""`expmrc report`, read back with an HTML parser: every question present, highlights at the right offsets,
data escaped, nothing fetched from outside, extra metrics shown, bad input refused in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from html.parser import HTMLParser

import pytest

from helpers.common import CHOICE_DATA, ROOT, SPAN_DATA, needs_punkt
from helpers.report_data import SPAN_PRED, SPAN_PRED_B

from expmrc.data import subsets
from expmrc.data.datasets import load_dataset
from expmrc.errors import ExpmrcError
from expmrc.metrics.registry import METRICS, Metric, percent_mean
from expmrc.reports.html import build_report, highlight, load_submissions, quadrant_counts, render_report

pytestmark = needs_punkt

CHOICE_PRED = {"m1-0": {"answer": "A", "evidence": "小明去北京。"}, "m1-1": {"answer": "C", "evidence": "天很蓝。"},
               "m2-0": {"answer": "B", "evidence": "天很蓝。"}}
HOSTILE = "<script>alert('x')</script> & </script><b>bold</b> \"quoted\""


class Page(HTMLParser):
    """What the tests read from a page: question rows, scripts, the embedded data, links and table cells."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[str] = []  # question ids, in the order of the table
        self.scripts: list[dict] = []  # attributes and text of each <script>
        self.urls: list[str] = []  # every src/href
        self.tags: list[str] = []
        self.cells: dict[str, list[str]] = {}  # id of a table -> texts of its cells, in order
        self._script: dict | None = None
        self._row = False
        self._table: str | None = None
        self._cell: list[str] | None = None
        self.feed(html)
        self.data = json.loads(next(s["text"] for s in self.scripts if s["attrs"].get("id") == "report-data"))

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        self.urls += [attrs[key] for key in ("src", "href") if key in attrs]
        if tag == "script":
            self._script = {"attrs": attrs, "text": ""}
        if tag == "tr" and "qrow" in (attrs.get("class") or ""):
            self._row = True
        if tag == "button" and self._row and attrs.get("class") == "open":
            self.rows.append("")
        if tag == "table" and attrs.get("id"):
            self._table = attrs["id"]
            self.cells[self._table] = []
        if tag in ("td", "th") and self._table:
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "script":
            self.scripts.append(self._script)
            self._script = None
        if tag == "tr":
            self._row = False
        if tag in ("td", "th") and self._table and self._cell is not None:
            self.cells[self._table].append("".join(self._cell).strip())
            self._cell = None
        if tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._script is not None:
            self._script["text"] += data
        elif self._row and self.rows and self.rows[-1] == "":
            self.rows[-1] = data
        if self._cell is not None:
            self._cell.append(data)


def make_page(write_json, data, *predictions, **kwargs) -> Page:
    dataset = write_json("dev.json", data)
    paths = [write_json(f"pred{k}.json", p) for k, p in enumerate(predictions)]
    html, _ = build_report(dataset, paths, **kwargs)
    return Page(html)


def marked(page: Page, q: dict, kind: str) -> list[str]:
    passage = page.data["passages"][q["passage"]]
    return [passage[start:end] for start, end, k in q["marks"] if k == kind]


def test_every_question_is_a_row_in_dataset_order_with_its_scores(write_json):
    page = make_page(write_json, SPAN_DATA, SPAN_PRED)
    assert page.rows == ["q1", "q2", "q3"]
    assert [q["id"] for q in page.data["questions"]] == ["q1", "q2", "q3"]
    q1, q2, q3 = page.data["questions"]
    # the leaderboard's scores, then the numeric values of the subset's default extra metrics (SQuAD's EM/F1)
    assert q1["values"] == {"A:answer": 1.0, "A:evidence": 1.0, "A:overall": 1.0, "A:exact": 1.0,
                            "A:squad:em": 1.0, "A:squad:f1": 1.0}
    assert q2["values"]["A:evidence"] == 0.0 and q3["subs"][0]["answered"] is False
    cells = page.cells["question-table"]
    assert "What city is the sporting capital?" in cells and cells.count("–") == 3  # q3 unanswered: no scores


def test_highlights_sit_at_the_right_character_offsets(write_json):
    page = make_page(write_json, SPAN_DATA, SPAN_PRED, SPAN_PRED_B)
    q1, q2, q3 = page.data["questions"]
    assert marked(page, q1, "ge") == ["Melbourne is the sporting capital of Australia."]
    assert marked(page, q1, "ga") == ["Melbourne"]  # both gold answers start at 0; "Melbourne city" is not there
    assert marked(page, q1, "ae") == ["Melbourne is the sporting capital of Australia."]
    assert marked(page, q1, "aa") == ["Melbourne"] and marked(page, q1, "ba") == ["Australia"]
    assert marked(page, q1, "be") == ["It hosts the Open."]
    assert q1["gold"]["answers"] == [["Melbourne", True], ["Melbourne city", False]]  # distinct texts, found or not
    assert q2["gold"]["evidences"] == [["Sydney is larger.", True], ["Sydney is larger", True]]
    assert (q2["subs"][1]["bestEvidence"], q2["subs"][0]["bestAnswer"]) == (0, 0)  # which gold text matched best
    # q2's gold evidences are "Sydney is larger." and "Sydney is larger": both highlighted, at the same place
    assert marked(page, q2, "ge") == ["Sydney is larger", "Sydney is larger."]
    assert [m[:2] for m in q2["marks"] if m[2] == "ga"] == [[67, 73]]
    assert marked(page, q3, "ba") == ["Open"] and marked(page, q3, "aa") == []  # A left q3 out
    assert page.data["passages"] == [SPAN_DATA["data"][0]["paragraphs"][0]["context"]]  # stored once


def test_a_predicted_answer_is_looked_for_inside_its_evidence_first():
    passage = "Paris is big. Lyon is far from Paris. Paris again."
    evidence = highlight(passage, "Lyon is far from Paris.")
    assert evidence == (14, 37)
    assert highlight(passage, "Paris", within=evidence) == (31, 36)
    assert highlight(passage, "Paris") == (0, 5)
    assert highlight(passage, "Paris", start=38) == (38, 43)
    assert highlight(passage, "Paris", start=3) == (0, 5)  # a wrong offset is not trusted
    assert highlight(passage, "Lyon  is\nfar") == (14, 25)  # whitespace differences are forgiven
    assert highlight(passage, "Marseille") is None and highlight(passage, "  ") is None


def test_offsets_count_utf16_units_past_characters_outside_the_bmp(write_json):
    data = {"version": "expmrc-squad-dev", "data": [{"title": "t", "paragraphs": [{
        "context": "😀😀 Rain falls. Snow melts.", "qas": [{"id": "e1", "question": "What melts?",
                                                      "answers": [{"text": "Snow", "answer_start": 15}],
                                                      "evidences": ["Snow melts."]}]}]}]}
    page = make_page(write_json, data, {"e1": {"answer": "Snow", "evidence": "Snow melts."}})
    q = page.data["questions"][0]
    passage = page.data["passages"][0]
    utf16 = passage.encode("utf-16-le")
    for start, end, kind in q["marks"]:
        text = utf16[2 * start:2 * end].decode("utf-16-le")
        assert text == ("Snow melts." if kind.endswith("e") else "Snow"), kind


def test_data_from_the_dataset_is_escaped_everywhere(write_json):
    data = json.loads(json.dumps(SPAN_DATA))
    para = data["data"][0]["paragraphs"][0]
    para["context"] = HOSTILE + " " + para["context"]
    para["qas"][0]["question"] = HOSTILE
    para["qas"][0]["id"] = "q1<i>"
    page = make_page(write_json, data, {"q1<i>": {"answer": HOSTILE, "evidence": "</script>"}})
    assert len(page.scripts) == 2 and "b" not in page.tags and "i" not in page.tags
    assert page.rows[0] == "q1<i>"
    assert HOSTILE in page.cells["question-table"]
    q = page.data["questions"][0]
    assert q["question"] == HOSTILE and q["subs"][0]["answer"] == HOSTILE
    assert page.data["passages"][0].startswith(HOSTILE)
    raw = next(s["text"] for s in page.scripts if s["attrs"].get("id") == "report-data")
    assert "<" not in raw and ">" not in raw and "&" not in raw


def test_the_page_fetches_nothing(write_json):
    page = make_page(write_json, SPAN_DATA, SPAN_PRED)
    assert all(url.startswith("#") for url in page.urls), page.urls
    assert "link" not in page.tags and "img" not in page.tags and "iframe" not in page.tags
    assert all("src" not in s["attrs"] for s in page.scripts)
    assert page.tags.count("svg") == 2  # the two figures, inline


def test_two_submissions_carry_the_differences(write_json):
    page = make_page(write_json, SPAN_DATA, SPAN_PRED, SPAN_PRED_B, names=["first", "second"])
    q1, q2, q3 = page.data["questions"]
    assert q1["values"]["B-A:answer"] == -1.0 and q2["values"]["B-A:evidence"] == 1.0
    assert q3["values"]["B-A:overall"] == 1.0 and q3["subs"][1]["answered"] is True  # A left q3 out: 0
    summary = page.cells["summary-table"]
    assert "A: first" in summary and "B: second" in summary and "B − A" in summary
    assert [key for key, _ in page.data["keys"]][-4:] == ["B-A:answer", "B-A:evidence", "B-A:overall", "B-A:exact"]


def test_multiple_choice_marks_options_not_passage_answers(write_json):
    page = make_page(write_json, CHOICE_DATA, CHOICE_PRED)
    q = page.data["questions"][1]
    assert q["options"] == ["长城", "故宫", "天坛"] and q["gold"]["label"] == "A" and q["subs"][0]["option"] == 2
    assert q["subs"][0]["notFound"] == ["evidence"]  # "天很蓝。" is not in this passage
    assert marked(page, q, "ge") == ["他喜欢长城。", "喜欢长城"] and marked(page, q, "ae") == []
    assert len(page.data["passages"]) == 2  # two questions share m1's passage
    assert {kind for *_, kind in q["marks"]} == {"ge"}


def test_quadrants_follow_the_thresholds(write_json):
    dataset = load_dataset(write_json("dev.json", SPAN_DATA))
    [sub] = load_submissions(dataset, [write_json("p.json", SPAN_PRED)], [])
    assert quadrant_counts(sub.report, 0.5, 0.5) == {"right-good": 1, "right-poor": 1, "wrong-good": 0,
                                                     "wrong-poor": 0, "unanswered": 1}
    assert quadrant_counts(sub.report, 0.5, 0.0)["right-good"] == 2
    page = Page(render_report(dataset, [sub], 0.5, 0.0))
    assert page.data["thresholds"] == {"answer": 0.5, "evidence": 0.0}
    cells = page.cells["quadrants-A"]
    assert cells[cells.index("answer right") + 1:] == ["2", "0", "answer wrong", "0", "0", "unanswered", "1"]
    with pytest.raises(ExpmrcError, match="evidence threshold must be a number from 0 to 1"):
        render_report(dataset, [sub], 0.5, float("nan"))


def test_extra_metrics_appear_in_the_summary_and_per_question(write_json, monkeypatch):
    def question(q, prediction):
        return {"length": float(len(str(prediction.evidence))), "note": "x"}

    metric = Metric("evlen", "evidence length", ("span",), ("EVLEN",), question, percent_mean(("length",), ("EVLEN",)))
    monkeypatch.setitem(METRICS, "evlen", metric)
    monkeypatch.setattr(subsets, "TABLE", tuple(replace(s, metrics=(*s.metrics, "evlen")) if s.name == "squad" else s
                                                for s in subsets.TABLE))
    page = make_page(write_json, SPAN_DATA, SPAN_PRED)  # chosen by default for squad, as `evaluate` does
    summary = page.cells["summary-table"]
    assert "EVLEN" in summary and f"{100.0 * (47 + 18) / 3:.3f}" in summary
    q1 = page.data["questions"][0]
    assert q1["values"]["A:evlen:length"] == 47.0 and q1["subs"][0]["extra"]["evlen"] == {"length": 47.0, "note": "x"}
    assert ["A:evlen:length", "A evlen length"] in page.data["keys"]
    assert "A:evlen:note" not in q1["values"]  # only numbers are sortable


def test_the_page_is_the_same_each_time(write_json):
    dataset = write_json("dev.json", SPAN_DATA)
    paths = [write_json("a.json", SPAN_PRED), write_json("b.json", SPAN_PRED_B)]
    assert build_report(dataset, paths)[0] == build_report(dataset, paths)[0]


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "expmrc.cli", "report", *args], capture_output=True, text=True,
                          cwd=ROOT)


def test_the_command_writes_the_page_and_reports_its_size(write_json, tmp_path):
    out = tmp_path / "out" / "report.html"
    result = run_cli(write_json("dev.json", SPAN_DATA), write_json("a.json", SPAN_PRED), "--output", str(out))
    assert result.returncode == 0, result.stderr
    assert "1 of 3 questions unanswered" in result.stderr
    assert f"wrote {out}: 3 questions, 1 submission(s), " in result.stderr and "KB" in result.stderr
    assert Page(out.read_text(encoding="utf-8")).rows == ["q1", "q2", "q3"]
    assert sorted(p.name for p in out.parent.iterdir()) == ["report.html"]  # no temporary left behind


@pytest.mark.parametrize("extra, message", [
    (["--answer-threshold", "1.5"], "must be a number from 0 to 1"),
    (["--evidence-threshold", "nan"], "must be a number from 0 to 1"),
    (["--names", "a,"], "names are a comma list"),
])
def test_bad_flags_are_refused(write_json, tmp_path, extra, message):
    result = run_cli(write_json("dev.json", SPAN_DATA), write_json("a.json", SPAN_PRED), "--output",
                     str(tmp_path / "r.html"), *extra)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "r.html").exists()


def test_bad_input_is_one_line_and_writes_nothing(write_json, tmp_path):
    dataset, good = write_json("dev.json", SPAN_DATA), write_json("a.json", SPAN_PRED)
    bad = write_json("bad.json", {"q1": {"answer": "x"}})
    out = str(tmp_path / "r.html")
    cases = [
        ([dataset, bad, "--output", out], f"error: {bad}: question q1: prediction lacks `evidence`"),
        ([dataset, good, good, good, "--output", out], "error: a report shows one submission or compares two; got 3"),
        ([dataset, good, "--names", "a,b", "--output", out], "error: --names gives 2 name(s) for 1 submission(s)"),
        ([dataset, good, "--output", str(tmp_path)], f"error: {tmp_path}: is a directory"),
        ([dataset, good, "--output", f"{good}/r.html"], f"error: {good}/r.html: cannot write the page: {good} is not"),
        ([dataset, good, "--metrics", "nope", "--output", out], "error: unknown metric 'nope'"),
    ]
    for args, message in cases:
        result = run_cli(*args)
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith(message) and len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert not (tmp_path / "r.html").exists()
