"""Evidence methods on small fixtures, the dataset driver and CLI, and (with EXPMRC_DATA) Table 4."""

import json
import os

import pytest

from helpers.common import dev_set, needs_punkt
from expmrc import cli
from expmrc.data.datasets import load_dataset
from expmrc.errors import ExpmrcError
from expmrc.evidence.baselines import (Query, best_run, f1_counts, gold_answer_sentence, gold_evidence_sentence, make_query,
                             most_similar, most_similar_question, answer_sentence, prepare_passage)
from expmrc.data.submissions import read_answers
from expmrc.evidence.extract import build_method, extract, split_halves
from expmrc.metrics.leaderboard import score_tokens, token_f1

pytestmark = needs_punkt

CONTEXT = ("Melbourne hosts the Open. The city of Melbourne is the sporting capital of Australia. "
           "Sydney is larger.")
SECOND = CONTEXT.index("Melbourne", 1)
SPAN = {"version": "expmrc-squad-dev", "data": [{"title": "T", "paragraphs": [{"context": CONTEXT, "qas": [
    {"id": "q1", "question": "What city is the sporting capital?",
     "answers": [{"text": "Melbourne", "answer_start": SECOND}],
     "evidences": ["The city of Melbourne is the sporting capital"]},
    {"id": "q2", "question": "Which city is larger?", "answers": [{"text": "Sydney", "answer_start": 86}],
     "evidences": ["Sydney is larger."]},
]}]}]}
ARTICLE = ("Tom lives in a small town. He likes to read books about space. His sister plays the piano every day. "
           "They both want to visit Paris next summer.")
CHOICE = {"version": "expmrc-race-dev", "data": [{
    "id": "p1", "article": ARTICLE,
    "questions": ["What does Tom like?", "Where do they want to go?"],
    "options": [["playing the piano", "reading books about space", "visiting Paris", "living in town"],
                ["Paris", "London", "a small town"]],
    "answers": ["B", "A"],
    "evidences": [["He likes to read books about space."], ["They both want to visit Paris next summer."]]}]}


@pytest.fixture
def span_set(write_json):
    return load_dataset(write_json("span.json", SPAN))


@pytest.fixture
def choice_set(write_json):
    return load_dataset(write_json("choice.json", CHOICE))


def test_f1_counts_is_token_f1():
    from collections import Counter
    for a, b in [("a b b c", "b c d"), ("", ""), ("x", ""), ("same words", "same words")]:
        ta, tb = a.split(), b.split()
        assert f1_counts(Counter(ta), len(ta), Counter(tb), len(tb)) == pytest.approx(token_f1(ta, tb))


def test_span_methods_pick_the_expected_sentences(span_set):
    q1 = span_set.questions[0]
    passage = prepare_passage(CONTEXT)
    query = make_query(q1)
    assert most_similar(passage, query).text == "Melbourne hosts the Open."
    assert most_similar_question(passage, query).text == "The city of Melbourne is the sporting capital of Australia."
    # answer-sentence follows the offset when it matches, else the first occurrence
    assert answer_sentence(passage, query).first == 1
    assert answer_sentence(passage, make_query(q1, "Melbourne")).first == 0
    assert answer_sentence(passage, make_query(q1, "Canberra")) is None
    # the oracle reads the gold answer by its first occurrence, as the paper's figures do
    assert gold_answer_sentence(passage, query).first == 0
    evidence = gold_evidence_sentence(passage, query)
    assert (evidence.text, evidence.start, evidence.end) == (passage.sentences[1].text, 26, 85)
    assert CONTEXT[evidence.start:evidence.end] == evidence.text


def test_choice_methods_use_the_option_text(choice_set):
    q = choice_set.questions[0]
    passage = prepare_passage(ARTICLE)
    assert most_similar(passage, make_query(q)).text == "He likes to read books about space."
    assert most_similar(passage, make_query(q, "A")).text == "His sister plays the piano every day."
    assert gold_answer_sentence(passage, make_query(q, "A")).text == "He likes to read books about space."
    with pytest.raises(ValueError, match="names none of the 4 options"):
        make_query(q, "E")


def test_best_run_ties_go_earliest_and_runs_need_the_margin():
    passage = prepare_passage("Cats sleep. Cats sleep. Dogs bark loudly.")
    assert best_run(passage, score_tokens("cats sleep")).first == 0
    key = score_tokens("cats sleep dogs bark loudly")
    run = best_run(passage, key, max_sentences=3)
    assert (run.first, run.last, run.text) == (1, 2, "Cats sleep. Dogs bark loudly.")
    single = best_run(passage, key, max_sentences=3, margin=0.5)
    assert (single.first, single.last) == (2, 2)
    assert best_run(prepare_passage(""), key) is None


def test_gold_evidence_ties_go_to_the_fewest_tokens():
    passage = prepare_passage("The rain in Spain falls mainly on the plain today. Rain in Spain falls.")
    query = Query("q", "Where does rain fall?", "Spain", gold_evidences=("rain in Spain falls", "plain"))
    assert gold_evidence_sentence(passage, query).first == 1


def test_idf_window_anchors_span_answers_and_maps_back(span_set):
    extraction = extract(span_set, build_method("best", span_set), progress=False)
    for q in span_set.questions:
        evidence = extraction.evidences[q.qid]
        assert CONTEXT[evidence.start:evidence.end] == evidence.text
        assert q.answers[0] in evidence.text
    assert extraction.evidences["q1"].first == 1


def test_idf_window_on_choice_prefers_the_options_own_terms(choice_set):
    extraction = extract(choice_set, build_method("best", choice_set), progress=False)
    assert extraction.evidences["p1-0"].text == "He likes to read books about space."
    assert extraction.evidences["p1-1"].text == "They both want to visit Paris next summer."
    submission = extraction.submission()
    assert submission == {  # each evidence with its character offset in the passage; an option has none
        "p1-0": {"answer": "B", "evidence": "He likes to read books about space.", "evidence_start": 27},
        "p1-1": {"answer": "A", "evidence": "They both want to visit Paris next summer.", "evidence_start": 101}}
    passage = choice_set.questions[0].passage
    assert all(passage[e["evidence_start"]:].startswith(e["evidence"]) for e in submission.values())


def test_question_forms_discount_words_every_question_uses():
    from expmrc.evidence.idf_window import question_forms

    forms = question_forms(["Which of the following is true?", "Which of the following is about Tom?",
                            "Why did Mary cry?"], stem=False, power=2.0)
    assert forms["following"] < forms["tom"] < 1.0 + 1e-9
    assert forms["mary"] == forms["tom"]


def test_quoted_phrases_match_whole_words_in_any_case():
    from expmrc.evidence.idf_window import quoted_phrases

    patterns = quoted_phrases('The underlined word “them” refers to ____. What does "Penny dropped" mean?')
    assert [p.pattern for p in patterns] == [r"(?<!\w)them(?!\w)", r"(?<!\w)Penny\ dropped(?!\w)"]
    assert patterns[1].search("Then the penny dropped.") and not patterns[0].search("themselves")
    assert quoted_phrases("It means “________”.") == []


def test_idf_window_quote_bonus_picks_the_quoted_sentence():
    from dataclasses import replace
    from expmrc.evidence.idf_window import SETTINGS, idf_window_for

    text = "Tom found the red ball in the garden. He gave it to his sister. They played all day."
    question = 'The underlined word "it" refers to ____.'
    query = Query("p-0", question, "the red ball", options=("the red ball", "the garden"), answer_index=0)
    plain = replace(SETTINGS[("choice", "en")], dense_weight=0.0, quote_bonus=0.0, max_sentences=1)
    passage = prepare_passage(text, "refined")
    without = idf_window_for([text], "choice", "en", plain, [question])(passage, query)
    with_bonus = idf_window_for([text], "choice", "en", replace(plain, quote_bonus=2.0), [question])(passage, query)
    assert without.text == "Tom found the red ball in the garden."
    assert with_bonus.text == "He gave it to his sister."


def test_sentence_encoder_ranks_a_paraphrase_above_an_unrelated_sentence():
    from expmrc.text.dense import SentenceEncoder

    encoder = SentenceEncoder()
    vectors = encoder.encode(["The boy was very happy.", "The child felt glad.", "Stock prices fell sharply."])
    assert vectors.shape == (3, 384)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2
    assert abs(float(vectors[2] @ vectors[2]) - 1.0) < 1e-5
    assert len(encoder.cache) == 3 and encoder.encode(["The child felt glad."])[0] @ vectors[1] > 0.9999


def test_predicted_answers_are_explained_and_fallbacks_reported(span_set, write_json):
    path = write_json("pred.json", {"q1": {"answer": "Melbourne", "answer_start": SECOND, "evidence": ""},
                                    "q2": "Brisbane"})
    answers = read_answers(path, [q.qid for q in span_set.questions])
    extraction = extract(span_set, build_method("answer-sentence", span_set), answers, progress=False)
    sentence = prepare_passage(CONTEXT).sentences[1]
    assert extraction.submission()["q1"] == {"answer": "Melbourne", "answer_start": SECOND,
                                             "evidence": sentence.text, "evidence_start": sentence.start}
    assert "answer_start" not in extraction.submission()["q2"]  # not in the passage: no place to give
    assert extraction.answers["q2"] == "Brisbane"
    assert any("1 question(s) have an answer not found in the passage" in n and "q2" in n for n in extraction.notes)


def test_an_answer_offset_is_written_only_where_the_answer_is_known_to_lie(span_set, write_json):
    path = write_json("pred.json", {"q1": "Melbourne", "q2": "Sydney"})  # no offsets given
    answers = read_answers(path, [q.qid for q in span_set.questions])
    submission = extract(span_set, build_method("most-similar", span_set), answers, progress=False).submission()
    assert "answer_start" not in submission["q1"]  # Melbourne occurs twice: which one is meant is unknown
    assert submission["q2"]["answer_start"] == CONTEXT.index("Sydney")  # its only occurrence
    wrong = write_json("wrong.json", {"q1": {"answer": "Melbourne", "answer_start": SECOND - 3}, "q2": "Sydney"})
    answers = read_answers(wrong, [q.qid for q in span_set.questions])
    moved = extract(span_set, build_method("most-similar", span_set), answers, progress=False).submission()
    assert moved["q1"]["answer_start"] == SECOND  # a wrong offset moves to the nearest occurrence, as in training


def test_bad_answers_are_one_clear_error(span_set, choice_set, write_json):
    with pytest.raises(ExpmrcError, match=r"missing\.json: no answer for 1 of 2 questions \(first: q2\)"):
        read_answers(write_json("missing.json", {"q1": "x"}), [q.qid for q in span_set.questions])
    bad = write_json("bad.json", {"p1-0": "E", "p1-1": "A"})
    with pytest.raises(ExpmrcError, match=r"bad\.json: 1 question\(s\) name an option outside their list, "
                                          r"first: p1-0 \('E' of 4 options\)"):
        extract(choice_set, build_method("most-similar", choice_set), read_answers(bad, [q.qid for q in choice_set.questions]),
                answers_path=bad, progress=False)
    with pytest.raises(ExpmrcError, match="answer must be a string"):
        read_answers(write_json("list.json", {"q1": ["x"], "q2": "y"}), [q.qid for q in span_set.questions])
    with pytest.raises(ExpmrcError, match="unknown evidence method 'nope'; choose one of"):
        build_method("nope", span_set)
    with pytest.raises(ExpmrcError, match="answer-sentence needs a span subset"):
        build_method("answer-sentence", choice_set)


def test_empty_and_undelimited_passages_are_counted(write_json):
    doc = json.loads(json.dumps(CHOICE))
    doc["data"].append({"id": "p2", "article": "", "questions": ["Q?"], "options": [["x", "y"]], "answers": ["A"],
                        "evidences": [["x"]]})
    doc["data"].append({"id": "p3", "article": "no delimiter here", "questions": ["Q?"], "options": [["x", "y"]],
                        "answers": ["A"], "evidences": [["x"]]})
    dataset = load_dataset(write_json("odd.json", doc))
    extraction = extract(dataset, build_method("most-similar-question", dataset), progress=False)
    assert extraction.submission()["p2-0"] == {"answer": "A", "evidence": ""}
    assert extraction.submission()["p3-0"]["evidence"] == "no delimiter here"
    notes = "\n".join(extraction.notes)
    assert "1 question(s) have an empty passage" in notes
    assert "1 passage(s) have no sentence delimiter" in notes


def test_halves_split_passages_in_file_order(choice_set):
    first, second = split_halves(choice_set)
    assert [q.qid for q in first] == ["p1-0", "p1-1"] and second == []


def test_cli_writes_a_scorable_submission_and_says_it_used_gold_answers(write_json, tmp_path, capsys):
    dataset = write_json("span.json", SPAN)
    out = tmp_path / "sub.json"
    assert cli.main(["evidence", "--method", "most-similar-question", dataset, "--output", str(out)]) == 0
    captured = capsys.readouterr()
    assert "gold answers" in captured.err and "evidence F1 on these 2 questions:" in captured.out
    assert json.loads(out.read_text(encoding="utf-8"))["q2"] == {"answer": "Sydney", "answer_start": 86,
                                                                "evidence": "Sydney is larger.", "evidence_start": 86}


def test_cli_bad_method_is_one_line_and_writes_nothing(write_json, tmp_path, capsys):
    out = tmp_path / "sub.json"
    assert cli.main(["evidence", "--method", "magic", write_json("span.json", SPAN), "--output", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: unknown evidence method 'magic'")
    assert not out.exists()


# --- the dev sets ------------------------------------------------------------------------------------

TABLE4 = {  # paper's Table 4: (Ground Truth Answer Sent., Ground Truth Evidence Sent.)
    "squad": (88.2, 91.6), "cmrc2018": (82.1, 85.2), "race": (49.9, 86.9), "c3": (66.8, 89.1)}


def test_the_subset_table_holds_the_papers_table4_cells():
    from expmrc.data import subsets

    assert {s.name: s.paper_table4 for s in subsets.TABLE} == TABLE4


@pytest.mark.data
@pytest.mark.parametrize("subset", list(TABLE4))
def test_table4_cells_within_one_point(subset):
    from expmrc.reports.evidence_tables import evidence_f1

    dataset = load_dataset(dev_set(subset))
    for method, paper in zip(("gold-answer-sentence", "gold-evidence-sentence"), TABLE4[subset]):
        assert abs(evidence_f1(dataset, method) - paper) <= 1.0, (subset, method)


HELD_OUT = {"squad": 89.70, "cmrc2018": 85.25, "race": 59.87, "c3": 77.96}  # README: "A better extractor"


@pytest.mark.slow
@pytest.mark.data
@pytest.mark.parametrize("subset", list(HELD_OUT))
def test_idf_window_held_out_figures_match_the_readme(subset):
    from expmrc.reports.evidence_tables import evidence_f1

    dataset = load_dataset(dev_set(subset))
    second = split_halves(dataset)[1]
    assert evidence_f1(dataset, "best", second) == pytest.approx(HELD_OUT[subset], abs=0.005)
    if dataset.kind == "span":
        assert evidence_f1(dataset, "best", second) > evidence_f1(dataset, "gold-answer-sentence", second)


@pytest.mark.data
def test_evidence_command_defaults_to_dev_sets_by_name(tmp_path):
    if not os.environ.get("EXPMRC_DATA"):
        pytest.skip("official dev sets not available (set EXPMRC_DATA)")
    out = tmp_path / "c3.json"
    assert cli.main(["evidence", "--method", "best", "c3", "--half", "second", "--output", str(out)]) == 0
    assert len(json.loads(out.read_text(encoding="utf-8"))) == len(split_halves(load_dataset("c3"))[1])
