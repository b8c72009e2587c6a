"""Training curves (`--report_to`): a tiny run writes TensorBoard event files holding every logged scalar, a λ sweep's
runs open side by side under its root, a resumed run draws each step once, and the flag is hostile-tested."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from accelerate import Accelerator
from tensorboard.backend.event_processing.event_multiplexer import EventMultiplexer

from expmrc.cli import run_guarded
from expmrc.data.datasets import load_dataset
from expmrc.data.runs import LOG_FILE, PREDICT_ONLY_DIR, PREDICTIONS_FILE
from expmrc.scoring.scorer import score
from expmrc.training import curves
from expmrc.training.choice_task import run_choice
from expmrc.training.span_task import run_span
from helpers.choice_data import choice_file
from helpers.span_data import make_span_file
from helpers.tiny_bert import make_tiny_bert_folder

TINY = ["--do_lower_case=True", "--max_seq_length=48", "--doc_stride=16", "--max_query_length=12",
        "--train_batch_size=4", "--max_steps=2", "--logging_steps=1", "--learning_rate=3e-3", "--predict_batch_size=8"]
TRAIN = [f"train/{name}" for name in ("loss", "answer_loss", "evidence_loss", "coupling_loss", "lambda", "learning_rate",
                                      "examples_per_second")]
DEV = ["dev/answer", "dev/evidence", "dev/overall"]


def scalars(root) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """Every run TensorBoard finds under `root`, by its name there, with each scalar's (step, value) points."""
    found = EventMultiplexer().AddRunsFromDirectory(str(root))
    found.Reload()
    return {run: {tag: [(e.step, e.value) for e in found.Scalars(run, tag)] for tag in tags["scalars"]}
            for run, tags in found.Runs().items()}


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """Two runs of a tiny λ sweep (lambda_<λ>/seed_1 under one root, as scripts/lambda_sweep.sh lays them out) with
    the coupling regularizer on, drawing their curves in TensorBoard; and the flags that made them."""
    root = tmp_path_factory.mktemp("curves")
    train, dev = make_span_file(root / "train.json", 12, 1), make_span_file(root / "dev.json", 6, 2)
    common = ["--model_name_or_path", str(make_tiny_bert_folder(root / "bert")), *TINY, "--do_train",
              f"--train_file={train}", "--do_predict", f"--predict_file={dev}", "--coupling_loss", "--report_to",
              "tensorboard"]
    runs = {}
    for lam in ("0", "0.1"):
        runs[lam] = [*common, "--loss_lambda", lam, "--output_dir", str(root / "sweep" / f"lambda_{lam}" / "seed_1")]
        assert run_span(runs[lam]) == 0
    return root, runs, dev


def test_a_sweep_s_runs_draw_every_curve_side_by_side(sweep):
    root, _, dev = sweep
    found = scalars(root / "sweep")  # `tensorboard --logdir SWEEP_ROOT`
    assert sorted(found) == ["lambda_0.1/seed_1/tensorboard", "lambda_0/seed_1/tensorboard"]
    for lam in ("0", "0.1"):
        run_dir = root / "sweep" / f"lambda_{lam}" / "seed_1"
        curves_ = found[f"lambda_{lam}/seed_1/tensorboard"]
        assert sorted(curves_) == sorted(TRAIN + DEV)
        assert all([step for step, _ in curves_[tag]] == [1, 2] for tag in TRAIN)
        assert [value for _, value in curves_["train/lambda"]] == pytest.approx([float(lam)] * 2)  # float32
        for step in range(2):  # L = L_A + λ·L_E + J, each drawn apart
            loss, answer, evidence, coupling = (curves_[f"train/{name}"][step][1] for name in
                                                ("loss", "answer_loss", "evidence_loss", "coupling_loss"))
            assert loss == pytest.approx(answer + float(lam) * evidence + coupling, rel=1e-5)
            assert answer > 0 and evidence > 0 and coupling > 0
        assert curves_["train/learning_rate"][1][1] == 0.0 and curves_["train/examples_per_second"][0][1] > 0
        log = [json.loads(line) for line in (run_dir / LOG_FILE).read_text(encoding="utf-8").splitlines()]
        assert [line["loss"] for line in log] == pytest.approx([value for _, value in curves_["train/loss"]], abs=1e-5)
        official = score(load_dataset(dev), json.loads((run_dir / PREDICTIONS_FILE).read_text())).official()
        assert {tag: points for tag, points in curves_.items() if tag in DEV} == {
            "dev/answer": [(2, pytest.approx(float(official["ANS_F1"])))],
            "dev/evidence": [(2, pytest.approx(float(official["EVI_F1"])))],
            "dev/overall": [(2, pytest.approx(float(official["ALL_F1"])))]}  # at the run's last step


def test_predict_only_draws_its_dev_scores_and_none_draws_nothing(sweep, capsys):
    root, runs, dev = sweep
    run_dir = root / "sweep" / "lambda_0.1" / "seed_1"
    before = sorted(p.name for p in (run_dir / "tensorboard").iterdir())
    # a finished run again with another --report_to: not "trained with other settings"; straight to prediction
    assert run_span([a if a != "tensorboard" else "none" for a in runs["0.1"]]) == 0
    assert "already holds the result of this training run" in capsys.readouterr().err
    assert sorted(p.name for p in (run_dir / "tensorboard").iterdir()) == before  # none: no new event file
    predict = ["--do_predict", f"--predict_file={dev}", "--output_dir", str(run_dir), "--report_to", "tensorboard"]
    assert run_span(predict) == 0
    found = scalars(run_dir / PREDICT_ONLY_DIR)
    assert sorted(found) == ["tensorboard"] and sorted(found["tensorboard"]) == DEV
    assert [step for step, _ in found["tensorboard"]["dev/overall"]] == [2]  # the model's last step


def test_a_resumed_run_draws_each_step_once(sweep, tmp_path):
    """Killed after its step-2 checkpoint and run again: TensorBoard hides what the first run drew after step 2."""
    _, runs, _ = sweep
    argv = [a for a in runs["0.1"] if a not in ("--do_predict",) and not a.startswith(("--predict_file", "--max_steps"))]
    out = tmp_path / "run"
    argv = [*argv[:argv.index("--output_dir")], "--output_dir", str(out), "--max_steps=4", "--save_checkpoints_steps=2",
            "--keep_final_checkpoints"]
    assert run_span(argv) == 0
    first = scalars(out)["tensorboard"]["train/loss"]
    shutil.rmtree(out / "model")  # as if killed after step 4's log line, before step 4's checkpoint was written
    shutil.rmtree(out / "checkpoints" / "step-00000004")
    assert run_span(argv) == 0
    again = scalars(out)["tensorboard"]["train/loss"]
    assert [step for step, _ in again] == [1, 2, 3, 4]
    assert [value for _, value in again] == pytest.approx([value for _, value in first], abs=1e-6)


def test_the_choice_baseline_draws_its_curves_too(tmp_path):
    out = tmp_path / "run"
    assert run_choice(["--model_name_or_path", str(make_tiny_bert_folder(tmp_path / "bert")), *TINY, "--do_train",
                       f"--train_file={choice_file(tmp_path / 't.json', 8, 1)}", "--output_dir", str(out),
                       "--max_seq_length=32", "--max_query_length=8", "--max_steps=1", "--report_to", "tensorboard"]) == 0
    assert sorted(scalars(out)["tensorboard"]) == sorted(tag for tag in TRAIN if tag != "train/coupling_loss")


def refused(capsys, argv) -> str:
    """The last line a refused run prints (exit status 2: a usage error, or one line from the run)."""
    try:
        status = run_guarded(run_span, argv)
    except SystemExit as exc:  # the flag parser's usage error
        status = exc.code
    assert status == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_report_to_hostile(sweep, tmp_path, capsys, monkeypatch):
    root, runs, _ = sweep
    argv = [a for a in runs["0"] if a != "tensorboard" and a != "--report_to"]
    out = tmp_path / "run"
    argv = [*argv[:argv.index("--output_dir")], "--output_dir", str(out)]
    line = refused(capsys, [*argv, "--report_to", "tensorbord"])
    assert line == ("error: run_se_mrc.py: argument --report_to: invalid choice: 'tensorbord' (choose from 'none', "
                    "'tensorboard', 'wandb', 'mlflow') (see run_se_mrc.py --help)")
    if not curves.TRACKERS["wandb"][2]():  # this machine has no wandb: the one line, nothing written
        assert refused(capsys, [*argv, "--report_to", "wandb"]) == (
            "error: --report_to wandb needs the Python package wandb, which is not installed: pip install wandb, or "
            "pass --report_to none")
        assert not out.exists()
    monkeypatch.setitem(curves.TRACKERS, "tensorboard", ("tensorboard", "train", lambda: False))
    assert refused(capsys, [*argv, "--report_to", "tensorboard"]) == (
        "error: --report_to tensorboard needs the Python package tensorboard, which is not installed: pip install "
        "'expmrc[train]' (or pip install tensorboard), or pass --report_to none")
    monkeypatch.undo()
    out.mkdir()
    (out / "tensorboard").write_text("not a folder", encoding="utf-8")
    assert refused(capsys, [*argv, "--report_to", "tensorboard"]) == (
        f"error: --report_to tensorboard: {out / 'tensorboard'}: is a file; give a folder for this output")
    assert sorted(p.name for p in out.iterdir()) == ["tensorboard"]  # refused before anything was written
    (out / "tensorboard").unlink()

    def no_login(self, *args, **kwargs):
        raise RuntimeError("api_key not configured\n(no-tty)")

    monkeypatch.setattr(Accelerator, "init_trackers", no_login)
    assert refused(capsys, [*argv, "--report_to", "tensorboard"]) == (
        "error: --report_to tensorboard: the tracker did not start (RuntimeError: api_key not configured (no-tty))")
    assert not (out / "run_info.json").exists()


class Recorder:
    """An Accelerator's tracker calls, recorded: what a W&B or MLflow run is started with."""

    def __init__(self) -> None:
        self.calls: list = []
        self.project_configuration = type("Project", (), {"logging_dir": None})()

    def init_trackers(self, project, config=None, init_kwargs=None):
        self.calls.append((project, config, init_kwargs))


@pytest.mark.parametrize("report_to, project, kwargs", [
    ("wandb", "expmrc", {"wandb": {"name": "runs/sweep/lambda_0.1/seed_1", "dir": "runs/sweep/lambda_0.1/seed_1"}}),
    ("mlflow", "expmrc", {"mlflow": {"run_name": "runs/sweep/lambda_0.1/seed_1"}}),
    ("tensorboard", "tensorboard", {"tensorboard": {"purge_step": 3}}),
])
def test_runs_are_named_by_their_output_folder(report_to, project, kwargs, monkeypatch, tmp_path):
    monkeypatch.delenv("WANDB_PROJECT", raising=False)
    recorder = Recorder()
    folder = "runs/sweep/lambda_0.1/seed_1"
    destination = tmp_path / folder if report_to == "tensorboard" else Path(folder)
    curves.start_curves(recorder, report_to, destination, folder, {"loss_lambda": 0.1, "compile_buckets": None,
                                                                   "tags": [1]}, 3)
    (called_project, config, init_kwargs), = recorder.calls
    assert (called_project, init_kwargs) == (project, kwargs)
    if report_to == "tensorboard":  # events in RUN_DIR/tensorboard, no configuration (its hparams make extra runs)
        assert config is None and recorder.project_configuration.logging_dir == str(tmp_path / folder)
    else:  # every flag as the run's configuration, in the kinds the trackers take
        assert config == {"loss_lambda": 0.1, "compile_buckets": None, "tags": "[1]"}
