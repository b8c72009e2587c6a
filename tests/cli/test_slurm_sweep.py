"""lambda_sweep.sh with SCHEDULER=slurm: one job array of the unfinished runs, then `expmrc collect` as a job that
waits for it, submitted to a stand-in `sbatch` on PATH that reads the job script's #SBATCH lines and runs the array's
tasks here (as Slurm would on its nodes), then the dependent job."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.common import needs_punkt
from helpers.span_data import make_span_file

ROOT = Path(__file__).resolve().parents[2]
SWEEP = ROOT / "scripts" / "lambda_sweep.sh"

STAND_IN_SBATCH = '''#!PYTHON
"""Slurm's sbatch, standing in: the job script's #SBATCH options (the command line's win), an array's tasks run here
one after another (SLURM_ARRAY_TASK_ID set; CUDA_VISIBLE_DEVICES as --gres=gpu:N gives, from GPU 3 up), a job with
--dependency=afterany:ID only once job ID has ended. Every job is recorded in $STAND_IN_SLURM/jobs.json."""
import json, os, subprocess, sys
from pathlib import Path

state = Path(os.environ["STAND_IN_SLURM"]) / "jobs.json"
jobs = json.loads(state.read_text()) if state.exists() else []
*flags, script = sys.argv[1:]
options = {}
for line in Path(script).read_text().splitlines():
    if line.startswith("#SBATCH "):
        key, _, value = line[len("#SBATCH "):].strip().partition("=")
        options[key] = value
for flag in flags:
    key, _, value = flag.partition("=")
    options[key] = value
job = str(7000 + len(jobs))
kind, _, after = options.get("--dependency", "afterany:").partition(":")
if kind != "afterany" or any(a not in {j["id"] for j in jobs} for a in filter(None, after.split(":"))):
    sys.exit("sbatch: error: Batch job submission failed: Job dependency problem")
first, _, last = options.get("--array", "").partition("-")
tasks = list(range(int(first), int(last) + 1)) if first else [None]
gpus = int(options.get("--gres", "gpu:0").rpartition(":")[2])
statuses = []
for task in tasks:
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    env["SLURM_JOB_ID"] = job
    if task is not None:
        env.update(SLURM_ARRAY_JOB_ID=job, SLURM_ARRAY_TASK_ID=str(task))
    if gpus:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(3 + g) for g in range(gpus))
    log = options["--output"].replace("%A", job).replace("%a", str(task)).replace("%j", job)
    with open(log, "w") as out:
        statuses.append(subprocess.run(["bash", script], env=env, stdout=out, stderr=subprocess.STDOUT).returncode)
jobs.append({"id": job, "options": options, "tasks": tasks, "statuses": statuses, "after": after})
state.write_text(json.dumps(jobs))
print(f"{job};standin" if "--parsable" in options else f"Submitted batch job {job}")
'''

STAND_IN_TRAINER = '''
import json, os, sys
args = dict(a[2:].split("=", 1) for a in sys.argv[2:] if a.startswith("--") and "=" in a)
out = args["output_dir"]
os.makedirs(out, exist_ok=True)
with open(os.path.join(os.path.dirname(os.path.dirname(out)), "runs.jsonl"), "a") as log:
    log.write(json.dumps({"run": out, "task": os.environ.get("SLURM_ARRAY_TASK_ID")}) + "\\n")
status = "failed" if args["rand_seed"] == "3" else "finished"
json.dump({"status": status, "loss_lambda": float(args["loss_lambda"]), "rand_seed": int(args["rand_seed"])},
          open(os.path.join(out, "run_info.json"), "w"))
sys.exit(status == "failed")
'''


def sweep(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    """lambda_sweep.sh with the stand-in sbatch first on PATH."""
    bin_dir = tmp_path / "bin"
    if not bin_dir.exists():
        bin_dir.mkdir()
        (bin_dir / "sbatch").write_text(STAND_IN_SBATCH.replace("PYTHON", sys.executable, 1))
        (bin_dir / "sbatch").chmod(0o755)
        (tmp_path / "slurm-state").mkdir()
    full = {k: v for k, v in os.environ.items() if k not in ("LAUNCH", "EXTRA_ARGS", "SIZE", "DO_LOWER_CASE", "GPUS")}
    full.update(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", PYTHON=sys.executable,
                STAND_IN_SLURM=str(tmp_path / "slurm-state"), OMP_NUM_THREADS="1")
    full.update(env)
    return subprocess.run(["bash", str(SWEEP)], cwd=ROOT, env=full, capture_output=True, text=True, timeout=600)


def jobs(tmp_path: Path) -> list[dict]:
    return json.loads((tmp_path / "slurm-state" / "jobs.json").read_text())


def test_dry_run_prints_one_array_of_the_unfinished_runs_and_the_collect_job_after_it(tmp_path):
    root = tmp_path / "sweep"
    done = root / "lambda_0.1" / "seed_2"
    done.mkdir(parents=True)
    (done / "run_info.json").write_text(json.dumps({"status": "finished"}))
    result = sweep(tmp_path, DRY_RUN="1", SCHEDULER="slurm", SUBSET="c3", PLM_PATH="models/x y", DATA_PATH="d",
                   LAMBDAS="0 0.1 0.5", SEEDS="1 2 3", OUTPUT_ROOT=str(root), GPUS_PER_TASK="2", RUNS_PER_GPU="2",
                   EXTRA_ARGS="--max_steps 4", SLURM_ARGS="--partition=gpu --time=02:00:00")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"skip {done}: finished" in result.stderr
    array, collect = out.split(f"# {root}/.slurm/collect.sbatch\n")
    assert array.startswith(f"# {root}/.slurm/array.sbatch\n#!/usr/bin/env bash\n")
    # 8 unfinished runs, 2 GPUs x 2 runs per GPU = 4 runs per task: 2 tasks, each asking for 2 GPUs
    assert "#SBATCH --array=0-1\n" in array and "#SBATCH --gres=gpu:2\n" in array
    assert array.index("#SBATCH --gres") < array.index("#SBATCH --partition=gpu\n#SBATCH --time=02:00:00\n")
    shares = re.findall(r'^  "(.*)"$', array, re.M)
    assert shares == ["0:1 0:2 0:3 0.1:1", "0.1:3 0.5:1 0.5:2 0.5:3"]
    assert "export PLM_PATH='models/x y'\n" in array and "export EXTRA_ARGS='--max_steps 4'\n" in array
    assert "export RUNS_PER_GPU='2'\n" in array and f"cd {ROOT}\n" in array
    assert array.rstrip().endswith(f"sbatch --parsable {root}/.slurm/array.sbatch")
    assert "#SBATCH --gres" not in collect and "#SBATCH --partition=gpu" in collect
    assert f"-m expmrc.cli collect {root} --output-dir {root}/results\n" in collect
    assert collect.rstrip().endswith(f"sbatch --parsable --dependency=afterany:ARRAY_JOB_ID {root}/.slurm/collect.sbatch")
    assert sorted(p.name for p in root.iterdir()) == ["lambda_0.1"]  # a dry run writes nothing
    for script in (array, collect):  # each printed job script is valid bash
        body = script.split("\n", 1)[1].split("\nsbatch ")[0]
        assert subprocess.run(["bash", "-n"], input=body, text=True).returncode == 0


def test_array_tasks_run_their_share_then_collect_waits_for_all_of_them(tmp_path):
    """Through the stand-in sbatch: every unfinished run once, RUNS_PER_GPU to a task, the collect job submitted with
    afterany on the array's id (parsed from `--parsable`'s JOB;CLUSTER); a failed run fails its task, not the array."""
    trainer = tmp_path / "trainer.py"
    trainer.write_text(STAND_IN_TRAINER)
    root = tmp_path / "sweep"
    env = dict(SCHEDULER="slurm", SUBSET="squad", PLM_PATH="p", DATA_PATH="d", LAMBDAS="0.1 0.5", SEEDS="1 2 3",
               OUTPUT_ROOT=str(root), LAUNCH=f"{sys.executable} {trainer}", GPUS_PER_TASK="0", RUNS_PER_GPU="2",
               COLLECT="0")
    result = sweep(tmp_path, **env)
    assert result.returncode == 0, result.stderr
    [array] = jobs(tmp_path)
    assert array["tasks"] == [0, 1, 2] and array["statuses"] == [0, 1, 1]  # the seed-3 runs fail in tasks 1 and 2
    runs = [json.loads(line) for line in (root / "runs.jsonl").read_text().splitlines()]
    assert sorted((r["run"], r["task"]) for r in runs) == sorted(
        (f"{root}/lambda_{lam}/seed_{seed}", str(task)) for task, pair in enumerate(
            [(("0.1", 1), ("0.1", 2)), (("0.1", 3), ("0.5", 1)), (("0.5", 2), ("0.5", 3))]) for lam, seed in pair)
    log = (root / ".slurm" / f"{array['id']}_1.log").read_text()
    assert f"run failed: {root}/lambda_0.1/seed_3" in log and "1 failed" in log
    assert f"submitted job array {array['id']}: 6 run(s), 3 task(s) of at most 2 run(s)" in result.stderr
    again = sweep(tmp_path, **dict(env, COLLECT="1"))  # only the two failed runs go again, one task of two
    assert again.returncode == 0, again.stderr
    array2, collect = jobs(tmp_path)[1:]
    assert array2["tasks"] == [0] and re.findall(r'^  "(.*)"$', (root / ".slurm" / "array.sbatch").read_text(), re.M) \
        == ["0.1:3 0.5:3"]
    assert collect["after"] == array2["id"] and collect["tasks"] == [None] and "--gres" not in collect["options"]
    assert f"submitted collect job {collect['id']}" in again.stderr


def test_scheduler_and_gpus_per_task_are_checked_and_a_missing_sbatch_is_one_line(tmp_path):
    env = dict(SUBSET="c3", PLM_PATH="p", DATA_PATH="d", OUTPUT_ROOT=str(tmp_path / "s"))
    for extra, message in [({"SCHEDULER": "pbs"}, "error: SCHEDULER must be local or slurm, got 'pbs'"),
                           ({"SCHEDULER": "slurm", "GPUS_PER_TASK": "one"},
                            "error: GPUS_PER_TASK must be a whole number (0: tasks without a GPU), got 'one'"),
                           ({"SWEEP_RUNS": "0.1:1 0.5"}, "error: SWEEP_RUNS takes LAMBDA:SEED items separated by "
                                                          "spaces, such as '0.1:1 0.5:3'; got '0.5'")]:
        result = sweep(tmp_path, DRY_RUN="1", **env, **extra)
        assert (result.returncode, result.stdout, result.stderr) == (2, "", message + "\n")
    result = sweep(tmp_path, SCHEDULER="slurm", **env, PATH="/usr/bin:/bin")  # no sbatch there
    assert result.returncode == 2 and result.stderr.startswith("error: SCHEDULER=slurm submits with sbatch, which is "
                                                               "not on PATH")
    assert not (tmp_path / "s").exists()


def test_the_job_scripts_carry_every_variable_the_run_scripts_read():
    """A variable a run script reads but the array script does not carry would silently take its default on the nodes
    wherever the cluster does not pass the submitting environment."""
    common = (ROOT / "scripts" / "_common.sh").read_text()
    read = set(re.findall(r"\$\{([A-Z_]+):-", common)) | set(re.search(r"^ +require ([A-Z_ ]+)$", common, re.M).group(1).split())
    carried = re.search(r"SLURM_CARRIED=\(([^)]*)\)", (ROOT / "scripts" / "_slurm.sh").read_text()).group(1).split()
    assert {"PLM_PATH", "EXTRA_ARGS", "MIXED_PRECISION", "LAUNCH"} <= read
    assert read - {"MODEL_PATH", "LAMBDA", "SEED", "DRY_RUN"} <= set(carried)  # the sweep sets those three per run


def test_sweep_runs_picks_runs_out_of_the_product():
    result = subprocess.run(["bash", str(SWEEP)], cwd=ROOT, capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, DRY_RUN="1", SUBSET="race", PLM_PATH="p", DATA_PATH="d", GPUS="",
                                     SWEEP_RUNS="0.5:3 0:1", COLLECT="0", OUTPUT_ROOT="/nowhere", PYTHON=sys.executable))
    assert result.returncode == 0, result.stderr
    runs = [re.search(r"--loss_lambda=(\S+) .*--rand_seed=(\S+)", line).groups() for line in result.stdout.splitlines()]
    assert runs == [("0.5", "3"), ("0", "1")]


def test_runs_sharing_a_gpu_or_the_device_say_so_in_words():
    for gpus, place in (("3", "on GPU 3, run {} of 2 sharing it"), ("", "run {} of 2 sharing the device")):
        result = subprocess.run(["bash", str(SWEEP)], cwd=ROOT, capture_output=True, text=True, timeout=60,
                                env=dict(os.environ, DRY_RUN="1", SUBSET="c3", PLM_PATH="p", DATA_PATH="d", GPUS=gpus,
                                         RUNS_PER_GPU="2", LAMBDAS="0", SEEDS="1 2", COLLECT="0", OUTPUT_ROOT="/o"))
        assert result.stderr.splitlines() == [f"run /o/lambda_0/seed_{k} {place.format(k)}" for k in (1, 2)]


@pytest.mark.slow
@needs_punkt
def test_a_tiny_model_swept_on_slurm_gives_the_table_of_the_one_machine_sweep(tmp_path):
    """A real tiny BERT trained for a few steps per run (2 λ × 2 seeds, CPU, one thread), swept here and through the
    stand-in sbatch (one GPU per task and two runs to a GPU, as the tasks' logs say): the same table3.csv."""
    from helpers.tiny_bert import make_tiny_bert_folder

    data = tmp_path / "data"
    data.mkdir()
    make_span_file(data / "train-pseudo-squad.json", 12, seed=1)
    make_span_file(data / "expmrc-squad-dev.json", 6, seed=2)
    env = dict(SUBSET="squad", PLM_PATH=str(make_tiny_bert_folder(tmp_path / "bert")), DATA_PATH=str(data),
               LAMBDAS="0 0.5", SEEDS="1 2", RUNS_PER_GPU="2",
               EXTRA_ARGS="--max_steps 3 --max_seq_length 64 --doc_stride 16 --max_query_length 16 "
                          "--train_batch_size 4 --learning_rate 1e-3")
    here = sweep(tmp_path, **env, OUTPUT_ROOT=str(tmp_path / "here"), GPUS="")
    assert here.returncode == 0, here.stderr[-3000:]
    slurm = sweep(tmp_path, **env, OUTPUT_ROOT=str(tmp_path / "slurm"), SCHEDULER="slurm", GPUS_PER_TASK="1")
    assert slurm.returncode == 0, slurm.stderr[-3000:]
    array, collect = jobs(tmp_path)
    assert array["tasks"] == [0, 1] and array["statuses"] == [0, 0] and collect["statuses"] == [0]
    task_log = (tmp_path / "slurm" / ".slurm" / f"{array['id']}_0.log").read_text()
    assert task_log.count(" on GPU 3, run 1 of 2 sharing it\n") == task_log.count(" of 2 sharing it\n") - 1 == 1
    table = (tmp_path / "here" / "results" / "table3.csv").read_text()
    assert len(table.splitlines()) == 3  # a header and one row per λ, over the two seeds
    assert (tmp_path / "slurm" / "results" / "table3.csv").read_text() == table
    assert ".slurm" not in (tmp_path / "slurm" / "results" / "runs.csv").read_text()  # its logs are no run
