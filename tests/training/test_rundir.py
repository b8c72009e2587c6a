"""run_info.json: running while a run is under way, finished at its end, failed with the error."""

from __future__ import annotations

import json

import pytest

from expmrc.errors import ExpmrcError
from expmrc.training.flags import build_parser
from expmrc.training.rundir import recorded_run, run_info_base


def info_for(tmp_path):
    args = build_parser("span").parse_args(["--output_dir", str(tmp_path), "--do_predict", "--predict_file", "d.json"])
    return run_info_base("span", args, model="m")


def read(tmp_path):
    return json.loads((tmp_path / "run_info.json").read_text(encoding="utf-8"))


def test_running_then_finished(tmp_path):
    with recorded_run(str(tmp_path), info_for(tmp_path)) as info:
        assert read(tmp_path)["status"] == "running"
        info["global_step"] = 7
    done = read(tmp_path)
    assert (done["status"], done["global_step"], done["task"], done["loss_lambda"]) == ("finished", 7, "span", 0.01)
    assert done["flags"]["predict_file"] == "d.json" and done["rand_seed"] == 12345


def test_failure_is_recorded_with_its_error(tmp_path):
    with pytest.raises(ExpmrcError):
        with recorded_run(str(tmp_path), info_for(tmp_path)):
            raise ExpmrcError("train.json: question q1: answer not in passage")
    failed = read(tmp_path)
    assert failed["status"] == "failed" and failed["error"] == "train.json: question q1: answer not in passage"
