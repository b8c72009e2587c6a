"""Pseudo training data: format round trip, multi-sentence runs, unlabelled questions, the command."""

import json
import os
from pathlib import Path

import pytest

from helpers.common import needs_punkt
from expmrc import cli
from expmrc.data.datasets import load_dataset
from expmrc.errors import ExpmrcError
from expmrc.evidence.pseudo import pseudo_label

pytestmark = needs_punkt

SPAN_TRAIN = {"version": "cmrc2018-train", "data": [{"title": "T", "paragraphs": [{
    "id": "TRAIN_1",
    "context": "范廷颂是越南枢机。1963年被任为主教。他在河内出生，后来在河内离世。",
    "qas": [{"question": "范廷颂是什么时候被任为主教的？", "id": "TRAIN_1_QUERY_0",
             "answers": [{"text": "1963年", "answer_start": 9}]},
            {"question": "范廷颂是哪国枢机？他在哪里出生？", "id": "TRAIN_1_QUERY_1",
             "answers": [{"text": "越南", "answer_start": 4}]}]}]}]}
CHOICE_TRAIN = {"version": "c3-m-train", "data": [
    {"id": "m1", "answers": ["A", "Z"], "options": [["北京", "上海"], ["长城", "故宫"]],
     "questions": ["小明去哪里？", "他喜欢什么？"], "article": "小明去北京。他喜欢长城。"},
    {"id": "m2", "answers": ["A"], "options": [["好"]], "questions": ["怎么样？"], "article": ""},
]}


def without_evidences(doc):
    """The document with every `evidences` key removed (what the input looked like)."""
    if isinstance(doc, dict):
        return {k: without_evidences(v) for k, v in doc.items() if k != "evidences"}
    if isinstance(doc, list):
        return [without_evidences(x) for x in doc]
    return doc


def test_span_round_trip_keeps_the_format_and_adds_one_evidence_per_question(write_json):
    dataset = load_dataset(write_json("train.json", SPAN_TRAIN), "cmrc2018")
    doc, report = pseudo_label(dataset, progress=False)
    assert without_evidences(doc) == SPAN_TRAIN
    qas = doc["data"][0]["paragraphs"][0]["qas"]
    assert list(qas[0]) == ["question", "id", "answers", "evidences"]  # key order kept, evidences appended
    context = SPAN_TRAIN["data"][0]["paragraphs"][0]["context"]
    assert all(len(qa["evidences"]) == 1 and qa["evidences"][0] in context for qa in qas)
    assert report.questions == 2 and not report.unlabelled


def test_runs_of_sentences_win_only_over_the_margin(write_json):
    # key 范廷颂是什么时候被任为主教的 + 1963年 (16 tokens): sentence 1 scores F1 14/23 = 0.61, sentences
    # 0-1 together 22/31 = 0.71, so the run wins with margin 0 and loses with margin 0.2
    doc = json.loads(json.dumps(SPAN_TRAIN))
    del doc["data"][0]["paragraphs"][0]["qas"][1]
    dataset = load_dataset(write_json("train.json", doc), "cmrc2018")
    run, report = pseudo_label(dataset, "normalized", progress=False)
    assert run["data"][0]["paragraphs"][0]["qas"][0]["evidences"] == ["范廷颂是越南枢机。1963年被任为主教。"]
    assert report.lengths == {2: 1} and report.multi_sentence == 1
    single, _ = pseudo_label(dataset, "normalized", max_sentences=1, progress=False)
    assert single["data"][0]["paragraphs"][0]["qas"][0]["evidences"] == ["1963年被任为主教。"]
    strict, _ = pseudo_label(dataset, "normalized", margin=0.2, progress=False)
    assert strict["data"][0]["paragraphs"][0]["qas"][0]["evidences"] == ["1963年被任为主教。"]


def test_choice_round_trip_and_unlabelled_questions_are_reported(write_json):
    dataset = load_dataset(write_json("train.json", CHOICE_TRAIN), "c3")
    doc, report = pseudo_label(dataset, progress=False)
    assert without_evidences(doc) == CHOICE_TRAIN
    assert doc["data"][0]["evidences"] == [["小明去北京。"], [""]]
    assert doc["data"][1]["evidences"] == [[""]]
    assert report.unlabelled == [("m1-1", "gold label 'Z' names none of the 2 options"), ("m2-0", "empty passage")]
    lines = report.lines()
    assert lines[0].startswith("3 questions, 1 labelled (1 sentence: 1); 0 multi-sentence")
    assert "2 question(s) could not be labelled" in lines[1]


def test_command_writes_a_file_the_dataset_reader_accepts(write_json, tmp_path, capsys):
    out = tmp_path / "pseudo.json"
    train = write_json("train.json", SPAN_TRAIN)
    assert cli.main(["pseudo", "--subset", "cmrc2018", train, "--output", str(out)]) == 0
    assert "2 questions, 2 labelled" in capsys.readouterr().err
    labelled = load_dataset(str(out))
    assert all(q.evidences and q.evidences[0] for q in labelled.questions)
    missing = tmp_path / "none.json"
    assert cli.main(["pseudo", "--subset", "cmrc2018", str(missing), "--output", str(tmp_path / "x.json")]) == 2
    assert capsys.readouterr().err == f"error: {missing}: dataset file not found\n"
    assert not (tmp_path / "x.json").exists()


@pytest.mark.data
@pytest.mark.parametrize("subset, low, high", [("cmrc2018", 4.0, 7.0), ("c3", 7.0, 11.0)])
def test_normalized_preset_multi_sentence_share_on_the_training_sets(subset, low, high):
    root = os.environ.get("EXPMRC_TRAIN_DATA")
    path = Path(root or "") / f"{subset}-train.json"
    if not root or not path.is_file():
        pytest.skip("training sets not available (set EXPMRC_TRAIN_DATA)")
    dataset = load_dataset(str(path), subset)
    _, report = pseudo_label(dataset, "normalized", progress=False)
    share = 100.0 * report.multi_sentence / report.questions
    assert low <= share <= high
    assert len(report.unlabelled) < 0.01 * report.questions


def test_original_c3_list_and_race_folder_become_expmrc_multiple_choice(write_json, tmp_path):
    from expmrc.data.training_sets import load_training_set

    c3 = [[["小明去北京。", "他喜欢长城。"], [{"question": "他喜欢什么？", "choice": ["故宫", "长城"], "answer": "长城"}], "m9-1"]]
    dataset = load_training_set(write_json("c3-m-train.json", c3), "c3")
    doc, _ = pseudo_label(dataset, progress=False)
    assert doc["data"] == [{"id": "m9-1", "article": "小明去北京。\n他喜欢长城。", "questions": ["他喜欢什么？"],
                            "options": [["故宫", "长城"]], "answers": ["B"], "evidences": [["他喜欢长城。"]]}]
    folder = tmp_path / "RACE" / "train" / "high"
    folder.mkdir(parents=True)
    (folder / "high1.txt").write_text(json.dumps({
        "answers": ["A"], "options": [["space", "music"]], "questions": ["What does Tom like?"],
        "article": "Tom likes space. He reads.", "id": "high1.txt"}), encoding="utf-8")
    race = load_training_set(str(tmp_path / "RACE" / "train"), "race")
    assert [q.qid for q in race.questions] == ["high1.txt-0"] and race.raw["version"] == "race-train"
    with pytest.raises(ExpmrcError, match=r"question m9-1-0: answer '天坛' is none of its choices"):
        c3[0][1][0]["answer"] = "天坛"
        load_training_set(write_json("bad.json", c3), "c3")
    with pytest.raises(ExpmrcError, match="only RACE comes as a folder"):
        load_training_set(str(tmp_path), "c3")
