"""The support judge's parts that need no model (expmrc/scoring/support.py): statements, each question's pair and
the labels it gets without a judge, the check's other sentence, the figures and their interval, the check's
warning, and the paired test of two systems' rates, each against a direct computation written out here."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers.judge_data import submission, write_many

from expmrc.data.datasets import load_dataset, passage_of
from expmrc.errors import ExpmrcError
from expmrc.scoring import stats
from expmrc.scoring.support import (CHECK_GAP, CONTRADICTED, NO_ANSWER, NO_EVIDENCE, NOT_SUPPORTED, STATEMENTS, SUPPORTED,
                                    Check, Judged, Pair, Support, Verdict, check_cases, choose_statement,
                                    compare_support, judged, other_sentence, support_signature, system_cases)


def test_statements_name_the_answer_or_fill_the_blank_in_both_languages():
    en, zh = STATEMENTS["statement-en-v1"], STATEMENTS["statement-zh-v1"]
    assert en.statement("Who is the  mayor?", "Alice.") == "Who is the mayor? The answer is: Alice."
    assert en.statement("The passage is mainly about _ .", "Tom's trip.") == "The passage is mainly about Tom's trip ."
    assert en.statement("Tom ____ to school.", "walks") == "Tom walks to school."
    assert en.statement("What is a_b?", "x") == "What is a_b? The answer is: x."  # not a blank: inside a word
    assert zh.statement("长江在哪里注入东海？", "上海。") == "长江在哪里注入东海？答案是：上海。"
    assert zh.statement("小明（ ）去学校。", "骑自行车") == "小明骑自行车去学校。"
    assert en.statement("Who is \\1?", "a\\1b") == "Who is \\1? The answer is: a\\1b."  # no regex escapes read


def test_a_statement_template_is_versioned_and_its_hash_is_in_the_signature():
    en = STATEMENTS["statement-en-v1"]
    assert choose_statement(None, "en") is en and choose_statement(None, "zh").language == "zh"
    with pytest.raises(ExpmrcError, match="is for zh questions"):
        choose_statement("statement-zh-v1", "en")
    changed = type(en)(en.name, en.version, en.language, en.text.replace("is:", "is"), en.blank)
    assert changed.sha256 != en.sha256 and len(en.sha256) == 64
    line = support_signature("nli+model-x", en, 7, stats.Resampling())
    assert f"statement:statement-en-v1+sha-{en.sha256[:12]}" in line and "judge:nli+model-x" in line
    assert "check:seed-7" in line and "ci:bs-1000+seed-12345+conf-0.95" in line


@pytest.fixture
def race(tmp_path):
    return load_dataset(write_many(tmp_path, "race", 4))


def test_each_question_gets_its_pair_or_the_label_it_has_without_a_judge(race):
    template = choose_statement(None, "en")
    entries = submission(race.path)
    q0, q1, q2, q3 = (q.qid for q in race.questions)
    entries[q1]["evidence"] = "  "
    entries[q2]["answer"] = "E"  # names no option of four
    del entries[q3]
    cases = system_cases(race, entries, template, "sub.json")
    assert [c.qid for c in cases] == [q0, q1, q2, q3]
    assert [c.label for c in cases] == [None, NO_EVIDENCE, NO_ANSWER, NO_EVIDENCE]
    chosen = race.questions[0].options["ABCD".index(race.questions[0].answer)]
    assert cases[0].pair == Pair(race.questions[0].evidences[0], template.statement(race.questions[0].question, chosen))
    entries[q0]["evidence"] = None
    with pytest.raises(ExpmrcError, match=f"sub.json: question {q0}: `evidence` is null"):
        system_cases(race, entries, template, "sub.json")


@pytest.mark.parametrize("subset", ["squad", "cmrc2018", "race", "c3"])
def test_the_checks_other_sentence_lies_apart_from_the_gold_evidence_and_answer(tmp_path, subset):
    dataset = load_dataset(write_many(tmp_path, subset, 30))
    template = choose_statement(None, dataset.language)
    gold, other = check_cases(dataset, template, seed=3)
    assert [c.qid for c in gold] == [q.qid for q in dataset.questions] == [c.qid for c in other]
    drawn = set()
    for question, case in zip(dataset.questions, other):
        sentence, evidence = case.pair.premise, question.evidences[0]
        assert sentence in passage_of(question) and evidence not in sentence and sentence not in evidence
        if dataset.kind == "span":
            assert question.answers[0] not in sentence
        assert case.pair.hypothesis == gold[dataset.questions.index(question)].pair.hypothesis
        drawn.add(sentence.split()[0] if dataset.language == "en" else sentence[:2])
    assert len(drawn) > 1  # drawn, not always the same sentence
    assert [c.pair for c in check_cases(dataset, template, seed=3)[1]] == [c.pair for c in other]  # the same draw


def test_a_passage_of_the_gold_evidence_alone_has_no_other_sentence(tmp_path):
    doc = {"version": "expmrc-squad-dev", "data": [{"title": "t", "paragraphs": [{
        "context": "The mayor is Alice.", "qas": [{"id": "q", "question": "Who is the mayor?",
                                                "answers": [{"text": "Alice", "answer_start": 13}],
                                                "evidences": ["The mayor is Alice."]}]}]}]}
    path = tmp_path / "one.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    question = load_dataset(str(path)).questions[0]
    assert other_sentence(question, 0) is None


def support_of(labels: list[str], types: list[str], grounding: list[str | None], settings=stats.Resampling()):
    questions = [Judged(f"q{k}", t, label, grounding=g) for k, (label, t, g) in enumerate(zip(labels, types, grounding))]
    check = Check([Judged("q0", "what", SUPPORTED)], [Judged("q0", "what", NOT_SUPPORTED)])
    return Support("race", "dev.json", "sub.json", questions, check, settings, "sig")


def test_the_rate_its_interval_and_the_breakdowns_are_the_direct_computations():
    rng = np.random.default_rng(0)
    labels = [str(x) for x in rng.choice([SUPPORTED, NOT_SUPPORTED, CONTRADICTED, NO_EVIDENCE], size=40)]
    types = ["what" if k % 3 else "who" for k in range(40)]
    grounding = ["exact" if k % 2 else "unverified" for k in range(40)]
    support = support_of(labels, types, grounding, stats.Resampling(200, 5, 0.9))
    summary = support.summary()
    ones = [label == SUPPORTED for label in labels]
    assert summary["rate"] == round(100 * sum(ones) / 40, 3)
    draws = np.random.default_rng(5).integers(0, 40, size=(200, 40))
    resampled = np.sort([100 * np.mean(np.array(ones, float)[row]) for row in draws])
    low = int(200 * 0.05)  # the order statistics leaving 5% out on each side, as stats.order_interval takes them
    assert summary["ci"] == [round(resampled[low], 3), round(resampled[199 - low], 3)]
    assert summary["labels"][SUPPORTED] == sum(ones) and sum(summary["labels"].values()) == 40
    what = [o for o, t in zip(ones, types) if t == "what"]
    assert summary["by_type"]["what"] == {"count": len(what), "supported": sum(what),
                                          "rate": round(100 * sum(what) / len(what), 3)}
    assert list(summary["by_type"]) == ["what", "who"]  # most frequent first
    assert list(summary["by_grounding"]) == ["exact", "unverified"]  # grounding's own order
    assert summary["by_grounding"]["exact"]["count"] == 20


def test_the_check_warns_when_the_judge_does_not_separate_gold_evidence_from_another_sentence():
    def check(gold: int, other: int) -> Check:
        return Check([Judged(f"q{k}", "what", SUPPORTED if k < gold else NOT_SUPPORTED) for k in range(10)],
                     [Judged(f"q{k}", "what", SUPPORTED if k < other else NOT_SUPPORTED) for k in range(10)])

    assert check(9, 1).warning() is None and check(9, 1).summary()["gap"] == 80.0
    assert check(5, 2).warning() is None  # exactly 30 points separates
    fired = check(5, 3).warning()
    assert fired is not None and "gap 20.0 points, under 30" in fired and "\n" not in fired
    assert check(5, 3).summary()["warning"] and CHECK_GAP == 30.0
    assert check(9, 1).line() == ("judge check: gold evidence supported 90.0% of 10, another passage sentence 10.0% "
                                  "of 10 (gap 80.0 points)")


def test_verdicts_are_given_to_every_case_sharing_a_pair_and_details_keep_dataset_order(race):
    template = choose_statement(None, "en")
    cases = system_cases(race, submission(race.path), template, "sub.json")
    gold, other = check_cases(race, template, 0)
    verdicts = {c.pair: Verdict(SUPPORTED, 0.9) for c in gold} | {c.pair: Verdict(CONTRADICTED, 0.1) for c in other}
    support = Support("race", race.path, "sub.json", judged(cases, verdicts), Check(judged(gold, verdicts),
                                                                                  judged(other, verdicts)))
    details = support.details()
    assert [d["id"] for d in details] == [q.qid for q in race.questions]
    assert all(d["label"] == SUPPORTED and d["probability"] == 0.9 for d in details)  # gold evidence: the same pair
    assert details[0]["check"]["other_sentence"]["label"] == CONTRADICTED
    assert support.rate() == 100.0 and support.check.summary()["gap"] == 100.0


def test_two_systems_rates_get_the_paired_test_of_every_score():
    n = 60
    rng = np.random.default_rng(1)
    base = support_of([SUPPORTED if x else NOT_SUPPORTED for x in rng.random(n) < 0.3], ["what"] * n, [None] * n)
    better = support_of([SUPPORTED if x else NOT_SUPPORTED for x in rng.random(n) < 0.9], ["what"] * n, [None] * n)
    settings = stats.Resampling()
    difference = compare_support(base, better, "bootstrap", settings, 100)
    direct = stats.paired_bootstrap(base.parts(), better.parts(), n, settings)["SUPPORT"]
    assert difference == direct and difference.significant and difference.delta > 40
    same = compare_support(base, base, "randomization", settings, 500)
    assert same.p == 1.0 and not same.significant
    better.signature = "another judge"
    with pytest.raises(ExpmrcError, match="judged differently"):
        compare_support(base, better, "bootstrap", settings, 100)
