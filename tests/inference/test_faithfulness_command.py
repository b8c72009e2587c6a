"""`expmrc faithfulness` on a fine-tuned tiny model of each task: the figures agree with the per-question
records, edited passages are what the definitions say, and bad input is one line with exit status 2."""

from __future__ import annotations

import json

import pytest

from expmrc.cli import main
from expmrc.inference.faithfulness_run import sentence_scores, without_spans
from expmrc.text.sentences import split_sentences
from expmrc.training.choice_task import run_choice
from expmrc.training.span_task import run_span
from helpers.choice_data import choice_file
from helpers.common import needs_punkt
from helpers.span_data import make_span_file
from helpers.tiny_bert import make_tiny_bert_folder

pytestmark = needs_punkt
COMMON = ["--do_train=True", "--do_predict=True", "--max_seq_length=64", "--doc_stride=16", "--train_batch_size=8",
          "--max_steps=30", "--learning_rate=3e-3", "--loss_lambda=1.0", "--save_checkpoints_steps=1000"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A span run and a choice run of a tiny BERT, briefly trained on generated data, with their dev files."""
    root = tmp_path_factory.mktemp("faith")
    bert = make_tiny_bert_folder(root / "bert")
    flags = ["--model_name_or_path", str(bert), *COMMON]
    span_dev = make_span_file(root / "dev.json", 12, seed=2)
    run_span(flags + [f"--train_file={make_span_file(root / 'train.json', 48, seed=1)}", f"--predict_file={span_dev}",
                      "--output_dir", str(root / "span"), "--max_query_length=16"])
    choice_dev = choice_file(root / "cdev.json", 12, seed=2)
    run_choice(flags + [f"--train_file={choice_file(root / 'ctrain.json', 48, seed=1)}", f"--predict_file={choice_dev}",
                        "--output_dir", str(root / "choice"), "--max_qa_length=8"])
    return {"root": root, "span": root / "span", "span_dev": span_dev, "choice": root / "choice",
            "choice_dev": choice_dev}


def faithfulness(capsys, *argv):
    status = main(["faithfulness", *map(str, argv), "--quiet"])
    out, err = capsys.readouterr()
    return status, out, err


def check_against_details(result, details, max_k):
    """FARM(k), c_rel and c_irr recomputed from the per-question records equal the reported ones."""
    assert [row["k"] for row in result["farm"]] == list(range(1, max_k + 1))
    for row in result["farm"]:
        k = row["k"]

        def changed(d, group, k=k):
            facts = d[f"{group}_facts"]
            return bool(facts) and d[f"changed_{group}"][min(k, len(facts)) - 1]

        c_rel = sum(changed(d, "relevant") for d in details) / len(details)
        c_irr = sum(changed(d, "irrelevant") for d in details) / len(details)
        assert row["c_rel"] == pytest.approx(c_rel) and row["c_irr"] == pytest.approx(c_irr)
        assert row["farm"] == pytest.approx(c_rel / (1 + c_irr))
    counted = [d for d in details if d["p_full"] is not None]
    assert result["comprehensiveness"] == pytest.approx(
        sum(d["p_full"] - d["p_without_evidence"] for d in counted) / len(counted))
    assert result["sufficiency"] == pytest.approx(sum(d["p_full"] - d["p_evidence_only"] for d in counted) / len(counted))


def test_span_run_directory(runs, capsys, tmp_path):
    details_path = tmp_path / "d.jsonl"
    status, out, _ = faithfulness(capsys, runs["span"], runs["span_dev"], "--json", "--details", details_path)
    assert status == 0
    result = json.loads(out)
    details = [json.loads(line) for line in details_path.read_text(encoding="utf-8").splitlines()]
    assert result["questions"] == len(details) == 12 and result["task"] == "span"
    check_against_details(result, details, 4)
    predictions = json.loads((runs["span"] / "dev_predictions.json").read_text(encoding="utf-8"))
    assert {d["id"]: d["answer"] for d in details} == {q: p["answer"] for q, p in predictions.items()}
    for d in details:  # every sentence is a fact of exactly one kind; relevant ones overlap the evidence
        assert sorted(d["relevant_facts"] + d["irrelevant_facts"]) == list(range(len(d["relevant_facts"]) +
                                                                                len(d["irrelevant_facts"])))
        assert len(d["after_relevant"]) == min(4, len(d["relevant_facts"]))
    assert all(d["correct"] is not None for d in details)
    assert result["cost"]["forward_passes_per_question"] >= 3 and result["cost"]["seconds_per_question"] > 0


def test_choice_model_folder_text_and_max_k(runs, capsys, tmp_path):
    # --max_k: the earlier spelling of --max-k, kept as a hidden alias
    status, out, _ = faithfulness(capsys, runs["choice"] / "model", runs["choice_dev"], "--max_k", "2",
                                  "--output", tmp_path / "f.json", "--details", tmp_path / "d.jsonl")
    assert status == 0
    assert "FARM(1)" in out and "FARM(2)" in out and "FARM(3)" not in out and "forward passes" in out
    assert "correct comprehensiveness" in out and "wrong   comprehensiveness" in out
    result = json.loads((tmp_path / "f.json").read_text(encoding="utf-8"))
    details = [json.loads(line) for line in (tmp_path / "d.jsonl").read_text(encoding="utf-8").splitlines()]
    check_against_details(result, details, 2)
    assert all(d["answer"] in "ABCD" and len(d["answer"]) == 1 for d in details)


def test_without_gold_answers_the_split_is_omitted(runs, capsys, tmp_path):
    with open(runs["choice_dev"], encoding="utf-8") as handle:
        doc = json.load(handle)
    for sample in doc["data"]:
        sample["answers"] = ["" for _ in sample["answers"]]
    path = tmp_path / "nogold.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    status, out, _ = faithfulness(capsys, runs["choice"], path, "--json")
    assert status == 0, out
    result = json.loads(out)
    assert result["comprehensiveness"] is not None and result["comprehensiveness_correct"] is None
    assert any("split by correct / wrong answers is omitted" in note for note in result["notes"])


def test_bad_input_is_one_line(runs, capsys, tmp_path):
    status, _, err = faithfulness(capsys, runs["span"], runs["choice_dev"])
    assert status == 2 and "fine-tuned span model" in err and "choice" in err and err.count("\n") == 1
    status, _, err = faithfulness(capsys, runs["root"], runs["span_dev"])
    assert status == 2 and "holds no fine-tuned model" in err and err.count("\n") == 1
    status, _, err = faithfulness(capsys, runs["root"] / "bert", runs["span_dev"])
    assert status == 2 and "not a fine-tuned expmrc model" in err
    status, _, err = faithfulness(capsys, runs["span"], runs["span_dev"], "--max-k", "0")
    assert status == 2 and "--max-k must be at least 1" in err
    assert not (tmp_path / "d.jsonl").exists()


def test_edits_cut_whole_sentences_and_scores_follow_the_candidates():
    passage = "One is here.  Two is there. Three."
    sentences = split_sentences(passage)
    assert without_spans(passage, [(sentences[1].start, sentences[1].end)]) == "One is here.  Three."
    assert without_spans(passage, [(s.start, s.end) for s in sentences[:2]]) == "Three."
    assert without_spans(passage, [(0, len(passage))]) == ""
    candidates = [{"start": 0, "end": 11, "probability": 0.5}, {"start": 4, "end": 20, "probability": 0.25}]
    assert sentence_scores(sentences, candidates) == [0.75, 0.25, 0.0]


def test_a_question_the_windows_cannot_hold_is_named_with_the_dataset(tmp_path):
    """The features' refusal (e.g. a question longer than the recorded --max_seq_length leaves room for) comes
    back with the dataset's file in front, as the baseline scripts give it."""
    from expmrc.data.datasets import load_dataset
    from expmrc.inference.faithfulness_run import run_faithfulness
    from expmrc.errors import ExpmrcError

    class Refusing:
        kind, name = "span", "m"

        def predict(self, questions):
            raise ExpmrcError(f"question {questions[0].qid}: its 70 question tokens leave no room for the passage")

    dataset = load_dataset(make_span_file(tmp_path / "dev.json", 2, seed=3))
    with pytest.raises(ExpmrcError, match=f"^{tmp_path / 'dev.json'}: question .*: its 70 question tokens"):
        run_faithfulness(Refusing(), dataset, 2, progress=False)
