"""An `expmrc llm` run whose model changed a fact in one quote and wrote another in traditional script, as two
sentences out of order: the run's scores.json, printout, grounded.json, `collect` table and `report` page say
which evidence is altered, and the changed quote is never replaced by the passage text."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.fake_openai import FakeChatServer
from helpers.llm_data import write_dataset

from expmrc.cli import main

REPLIES = {  # question -> the model's JSON reply
    "长江在哪里注入东海？": {"answer": "上海", "evidence": ["最終在上海注入東海。", "它發源於青藏高原，"]},
    "长江全长约多少公里？": {"answer": "6800公里", "evidence": "長江是中國第一長河，全長約6800公里。"},
}


def reply(body: dict) -> str:
    asked = next(q for q in REPLIES if q in body["messages"][-1]["content"])
    return "```json\n" + json.dumps(REPLIES[asked], ensure_ascii=False) + "\n```"


def test_an_altered_quote_is_counted_shown_and_kept_as_written(tmp_path: Path, capsys) -> None:
    dataset = write_dataset(tmp_path, "cmrc2018")
    runs = tmp_path / "runs"
    with FakeChatServer(reply) as server:
        assert main(["llm", dataset, "--model", "fake-model", "--base-url", server.url, "--output",
                     str(runs / "zh"), "--cache", str(tmp_path / "cache.sqlite"), "--quiet"]) == 0
    printed = capsys.readouterr().err  # the run prints its summary on stderr
    assert ("verbatim evidence: 50.0% (exact 0 + normalized 1); untrustworthy evidence: 50.0% (unverified 0 + "
            "altered 1 + reworded 0); of 2 questions with evidence") in printed
    run = runs / "zh"
    grounding = json.loads((run / "scores.json").read_text(encoding="utf-8"))["grounding"]
    assert (grounding["missing"], grounding["unverified"], grounding["altered"]) == (0, 0, 1)
    assert grounding["untrustworthy_evidence_rate"] == grounding["verbatim_evidence_rate"] == 0.5
    assert grounding["counts"]["exact"] == 0 and grounding["reworded"] == 0
    grounded = json.loads((run / "grounded.json").read_text(encoding="utf-8"))
    assert grounded["cm-2"]["evidence"] == "長江是中國第一長河，全長約6800公里。"  # as the model wrote it
    assert grounded["cm-1"]["evidence"] == "它发源于青藏高原，最终在上海注入东海。"  # both sentences, passage text
    records = {r["id"]: r for r in map(json.loads, (run / "responses.jsonl").read_text(encoding="utf-8").splitlines())}
    assert [{k: c[k] for k in ("quote", "passage", "kind")} for c in records["cm-2"]["grounding"]["evidence"][
        "changes"]] == [{"quote": "6800", "passage": "6300", "kind": "number"}]
    assert records["cm-1"]["grounding"]["evidence"]["status"] == "normalized"

    assert main(["collect", str(runs), "--output-dir", str(tmp_path / "table"), "--quiet"]) == 0
    table = (tmp_path / "table" / "llm_runs.md").read_text(encoding="utf-8")
    assert "evi. missing/unverified/altered/reworded | verbatim evi. % | untrustworthy evi. % |" in table
    assert "| 0/0/1/0 | 50.0 | 50.0 |" in table
    page = tmp_path / "report.html"
    assert main(["report", dataset, str(run / "predictions.json"), "--output", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert "evidence changes" in html and "“6800” for “6300” (number)" in html


def old_run(tmp_path: Path, grounding: dict) -> Path:
    run = tmp_path / "old"
    run.mkdir()
    (run / "run_info.json").write_text(json.dumps({"subset": "squad", "model": "m", "backend": "openai", "shots": {
        "k": 0}, "template": {"name": "span-en-v1"}}), encoding="utf-8")
    figures = {"ALL_F1": 50.0, "ANS_F1": 60.0, "EVI_F1": 40.0}
    (run / "scores.json").write_text(json.dumps({"raw": figures, "grounded": figures, "parse": {"failed": 0},
                                                 "questions": 2, "grounding": grounding}), encoding="utf-8")
    return run


def test_collect_shows_a_dash_for_a_run_recorded_before_the_rate_existed(tmp_path: Path) -> None:
    from expmrc.data.runs import RunRecord
    from expmrc.reports.llm_runs import llm_row

    run = old_run(tmp_path, {"unverified_evidence_rate": 0.5})
    record = RunRecord.read(run)
    assert record is not None and record.kind == "llm"
    assert llm_row(str(run), record)[-4:-1] == ["-", "-", "-"]  # counts and rates; the environment follows


def test_collect_reads_a_run_recorded_before_the_one_rule_without_its_rates(tmp_path: Path) -> None:
    """A run whose grounding still had `fuzzy` (replaced by passage text, counted as trustworthy): its counts, no
    rates, and a note saying why."""
    counts = {"exact": 1, "normalized": 0, "fuzzy": 1, "altered": 1, "unverified": 0, "missing": 1}
    run = old_run(tmp_path, {"counts": counts, "missing": 1, "unverified": 0, "altered": 1, "evidence_given": 3,
                             "untrustworthy_evidence_rate": 1 / 3})
    assert main(["collect", str(tmp_path), "--output-dir", str(tmp_path / "table"), "--quiet"]) == 0
    table = (tmp_path / "table" / "llm_runs.md").read_text(encoding="utf-8")
    assert f"| {run} |" in table and "| 1/0/1/- (recorded before grounding's one rule) | - | - |" in table
    assert "its rates are not comparable and are not shown" in table


def test_the_report_page_says_each_change_as_a_reader_reads_it() -> None:
    from expmrc.reports.llm_replies import described

    assert described({"quote": "6800", "passage": "6300", "kind": "number"}) == "“6800” for “6300” (number)"
    assert described({"quote": "", "passage": "not", "kind": "negation"}) == "“not” left out (negation)"
    assert described({"quote": "very", "passage": "", "kind": "word"}) == "“very” added (word)"
