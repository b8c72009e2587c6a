"""`expmrc pseudo --preset release`: the released pseudo data's sentence cut, raw-token F1, earliest ties."""

import os
from pathlib import Path

import pytest

from helpers.common import needs_punkt
from expmrc import cli
from expmrc.data.datasets import load_dataset
from expmrc.errors import ExpmrcError
from expmrc.evidence.pseudo import PRESETS, earliest_best_run, pseudo_label, resolve
from expmrc.metrics.leaderboard import tokenize
from expmrc.text.sentences import RELEASE_DELIMITERS, split_at_delimiters

pytestmark = needs_punkt


def cut(text, language="zh"):
    sentences = split_at_delimiters(text, RELEASE_DELIMITERS[language])
    assert all(text[s.start:s.end] == s.text for s in sentences)
    return [s.text for s in sentences]


def test_a_closing_quote_after_a_delimiter_starts_the_next_sentence():
    assert cut("他问：“你是不是病了?”按照医生说的做。") == ["他问：“你是不是病了?", "”按照医生说的做。"]


def test_every_delimiter_cuts_and_nothing_else_does():
    assert cut("一。二！三？四?五!六，七；八") == ["一。", "二！", "三？", "四?", "五!", "六，七；八"]
    assert cut("好吗？！走") == ["好吗？", "！", "走"]  # every character cuts, a run of them too
    assert cut("It cost 3.5 dollars! Why? Fine", "en") == ["It cost 3.", "5 dollars!", "Why?", "Fine"]
    assert cut("价格是3.5元。", "zh") == ["价格是3.5元。"]  # `.` is no Chinese delimiter


def span_set(write_json, context, question, answer):
    return load_dataset(write_json("span.json", {"version": "cmrc2018-train", "data": [{"title": "T", "paragraphs": [{
        "id": "P", "context": context, "qas": [{"question": question, "id": "Q",
                                                 "answers": [{"text": answer, "answer_start": context.index(answer)}]}]}]}]}),
        "cmrc2018")


def choice_set(write_json, article, question, option):
    return load_dataset(write_json("choice.json", {"version": "c3-train", "data": [{
        "id": "m", "article": article, "questions": [question], "options": [[option, "无关"]], "answers": ["A"]}]}), "c3")


def evidence(doc):
    if "paragraphs" in doc["data"][0]:
        return doc["data"][0]["paragraphs"][0]["qas"][0]["evidences"][0]
    return doc["data"][0]["evidences"][0][0]


def test_punctuation_counts_in_the_raw_token_f1(write_json):
    # normalized tokens tie (小 明 both times, earliest wins); the raw `？` of question + answer picks the second
    dataset = choice_set(write_json, "小明来了。小明来了？", "他是谁？", "小明")
    release, _ = pseudo_label(dataset, "release", progress=False)
    normalized, _ = pseudo_label(dataset, "normalized", progress=False)
    assert evidence(release) == "小明来了？" and evidence(normalized) == "小明来了。"


def test_english_articles_and_case_count_too():
    text = "A cat sat on a mat. The cat sat on the mat."
    key = tokenize("Where did the cat sit?" + "on the mat")
    assert earliest_best_run(text, key, "release", "en", 1).text == "The cat sat on the mat."
    assert tokenize("Where did the cat sit?" + "on the mat")[-4:] == ["?", "on", "the", "mat"]


def test_ties_go_to_the_earliest_candidate_even_a_longer_one(write_json):
    # key 甲乙: the run 甲。乙。 and the later sentence 甲乙丙。 both score 2*2/(2+4); the earlier run wins
    dataset = span_set(write_json, "甲。乙。甲乙丙。", "甲", "乙")
    doc, report = pseudo_label(dataset, "release", progress=False)
    assert evidence(doc) == "甲。乙。" and report.lengths == {2: 1}
    assert earliest_best_run("甲乙。丙。甲乙。", ["甲", "乙"], "release", "zh", 1).start == 0


def test_multiple_choice_gets_single_sentences_and_span_runs_of_up_to_three(write_json):
    choice, report = pseudo_label(choice_set(write_json, "甲。乙。甲乙丙。", "甲", "乙"), "release", progress=False)
    assert evidence(choice) == "甲乙丙。" and report.lengths == {1: 1}
    context = "甲。乙。丙。丁。戊。"
    three, report = pseudo_label(span_set(write_json, context, "甲。乙。丙。丁。", "丁"), "release", progress=False)
    assert evidence(three) == "甲。乙。丙。" and report.lengths == {3: 1}  # a run of four would score higher
    assert (resolve("release", "span").max_sentences, resolve("release", "choice").max_sentences) == (3, 1)
    assert resolve("release", "choice", max_sentences=2).max_sentences == 2


def test_no_shared_token_gives_the_first_sentence_and_is_reported(write_json):
    doc, report = pseudo_label(choice_set(write_json, "天气好。我们走", "谁", "他"), "release", progress=False)
    assert evidence(doc) == "天气好。" and report.no_overlap == ["m-0"] and not report.unlabelled
    assert "1 question(s) share no token with any sentence and get the first" in report.lines()[1]


def test_presets_in_help_and_bad_preset_or_margin_exit_2(write_json, tmp_path, capsys):
    assert cli.main(["pseudo", "--help"]) == 0
    out = capsys.readouterr().out
    for name, preset in PRESETS.items():
        assert f"  {name:<11} {preset.summary}\n" in out
    train = write_json("t.json", {"version": "c3-train", "data": []})
    args = ["pseudo", "--subset", "c3", train, "--output", str(tmp_path / "o.json")]
    assert cli.main(args + ["--preset", "paper"]) == 2
    assert "argument --preset: invalid choice: 'paper'" in capsys.readouterr().err
    assert cli.main(args + ["--margin", "0.1"]) == 2
    assert capsys.readouterr().err.startswith("error: --margin: preset 'release' picks the best run outright")
    with pytest.raises(ExpmrcError, match="--preset: unknown preset 'x'"):
        resolve("x", "span")


RELEASE_FIGURES = {  # measured with `expmrc pseudo --preset release` on the shared training sets
    "cmrc2018": ("10142 questions, 10142 labelled (1 sentence: 9620, 2 sentences: 447, 3 sentences: 75); "
                 "522 multi-sentence (5.1%)", None),
    "c3": ("11869 questions, 11869 labelled (1 sentence: 11869); 0 multi-sentence (0.0%)",
           "30 question(s) share no token with any sentence and get the first"),
}


@pytest.mark.data
@pytest.mark.parametrize("subset", sorted(RELEASE_FIGURES))
def test_release_preset_on_the_training_sets(subset, tmp_path, capsys):
    root = os.environ.get("EXPMRC_TRAIN_DATA")
    path = Path(root or "") / f"{subset}-train.json"
    if not root or not path.is_file():
        pytest.skip("training sets not available (set EXPMRC_TRAIN_DATA)")
    out = tmp_path / "pseudo.json"
    assert cli.main(["pseudo", "--subset", subset, str(path), "--output", str(out), "--preset", "release"]) == 0
    lines = capsys.readouterr().err.splitlines()
    summary, second = RELEASE_FIGURES[subset]
    assert summary in lines
    assert second is None or any(line.startswith(second) for line in lines)
    labelled = load_dataset(str(out), subset)
    assert all(q.evidences[0] in (q.context if subset == "cmrc2018" else q.passage) for q in labelled.questions)
