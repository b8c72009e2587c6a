"""The subset table: a fifth subset is one more entry plus its data (and an lm-evaluation-harness task file), and
every command, check and table then knows it (its name as a choice, its version, its id form, its display name, its
default metrics, the source an export cites, whether the paper's Table 4 has it)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from expmrc.cli import main
from expmrc.data import subsets
from expmrc.data.datasets import load_dataset, resolve_dataset_path
from expmrc.errors import ExpmrcError
from expmrc.llm.prompts import TEMPLATES
from expmrc.metrics.registry import select
from expmrc.reports import evidence_tables

TOY = subsets.Subset("toyqa", "ToyQA", "span", "zh", "toyqa", re.compile(r"toy-\d+"), None, ("loca", "grounding"),
                     "ToyQA 0.1 (made up for this test)", None)
TASKS = Path(__file__).resolve().parents[2] / "expmrc" / "llm" / "lm_eval_tasks"
PASSAGE = "小明住在北京。他每天骑车上学。学校在城东。"


@pytest.fixture
def toyqa(tmp_path, monkeypatch):
    """The table with ToyQA added, and its dev set under $EXPMRC_DATA/toyqa/."""
    monkeypatch.setattr(subsets, "TABLE", (*subsets.TABLE, TOY))
    root = tmp_path / "data"
    (root / "toyqa").mkdir(parents=True)
    qas = [{"id": "toy-1", "question": "小明住在哪里？", "answers": [{"text": "北京", "answer_start": 4}],
            "evidences": ["小明住在北京。"]},
           {"id": "toy-2", "question": "学校在哪里？", "answers": [{"text": "城东", "answer_start": 18}],
            "evidences": ["学校在城东。"]}]
    doc = {"version": "toyqa-dev-v1", "data": [{"title": "t", "paragraphs": [{"context": PASSAGE, "qas": qas}]}]}
    (root / "toyqa" / TOY.dev_file).write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    monkeypatch.setenv("EXPMRC_DATA", str(root))
    return tmp_path


def test_a_fifth_subset_is_one_table_entry(toyqa, capsys):
    dataset = load_dataset("toyqa")
    assert (dataset.subset, dataset.kind, dataset.language) == ("toyqa", "span", "zh")
    assert resolve_dataset_path("toyqa").endswith("toyqa/expmrc-toyqa-dev.json")
    assert [m.name for m in select(None, dataset)] == ["loca", "grounding"]  # its own default metrics
    assert subsets.from_ids(["toy-7", "toy-8"]) == "toyqa"

    submission = toyqa / "sub.json"
    submission.write_text(json.dumps({"toy-1": {"answer": "北京", "evidence": "小明住在北京。"},
                                      "toy-2": {"answer": "城西", "evidence": "学校在城东。"}}), encoding="utf-8")
    assert main(["evaluate", "toyqa", str(submission), "--subset", "toyqa", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["results"][0]
    assert (result["subset"], result["EVI_F1"], result["ANS_EM"], result["ANS_F1"]) == ("toyqa", 100.0, 50.0, 75.0)
    assert result["LOCA"] == 100.0 and result["EVI_NOT_IN_PASSAGE"] == 0.0  # the table's metrics, not squad's


def test_a_fifth_subset_appears_in_collect_under_its_display_name(toyqa, capsys):
    run = toyqa / "runs" / "toy-seed1"
    run.mkdir(parents=True)
    (run / "dev_predictions.json").write_text(json.dumps({"toy-1": {"answer": "北京", "evidence": "小明住在北京。"},
                                                          "toy-2": {"answer": "城东", "evidence": "学校在城东。"}}),
                                              encoding="utf-8")
    (run / "run_info.json").write_text(json.dumps({"schema": 2, "status": "finished", "task": "span",
                                                   "predict_file": "toyqa", "loss_lambda": 0.1, "rand_seed": 1,
                                                   "model": "bert", "global_step": 3}), encoding="utf-8")
    assert main(["collect", str(toyqa / "runs"), "--output-dir", str(toyqa / "out"), "--format", "md"]) == 0
    assert "| ToyQA |" in (toyqa / "out" / "table3.md").read_text(encoding="utf-8")


def test_unknown_names_and_downloads_say_what_the_table_holds(toyqa, capsys):
    with pytest.raises(ExpmrcError, match="has no official dev set to download"):
        from expmrc.data.download import check_subsets
        check_subsets(["toyqa"])
    assert "toyqa" not in subsets.official() and "squad" in subsets.official()
    with pytest.raises(ExpmrcError, match="unknown subset 'toy'; choose one of squad, cmrc2018, race, c3, toyqa"):
        subsets.subset("toy")
    assert main(["evaluate", "toyqa", "x.json", "--subset", "toy"]) == 2
    assert "invalid choice: 'toy'" in capsys.readouterr().err


def test_a_fifth_subset_goes_through_export_with_its_source_cited(toyqa, capsys):
    assert main(["export", "toyqa", "--format", "jsonl", "--output", str(toyqa / "hf")]) == 0
    assert "toyqa: 2 questions" in capsys.readouterr().err
    card = (toyqa / "hf" / "README.md").read_text(encoding="utf-8")
    assert "| `toyqa` | ToyQA | 2 | `toyqa/dev.jsonl` | ToyQA 0.1 (made up for this test) | exact |" in card
    assert "`squad`/`cmrc2018`/`race`/`c3`/`toyqa`; `en` or `zh`" in card  # the columns' subset values


def test_table4_shows_a_subset_the_paper_lacks_beside_the_papers_cells(toyqa, capsys):
    doc = json.loads((toyqa / "data" / "toyqa" / TOY.dev_file).read_text(encoding="utf-8"))
    (toyqa / "data" / "cmrc2018").mkdir()
    (toyqa / "data" / "cmrc2018" / "expmrc-cmrc2018-dev.json").write_text(  # the same questions, as CMRC 2018's
        json.dumps(dict(doc, version="v1.0-expmrc-cmrc2018-dev"), ensure_ascii=False), encoding="utf-8")
    assert evidence_tables.main(["table4", "--subsets", "cmrc2018", "toyqa"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[2].startswith("| CMRC 2018 | 82.1 | 100.00 | +17.90 | 85.2 | 100.00 | +14.80 |")
    assert rows[3] == "| ToyQA | — | 100.00 | — | — | 100.00 | — |"
    assert rows[-1] == "Not in the paper (ours alone): ToyQA."


def task_file_problems() -> list[str]:
    """What the lm-evaluation-harness task files lack for the subset table: a file per subset naming the subset and
    a prompt template of its task kind and language, and the `expmrc` group listing every subset in table order."""
    problems = []
    for entry in subsets.TABLE:
        path = TASKS / f"expmrc_{entry.name}.yaml"
        if not path.is_file():
            problems.append(f"{path.name} is missing")
            continue
        task = yaml.safe_load(path.read_text(encoding="utf-8"))
        template = TEMPLATES.get(task["dataset_kwargs"]["template"])
        if (task["task"], task["dataset_kwargs"]["subset"]) != (f"expmrc_{entry.name}", entry.name) or template is None \
                or (template.task, template.language) != (entry.kind, entry.language):
            problems.append(f"{path.name} names another task, subset or template")
    group = yaml.safe_load((TASKS / "expmrc.yaml").read_text(encoding="utf-8"))["task"]
    if group != [f"expmrc_{name}" for name in subsets.names()]:
        problems.append(f"expmrc.yaml's group is {group}")
    return problems


def test_every_subset_has_its_lm_eval_task_file():
    assert task_file_problems() == []


def test_a_fifth_subset_without_its_task_file_is_caught(toyqa):
    assert task_file_problems() == ["expmrc_toyqa.yaml is missing", "expmrc.yaml's group is ['expmrc_squad', "
                                    "'expmrc_cmrc2018', 'expmrc_race', 'expmrc_c3']"]
