"""Answer–evidence coupling from a submission: LOCA (span) and its lexical stand-in (multiple choice)."""

import json
import subprocess
import sys

import pytest

from helpers.common import ROOT, dev_set, needs_punkt
from expmrc.data.datasets import load_dataset
from expmrc.data.submissions import Prediction
from expmrc.evidence.extract import build_method, extract
from expmrc.metrics.coupling import choice_aggregate, choice_question, span_aggregate, span_location, span_question
from expmrc.metrics.registry import select
from expmrc.scoring.scorer import score, score_files

pytestmark = needs_punkt

PASSAGE = "Melbourne is the sporting capital of Australia. It hosts the Open. Sydney is larger."
TWICE = "Paris is big. Lyon is near Paris. Nice is south."


@pytest.mark.parametrize("answer, evidence, where", [
    ("Melbourne", "Melbourne is the sporting capital of Australia.", "inside"),
    ("Sydney", "It hosts the Open.", "outside"),
    ("Australia. It hosts", "It hosts the Open.", "straddling"),      # runs across the evidence's start
    ("the Open. Sydney", "Open", "straddling"),                       # covers the evidence and more
    ("Melbourne", "Everyone knows Melbourne.", "inside"),              # containment needs no passage match
    ("Sydney", "", "outside"),                                         # no evidence: nothing is inside it
    ("", "It hosts the Open.", "empty answer"),
    ("the", "It hosts the Open.", "empty answer"),                     # no scorer tokens left
    ("Brisbane", "It hosts the Open.", "not in passage"),
    ("Melb", "Melbourne is the sporting capital of Australia.", "not in passage"),  # part of a word
])
def test_containment_places_the_answer_by_normalized_tokens(answer, evidence, where):
    assert span_location(PASSAGE, answer, evidence) == (where, "containment")


@pytest.mark.parametrize("answer, answer_start, evidence, evidence_start, where", [
    ("Paris", 27, "Lyon is near Paris.", 14, "inside"),
    ("Paris", 0, "Lyon is near Paris.", 14, "outside"),        # the same text, but the occurrence outside
    ("big. Lyon", 9, "Lyon is near Paris.", 14, "straddling"),
    (" Lyon", 13, "Lyon is near Paris.", 14, "inside"),          # surrounding whitespace is not the answer
    ("Paris", 27, "", 5, "outside"),
    ("", 3, "Lyon is near Paris.", 14, "empty answer"),
])
def test_offsets_place_the_answer_where_the_submission_says(answer, answer_start, evidence, evidence_start, where):
    assert span_location(TWICE, answer, evidence, answer_start, evidence_start) == (where, "offsets")


def test_containment_would_call_the_outside_occurrence_inside_and_one_offset_is_not_enough():
    assert span_location(TWICE, "Paris", "Lyon is near Paris.") == ("inside", "containment")
    assert span_location(TWICE, "Paris", "Lyon is near Paris.", answer_start=0) == ("inside", "containment")


@pytest.mark.parametrize("answer_start, evidence_start, field, start", [
    (1, 14, "answer", 1), (200, 14, "answer", 200), (27, 15, "evidence", 15)])
def test_an_offset_that_misses_its_text_is_ignored_with_a_warning(write_json, answer_start, evidence_start, field,
                                                                   start):
    question = load_dataset(write_json("squad.json", SPAN)).questions[2]
    values = span_question(question, Prediction("Paris", "Lyon is near Paris.", answer_start, evidence_start))
    assert (values["location"], values["located_by"]) == ("inside", "containment")  # placed by text alone
    assert values["offset_ignored"].startswith(f"question q3: `{field}_start` {start} does not point at the {field}")
    good = span_question(question, Prediction("Paris", "Lyon is near Paris.", 27, 14))
    assert (good["location"], good["located_by"]) == ("inside", "offsets") and "offset_ignored" not in good


def _span(where, correct=True):
    return {"location": where, "located_by": "containment", "correct": correct}


def test_loca_is_inside_over_counted_plus_outside():
    values = [_span("inside", True), _span("inside", False), _span("outside", True), _span("straddling", False),
              _span("empty answer", True), _span("not in passage", False), None]
    figures = span_aggregate(values)
    # A = 4 counted (inside, inside, outside, straddling), I = 2, O = 1, of 7 questions
    assert figures["LOCA"] == pytest.approx(100 * 2 / 5)
    assert (figures["LOCA_INSIDE"], figures["LOCA_OUTSIDE"]) == (50.0, 25.0)
    assert figures["LOCA_COUNTED"] == pytest.approx(100 * 4 / 7)
    assert figures["LOCA_CORRECT"] == pytest.approx(100 / 3)   # inside + outside: 1 / (2 + 1)
    assert figures["LOCA_WRONG"] == 50.0                        # inside + straddling: 1 / (2 + 0)


def test_loca_is_undefined_without_a_counted_answer_and_the_split_needs_gold():
    figures = span_aggregate([_span("empty answer"), _span("not in passage"), None])
    assert figures["LOCA"] is figures["LOCA_INSIDE"] is figures["LOCA_OUTSIDE"] is None
    assert figures["LOCA_COUNTED"] == 0.0
    figures = span_aggregate([_span("inside", True), _span("outside", None)])
    assert figures["LOCA"] == pytest.approx(100 / 3) and figures["LOCA_CORRECT"] is figures["LOCA_WRONG"] is None


CHOICE = {
    "version": "expmrc-race-dev",
    "data": [{"id": "p", "article": "Tom lives in Paris. Ann likes tea. Bob likes jam. His sister likes red cars.",
              "questions": ["Where does Tom live?", "Who likes what?", "What does his sister like?"],
              "options": [["Paris", "London", "Rome"], ["likes", "hates"], ["red cars", "tea"]],
              "answers": ["A", "A", "B"]}],
}


@pytest.fixture
def choice_questions(write_json):
    return {q.qid: q for q in load_dataset(write_json("race.json", CHOICE)).questions}


@pytest.mark.parametrize("qid, answer, evidence, start, expected", [
    ("p-0", "A", "Tom lives in Paris.", None, ("inside", True, True)),
    ("p-0", "A", "tom lives in paris", None, ("inside", True, True)),     # not verbatim: found by tokens
    ("p-0", "A", "Ann likes tea.", None, ("outside", False, True)),
    ("p-0", "A", "", None, ("outside", False, True)),
    ("p-0", "B", "Tom lives in Paris.", None, ("option not in passage", False, False)),
    ("p-0", "E", "Tom lives in Paris.", None, ("no option", None, False)),
    ("p-0", 1, "Tom lives in Paris.", None, ("no option", None, False)),
    ("p-1", "A", "Bob likes jam.", None, ("inside", True, True)),          # ties: both `likes` sentences count
    ("p-2", "A", "His sister likes red cars.", None, ("inside", True, False)),  # coupled, and wrong
    ("p-2", "B", "Ann likes tea.", 20, ("inside", True, True)),
])
def test_choice_coupling_per_question(choice_questions, qid, answer, evidence, start, expected):
    values = choice_question(choice_questions[qid], Prediction(answer, evidence, None, start))
    assert (values["location"], values["evidence_favors_choice"], values["correct"]) == expected


def test_a_choice_evidence_offset_that_misses_the_evidence_is_ignored(choice_questions):
    values = choice_question(choice_questions["p-0"], Prediction("A", "Ann likes tea.", None, 0))
    assert values["offset_ignored"].startswith("question p-0: `evidence_start` 0 does not point at the evidence")
    assert values["location"] == choice_question(choice_questions["p-0"], Prediction("A", "Ann likes tea."))["location"]


def test_choice_figures_are_shares_of_the_counted_questions():
    def value(where, favors, correct):
        return {"location": where, "evidence_favors_choice": favors, "correct": correct}
    values = [value("inside", True, True), value("outside", True, False), value("outside", False, True),
              value("option not in passage", False, False), value("no option", None, False), None]
    figures = choice_aggregate(values)
    assert figures["LEX_LOCA"] == pytest.approx(100 / 3)               # 1 of the 3 inside/outside
    assert figures["EVI_FAVORS_CHOICE"] == 50.0                        # 2 of the 4 with an option
    assert figures["LEX_LOCA_COUNTED"] == 50.0                         # 3 of 6 questions
    assert (figures["LEX_LOCA_CORRECT"], figures["LEX_LOCA_WRONG"]) == (50.0, 0.0)
    assert (figures["EVI_FAVORS_CHOICE_CORRECT"], figures["EVI_FAVORS_CHOICE_WRONG"]) == (50.0, 50.0)


def test_the_coupling_metrics_are_on_by_default_for_their_task(write_json):
    span = load_dataset(write_json("s.json", {"version": "expmrc-squad-dev", "data": [{"paragraphs": [
        {"context": TWICE, "qas": [{"id": "q", "question": "Where?", "answers": [{"text": "Paris"}]}]}]}]}))
    assert "loca" in [m.name for m in select(None, span)]
    choice = [m.name for m in select(None, load_dataset(write_json("c.json", CHOICE)))]
    assert "lexical-loca" in choice and "loca" not in choice


SPAN = {
    "version": "expmrc-squad-dev",
    "data": [{"title": "T", "paragraphs": [{"context": TWICE, "qas": [
        {"id": "q1", "question": "Which city is big?", "answers": [{"text": "Paris", "answer_start": 0}],
         "evidences": ["Paris is big."]},
        {"id": "q2", "question": "What is near Paris?", "answers": [{"text": "Lyon", "answer_start": 14}],
         "evidences": ["Lyon is near Paris."]},
        {"id": "q3", "question": "Which is south?", "answers": [{"text": "Nice", "answer_start": 34}],
         "evidences": ["Nice is south."]},
        {"id": "q4", "question": "How is Paris?", "answers": [{"text": "big", "answer_start": 9}],
         "evidences": ["Paris is big."]},
    ]}]}],
}
SPAN_PRED = {
    "q1": {"answer": "Paris", "evidence": "Paris is big."},                                  # inside, right
    "q2": {"answer": "Lyon", "evidence": "Nice is south."},                                  # outside, right
    "q3": {"answer": "Paris", "answer_start": 27, "evidence": "Lyon is near Paris.", "evidence_start": 14},
    "q4": {"answer": "big. Lyon", "evidence": "Lyon is near Paris."},                         # straddling, wrong
}


def run(*args):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT)


def test_evaluate_reports_loca_beside_unchanged_official_numbers(write_json, tmp_path):
    dataset, pred = write_json("squad.json", SPAN), write_json("pred.json", SPAN_PRED)
    details = tmp_path / "d.jsonl"
    result = run("-m", "expmrc.cli", "evaluate", dataset, pred, "--json", "--details", str(details))
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)["results"][0]
    # I = 2 (q1, q3), O = 1 (q2), A = 4: LOCA = 2 / 5; right answers q1, q2 (LOCA 1/3), wrong q3, q4 (1/2)
    assert (figures["LOCA"], figures["LOCA_INSIDE"], figures["LOCA_OUTSIDE"]) == (40.0, 50.0, 25.0)
    assert (figures["LOCA_COUNTED"], figures["LOCA_CORRECT"], figures["LOCA_WRONG"]) == (100.0, 33.333, 50.0)
    assert figures["notes"] == []
    official = json.loads(run("eval_expmrc.py", dataset, pred).stdout)
    assert [figures[k] for k in ("ALL_F1", "ANS_F1", "EVI_F1")] == [float(official[k]) for k in ("ALL_F1", "ANS_F1", "EVI_F1")]
    records = [json.loads(line) for line in details.read_text(encoding="utf-8").splitlines()]
    assert [(r["extra"]["loca"]["location"], r["extra"]["loca"]["located_by"]) for r in records] == [
        ("inside", "containment"), ("outside", "containment"), ("inside", "offsets"), ("straddling", "containment")]


def test_without_gold_answers_the_split_is_omitted_and_a_line_says_so(write_json):
    data = json.loads(json.dumps(CHOICE))
    data["data"][0]["answers"] = ["", "", ""]
    pred = {"p-0": {"answer": "A", "evidence": "Tom lives in Paris."}, "p-2": {"answer": "A", "evidence": "x"}}
    result = run("-m", "expmrc.cli", "evaluate", write_json("race.json", data), write_json("p.json", pred))
    assert result.returncode == 0, result.stderr
    assert "LEX_LOCA 50.000" in result.stdout and "LEX_LOCA_CORRECT n/a" in result.stdout
    assert ("note: lexical-loca: the split by correct / wrong answers is omitted: 2 answered question(s) have no "
            "gold answer") in result.stdout


def test_a_bad_offset_is_ignored_and_a_counted_warning_names_the_question(write_json, tmp_path):
    pred = dict(SPAN_PRED, q3={"answer": "Paris", "answer_start": 1, "evidence": "Lyon is near Paris.",
                               "evidence_start": 14})
    path = write_json("pred.json", pred)
    result = run("-m", "expmrc.cli", "evaluate", write_json("squad.json", SPAN), path)
    assert result.returncode == 0, result.stderr
    assert ("note: loca: 1 answered question(s) give an offset that does not point at its own text; it is ignored "
            "and the text placed without it (first: question q3: `answer_start` 1 does not point at the answer in "
            "the passage (the passage reads 'aris ' there))") in result.stdout
    plain = run("-m", "expmrc.cli", "evaluate", write_json("squad.json", SPAN),
                write_json("plain.json", dict(SPAN_PRED, q3={"answer": "Paris", "evidence": "Lyon is near Paris."})))
    figures = [line for line in result.stdout.splitlines() if "LOCA " in line]
    assert figures == [line.replace("plain.json", "pred.json") for line in plain.stdout.splitlines() if "LOCA " in line]


def _coupling(subset, method):
    dataset = load_dataset(dev_set(subset))
    extraction = extract(dataset, build_method(method, dataset), progress=False)
    return score(dataset, extraction.submission(), metrics=select(None, dataset)).extra_figures()


@pytest.mark.data
@pytest.mark.slow
@pytest.mark.parametrize("subset", ["squad", "cmrc2018"])
def test_answer_sentence_evidence_holds_the_answer_by_construction(subset):
    figures = _coupling(subset, "answer-sentence")
    assert (figures["LOCA"], figures["LOCA_INSIDE"], figures["LOCA_OUTSIDE"]) == (100.0, 100.0, 0.0)
    assert figures["LOCA_COUNTED"] > 99
    assert _coupling(subset, "most-similar-question")["LOCA"] < 80


@pytest.mark.data
@pytest.mark.slow
@pytest.mark.parametrize("subset", ["race", "c3"])
def test_most_similar_evidence_is_the_option_sentence_by_construction(subset):
    figures = _coupling(subset, "most-similar")
    assert figures["LEX_LOCA"] == 100.0 and 0 < figures["EVI_FAVORS_CHOICE"] < 100
    assert _coupling(subset, "most-similar-question")["LEX_LOCA"] < 60


@pytest.mark.data
@pytest.mark.slow
def test_evaluate_gives_coupling_on_every_dev_set_and_the_official_numbers(tmp_path):
    subsets = ["squad", "cmrc2018", "race", "c3"]
    pairs = [x for s in subsets for x in (dev_set(s), str(ROOT / "sample_submission" / f"{s}.json"))]
    result = run("-m", "expmrc.cli", "evaluate", *pairs, "--json")
    assert result.returncode == 0, result.stderr
    results = json.loads(result.stdout)["results"]
    for subset, figures in zip(subsets, results):
        keys = ("LOCA", "LOCA_INSIDE", "LOCA_OUTSIDE") if subset in ("squad", "cmrc2018") else ("LEX_LOCA",
                                                                                                 "EVI_FAVORS_CHOICE")
        assert all(0 < figures[k] < 100 for k in keys), (subset, figures)
        # what eval_expmrc.py prints: the leaderboard's metric alone
        official = score_files(load_dataset(dev_set(subset)), pairs[2 * subsets.index(subset) + 1]).official()
        assert [f"{figures[k]:.3f}" for k in ("ALL_F1", "ANS_F1", "EVI_F1")] == [official[k] for k in
                                                                                ("ALL_F1", "ANS_F1", "EVI_F1")]
