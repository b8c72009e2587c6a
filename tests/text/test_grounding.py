"""`expmrc ground`: LLM-style quotes tied to exact passage text, fabricated ones flagged, on a corpus written here."""

import json
import subprocess
import sys

import pytest

from helpers.common import ROOT, dev_set
from expmrc.data.datasets import load_dataset
from expmrc.text.grounding import REWORDED, UNVERIFIED, VERBATIM, ground_submission, ground_text

EN = ("The Normans were the people who in the 10th and 11th centuries gave their name to Normandy, a region in "
      "France. They were descended from Norse raiders and pirates from Denmark, Iceland and Norway who, under "
      "their leader Rollo, agreed to swear fealty to King Charles III of West Francia. Through generations of "
      "assimilation, their descendants would gradually merge with the Carolingian-based cultures of West Francia.")
ZH = ("故宫又名紫禁城，是中国明清两代的皇家宫殿，位于北京中轴线的中心。故宫以三大殿为中心，占地面积约72万平方米，"
      "建筑面积约15万平方米，有大小宫殿七十多座，房屋九千余间。1987年，故宫被列为世界文化遗产。")
RACE = ("Tom was late for school again. His teacher, Mrs. Green, asked him why. \"I helped an old woman cross the "
        "road,\" Tom said. Mrs. Green smiled and said, \"That is a good reason, but please get up earlier.\"")
C3 = "男：你明天几点去机场？女：早上八点，飞机十点起飞，我得提前两个小时到。男：那我开车送你吧。"

E1 = "They were descended from Norse raiders and pirates from Denmark, Iceland and Norway"
Z1 = "故宫以三大殿为中心，占地面积约72万平方米，建筑面积约15万平方米"

# (passage, quote, the gold text it should be tied to): each of the ways an honest model quotes
FAITHFUL = [
    (EN, E1, E1),                                                                            # verbatim
    (EN, E1.replace(", ", " ,  "), E1),                                                      # spacing
    (EN, E1.replace(",", "，"), E1),                                                         # full-width commas
    (EN, E1.upper(), E1),                                                                    # case
    (EN, "they were descended from norse raiders and pirates from Denmark and Norway", E1),  # dropped words (reworded)
    (EN, "They were descended from Norse raiders ... Iceland and Norway", E1),                 # ellipsis
    (EN, "They were descended from Norse raiders… Iceland and Norway", E1),
    (EN, f'The passage says: "{E1}."', E1),                                                  # framing
    (EN, f"According to the text, “{E1}”", E1),
    (EN, f"Evidence: {E1.lower()}", E1),
    (EN, "“Through generations of assimilation, their descendants would gradually merge with the "
         "Carolingian-based cultures”", "Through generations of assimilation, their descendants would gradually merge "
                                        "with the Carolingian-based cultures"),
    (ZH, Z1, Z1),
    (ZH, Z1.replace("，", ","), Z1),                                                         # half-width commas
    (ZH, " ".join(Z1), Z1),                                                                  # spaces between characters
    (ZH, "故宫以三大殿为中心，占地约72万平方米，建筑面积约15万平方米", Z1),                        # dropped words (reworded)
    (ZH, "故宫以三大殿为中心……建筑面积约15万平方米", Z1),                                         # ellipsis
    (ZH, f"原文写道：“{Z1}”", Z1),                                                            # framing
    (ZH, f"根据文章，「{Z1}」。", Z1),
    (RACE, 'Tom said "I helped an old woman cross the road"', "I helped an old woman cross the road,\" Tom said"),
    (RACE, "Mrs. Green smiled and said, 'That is a good reason, but please get up earlier.'",
     "Mrs. Green smiled and said, \"That is a good reason, but please get up earlier.\""),
    (C3, "女:早上八点,飞机十点起飞,我得提前两个小时到.", "女：早上八点，飞机十点起飞，我得提前两个小时到。"),
    (C3, "文中提到：“飞机十点起飞，我得提前两个小时到”", "飞机十点起飞，我得提前两个小时到"),
]

# quotes that share words with the passage (or its gold evidence) but say what it does not
FABRICATED = [
    (EN, "The Normans were descended from Roman soldiers who settled in Normandy in the 5th century"),
    (EN, "They were descended from Viking kings of England and Scotland who conquered Paris"),
    (EN, 'The passage says: "Rollo agreed to swear fealty to the Pope in Rome"'),
    (EN, "Normandy is a region in Italy named after the Lombards"),
    (ZH, "故宫以太和殿为中心，占地面积约100万平方米，是世界上最大的博物馆"),
    (ZH, "原文写道：“故宫于1925年被列为世界自然遗产”"),
    (RACE, "Tom was early for school because his mother drove him there"),
    (C3, "男：飞机早上八点起飞，我们坐地铁去机场吧"),
]


@pytest.mark.parametrize("passage, quote, gold", FAITHFUL)
def test_an_honest_quote_is_tied_to_the_passage_text_it_quotes(passage, quote, gold):
    found = ground_text(passage, quote)
    assert found.status in (VERBATIM if "norse raiders and pirates from Denmark and" not in quote and "占地约" not in quote
                            else (REWORDED,)), (quote, found)  # words dropped without an ellipsis are not form
    start = passage.index(gold)
    overlap = min(found.end, start + len(gold)) - max(found.start, start)
    union = max(found.end, start + len(gold)) - min(found.start, start)
    assert overlap / union >= 0.75, passage[found.start:found.end]


@pytest.mark.parametrize("passage, quote", FABRICATED)
def test_a_fabricated_quote_is_unverified(passage, quote):
    assert ground_text(passage, quote).status == UNVERIFIED


def test_statuses_and_scores_say_how_each_quote_was_found():
    def status(found):
        return found.status, found.score

    assert status(ground_text(EN, E1)) == ("exact", 100.0)
    assert status(ground_text(EN, E1.upper())) == ("normalized", 100.0)
    dropped = ground_text(EN, "they were descended from norse raiders and pirates from Denmark and Norway")
    assert dropped.status == REWORDED and dropped.score == 100.0  # located: every token it keeps is matched
    assert [c.record() for c in dropped.changes] == [{"quote": "", "passage": "Iceland", "kind": "word",
                                                      "start": EN.index("Iceland"), "end": EN.index("Iceland") + 7}]
    assert (ground_text(EN, " ").start, ground_text(EN, " ").status) == (-1, "missing")
    assert (ground_text(EN, "Vikings sailed to Greenland").start, ground_text(EN, "Vikings").status) == (-1, UNVERIFIED)
    # an answer written with a final stop or in quote marks is the passage text without them
    answer = ground_text(ZH, "“1987年”。", answer=True)
    assert ZH[answer.start:answer.end] == "1987年" and answer.status == "exact"


def span_dataset(write_json):
    return load_dataset(write_json("squad.json", {"version": "expmrc-squad-dev", "data": [{"title": "N", "paragraphs": [
        {"context": EN, "qas": [
            {"id": "q1", "question": "Who did they descend from?", "answers": [{"text": "Norse raiders", "answer_start":
                                                                               EN.index("Norse raiders")}],
             "evidences": [E1]},
            {"id": "q2", "question": "Who was their leader?",
             "answers": [{"text": "Rollo", "answer_start": EN.index("Rollo")}], "evidences": ["under their leader Rollo"]},
            {"id": "q3", "question": "Where is Normandy?",
             "answers": [{"text": "France", "answer_start": EN.index("France")}],
             "evidences": ["Normandy, a region in France"]}]}]}]}))


SUBMISSION = {
    "q1": {"answer": "norse raiders.", "evidence": f'The passage says: "{E1.lower()}"'},
    "q2": {"answer": "Rollo", "evidence": "Their leader Rollo was crowned King of England", "answer_start": 3},
    "q3": {"answer": "Spain", "evidence": "Normandy, a region in France"},
}


def test_ground_submission_replaces_located_fields_with_passage_text(write_json):
    result = ground_submission(span_dataset(write_json), SUBMISSION)
    q1, q2, q3 = (result.submission[q] for q in ("q1", "q2", "q3"))
    assert (q1["answer"], q1["evidence"]) == ("Norse raiders", E1)
    assert EN[q1["answer_start"]:].startswith("Norse raiders") and EN[q1["evidence_start"]:].startswith(E1)
    assert q2["evidence"] == SUBMISSION["q2"]["evidence"] and "evidence_start" not in q2  # unverified: as given
    assert EN[q2["answer_start"]:].startswith("Rollo")  # the wrong offset 3 is replaced by where Rollo is
    assert q3["answer"] == "Spain" and "answer_start" not in q3 and q3["evidence_start"] == EN.index("Normandy, a")
    none = {"reworded": 0, "altered": 0, "missing": 0}
    assert result.counts == {"exact": 1, "normalized": 1, "unverified": 1, **none}
    assert result.answer_counts == {"exact": 1, "normalized": 1, "unverified": 1, **none}  # q1 lower case
    assert result.summary()["untrustworthy_evidence_rate"] == pytest.approx(1 / 3)
    assert result.details[1] == {"id": "q2", "evidence": {"status": "unverified", "start": None, "end": None,
                                                          "score": result.details[1]["evidence"]["score"]},
                                 "answer": {"status": "exact", "start": EN.index("Rollo"),
                                            "end": EN.index("Rollo") + 5, "score": 100.0}}
    dropped = ground_submission(span_dataset(write_json), SUBMISSION, drop_unverified=True).submission
    assert dropped["q2"]["evidence"] == "" and dropped["q3"]["answer"] == ""


def run(*args):
    return subprocess.run([sys.executable, "-m", "expmrc.cli", "ground", *args], capture_output=True, text=True,
                          cwd=ROOT, check=False)


def test_the_command_writes_the_grounded_submission_and_details_and_prints_the_counts(write_json, tmp_path):
    data = span_dataset(write_json).path
    out, details = tmp_path / "g.json", tmp_path / "d.jsonl"
    result = run(data, write_json("sub.json", SUBMISSION), "--output", str(out), "--details", str(details))
    assert result.returncode == 0, result.stderr
    assert "evidence: exact 1, normalized 1, reworded 0, altered 0, unverified 1, missing 0" in result.stdout
    assert ("verbatim evidence: 66.7% (exact 1 + normalized 1); untrustworthy evidence: 33.3% (unverified 1 + "
            "altered 0 + reworded 0); of 3 questions with evidence; missing 0 of 3") in result.stdout
    records = [json.loads(line) for line in details.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in records] == ["q1", "q2", "q3"]
    assert all(set(r) == {"id", "evidence", "answer"} and set(r["evidence"]) == {"status", "start", "end", "score"}
               for r in records)
    grounded = json.loads(out.read_text(encoding="utf-8"))
    assert grounded["q1"]["evidence"] == E1
    scored = subprocess.run([sys.executable, "eval_expmrc.py", data, str(out)], capture_output=True, text=True,
                            cwd=ROOT, check=False)
    assert scored.returncode == 0 and json.loads(scored.stdout.strip().splitlines()[-1])["SKIP"] == 0


def test_a_choice_submission_has_no_answer_field_in_its_details(write_json, tmp_path):
    data = write_json("c3.json", {"version": "expmrc-c3-dev", "data": [{"id": "m1", "article": C3, "questions": [
        "几点起飞？"], "options": [["八点", "十点"]], "answers": ["B"], "evidences": [["飞机十点起飞"]]}]})
    details = tmp_path / "d.jsonl"
    sub = write_json("p.json", {"m1-0": {"answer": "B", "evidence": "原文写道：“飞机十点起飞，”"}})
    result = run(data, sub, "--output", str(tmp_path / "g.json"), "--details", str(details))
    assert result.returncode == 0, result.stderr
    record = json.loads(details.read_text(encoding="utf-8"))
    assert set(record) == {"id", "evidence"} and record["evidence"]["status"] == "exact"
    assert json.loads((tmp_path / "g.json").read_text(encoding="utf-8"))["m1-0"] == {
        "answer": "B", "evidence": "飞机十点起飞，", "evidence_start": C3.index("飞机十点")}


def test_a_submission_for_another_subset_is_one_line_and_writes_nothing(write_json, tmp_path):
    data = span_dataset(write_json).path
    out = tmp_path / "g.json"
    result = run(data, write_json("race.json", {"p-0": {"answer": "A", "evidence": "x"}}), "--output", str(out))
    assert result.returncode == 2 and not out.exists()
    assert result.stderr.count("\n") == 1 and "only 0 of its 1 question ids are in" in result.stderr
    assert "another subset" in result.stderr


def test_evaluate_reports_the_share_of_evidence_not_in_the_passage(write_json):
    data = span_dataset(write_json).path
    result = subprocess.run([sys.executable, "-m", "expmrc.cli", "evaluate", data, write_json("s.json", SUBMISSION),
                             "--json"], capture_output=True, text=True, cwd=ROOT, check=False)
    figures = json.loads(result.stdout)["results"][0]
    assert figures["EVI_NOT_IN_PASSAGE"] == pytest.approx(66.667)  # q1 (framed) and q2 (made up); q3 is verbatim


@pytest.mark.data
@pytest.mark.slow
@pytest.mark.parametrize("subset", ["squad", "cmrc2018", "race", "c3"])
def test_perturbed_gold_evidence_of_the_dev_sets_is_grounded(subset):
    from helpers.quotes import measure

    rates = measure(load_dataset(dev_set(subset)))
    assert rates["located"] >= 0.97 and rates["flagged"] >= 0.95, rates
    assert rates["answers"] is None or rates["answers"] >= 0.95, rates


def test_an_entry_the_scorer_would_refuse_is_one_line_naming_file_and_question(write_json, tmp_path):
    data = span_dataset(write_json).path
    sub = write_json("bad.json", {"q1": {"answer": "Rollo", "evidence": {"text": "x"}}, "q2": SUBMISSION["q2"]})
    result = run(data, sub, "--output", str(tmp_path / "g.json"))
    assert result.returncode == 2 and not (tmp_path / "g.json").exists()
    assert result.stderr.strip() == f"error: {sub}: question q1: `evidence` must be a string (numbers are scored as " \
                                    "text), got a JSON object"
    nested = write_json("nested.json", {"q1": {"answer": "Rollo", "evidence": ["Rollo", ["x"]]}})
    result = run(data, nested, "--output", str(tmp_path / "g.json"))
    assert result.returncode == 2 and not (tmp_path / "g.json").exists()
    assert result.stderr.strip() == f"error: {nested}: question q1: `evidence` must be a string or a list of " \
                                    "strings, got a list holding an array"
