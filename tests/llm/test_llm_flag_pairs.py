"""`expmrc llm` flags that contradict each other, a Batch file exported under other --samples, and a local model
path that is not there: each is one line naming what to change, before any request, model or file."""

from __future__ import annotations

import json

import pytest
from helpers.fake_openai import completion
from helpers.hostile import assert_refused, run_cli
from helpers.llm_data import write_dataset


@pytest.mark.parametrize("other", [["--no-cache"], ["--import-batch", "out.jsonl"], ["--export-batch", "req.jsonl"]],
                         ids=["no-cache", "import-batch", "export-batch"])
def test_cache_old_keys_with_a_run_that_reads_no_cache_is_refused(other, tmp_path):
    dataset = write_dataset(tmp_path, "squad")
    other = [str(tmp_path / word) if word.endswith(".jsonl") else word for word in other]
    status, _, err = run_cli(["llm", dataset, "--model", "m", "--output", str(tmp_path / "run"), "--cache-old-keys",
                              *other])
    assert_refused(status, err, f"--cache-old-keys reads old replies from the response cache, which a run with "
                                f"{other[0]} does not read")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["expmrc-squad-dev.json"]


def batch_output(tmp_path, dataset: str, samples: int) -> str:
    """A Batch output answering every request of a run with `samples` samples (exported, then answered)."""
    requests = tmp_path / f"requests-{samples}.jsonl"
    extra = ["--samples", str(samples), "--temperature", "0.7"] if samples > 1 else []
    status, _, err = run_cli(["llm", dataset, "--model", "m", "--export-batch", str(requests), "--quiet", *extra])
    assert status == 0, err
    lines = [json.dumps({"custom_id": json.loads(line)["custom_id"], "response": {
        "status_code": 200, "body": completion('{"answer": "x", "evidence": "y"}', model="m")}})
        for line in requests.read_text(encoding="utf-8").splitlines()]
    out = tmp_path / f"out-{samples}.jsonl"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(out)


@pytest.mark.parametrize("exported, imported", [(3, 1), (1, 3), (3, 2), (2, 4)])
def test_a_batch_file_of_other_samples_names_samples(exported, imported, tmp_path):
    dataset = write_dataset(tmp_path, "squad")
    out = batch_output(tmp_path, dataset, exported)
    extra = ["--samples", str(imported), "--temperature", "0.7"] if imported > 1 else []
    status, _, err = run_cli(["llm", dataset, "--model", "m", "--import-batch", out, "--output",
                              str(tmp_path / "run"), "--quiet", *extra])
    assert_refused(status, err, "--samples")
    assert not (tmp_path / "run").exists()


def test_the_same_samples_import(tmp_path):
    dataset = write_dataset(tmp_path, "squad")
    out = batch_output(tmp_path, dataset, 3)
    status, _, err = run_cli(["llm", dataset, "--model", "m", "--import-batch", out, "--output", str(tmp_path / "run"),
                              "--quiet", "--samples", "3", "--temperature", "0.7"])
    assert status == 0, err


@pytest.mark.parametrize("model", ["./models/qwen", "models/qwen/", "/no/such/models/qwen", "~/qwen", "runs/a/model",
                                   "a--b", "org/name/"])
def test_a_local_path_that_is_not_there_is_no_such_folder_without_a_download_hint(model, tmp_path):
    dataset = write_dataset(tmp_path, "squad")
    status, _, err = run_cli(["llm", dataset, "--backend", "transformers", "--model", model, "--output",
                              str(tmp_path / "run"), "--no-cache", "--quiet"])
    assert_refused(status, err, f"{model}: no such folder")
    assert "hf download" not in err and "Repo id" not in err
