"""`expmrc collect`'s statistics over questions: each setting's interval and its paired test against the best."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from helpers.common import needs_punkt

from expmrc.cli import main as cli_main

pytestmark = needs_punkt
N = 60


def write_json(path: Path, obj) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj), encoding="utf-8")
    return str(path)


def make_run(folder: Path, dev: str, lam: float, seed: int, right: list[bool]) -> None:
    write_json(folder / "run_info.json", {"task": "choice", "predict_file": dev, "loss_lambda": lam, "rand_seed": seed,
                                          "model": "models/tiny", "status": "finished", "flags": {}})
    write_json(folder / "dev_predictions.json",
               {f"p-{k}": {"answer": "A" if ok else "B", "evidence": "The sky is blue."} for k, ok in enumerate(right)})


def test_settings_get_intervals_and_those_not_worse_than_the_best_are_marked(tmp_path):
    dev = write_json(tmp_path / "race-dev.json", {"version": "expmrc-race-dev", "data": [{
        "id": "p", "article": "The sky is blue. Grass is green.", "questions": [f"Q{k}?" for k in range(N)],
        "options": [["blue", "red", "green", "white"]] * N, "answers": ["A"] * N,
        "evidences": [["The sky is blue."]] * N}]})
    runs = tmp_path / "runs"
    for seed in (1, 2):
        make_run(runs / f"best-{seed}", dev, 0.1, seed, [k % 10 != seed for k in range(N)])  # 90% right
        make_run(runs / f"close-{seed}", dev, 0.2, seed, [k % 10 != seed + 4 and k % 20 != seed + 5 for k in range(N)])  # 85%, wrong elsewhere
        make_run(runs / f"poor-{seed}", dev, 0.5, seed, [k % 10 < 2 for k in range(N)])  # 20%
    out = tmp_path / "out"
    assert cli_main(["collect", str(runs), "--output-dir", str(out), "--quiet", "--format", "md,csv"]) == 0
    rows = {r["loss_lambda"]: r for r in csv.DictReader(io.StringIO((out / "table3.csv").read_text(encoding="utf-8")))}
    assert rows["0.1"]["answer_p_vs_best"] == "best"
    assert float(rows["0.2"]["answer_p_vs_best"]) >= 0.05  # 90 against 85 on 60 questions: not significant
    assert float(rows["0.5"]["answer_p_vs_best"]) == round(1 / 1001, 4)  # the smallest p of 1000 resamples
    for row in rows.values():
        assert float(row["answer_ci_low"]) <= float(row["answer_mean"]) <= float(row["answer_ci_high"])
    markdown = (out / "table3.md").read_text(encoding="utf-8")
    assert "| tiny | 0.1 | 90.0 [" in markdown and "] ★ |" in markdown
    assert "| tiny | 0.2 | 85.0 [" in markdown and "] ≈ |" in markdown
    poor = next(line for line in markdown.splitlines() if line.startswith("| tiny | 0.5 | 20.0 ["))
    answer, evidence = poor.split(" | ")[2:4]
    assert "≈" not in answer and "★" not in answer and evidence.endswith("≈")  # evidence: all equal, none differs
    # the same command gives the same figures
    again = tmp_path / "again"
    assert cli_main(["collect", str(runs), "--output-dir", str(again), "--quiet", "--format", "csv"]) == 0
    assert (again / "table3.csv").read_text(encoding="utf-8") == (out / "table3.csv").read_text(encoding="utf-8").replace(
        str(out), str(again))
