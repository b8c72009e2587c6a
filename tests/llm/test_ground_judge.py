"""`reworded` split by entailment (issue 38, item 5): `expmrc ground --judge` and `expmrc llm --judge` label every
reworded and altered evidence against the passage text it covers, both ways (paraphrase, unsupported,
contradicted), print the shares beside the verbatim and untrustworthy rates with a check of the judge, and write
them in the details, scores.json, the run record, `expmrc collect` and the report. A scripted chat judge
deciding by rule gives known labels; the tiny random NLI model runs the same path (its labels are noise: only
the plumbing and identical reruns are checked)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.common import needs_punkt
from helpers.fake_openai import FakeChatServer
from helpers.hostile import assert_refused, run_cli
from helpers.judge_data import asked
from helpers.llm_data import read_run
from helpers.reworded_data import answering, entails, expected, rule_judge, write_dataset, write_quotes
from helpers.tiny_nli import make_tiny_nli_folder

from expmrc.data.datasets import load_dataset, passage_of
from expmrc.llm.judges import split_rewordings
from expmrc.scoring.rewording import (CHECKS, PARAPHRASE, SPLIT_LABELS, UNSUPPORTED, covered_text, pair_label,
                                      split_pairs)
from expmrc.scoring.support import CONTRADICTED, NOT_SUPPORTED, SUPPORTED, UNJUDGED, Pair, Verdict
from expmrc.text.grounding import ground_submission


def test_a_quote_is_a_paraphrase_only_when_each_entails_the_other():
    v = {label: Verdict(label) for label in (SUPPORTED, NOT_SUPPORTED, CONTRADICTED, UNJUDGED)}
    assert pair_label(v[SUPPORTED], v[SUPPORTED]) == PARAPHRASE
    assert pair_label(v[SUPPORTED], v[NOT_SUPPORTED]) == pair_label(v[NOT_SUPPORTED], v[SUPPORTED]) == UNSUPPORTED
    assert pair_label(v[NOT_SUPPORTED], v[CONTRADICTED]) == pair_label(v[CONTRADICTED], v[UNJUDGED]) == CONTRADICTED
    assert pair_label(v[SUPPORTED], v[UNJUDGED]) == pair_label(v[UNJUDGED], v[NOT_SUPPORTED]) == UNJUDGED


def test_the_passage_text_a_quote_covers_is_its_parts_joined_where_they_lie_apart():
    passage = "One. Two three. Four."
    assert covered_text(passage, {"start": 5, "end": 15}) == ("Two three.", [(5, 15)])
    assert covered_text(passage, {"start": 0, "end": 21, "parts": [{"start": 0, "end": 4}, {"start": 5, "end": 15}]})[0] \
        == "One. Two three."
    assert covered_text(passage, {"start": 0, "end": 21, "parts": [{"start": 16, "end": 21}, {"start": 0, "end": 4}]})[0] \
        == "Four. One."


class RuleJudge:
    """The scripted judge's rule as an in-process judge (expmrc.llm.judges.Judge), counting what it is asked."""

    name, device = "rule", None

    def __init__(self) -> None:
        self.asked: list[Pair] = []

    def identity(self, language: str) -> str:
        return "rule"

    def record(self) -> dict:
        return {}

    def judge(self, pairs: list[Pair], language: str) -> list[Verdict]:
        self.asked += pairs
        return [Verdict({"unsupported": NOT_SUPPORTED}.get(v := entails(p.premise, p.hypothesis), v)) for p in pairs]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_split_gives_each_reworded_and_altered_quote_its_label_and_the_shares(tmp_path, language):
    dataset = load_dataset(write_dataset(tmp_path, language))
    submission = json.loads(Path(write_quotes(tmp_path, language)).read_text(encoding="utf-8"))
    grounded = ground_submission(dataset, submission)
    details = {d["id"]: d for d in grounded.details}
    judge = RuleJudge()
    split = split_rewordings(judge, dataset, details, {q: e["evidence"] for q, e in submission.items()})
    labels = {q.rewording.qid: q.label for q in split.quotes}
    assert labels == expected(language)  # every reworded and altered quote, and no other
    assert len(judge.asked) == len(set(judge.asked)) == len(split_pairs([q.rewording for q in split.quotes],
                                                                         language))
    summary = split.summary()
    judged = list(labels.values())
    assert summary["verdicts"] == summary["quotes"] == len(judged)
    assert summary["shares"] == {k: round(100 * judged.count(k) / len(judged), 3) for k in SPLIT_LABELS}
    assert sum(summary["by_status"]["altered"].values()) == sum(s == "altered" for s in
                                                                 (d["evidence"]["status"] for d in details.values()))
    check = summary["check"]
    assert check["itself"]["paraphrase"] == 100.0 and check["negated"]["paraphrase"] == 0.0
    assert check["negated"]["contradicted"] == 100.0 and check["other_sentence"]["paraphrase"] == 0.0
    assert check["gap"] == 100.0 and not check["warning"] and split.warning() is None
    split.annotate(details)
    assert {q: d["evidence"]["entailment"]["label"] for q, d in details.items() if "entailment" in d["evidence"]} \
        == labels
    record = details[f"{language}-number"]["evidence"]["entailment"]
    assert record["passage_entails_quote"]["label"] == CONTRADICTED and set(record["check"]) == set(CHECKS)
    assert record["passage"] in passage_of(dataset.questions[0]) and record["quote"] != record["passage"]


def ground(tmp_path: Path, dataset: str, quotes: str, *flags: str, name: str = "g") -> tuple[int, str, str]:
    return run_cli(["ground", dataset, quotes, "--output", str(tmp_path / f"{name}.json"), "--details",
                    str(tmp_path / f"{name}.jsonl"), "--quiet", *flags])


def details_of(path: Path) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


def chat(url: str, cache: Path) -> list[str]:
    return ["--judge", "chat", "--judge-model", "fake-model", "--judge-base-url", url, "--judge-cache", str(cache)]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_ground_judge_chat_end_to_end_with_identical_reruns_from_the_cache(tmp_path, language):
    dataset, quotes = write_dataset(tmp_path, language), write_quotes(tmp_path, language)
    with FakeChatServer(rule_judge) as server:
        status, out, err = ground(tmp_path, dataset, quotes, *chat(server.url, tmp_path / "c.sqlite"))
        sent = len(server.requests)
        again = ground(tmp_path, dataset, quotes, *chat(server.url, tmp_path / "c.sqlite"), name="h")
        assert len(server.requests) == sent  # every reply from the cache
    assert status == 0 and again[0] == 0, err
    assert out == again[1] and (tmp_path / "g.jsonl").read_bytes() == (tmp_path / "h.jsonl").read_bytes()
    assert sent == len({asked(b) for b in server.requests})  # each distinct pair asked once
    found = {qid: r["evidence"]["entailment"]["label"] for qid, r in details_of(tmp_path / "g.jsonl").items()
             if "entailment" in r["evidence"]}
    assert found == expected(language)
    lines = out.splitlines()
    trust = next(k for k, line in enumerate(lines) if line.startswith("verbatim evidence:"))
    n = len(found)
    shares = ", ".join(f"{label} {100 * list(found.values()).count(label) / n:.1f}%" for label in SPLIT_LABELS)
    assert lines[trust + 1].startswith(f"entailment of reworded and altered evidence: {shares} of {n} judged (")
    if language == "en":  # as docs/grounding.md shows it
        assert lines[trust + 1].endswith("(reworded 4: 3 / 1 / 0; altered 2: 0 / 0 / 2, as "
                                         "paraphrase/unsupported/contradicted)")
    assert lines[trust + 2] == ("entailment check: paraphrase of a passage span with itself 100.0% of "
                                f"{n}, with its negation 0.0% of {n}, with another passage sentence 0.0% of {n} "
                                "(gap 100.0 points)")
    assert lines[trust + 3].startswith("entailment signature: expmrc:") and "judge:chat+model-fake-model" in out
    assert "warning" not in err


def test_ground_judge_nli_with_the_tiny_model_and_identical_reruns(tmp_path):
    model = make_tiny_nli_folder(tmp_path / "nli")
    dataset, quotes = write_dataset(tmp_path, "en"), write_quotes(tmp_path, "en")
    runs = [ground(tmp_path, dataset, quotes, "--judge", "nli", "--judge-model", str(model), "--judge-batch-size",
                   size, name=name) for name, size in (("g", "3"), ("h", "32"))]
    assert [r[0] for r in runs] == [0, 0], runs[0][2]
    records = details_of(tmp_path / "g.jsonl")
    again = details_of(tmp_path / "h.jsonl")
    labels = {qid: r["evidence"]["entailment"]["label"] for qid, r in records.items() if "entailment" in r["evidence"]}
    assert set(labels) == set(expected("en")) and set(labels.values()) <= {*SPLIT_LABELS}  # its labels are noise
    assert labels == {qid: r["evidence"]["entailment"]["label"] for qid, r in again.items()
                      if "entailment" in r["evidence"]}
    assert runs[0][1] == runs[1][1]  # the same lines, whatever the batch size
    verdict = records["en-number"]["evidence"]["entailment"]["passage_entails_quote"]
    assert 0 <= verdict["probability"] <= 1 and "judge:nli+model-" in runs[0][1]


def test_a_judge_saying_yes_to_everything_sets_off_the_checks_warning(tmp_path):
    dataset, quotes = write_dataset(tmp_path, "en"), write_quotes(tmp_path, "en")
    with FakeChatServer(lambda body: "supported") as server:
        status, out, err = ground(tmp_path, dataset, quotes, *chat(server.url, tmp_path / "c.sqlite"))
    assert status == 0, err
    assert "entailment of reworded and altered evidence: paraphrase 100.0%, unsupported 0.0%, contradicted 0.0%" in out
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: the judge does not tell a passage span with itself from its negation or another "
                        "sentence (gap 0.0 points, under 30): its entailment labels on this data cannot be trusted"]


def test_no_verdict_and_nothing_to_split_print_no_share(tmp_path):
    dataset, quotes = write_dataset(tmp_path, "en"), write_quotes(tmp_path, "en")
    with FakeChatServer(lambda body: "Hard to say.") as server:
        status, out, err = ground(tmp_path, dataset, quotes, *chat(server.url, tmp_path / "c.sqlite"))
        assert status == 0, err
        n = len(expected("en"))
        assert (f"entailment of reworded and altered evidence: no verdict (n = 0) on the {n} quotes (first: no "
                "verdict in the reply)") in out and "%" not in out.split("entailment of")[1]
        verbatim = tmp_path / "verbatim.json"
        verbatim.write_text(json.dumps({"en-verbatim": {"answer": "1890", "evidence": "the old stone BRIDGE over the "
                                                                                        "river was built"}}))
        status, out, err = ground(tmp_path, dataset, str(verbatim), *chat(server.url, tmp_path / "c.sqlite"))
    assert status == 0, err
    assert "entailment of reworded and altered evidence: none to judge (n = 0)" in out


def test_ground_offers_no_statement_template_and_refuses_a_judge_setting_without_judge(tmp_path):
    dataset, quotes = write_dataset(tmp_path, "en"), write_quotes(tmp_path, "en")
    status, _, err = ground(tmp_path, dataset, quotes, "--judge", "nli", "--judge-model", "m", "--judge-statement",
                            "statement-en-v1")
    assert status == 2 and "--judge-statement" in err
    status, _, err = ground(tmp_path, dataset, quotes, "--judge-backend", "transformers")
    assert_refused(status, err, "--judge-backend sets the support judge, and no --judge is given")
    assert not (tmp_path / "g.json").exists()


@needs_punkt
@pytest.mark.parametrize("language", ["en", "zh"])
def test_llm_judge_splits_the_run_into_scores_record_responses_collect_and_report(tmp_path, language):
    from test_judge_commands import page_data

    dataset = write_dataset(tmp_path, language)
    runs = []
    with FakeChatServer(answering(dataset, language)) as answers, FakeChatServer(rule_judge) as judge:
        for name in ("run", "again"):
            status, _, err = run_cli(["llm", dataset, "--model", "fake-model", "--base-url", answers.url, "--output",
                                      str(tmp_path / name), "--cache", str(tmp_path / "a.sqlite"), "--quiet",
                                      *chat(judge.url, tmp_path / "j.sqlite")])
            assert status == 0, err
            runs.append(err)
    run = tmp_path / "run"
    scores, record, responses = (read_run(run, "scores.json"), read_run(run, "run_info.json"),
                                 read_run(run, "responses.jsonl"))
    split = scores["entailment"]
    assert split == record["entailment"] == read_run(tmp_path / "again", "scores.json")["entailment"]
    labels = {r["id"]: r["grounding"]["evidence"]["entailment"]["label"] for r in responses
              if "entailment" in r["grounding"]["evidence"]}
    assert labels == expected(language)
    assert [r["grounding"] for r in responses] == [r["grounding"] for r in read_run(tmp_path / "again",
                                                                                   "responses.jsonl")]
    assert split["check"]["gap"] == 100.0 and split["verdicts"] == len(labels)
    assert "entailment of reworded and altered evidence: " in runs[0] and runs[0].count("\n") == runs[1].count("\n")
    status, _, err = run_cli(["collect", str(run), "--output-dir", str(tmp_path / "out"), "--quiet"])
    assert status == 0, err
    table = (tmp_path / "out" / "llm_runs.md").read_text(encoding="utf-8")
    shares = "/".join(f"{split['shares'][k]:.0f}" for k in SPLIT_LABELS)
    assert "| reworded+altered para./unsup./contra. % |" in table and f"| {shares} of {len(labels)} (check gap 100) |" \
        in table
    status, _, err = run_cli(["report", dataset, str(run / "grounded.json"), "--output", str(tmp_path / "r.html")])
    assert status == 0, err
    page = page_data(tmp_path / "r.html")
    shown = {q["id"]: q["subs"][0]["extra"]["llm"].get("evidence entailment") for q in page["questions"]}
    assert {k: v for k, v in shown.items() if v} == labels
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert f"reworded and altered evidence by entailment: paraphrase {split['shares'][PARAPHRASE]:.1f}%" in html
