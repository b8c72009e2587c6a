"""run_info.json: running while a run is under way, then finished, failed with the error, or interrupted
with the step the same command resumes from; a refused rerun leaves a finished record alone."""

from __future__ import annotations

import json

import pytest

from expmrc.data.runs import RunRecord, recorded_run
from expmrc.errors import ExpmrcError


def info(**changed):
    return RunRecord("baseline", {"task": "span", "loss_lambda": 0.01, "rand_seed": 12345, "global_step": 0, **changed})


def read(tmp_path):
    return json.loads((tmp_path / "run_info.json").read_text(encoding="utf-8"))


def test_running_then_finished(tmp_path):
    with recorded_run(str(tmp_path), info()) as record:
        assert read(tmp_path)["status"] == "running"
        record.settings["global_step"] = 7
    done = read(tmp_path)
    assert (done["status"], done["global_step"], done["task"], done["loss_lambda"]) == ("finished", 7, "span", 0.01)
    assert list(done) == sorted(done)  # keys sorted: the file diffs cleanly


def test_failure_is_recorded_with_its_error(tmp_path):
    with pytest.raises(ExpmrcError):
        with recorded_run(str(tmp_path), info()):
            raise ExpmrcError("train.json: question q1: answer not in passage")
    failed = read(tmp_path)
    assert failed["status"] == "failed" and failed["error"] == "train.json: question q1: answer not in passage"


def test_an_interruption_is_its_own_status_with_the_step_to_resume_from(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with recorded_run(str(tmp_path), info(), resumable_step=lambda: 40):
            raise KeyboardInterrupt
    record = read(tmp_path)
    assert (record["status"], record["resumable_from_step"]) == ("interrupted", 40)
    assert record["error"] == "interrupted; the same command resumes from step 40"


def test_a_refused_rerun_never_rewrites_a_finished_record(tmp_path):
    with recorded_run(str(tmp_path), info()) as record:
        record.settings["global_step"] = 9
    finished = read(tmp_path)
    with pytest.raises(ExpmrcError):
        with recorded_run(str(tmp_path), info(loss_lambda=0.5)):
            raise ExpmrcError("checkpoint was written with seed = 1, this run has 2")
    assert read(tmp_path) == finished
