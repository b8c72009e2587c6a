"""`--evidence-form ids` end to end, both ways: the tiny scripted chat model, citing sentences by number, is served
by `transformers serve` on 127.0.0.1; `expmrc llm --evidence-form ids` with `expmrc evaluate --details`, and
lm-eval's `expmrc_ids` tasks through `--model local-chat-completions` (the API model that `pip install
'.[test]'`'s `lm-eval[api]` makes usable), ask that one server, and every figure must be the same both ways:
per question, per subset and for the group, over the four subsets of helpers/llm_data.py. The SQuAD and C3
passages get a fourth sentence, so the scripted citation `[1] [4]` is exact there and names no sentence
(unverified) in the other two."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers.common import environment, needs_punkt
from helpers.llm_data import DATASETS, run_lm_eval
from helpers.scripted_chat import IDS_EVIDENCE, make_scripted_chat_model, reply_of
from helpers.serve import transformers_serve

from expmrc.cli import main
from expmrc.llm.harness import tasks_path

pytestmark = [pytest.mark.slow, needs_punkt]
KEYS = ("ALL_F1", "ANS_F1", "EVI_F1")
SUBSETS = tuple(DATASETS)
FOURTH = {"squad": " Its delta is shared with the Meuse.", "c3": "放学后他骑车回家。"}
STATUS = {"squad": "exact", "cmrc2018": "unverified", "race": "unverified", "c3": "exact"}


def write_data(folder: Path) -> dict[str, str]:
    """The four datasets under folder/<subset>/ (as $EXPMRC_DATA lays them out), two with a fourth sentence."""
    paths = {}
    for subset in SUBSETS:
        doc = json.loads(json.dumps(DATASETS[subset]))
        if subset == "squad":
            doc["data"][0]["paragraphs"][0]["context"] += FOURTH[subset]
        elif subset == "c3":
            doc["data"][0]["article"] += FOURTH[subset]
        path = folder / subset / f"expmrc-{subset}-dev.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
        paths[subset] = str(path)
    return paths


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The scripted model, the data and the server's URL, while the module's tests run."""
    root = tmp_path_factory.mktemp("ids")
    model = str(make_scripted_chat_model(root / "model", evidence=IDS_EVIDENCE))
    paths = write_data(root / "data")
    with transformers_serve(model) as url:
        yield {"root": root, "model": model, "paths": paths, "url": url}


@pytest.fixture(scope="module")
def expmrc_runs(served):
    """`expmrc llm --evidence-form ids` against the server, and `expmrc evaluate --details` on its predictions."""
    runs = {}
    for subset, dataset in served["paths"].items():
        run, details = served["root"] / "runs" / subset, served["root"] / f"{subset}-details.jsonl"
        assert main(["llm", dataset, "--evidence-form", "ids", "--model", served["model"], "--base-url", served["url"],
                     "--no-cache", "--quiet", "--concurrency", "1", "--output", str(run)]) == 0
        assert main(["evaluate", dataset, str(run / "predictions.json"), "--details", str(details)]) == 0
        runs[subset] = {"scores": json.loads((run / "scores.json").read_text(encoding="utf-8")),
                        "details": [json.loads(line) for line in details.read_text(encoding="utf-8").splitlines()],
                        "responses": [json.loads(line) for line in
                                      (run / "responses.jsonl").read_text(encoding="utf-8").splitlines()]}
    return runs


@pytest.fixture(scope="module")
def harness(served):
    """lm-eval's `expmrc_ids` group through `--model local-chat-completions` against the same server."""
    root = served["root"]
    env = dict(environment(), EXPMRC_DATA=str(root / "data"), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", HF_DATASETS_CACHE=str(root / "hf-cache"))
    # eos_string: lm-eval's stop list is the end-of-turn token, not an empty list (which `transformers serve` refuses)
    model_args = (f"model={served['model']},base_url={served['url']}/chat/completions,num_concurrent=1,"
                  "max_retries=1,timeout=120,eos_string=<|end|>")
    command = [sys.executable, "-m", "lm_eval", "run", "--model", "local-chat-completions", "--model_args", model_args,
               "--tasks", "expmrc_ids", "--include_path", tasks_path(), "--apply_chat_template", "--log_samples",
               "--output_path", str(root / "out")]
    results, samples = run_lm_eval(command, env, root / "out", "expmrc_ids")
    return {"results": results, "samples": samples}


def test_both_ways_the_server_replied_as_scripted(harness, expmrc_runs):
    scripted = reply_of(IDS_EVIDENCE)
    assert {s["filtered_resps"][0] for samples in harness["samples"].values() for s in samples} == {scripted}
    assert {r["reply"] for run in expmrc_runs.values() for r in run["responses"]} == {scripted}


@pytest.mark.parametrize("subset", SUBSETS)
def test_both_ways_sent_the_same_messages(harness, expmrc_runs, subset):
    for sample, response in zip(harness["samples"][subset], expmrc_runs[subset]["responses"], strict=True):
        assert sample["doc"]["id"] == response["id"]
        sent = sample["arguments"]["gen_args_0"]["arg_0"]  # the chat messages as JSON text, in a one-item list
        assert json.loads(sent[0]) == response["messages"]


@pytest.mark.parametrize("subset", SUBSETS)
def test_per_question_figures_are_the_same_both_ways(harness, expmrc_runs, subset):
    run = expmrc_runs[subset]
    for sample, detail, response in zip(harness["samples"][subset], run["details"], run["responses"], strict=True):
        assert sample["doc"]["id"] == detail["id"]
        assert (sample["ANS_F1"], sample["EVI_F1"], sample["ALL_F1"]) == (detail["answer"], detail["evidence"],
                                                                          detail["overall"])
        evidence = response["grounding"]["evidence"]
        assert (evidence["status"], evidence["cited"]) == (STATUS[subset], [1, 4] if STATUS[subset] == "exact" else [1])
        assert sample["EVI_UNTRUSTWORTHY"] == float(STATUS[subset] == "unverified")


@pytest.mark.parametrize("subset", SUBSETS)
def test_subset_figures_are_the_same_both_ways(harness, expmrc_runs, subset):
    figures, scores = harness["results"][f"expmrc_ids_{subset}"], expmrc_runs[subset]["scores"]
    for key in KEYS:
        assert round(figures[f"{key},none"], 3) == scores["raw"][key]
    assert figures["EVI_UNTRUSTWORTHY,none"] == pytest.approx(100 * scores["grounding"]["untrustworthy_evidence_rate"],
                                                              abs=1e-9)
    assert scores["evidence_form"] == "ids"


def test_the_figures_are_not_trivial_and_the_group_is_their_mean(harness):
    results = harness["results"]
    figures = [results[f"expmrc_ids_{s}"] for s in SUBSETS]
    assert any(0 < f["EVI_F1,none"] < 100 for f in figures) and any(0 < f["ANS_F1,none"] < 100 for f in figures)
    assert {f["EVI_UNTRUSTWORTHY,none"] for f in figures} == {0.0, 100.0}
    for key in (*KEYS, "EVI_UNTRUSTWORTHY"):
        mean = sum(results[f"expmrc_ids_{s}"][f"{key},none"] for s in SUBSETS) / len(SUBSETS)
        assert results["expmrc_ids"][f"{key},none"] == pytest.approx(mean, abs=1e-9)


def test_print_the_figures_both_ways(harness, expmrc_runs):
    """`pytest -s` shows the comparison: each subset's figures by `expmrc llm` and by lm-eval."""
    print("\nsubset     way        ALL_F1  ANS_F1  EVI_F1  untrustworthy %")
    for subset in SUBSETS:
        scores, figures = expmrc_runs[subset]["scores"], harness["results"][f"expmrc_ids_{subset}"]
        rate = 100 * scores["grounding"]["untrustworthy_evidence_rate"]
        print(f"{subset:<10} expmrc llm " + "  ".join(f"{scores['raw'][k]:6.3f}" for k in KEYS) + f"  {rate:6.1f}")
        print(f"{subset:<10} lm-eval    " + "  ".join(f"{figures[k + ',none']:6.3f}" for k in KEYS)
              + f"  {figures['EVI_UNTRUSTWORTHY,none']:6.1f}")
        assert [round(figures[f"{k},none"], 3) for k in KEYS] == [scores["raw"][k] for k in KEYS]
