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
from helpers.sweep_inputs import sweep_inputs

ROOT = Path(__file__).resolve().parents[2]
SWEEP = ROOT / "scripts" / "lambda_sweep.sh"

STAND_IN_SBATCH = r'''#!PYTHON
"""Slurm's sbatch, standing in: the job script's #SBATCH lines read as sbatch reads them (whitespace between
arguments, quotes group, a backslash keeps the next character, an unquoted # ends the line), then its own options
(which win); an array's tasks run here one after another (SLURM_ARRAY_TASK_ID set; CUDA_VISIBLE_DEVICES as
--gres=gpu:N gives, from GPU 3 up), a job with --dependency=afterany:ID only once job ID has ended. Every job is
recorded in $STAND_IN_SLURM/jobs.json. STAND_IN_PRINTS=MODE[@N] makes submission N (every one without @N) print
nothing, print as if --parsable were ignored, print garbage, fail (exit 1 with sbatch's error), or warn on stderr."""
import json, os, subprocess, sys
from pathlib import Path


def line_words(line):
    words, word, quote, escaped, started = [], [], None, False, False
    for ch in line:
        if escaped:
            word.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = started = True
        elif quote:
            if ch == quote:
                quote = None
            else:
                word.append(ch)
        elif ch in "\"'":
            quote, started = ch, True
        elif ch == "#":
            break
        elif ch.isspace():
            if started:
                words.append("".join(word))
            word, started = [], False
        else:
            word.append(ch)
            started = True
    if started:
        words.append("".join(word))
    return words


def options_of(words):
    options, i = {}, 0
    while i < len(words):
        key, eq, value = words[i].partition("=")
        if not eq and i + 1 < len(words) and not words[i + 1].startswith("-"):
            value, i = words[i + 1], i + 1
        options[key] = value
        i += 1
    return options


state = Path(os.environ["STAND_IN_SLURM"]) / "jobs.json"
jobs = json.loads(state.read_text()) if state.exists() else []
*flags, script = sys.argv[1:]
words = []
for line in Path(script).read_text().splitlines()[1:]:
    if not line.startswith("#SBATCH "):
        break
    words += line_words(line[len("#SBATCH "):])
options = options_of(words + flags)
job = str(7000 + len(jobs))
mode, _, which = os.environ.get("STAND_IN_PRINTS", "").partition("@")
mode = mode if not which or int(which) == len(jobs) + 1 else ""
if mode == "fail":
    sys.exit("sbatch: error: Batch job submission failed: Invalid partition name specified")
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
    log = options["--output"].replace("%%", "<percent>").replace("%A", job).replace("%a", str(task)).replace("%j", job)
    with open(log.replace("<percent>", "%"), "w") as out:
        statuses.append(subprocess.run(["bash", script], env=env, stdout=out, stderr=subprocess.STDOUT).returncode)
jobs.append({"id": job, "options": options, "tasks": tasks, "statuses": statuses, "after": after})
state.write_text(json.dumps(jobs))
if mode == "warn":
    print("sbatch: warning: can't honor --ntasks-per-node set to 1", file=sys.stderr)
printed = {"nothing": "", "plain": f"Submitted batch job {job}", "garbage": f"sbatch: job {job} queued\n{job}"}
print(printed.get(mode, f"{job};standin" if "--parsable" in options else f"Submitted batch job {job}"),
      end="" if mode == "nothing" else "\n")
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
    env = dict(SCHEDULER="slurm", SUBSET="squad", **sweep_inputs(tmp_path, "squad"), LAMBDAS="0.1 0.5", SEEDS="1 2 3",
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
                            "error: GPUS_PER_TASK must be a whole number from 0 to 64, got 'one'"),
                           ({"SCHEDULER": "slurm", "GPUS_PER_TASK": "99999999999999999999"},
                            "error: GPUS_PER_TASK must be a whole number from 0 to 64, got '99999999999999999999'"),
                           ({"SCHEDULER": "slurm", "GPUS_PER_TASK": "65"},
                            "error: GPUS_PER_TASK must be a whole number from 0 to 64, got '65'"),
                           ({"SCHEDULER": "slurm", "SLURM_ARGS": '--comment "unclosed'},
                            "error: SLURM_ARGS: no closing quotation in '--comment \"unclosed' (quote as in the shell: "
                            '--comment "two words")'),
                           ({"SCHEDULER": "slurm", "SLURM_ARGS": "--partition=gpu --array=0-99"},
                            "error: SLURM_ARGS: --array=0-99 is the sweep's to set (a task per share of the runs)"),
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


def test_runs_sharing_a_gpu_or_the_device_say_so_in_words(tmp_path):
    inputs = sweep_inputs(tmp_path, "c3")
    for gpus, place in (("3", "on GPU 3, run {} of 2 sharing it"), ("", "run {} of 2 sharing the device")):
        result = subprocess.run(["bash", str(SWEEP)], cwd=ROOT, capture_output=True, text=True, timeout=60,
                                env=dict(os.environ, DRY_RUN="1", SUBSET="c3", **inputs, GPUS=gpus,
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


def test_slurm_args_keep_their_quoted_values_and_odd_folders_keep_their_logs(tmp_path):
    """SLURM_ARGS is split as the shell splits words, and each word is written so that sbatch's own reading of the
    #SBATCH lines gives it back whole: spaces, quotes, backslashes and a # (a comment there) included. The job array
    and its logs land in an OUTPUT_ROOT whose name holds a space and a % (a file name pattern for Slurm)."""
    trainer = tmp_path / "trainer.py"
    trainer.write_text(STAND_IN_TRAINER)
    root = tmp_path / "sweep 100%"
    result = sweep(tmp_path, SCHEDULER="slurm", SUBSET="c3", **sweep_inputs(tmp_path, "c3"), LAMBDAS="0.1", SEEDS="1",
                   OUTPUT_ROOT=str(root), LAUNCH=f"{sys.executable} {trainer}", GPUS_PER_TASK="0", STAND_IN_PRINTS="warn",
                   SLURM_ARGS='--comment "two words" --partition=gpu --mail-user="it\'s #1 \\\\ \\"ok\\"" --requeue')
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("sbatch: warning: can't honor") == 2  # sbatch's stderr shown, and no part of the id
    array, collect = jobs(tmp_path)
    for job in (array, collect):
        assert job["options"]["--comment"] == "two words" and job["options"]["--partition"] == "gpu"
        assert job["options"]["--mail-user"] == 'it\'s #1 \\ "ok"' and job["options"]["--requeue"] == ""
    assert array["statuses"] == [0] and (root / ".slurm" / f"{array['id']}_0.log").exists()
    assert (root / "lambda_0.1" / "seed_1" / "run_info.json").exists()
    by_hand = subprocess.run(["bash", str(root / ".slurm" / "array.sbatch")], capture_output=True, text=True,
                             env={k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}, timeout=60)
    assert (by_hand.returncode, by_hand.stderr) == (2, "error: array task '' has no share of the runs (tasks 0-0 have)\n")


@pytest.mark.parametrize("prints, says", [
    ("nothing", "error: sbatch --parsable printed nothing for the job array {array}, not a job id (JOB_ID or "
                "JOB_ID;CLUSTER): it may be queued (squeue --me); nothing more is submitted"),
    ("plain", "error: sbatch --parsable printed 'Submitted batch job 7000' for the job array {array}, not a job id"),
    ("garbage", "error: sbatch --parsable printed $'sbatch: job 7000 queued\\n7000' for the job array {array}, not a"),
    ("fail", "error: sbatch refused the job array {array} (exit 1): sbatch: error: Batch job submission failed: "
             "Invalid partition name specified; nothing more is submitted"),
    ("plain@2", "error: sbatch --parsable printed 'Submitted batch job 7001' for the collect job {collect}, after job "
                "array 7000, not a job id (JOB_ID or JOB_ID;CLUSTER): it may be queued (squeue --me); if it is not, "
                "run `expmrc collect {root} --output-dir {root}/results` when the array ends"),
])
def test_a_job_id_that_cannot_be_read_stops_the_sweep_in_one_line(tmp_path, prints, says):
    """Today an sbatch that prints nothing, or ignores --parsable, gets exit 0 and a collect job with an empty
    dependency; now the sweep stops at the submission it cannot read, and submits nothing after it."""
    trainer = tmp_path / "trainer.py"
    trainer.write_text(STAND_IN_TRAINER)
    root = tmp_path / "sweep"
    result = sweep(tmp_path, SCHEDULER="slurm", SUBSET="c3", **sweep_inputs(tmp_path, "c3"), LAMBDAS="0.1", SEEDS="1",
                   OUTPUT_ROOT=str(root), LAUNCH=f"{sys.executable} {trainer}", GPUS_PER_TASK="0",
                   STAND_IN_PRINTS=prints)
    assert result.returncode == 2 and result.stdout == ""
    message = says.format(array=root / ".slurm" / "array.sbatch", collect=root / ".slurm" / "collect.sbatch", root=root)
    [last] = [line for line in result.stderr.splitlines() if not line.startswith("submitted job array")]
    assert last.startswith(message), result.stderr
    submitted = jobs(tmp_path) if (tmp_path / "slurm-state" / "jobs.json").exists() else []
    assert len(submitted) == {"fail": 0, "plain@2": 2}.get(prints, 1)  # nothing after the unreadable one
    assert sorted(p.name for p in (root / ".slurm").iterdir() if not p.name.endswith(".log")) == (
        ["array.sbatch", "collect.sbatch"] if prints == "plain@2" else ["array.sbatch"])  # no .partial left


@pytest.mark.parametrize("scheduler", ["slurm", "local"])
@pytest.mark.parametrize("broken, says", [
    ("model", "error: {tmp}/nowhere/bert: no such model folder (PLM_PATH takes a model folder or a Hub id)"),
    ("weights", "error: {tmp}/model: a model folder without weights (no model.safetensors nor pytorch_model.bin)"),
    ("train", "error: {tmp}/data/train-pseudo-c3.json: no such data file"),
    ("dev", "error: {tmp}/data/expmrc-c3-dev.json: an empty data file"),
    ("hub", "error: org/no-such-model: no such folder, and not in the Hugging Face cache while HF_HUB_OFFLINE is set"),
])
def test_a_missing_model_or_data_file_is_one_line_before_anything_is_submitted_or_run(tmp_path, scheduler, broken, says):
    """Today 35 GPU tasks are queued for a model that does not exist; now nothing is submitted, no run starts, and
    no folder is written."""
    trainer = tmp_path / "trainer.py"
    trainer.write_text(STAND_IN_TRAINER)
    inputs = sweep_inputs(tmp_path, "c3")
    if broken == "model":
        inputs["PLM_PATH"] = str(tmp_path / "nowhere" / "bert")
    elif broken == "weights":
        (tmp_path / "model" / "model.safetensors").unlink()
    elif broken == "train":
        (tmp_path / "data" / "train-pseudo-c3.json").unlink()
    elif broken == "dev":
        (tmp_path / "data" / "expmrc-c3-dev.json").write_text("")
    else:
        inputs["PLM_PATH"] = "org/no-such-model"
    root = tmp_path / "sweep"
    result = sweep(tmp_path, SCHEDULER=scheduler, SUBSET="c3", **inputs, LAMBDAS="0.1 0.5", SEEDS="1 2",
                   OUTPUT_ROOT=str(root), LAUNCH=f"{sys.executable} {trainer}", GPUS_PER_TASK="0", GPUS="",
                   HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"))
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(says.format(tmp=tmp_path)), result.stderr
    assert not root.exists() and not (tmp_path / "slurm-state" / "jobs.json").exists()
    dry = sweep(tmp_path, SCHEDULER=scheduler, SUBSET="c3", **inputs, LAMBDAS="0.1", SEEDS="1", OUTPUT_ROOT=str(root),
                GPUS_PER_TASK="0", GPUS="", DRY_RUN="1", HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"))
    assert dry.returncode == 0 and not root.exists()  # a dry run warns (a Hub id it does not ask) and goes on
    assert (broken == "hub") == ("warning:" not in dry.stderr)
