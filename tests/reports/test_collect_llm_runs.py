"""`expmrc collect` over `expmrc llm` run folders tabulates only finished runs whose files read: a run whose record
says `running`, a folder whose scores.json is missing, and one holding a score that is a string are each left out
with the reason (in llm_runs.md and one stderr line each), as a damaged training run is; the rest are tabulated."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from helpers.fake_openai import FakeChatServer
from helpers.llm_data import gold_reply, run_llm, write_dataset

from expmrc.cli import main


def edit(path: Path, change) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    change(doc)
    path.write_text(json.dumps(doc), encoding="utf-8")


def test_unfinished_and_damaged_llm_runs_are_left_out_with_their_reason(tmp_path, capsys):
    dataset = write_dataset(tmp_path, "cmrc2018")
    runs = tmp_path / "runs"
    with FakeChatServer(gold_reply(dataset)) as server:
        assert run_llm(tmp_path, dataset, server.url, out="runs/good") == 0
    for name in ("running", "no-scores", "string-score"):
        shutil.copytree(runs / "good", runs / name)
    edit(runs / "running" / "run_info.json", lambda doc: doc.update(status="running"))
    (runs / "no-scores" / "scores.json").unlink()
    edit(runs / "string-score" / "scores.json", lambda doc: doc["grounded"].update(ALL_F1="12.5"))
    capsys.readouterr()

    assert main(["collect", str(runs), "--output-dir", str(tmp_path / "table"), "--quiet"]) == 0
    table = (tmp_path / "table" / "llm_runs.md").read_text(encoding="utf-8")
    rows = [line for line in table.splitlines() if line.startswith(f"| {runs}")]
    assert [row.split(" | ")[0] for row in rows] == [f"| {runs / 'good'}"]
    left = {line.split("`")[1]: line for line in table.splitlines() if line.startswith("- `")}
    assert sorted(Path(d).name for d in left) == ["no-scores", "running", "string-score"]
    assert "(unfinished): status 'running'" in left[str(runs / "running")]
    assert "(invalid)" in left[str(runs / "no-scores")] and "scores file not found" in left[str(runs / "no-scores")]
    assert '"12.5", not a finite number' in left[str(runs / "string-score")]
    err = capsys.readouterr().err
    assert sorted(line.split()[2] for line in err.splitlines() if line.startswith("left out ")) == \
        sorted(str(runs / name) for name in ("no-scores", "running", "string-score"))
    assert "Traceback" not in err


def test_when_no_llm_run_can_be_tabulated_collect_says_why_in_one_line(tmp_path, capsys):
    dataset = write_dataset(tmp_path, "cmrc2018")
    with FakeChatServer(gold_reply(dataset)) as server:
        assert run_llm(tmp_path, dataset, server.url, out="runs/only") == 0
    edit(tmp_path / "runs" / "only" / "run_info.json", lambda doc: doc.update(status="running"))
    capsys.readouterr()
    assert main(["collect", str(tmp_path / "runs"), "--output-dir", str(tmp_path / "table"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "none of the 1 LLM run(s) finished" in err and "status 'running'" in err
    assert not (tmp_path / "table").exists()
