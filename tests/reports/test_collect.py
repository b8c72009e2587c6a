"""`expmrc collect` on synthetic run directories whose scores are known by construction.

Every prediction is either exactly right or shares no token with the reference, so each run's answer,
evidence and overall scores are simple fractions computed here by hand.
"""

from __future__ import annotations

import csv
import io
import json
import os
import statistics
from html.parser import HTMLParser
from pathlib import Path

from helpers.common import needs_punkt

from expmrc.cli import main as cli_main

pytestmark = needs_punkt

SPAN_QUESTIONS = [
    ("q1", "Paris", "Paris is the capital of France."),
    ("q2", "Tokyo", "Tokyo is the capital of Japan."),
    ("q3", "Rome", "Rome is the capital of Italy."),
    ("q4", "Cairo", "Cairo is the capital of Egypt."),
]


def write_json(path: Path, obj) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, ensure_ascii=False), encoding="utf-8")
    return str(path)


def span_dataset(tmp_path: Path) -> str:
    context = " ".join(evidence for _, _, evidence in SPAN_QUESTIONS)
    qas = [{"id": qid, "question": f"Which city is {qid}?",
            "answers": [{"text": answer, "answer_start": context.index(answer)}], "evidences": [evidence]}
           for qid, answer, evidence in SPAN_QUESTIONS]
    return write_json(tmp_path / "data" / "squad-dev.json",
                      {"version": "expmrc-squad-dev", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]})


def choice_dataset(tmp_path: Path) -> str:
    passage = {"id": "p1", "article": "The sky is blue. Grass is green. Snow is white.",
               "questions": ["What colour is the sky?", "What colour is grass?"],
               "options": [["blue", "red", "green", "white"], ["red", "blue", "green", "black"]],
               "answers": ["A", "C"], "evidences": [["The sky is blue."], ["Grass is green."]]}
    return write_json(tmp_path / "data" / "race-dev.json", {"version": "expmrc-race-dev", "data": [passage]})


def span_predictions(answer_right: list[int], evidence_right: list[int]) -> dict:
    """Right: the reference itself; wrong: text sharing no token with it."""
    return {qid: {"answer": answer if a else "nowhere", "evidence": evidence if e else "Nothing to see."}
            for (qid, answer, evidence), a, e in zip(SPAN_QUESTIONS, answer_right, evidence_right)}


def make_run(folder: Path, predict_file: str, task: str, lam: float, seed: int, predictions: dict | None,
             status: str = "finished", model: str = "models/tiny-bert", **extra) -> None:
    info = {"task": task, "task_name": "x", "predict_file": predict_file, "train_file": "train.json",
            "loss_lambda": lam, "rand_seed": seed, "model": model, "status": status, "global_step": 4,
            "flags": {}, **extra}
    write_json(folder / "run_info.json", info)
    if predictions is not None:
        write_json(folder / "dev_predictions.json", predictions)


def build_sweep(tmp_path: Path) -> Path:
    """Finished span runs at λ 0.01 and 0.1 (2 seeds each) and λ 0.5 (one question unanswered), a
    finished choice run, and runs that must be left out: failed, running, empty, corrupt predictions."""
    squad, race = span_dataset(tmp_path), choice_dataset(tmp_path)
    sweep = tmp_path / "sweep"
    make_run(sweep / "squad/lambda_0.01/seed_1", squad, "span", 0.01, 1, span_predictions([1, 1, 1, 0], [1, 1, 0, 0]))
    make_run(sweep / "squad/lambda_0.01/seed_2", squad, "span", 0.01, 2, span_predictions([1, 1, 1, 1], [1, 0, 0, 0]))
    make_run(sweep / "squad/lambda_0.1/seed_1", squad, "span", 0.1, 1, span_predictions([1, 0, 0, 0], [1, 1, 1, 1]))
    make_run(sweep / "squad/lambda_0.1/seed_2", squad, "span", 0.1, 2, span_predictions([1, 0, 0, 0], [1, 1, 1, 1]))
    partial = span_predictions([1, 1, 1, 1], [1, 1, 1, 1])
    del partial["q4"]
    make_run(sweep / "squad/lambda_0.5/seed_1", squad, "span", 0.5, 1, partial)
    make_run(sweep / "race/lambda_0.1/seed_1", race, "choice", 0.1, 1,
             {"p1-0": {"answer": "A", "evidence": "The sky is blue."}, "p1-1": {"answer": "B", "evidence": "Grass is green."}})
    make_run(sweep / "squad/lambda_0.5/seed_2", squad, "span", 0.5, 2, None, status="failed", error="CUDA out of memory")
    make_run(sweep / "squad/lambda_0.5/seed_3", squad, "span", 0.5, 3, None, status="running")
    (sweep / "squad/lambda_0.5/seed_4").mkdir(parents=True)
    make_run(sweep / "squad/lambda_0.5/seed_5", squad, "span", 0.5, 5, None)
    (sweep / "squad/lambda_0.5/seed_5/dev_predictions.json").write_text('{"q1": {"answer": "Par', encoding="utf-8")
    return sweep


def read_csv(path: Path) -> list[dict]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


def test_farm_columns_come_from_each_runs_faithfulness_record(tmp_path, capsys):
    squad = span_dataset(tmp_path)
    for seed, farm4 in ((1, 0.5), (2, 0.25), (3, None)):
        run = tmp_path / "runs" / f"seed_{seed}"
        make_run(run, squad, "span", 0.1, seed, span_predictions([1, 1, 1, 1], [1, 1, 1, 1]))
        if farm4 is not None:
            farm = [{"k": k, "farm": farm4 if k == 4 else 0.0, "c_rel": 0.0, "c_irr": 0.0} for k in (1, 2, 3, 4)]
            write_json(run / "faithfulness.json", {"questions": 4, "farm": farm})
    out = tmp_path / "results"
    assert cli_main(["collect", str(tmp_path / "runs"), "--output-dir", str(out), "--quiet", "--farm",
                     "--format", "md,csv"]) == 0
    setting = read_csv(out / "table3.csv")[0]
    assert (setting["farm4_mean"], setting["farm4_max"], setting["loca_mean"]) == ("0.375", "0.500", "100.000")
    runs = {Path(r["run_dir"]).name: r for r in read_csv(out / "runs.csv")}
    assert (runs["seed_1"]["farm4"], runs["seed_3"]["farm4"]) == ("0.500", "")
    assert "no faithfulness.json" in runs["seed_3"]["note"] and runs["seed_3"]["status"] == "finished"
    markdown = (out / "table3.md").read_text(encoding="utf-8")
    assert "| SQuAD FARM(4) |" in markdown and "| 0.500 |" in markdown
    assert cli_main(["collect", str(tmp_path / "runs"), "--output-dir", str(tmp_path / "plain"), "--quiet",
                     "--format", "csv"]) == 0
    assert "farm4_mean" not in read_csv(tmp_path / "plain" / "table3.csv")[0]


def test_collect_writes_table_csv_and_figure_with_the_right_numbers(tmp_path, capsys):
    sweep = build_sweep(tmp_path)
    out = tmp_path / "results"
    assert cli_main(["collect", str(sweep), "--output-dir", str(out), "--quiet"]) == 0
    err = capsys.readouterr().err
    for name in ("table3.md", "table3.csv", "runs.csv", "lambda.png"):
        assert f"wrote {out / name}" in err

    settings = {(r["subset"], r["loss_lambda"]): r for r in read_csv(out / "table3.csv")}
    assert sorted(settings) == [("race", "0.1"), ("squad", "0.01"), ("squad", "0.1"), ("squad", "0.5")]
    low = settings[("squad", "0.01")]  # seed 1: 75 / 50 / 50, seed 2: 100 / 25 / 25
    spread = f"{statistics.stdev([75, 100]):.3f}"
    assert (low["runs"], low["seeds"]) == ("2", "1 2")
    assert (low["answer_mean"], low["answer_std"], low["answer_max"]) == ("87.500", spread, "100.000")
    assert (low["evidence_mean"], low["evidence_std"], low["evidence_max"]) == ("37.500", spread, "50.000")
    assert (low["overall_mean"], low["overall_std"], low["overall_max"]) == ("37.500", spread, "50.000")
    high = settings[("squad", "0.1")]
    assert (high["answer_mean"], high["answer_std"], high["evidence_max"], high["overall_max"]) == (
        "25.000", "0.000", "100.000", "25.000")
    half = settings[("squad", "0.5")]  # only the finished seed counts; q4 unanswered scores 0
    assert (half["runs"], half["answer_mean"], half["answer_std"], half["overall_mean"]) == ("1", "75.000", "", "75.000")
    race = settings[("race", "0.1")]
    assert (race["task"], race["answer_mean"], race["evidence_mean"], race["overall_mean"]) == (
        "choice", "50.000", "100.000", "50.000")
    # LOCA = I / (A + O). Seed 1 of λ 0.01: q1, q2 inside, q3 outside, q4's answer not in the passage
    # (not counted): 2 / (3 + 1). Seed 2: q1 inside, q2-q4 outside: 1 / (4 + 3).
    assert (low["loca_mean"], low["loca_max"]) == (f"{(50 + 100 / 7) / 2:.3f}", "50.000")
    assert (high["loca_mean"], half["loca_mean"]) == ("100.000", "100.000")  # only inside answers are counted
    # RACE+: the lexical stand-in. p1-0's evidence is the sentence most like its option "blue", p1-1's is not.
    assert race["loca_mean"] == "50.000"
    assert "farm4_mean" not in race  # FARM(4) only when asked for

    runs = {Path(r["run_dir"]).relative_to(sweep).as_posix(): r for r in read_csv(out / "runs.csv")}
    assert len(runs) == 10
    assert runs["squad/lambda_0.5/seed_2"]["status"] == "failed" and "CUDA out of memory" in runs["squad/lambda_0.5/seed_2"]["note"]
    assert runs["squad/lambda_0.5/seed_3"]["status"] == "unfinished" and "running" in runs["squad/lambda_0.5/seed_3"]["note"]
    assert runs["squad/lambda_0.5/seed_4"]["status"] == "unfinished" and "no run_info.json" in runs["squad/lambda_0.5/seed_4"]["note"]
    assert runs["squad/lambda_0.5/seed_5"]["status"] == "invalid" and "dev_predictions.json: prediction file is" in runs["squad/lambda_0.5/seed_5"]["note"]
    assert runs["squad/lambda_0.5/seed_1"]["unanswered"] == "1"

    markdown = (out / "table3.md").read_text(encoding="utf-8")
    assert "| tiny-bert | 0.01 | 100.0 | 50.0 | 50.0 | 50.0 |  |  |  |  | 2 |" in markdown  # max over seeds
    assert "| tiny-bert | 0.01 | 87.5 ± 17.7 | 37.5 ± 17.7 | 37.5 ± 17.7 | 32.1 ± 25.3 |" in markdown
    assert "| tiny-bert | 0.1 | 25.0 | 100.0 | 25.0 | 100.0 | 50.0 | 100.0 | 50.0 | 50.0 | 2/1 |" in markdown
    assert "seed_2` (failed): failed: CUDA out of memory" in markdown
    assert markdown.count("\n- `") == 5  # four runs left out, one note about the unanswered question

    png = (out / "lambda.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image

    image = matplotlib.image.imread(str(out / "lambda.png"))
    assert image.shape[1] > image.shape[0] > 100  # two panels side by side
    assert not [p for p in out.iterdir() if ".tmp" in p.name]


def test_data_override_picks_the_dataset_sharing_question_ids(tmp_path):
    squad, race = span_dataset(tmp_path), choice_dataset(tmp_path)
    runs = tmp_path / "runs"
    make_run(runs / "a", "/nowhere/dev.json", "span", 0.01, 1, span_predictions([1, 1, 0, 0], [1, 1, 1, 1]))
    make_run(runs / "b", "/nowhere/dev.json", "choice", 0.1, 1, {"p1-0": {"answer": "A", "evidence": "x"}})
    out = tmp_path / "out"
    assert cli_main(["collect", str(runs / "a"), str(runs / "b"), "--data", squad, "--data", race,
                     "--output-dir", str(out), "--format", "csv", "--quiet"]) == 0
    rows = {r["subset"]: r for r in read_csv(out / "table3.csv")}
    assert rows["squad"]["answer_mean"] == "50.000" and rows["race"]["answer_mean"] == "50.000"
    assert sorted(p.name for p in out.iterdir()) == ["runs.csv", "table3.csv"]


def test_missing_dev_set_leaves_the_run_out_with_the_reason(tmp_path, capsys):
    runs = tmp_path / "runs"
    make_run(runs / "a", "/nowhere/dev.json", "span", 0.01, 1, span_predictions([1, 1, 1, 1], [1, 1, 1, 1]))
    make_run(runs / "b", span_dataset(tmp_path), "span", 0.01, 2, span_predictions([1, 1, 1, 1], [1, 1, 1, 1]))
    assert cli_main(["collect", str(runs), "--output-dir", str(tmp_path / "out"), "--format", "md"]) == 0
    captured = capsys.readouterr()
    assert "predict_file /nowhere/dev.json not found (pass --data DEV_SET)" in captured.err
    assert "| tiny-bert | 0.01 | 100.0 | 100.0 | 100.0 | 100.0 | 1 |" in captured.out


def test_nothing_scorable_is_one_line_and_writes_nothing(tmp_path, capsys):
    runs = tmp_path / "runs"
    make_run(runs / "a", "x.json", "span", 0.01, 1, None, status="running")
    assert cli_main(["collect", str(runs), "--output-dir", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: none of the 1 run(s) finished") and err.count("\n") == 1
    assert not (tmp_path / "out").exists()
    assert cli_main(["collect", str(tmp_path / "no-such-dir")]) == 2
    assert "no-such-dir: not a run directory" in capsys.readouterr().err


def test_runs_whose_settings_are_not_numbers_are_left_out_with_the_reason(tmp_path, capsys):
    squad = span_dataset(tmp_path)
    runs = tmp_path / "runs"
    right = span_predictions([1, 1, 1, 1], [1, 1, 1, 1])
    make_run(runs / "ok", squad, "span", 0.1, 1, right)
    make_run(runs / "fractional-seed", squad, "span", 0.1, 1.9, right)
    make_run(runs / "nan-lambda", squad, "span", 0.1, 2, right)
    info = runs / "nan-lambda" / "run_info.json"
    info.write_text(info.read_text(encoding="utf-8").replace('"loss_lambda": 0.1', '"loss_lambda": NaN'), encoding="utf-8")
    make_run(runs / "text-lambda", squad, "span", "0.1", 3, right)
    make_run(runs / "failed", squad, "span", 0.1, 4, right, status="failed", error="loss became nan at step 3")
    make_run(runs / "newer-schema", squad, "span", 0.1, 5, right, schema=99)
    out = tmp_path / "out"
    assert cli_main(["collect", str(runs), "--output-dir", str(out), "--format", "csv", "--quiet"]) == 0
    rows = {Path(r["run_dir"]).name: r for r in read_csv(out / "runs.csv")}
    assert rows["fractional-seed"]["status"] == "invalid" and "rand_seed 1.9 is not a whole number" in rows["fractional-seed"]["note"]
    assert rows["nan-lambda"]["status"] == "invalid" and "NaN, which is not finite" in rows["nan-lambda"]["note"]
    assert rows["text-lambda"]["status"] == "invalid" and "loss_lambda is '0.1', not a number" in rows["text-lambda"]["note"]
    assert rows["failed"]["status"] == "failed"
    assert rows["newer-schema"]["status"] == "invalid" and "written by a newer expmrc" in rows["newer-schema"]["note"]
    (setting,) = read_csv(out / "table3.csv")
    assert (setting["runs"], setting["seeds"]) == ("1", "1")  # only the good run is averaged


def test_runs_group_by_dev_file_content_and_resolved_model(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    squad = span_dataset(tmp_path)
    shorter = json.loads(Path(squad).read_text(encoding="utf-8"))
    shorter["data"][0]["paragraphs"][0]["qas"] = shorter["data"][0]["paragraphs"][0]["qas"][:2]
    small = write_json(tmp_path / "data" / "squad-dev-small.json", shorter)
    copy = write_json(tmp_path / "elsewhere" / "squad-dev.json", json.loads(Path(squad).read_text(encoding="utf-8")))
    (tmp_path / "models" / "tiny-bert").mkdir(parents=True)
    runs = tmp_path / "runs"
    right = span_predictions([1, 1, 1, 1], [1, 1, 1, 1])
    make_run(runs / "relative", squad, "span", 0.1, 1, right, model="models/tiny-bert")
    make_run(runs / "absolute", copy, "span", 0.1, 2, right, model=str(tmp_path / "models" / "tiny-bert"))
    make_run(runs / "small-dev", small, "span", 0.1, 3, {k: right[k] for k in ("q1", "q2")}, model="models/tiny-bert")
    out = tmp_path / "results"
    (out / "table3.md").parent.mkdir()
    (out / "table3.md").write_text("an earlier collect", encoding="utf-8")
    assert cli_main(["collect", "runs", "results", "--output-dir", "results", "--quiet"]) == 0
    settings = read_csv(out / "table3.csv")
    assert sorted((r["runs"], r["seeds"], Path(r["dev_file"]).name) for r in settings) == [
        ("1", "3", "squad-dev-small.json"), ("2", "1 2", "squad-dev.json")]
    assert len({r["model"] for r in settings}) == 1  # relative and absolute paths: one model
    assert len(read_csv(out / "runs.csv")) == 3  # its own results/ folder is not a run
    markdown = (out / "table3.md").read_text(encoding="utf-8")
    assert "| tiny-bert (dev: squad-dev-small.json " in markdown


def test_a_repeated_seed_in_one_setting_is_refused_in_one_line(tmp_path, capsys):
    squad = span_dataset(tmp_path)
    runs = tmp_path / "runs"
    right = span_predictions([1, 1, 1, 1], [1, 1, 1, 1])
    make_run(runs / "a", squad, "span", 0.1, 7, right)
    make_run(runs / "b", squad, "span", 0.1, 7.0, right)
    assert cli_main(["collect", str(runs), "--output-dir", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {runs / 'a'} and {runs / 'b'}: the same setting")
    assert "same seed 7" in err and not (tmp_path / "out").exists()


def test_html_page_links_every_scored_run_to_its_report(tmp_path, capsys):
    sweep = build_sweep(tmp_path)
    out = tmp_path / "results"
    assert cli_main(["collect", str(sweep), "--output-dir", str(out), "--format", "md", "--html", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert f"wrote {out / 'index.html'}" in err

    class Links(HTMLParser):
        def __init__(self):
            super().__init__()
            self.links, self.tags = [], []

        def handle_starttag(self, tag, attrs):
            self.tags.append(tag)
            self.links += [value for name, value in attrs if name in ("href", "src")]

    page = Links()
    page.feed((out / "index.html").read_text(encoding="utf-8"))
    scored = ["squad/lambda_0.01/seed_1", "squad/lambda_0.01/seed_2", "squad/lambda_0.1/seed_1",
              "squad/lambda_0.1/seed_2", "squad/lambda_0.5/seed_1", "race/lambda_0.1/seed_1"]
    expected = {f"reports/{run.replace('/', '_')}.html" for run in scored}
    assert set(page.links) == expected and len(page.links) == 2 * len(scored)  # from the settings and from the runs
    assert sorted(p.name for p in (out / "reports").iterdir()) == sorted(link.split("/")[1] for link in expected)
    assert "svg" in page.tags and "img" not in page.tags and "script" not in page.tags
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "<td>100.0</td><td>50.0</td><td>50.0</td>" in index  # λ 0.01, max over seeds, as in table3.md
    assert "CUDA out of memory" in index
    report = (out / "reports" / "squad_lambda_0.5_seed_1.html").read_text(encoding="utf-8")
    assert report.count('class="qrow"') == 4 and "ExpMRC run " in report


def test_a_run_folder_whose_name_is_not_utf8_is_refused_before_anything_is_written(tmp_path, capsys):
    squad = span_dataset(tmp_path)
    runs = tmp_path / "runs"
    make_run(runs / "ok", squad, "span", 0.01, 1, span_predictions([1, 1, 1, 0], [1, 1, 0, 0]))
    odd = Path(os.fsdecode(os.fsencode(runs) + b"/seed-\xff"))  # a byte no UTF-8 text holds
    make_run(odd, squad, "span", 0.1, 1, span_predictions([1, 1, 1, 1], [1, 1, 1, 1]))
    out = tmp_path / "out"
    assert cli_main(["collect", str(runs), "--output-dir", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {runs}/seed-\\xff: the folder's name is not valid UTF-8, so no table can name it; " \
                  "rename it, or collect the folders beside it\n"
    assert not out.exists()
