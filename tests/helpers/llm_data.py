"""Four small ExpMRC-format datasets (SQuAD-like and RACE-like in English, CMRC-2018-like and C3-like in
Chinese) with gold answers and evidence, written by the tests; and a labelled training file for shots."""

from __future__ import annotations

import json
from pathlib import Path

SQUAD = {"version": "expmrc-squad-dev", "data": [{"title": "Rivers", "paragraphs": [
    {"context": "The Rhine rises in the Swiss Alps. It flows north through Germany and the Netherlands. "
                "It reaches the North Sea near Rotterdam, after a course of about 1,230 kilometres.",
     "qas": [{"id": "sq-1", "question": "Where does the Rhine reach the sea?",
              "answers": [{"text": "near Rotterdam", "answer_start": 112}],
              "evidences": ["It reaches the North Sea near Rotterdam, after a course of about 1,230 kilometres."]},
             {"id": "sq-2", "question": "Where does the Rhine rise?",
              "answers": [{"text": "the Swiss Alps", "answer_start": 19}],
              "evidences": ["The Rhine rises in the Swiss Alps."]}]}]}]}
CMRC = {"version": "expmrc-cmrc2018-dev", "data": [{"title": "长江", "paragraphs": [
    {"context": "长江是中国第一长河，全长约6300公里。它发源于青藏高原，最终在上海注入东海。长江流域是中国经济最发达的地区之一。",
     "qas": [{"id": "cm-1", "question": "长江在哪里注入东海？", "answers": [{"text": "上海", "answer_start": 32}],
              "evidences": ["它发源于青藏高原，最终在上海注入东海。"]},
             {"id": "cm-2", "question": "长江全长约多少公里？", "answers": [{"text": "6300公里", "answer_start": 13}],
              "evidences": ["长江是中国第一长河，全长约6300公里。"]}]}]}]}
RACE = {"version": "expmrc-race-dev", "data": [
    {"id": "r1", "article": "Tom went to the market on Sunday. He bought three apples and a loaf of bread. "
                            "On the way home it began to rain, so he ran.",
     "questions": ["What did Tom buy?", "Why did Tom run home?"],
     "options": [["Three pears", "Three apples and bread", "Only bread", "Nothing"],
                 ["He was late", "It began to rain", "He was hungry", "A dog chased him"]],
     "answers": ["B", "B"],
     "evidences": [["He bought three apples and a loaf of bread."], ["On the way home it began to rain, so he ran."]]}]}
C3 = {"version": "expmrc-c3-dev", "data": [
    {"id": "c1", "article": "小明每天早上七点起床。他先跑步半小时，然后吃早饭。吃完早饭后，他骑自行车去学校。",
     "questions": ["小明怎么去学校？", "小明几点起床？"],
     "options": [["走路", "坐公交车", "骑自行车", "坐地铁"], ["六点", "七点", "八点"]],
     "answers": ["C", "B"],
     "evidences": [["吃完早饭后，他骑自行车去学校。"], ["小明每天早上七点起床。"]]}]}
DATASETS = {"squad": SQUAD, "cmrc2018": CMRC, "race": RACE, "c3": C3}


def write_dataset(folder: Path, subset: str) -> str:
    """Write one subset's dataset into `folder` and return its path."""
    path = folder / f"expmrc-{subset}-dev.json"
    path.write_text(json.dumps(DATASETS[subset], ensure_ascii=False), encoding="utf-8")
    return str(path)


def gold_reply(dataset_path: str):
    """A server script answering each question from the gold data, the way chat models dress it: prose
    around the JSON, a code fence, evidence with changed spacing and full-width punctuation."""
    from expmrc.data.datasets import load_dataset

    dataset = load_dataset(dataset_path)
    by_question = {q.question: q for q in dataset.questions}

    def reply(body: dict) -> str:
        question = next(q for text, q in by_question.items() if text in body["messages"][-1]["content"])
        answer = question.answer if hasattr(question, "answer") else question.answers[0]
        evidence = question.evidences[0].replace(" ", "  ").replace("，", ",").replace("。", ".")
        return f'Sure.\n```json\n{json.dumps({"answer": answer, "evidence": evidence}, ensure_ascii=False)}\n```'
    return reply


def write_training(folder: Path) -> str:
    """A labelled SQuAD-like training file (other questions, other passages) to draw shots from."""
    doc = {"version": "expmrc-squad-train", "data": [{"title": "Cities", "paragraphs": [
        {"context": f"City {n} lies on river {n}. It was founded in year {1000 + n}.",
         "qas": [{"id": f"tr-{n}", "question": f"When was city {n} founded?",
                  "answers": [{"text": f"year {1000 + n}", "answer_start": 0}],
                  "evidences": [f"It was founded in year {1000 + n}."]}]} for n in range(6)]}]}
    path = folder / "train-pseudo-squad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return str(path)


def official_scores(dataset: str, predictions: str) -> dict:
    """What the leaderboard's script (eval_expmrc.py, run in this process) prints for a submission."""
    import contextlib
    import importlib.util
    import io

    spec = importlib.util.spec_from_file_location("eval_expmrc", Path(__file__).resolve().parents[2] / "eval_expmrc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert module.main([dataset, predictions]) == 0
    return json.loads(out.getvalue())


def write_many(folder: Path, count: int) -> str:
    """A CMRC-2018-like dataset of `count` distinct questions on the CMRC passage (for runs long enough to stop)."""
    doc = json.loads(json.dumps(CMRC))
    qas = doc["data"][0]["paragraphs"][0]["qas"]
    doc["data"][0]["paragraphs"][0]["qas"] = [dict(qas[n % 2], id=f"m{n}", question=f"{qas[n % 2]['question']}（{n}）")
                                             for n in range(count)]
    path = folder / "expmrc-cmrc2018-many.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return str(path)


def run_llm(folder: Path, dataset: str, url: str, *extra: str, out: str = "run") -> int:
    """`expmrc llm` in this process against `url`, with the cache in `folder`, writing `folder/out`."""
    from expmrc.cli import main

    return main(["llm", dataset, "--model", "fake-model", "--base-url", url, "--output", str(folder / out),
                 "--cache", str(folder / "cache.sqlite"), "--quiet", *extra])


def read_run(run: Path, name: str):
    """A JSON file of a run folder, or the records of its responses.jsonl."""
    text = (run / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()] if name.endswith(".jsonl") else json.loads(text)


def cached_rows(cache: Path) -> int:
    """Replies in a response cache."""
    import sqlite3

    with sqlite3.connect(cache) as db:
        return int(db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])


def run_lm_eval(command: list[str], env: dict, out: Path, group: str) -> tuple[dict, dict[str, list[dict]]]:
    """Run `lm-eval run` (`command`, whose --output_path is `out`); its results by task, and each subset's
    samples of task `{group}_{subset}` in document order."""
    import subprocess

    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(next(out.rglob("results_*.json")).read_text(encoding="utf-8"))
    samples = {}
    for subset in DATASETS:
        path = next(out.rglob(f"samples_{group}_{subset}_*.jsonl"))
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        samples[subset] = sorted(lines, key=lambda s: s["doc_id"])
    return results["results"], samples
