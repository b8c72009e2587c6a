"""`expmrc report` with two submissions: the paired test per score and the questions that decide it."""

from __future__ import annotations

from helpers.common import SPAN_DATA, needs_punkt
from helpers.report_data import SPAN_PRED, SPAN_PRED_B

from expmrc.data.datasets import load_dataset
from expmrc.metrics.registry import select
from expmrc.reports.html import build_report, load_submissions, paired_test
from expmrc.scoring.stats import compare

pytestmark = needs_punkt


def test_two_submissions_show_the_paired_test_and_the_deciding_questions(write_json):
    dataset_path = write_json("dev.json", SPAN_DATA)
    paths = [write_json("a.json", SPAN_PRED), write_json("b.json", SPAN_PRED_B)]
    dataset = load_dataset(dataset_path)
    subs = load_submissions(dataset, paths, select(None, dataset))
    paired = paired_test(subs)
    expected = compare(subs[0].report, subs[1].report)
    assert [r["key"] for r in paired["rows"]] == list(expected)
    assert all(r["p"] == expected[r["key"]].p for r in paired["rows"])
    deltas = [(q.id, (qb.overall if qb.answered else 0.0) - (q.overall if q.answered else 0.0))
              for q, qb in zip(subs[0].report.questions, subs[1].report.questions)]
    assert [c["id"] for c in paired["gains"]] == [qid for qid, d in sorted(deltas, key=lambda x: -x[1]) if d > 0]
    assert [c["id"] for c in paired["losses"]] == [qid for qid, d in sorted(deltas, key=lambda x: x[1]) if d < 0]
    html, _ = build_report(dataset_path, paths)
    assert 'id="paired-table"' in html and "Largest gains of B" in html and "Largest losses of B" in html
    one, _ = build_report(dataset_path, paths[:1])
    assert paired_test(subs[:1]) is None and 'id="paired-table"' not in one
