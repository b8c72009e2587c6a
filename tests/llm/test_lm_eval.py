"""ExpMRC through lm-evaluation-harness: `lm-eval run` (its HF backend, CPU) with the task files `expmrc
lm-eval-path` names, on a tiny chat model whose reply is scripted (helpers/scripted_chat.py), over the eight
questions of helpers/llm_data.py. Its prompts must be `expmrc llm`'s messages under the chat template, and
its figures, per question and per subset, those of `expmrc llm` and `expmrc evaluate` on the same replies."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.common import environment, needs_punkt
from helpers.llm_data import DATASETS, run_lm_eval, write_dataset
from helpers.scripted_chat import REPLY, make_scripted_chat_model

from expmrc.cli import main
from expmrc.text.grounding import UNTRUSTWORTHY, VERBATIM

pytestmark = [pytest.mark.slow, needs_punkt]
KEYS = ("ALL_F1", "ANS_F1", "EVI_F1")
SUBSETS = tuple(DATASETS)


@pytest.fixture(scope="module")
def harness_run(tmp_path_factory):
    """The model, the data folder and lm-eval's output: results and the samples of each task."""
    root = tmp_path_factory.mktemp("lm-eval")
    model = make_scripted_chat_model(root / "model")
    for subset in SUBSETS:
        (root / "data" / subset).mkdir(parents=True)
        write_dataset(root / "data" / subset, subset)
    env = dict(environment(), EXPMRC_DATA=str(root / "data"), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", HF_DATASETS_CACHE=str(root / "hf-cache"))
    include = subprocess.run([sys.executable, "-m", "expmrc", "lm-eval-path"], env=env, capture_output=True,
                             text=True, check=True).stdout.strip()
    command = [sys.executable, "-m", "lm_eval", "run", "--model", "hf", "--model_args",
               f"pretrained={model},dtype=float32", "--device", "cpu", "--batch_size", "4", "--tasks", "expmrc",
               "--include_path", include, "--apply_chat_template", "--log_samples", "--output_path", str(root / "out")]
    results, samples = run_lm_eval(command, env, root / "out", "expmrc")
    return {"model": model, "data": root / "data", "results": results, "samples": samples}


def batch_output(samples: list[dict], path: Path) -> str:
    """lm-eval's replies as an OpenAI Batch output file, which `expmrc llm --import-batch` reads."""
    lines = [json.dumps({"custom_id": s["doc"]["id"], "response": {"status_code": 200, "body": {
        "choices": [{"message": {"role": "assistant", "content": s["filtered_resps"][0]}, "finish_reason": "stop"}]}}},
        ensure_ascii=False) for s in samples]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def expmrc_runs(harness_run, tmp_path_factory):
    """`expmrc llm --import-batch` on lm-eval's replies, and `expmrc evaluate --details` on its predictions."""
    root = tmp_path_factory.mktemp("expmrc")
    runs = {}
    for subset in SUBSETS:
        dataset = str(harness_run["data"] / subset / f"expmrc-{subset}-dev.json")
        replies = batch_output(harness_run["samples"][subset], root / f"{subset}-replies.jsonl")
        run = root / subset
        assert main(["llm", dataset, "--model", "scripted", "--import-batch", replies, "--output", str(run),
                     "--quiet"]) == 0
        assert main(["evaluate", dataset, str(run / "predictions.json"), "--details", str(root / f"{subset}.jsonl")]) == 0
        details = [json.loads(line) for line in (root / f"{subset}.jsonl").read_text(encoding="utf-8").splitlines()]
        responses = [json.loads(line) for line in (run / "responses.jsonl").read_text(encoding="utf-8").splitlines()]
        runs[subset] = {"scores": json.loads((run / "scores.json").read_text(encoding="utf-8")),
                        "details": details, "responses": responses}
    return runs


def test_the_model_replied_as_scripted(harness_run):
    replies = {s["filtered_resps"][0] for samples in harness_run["samples"].values() for s in samples}
    assert replies == {REPLY}


@pytest.mark.parametrize("subset", SUBSETS)
def test_prompts_are_expmrc_llm_messages_under_the_chat_template(harness_run, expmrc_runs, subset):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(harness_run["model"])
    for sample, response in zip(harness_run["samples"][subset], expmrc_runs[subset]["responses"], strict=True):
        assert sample["doc"]["id"] == response["id"]
        expected = tokenizer.apply_chat_template(response["messages"], tokenize=False, add_generation_prompt=True)
        assert sample["arguments"]["gen_args_0"]["arg_0"] == expected


@pytest.mark.parametrize("subset", SUBSETS)
def test_per_sample_figures_are_expmrc_evaluates(harness_run, expmrc_runs, subset):
    samples, details = harness_run["samples"][subset], expmrc_runs[subset]["details"]
    assert [s["doc"]["id"] for s in samples] == [d["id"] for d in details]
    for sample, detail, response in zip(samples, details, expmrc_runs[subset]["responses"]):
        assert (sample["ANS_F1"], sample["EVI_F1"], sample["ALL_F1"]) == \
            (detail["answer"], detail["evidence"], detail["overall"])
        status = response["grounding"]["evidence"]["status"]
        assert sample["EVI_UNTRUSTWORTHY"] == (None if status == "missing" else float(status in UNTRUSTWORTHY))
        assert sample["EVI_VERBATIM"] == (None if status == "missing" else float(status in VERBATIM))


@pytest.mark.parametrize("subset", SUBSETS)
def test_subset_figures_are_expmrc_llms(harness_run, expmrc_runs, subset):
    figures, scores = harness_run["results"][f"expmrc_{subset}"], expmrc_runs[subset]["scores"]
    for key in KEYS:
        assert round(figures[f"{key},none"], 3) == scores["raw"][key]
    for key, rate in (("EVI_UNTRUSTWORTHY", "untrustworthy_evidence_rate"), ("EVI_VERBATIM", "verbatim_evidence_rate")):
        assert figures[f"{key},none"] == pytest.approx(100 * scores["grounding"][rate], abs=1e-9)


def test_the_figures_are_not_trivial(harness_run):
    """The scripted reply scores between 0 and 100 somewhere and is trusted somewhere, untrusted elsewhere."""
    figures = [harness_run["results"][f"expmrc_{s}"] for s in SUBSETS]
    assert any(0 < f["ALL_F1,none"] < 100 for f in figures) and any(0 < f["ANS_F1,none"] < 100 for f in figures)
    assert {f["EVI_UNTRUSTWORTHY,none"] for f in figures} == {0.0, 100.0}


def test_the_group_is_the_mean_of_the_four_subsets(harness_run):
    results = harness_run["results"]
    for key in (*KEYS, "EVI_VERBATIM", "EVI_UNTRUSTWORTHY"):
        mean = sum(results[f"expmrc_{s}"][f"{key},none"] for s in SUBSETS) / len(SUBSETS)
        assert results["expmrc"][f"{key},none"] == pytest.approx(mean, abs=1e-9)
