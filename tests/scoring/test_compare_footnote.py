"""`expmrc compare` explains its `*` only when a row carries one; when none does it says that no difference is
larger than the sampling of questions explains."""

from __future__ import annotations

import json

from helpers.common import CHOICE_DATA

from expmrc.cli import main


def run_compare(tmp_path, capsys, system: dict) -> str:
    dataset = tmp_path / "c3.json"
    dataset.write_text(json.dumps(CHOICE_DATA, ensure_ascii=False), encoding="utf-8")
    good = {"m1-0": {"answer": "A", "evidence": "小明去北京。"}, "m1-1": {"answer": "A", "evidence": "他喜欢长城。"},
            "m2-0": {"answer": "B", "evidence": "天很蓝。"}}
    (tmp_path / "base.json").write_text(json.dumps(good, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "system.json").write_text(json.dumps(system, ensure_ascii=False), encoding="utf-8")
    capsys.readouterr()
    assert main(["compare", str(dataset), str(tmp_path / "base.json"), str(tmp_path / "system.json"),
                 "--metrics", ""]) == 0
    return capsys.readouterr().out


def rows(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.split()[:1] in (["ALL_F1"], ["ANS_F1"], ["EVI_F1"], ["ANS_EM"])]


def test_nothing_starred_means_no_star_footnote(tmp_path, capsys):
    same = {"m1-0": {"answer": "A", "evidence": "小明去北京。"}, "m1-1": {"answer": "A", "evidence": "他喜欢长城。"},
            "m2-0": {"answer": "B", "evidence": "天很蓝。"}}
    out = run_compare(tmp_path, capsys, same)
    assert rows(out) and not any(line.endswith("*") for line in rows(out))
    assert "* the interval" not in out and "No interval of Δ = system − baseline" in out


def test_a_starred_row_gets_the_footnote(tmp_path, capsys):
    wrong = {"m1-0": {"answer": "B", "evidence": "x"}, "m1-1": {"answer": "B", "evidence": "x"},
             "m2-0": {"answer": "A", "evidence": "x"}}
    out = run_compare(tmp_path, capsys, wrong)
    assert any(line.endswith("*") for line in rows(out))
    assert "\n* the interval of Δ = system − baseline (95% paired bootstrap) excludes 0" in out
    assert "No interval" not in out
