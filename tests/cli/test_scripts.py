"""The shell scripts under scripts/: syntax, the command lines they build (DRY_RUN=1), and a whole λ sweep
driven through a stand-in trainer (LAUNCH) that writes run directories, ending in `expmrc collect`."""

from __future__ import annotations

import importlib
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.common import needs_punkt
from helpers.sweep_inputs import sweep_inputs

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
TINY_TF = ROOT / "tests" / "fixtures" / "tiny_tf_bert"


def run_script(name: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k not in ("LAUNCH", "EXTRA_ARGS", "SIZE", "DO_LOWER_CASE")}
    full_env.setdefault("GPUS", "")  # the sweep runs one run at a time unless a test lists GPUs
    full_env.update(PYTHON=sys.executable, **env)
    return subprocess.run(["bash", str(SCRIPTS / name), *args], cwd=ROOT, env=full_env, capture_output=True,
                          text=True, timeout=120)


def dry_run(name: str, *args: str, **env: str) -> list[list[str]]:
    result = run_script(name, *args, DRY_RUN="1", **env)
    assert result.returncode == 0, result.stderr
    return [shlex.split(line) for line in result.stdout.splitlines()]


def flags_of(command: list[str]) -> dict[str, str]:
    """--name=value flags of a command line as a dict (later ones win, as with argparse)."""
    out: dict[str, str] = {}
    for i, arg in enumerate(command):
        if arg.startswith("--") and "=" in arg:
            key, value = arg[2:].split("=", 1)
            out[key] = value
        elif arg.startswith("--") and i + 1 < len(command) and not command[i + 1].startswith("--"):
            out[arg[2:]] = command[i + 1]
    return out


@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS.glob("*.sh")))
def test_every_script_parses(script):
    assert subprocess.run(["bash", "-n", str(SCRIPTS / script)], capture_output=True).returncode == 0


@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS.glob("*.sh") if not p.name.startswith("_")))
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_every_script_explains_itself_and_does_nothing_else(script, flag, tmp_path):
    """`--help` prints the comment at the top of the script (what it does, the variables it reads) and exits 0
    before any check or work: no variable is required, nothing is written."""
    header = []
    for line in (SCRIPTS / script).read_text(encoding="utf-8").splitlines()[1:]:
        if not line.startswith("#"):
            break
        header.append(line[2:] if line.startswith("# ") else line[1:])
    result = subprocess.run(["bash", str(SCRIPTS / script), flag], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60, env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)})
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines() == header and len(header) >= 3
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("script, program, subset, lam, lower", [
    ("run_squad.sh", "run_se_mrc.py", "squad", "0.01", "False"),
    ("run_cmrc2018.sh", "run_se_mrc.py", "cmrc2018", "0.01", "True"),
    ("run_race.sh", "run_mc_mrc.py", "race", "0.1", "False"),
    ("run_c3.sh", "run_mc_mrc.py", "c3", "0.1", "True"),
])
def test_subset_scripts_use_the_release_settings(script, program, subset, lam, lower):
    [command] = dry_run(script, PLM_PATH="models/hf-bert", DATA_PATH="data/x", MODEL_PATH="runs/out dir")
    assert command[0] == sys.executable and command[1] == str(ROOT / "baseline" / program)
    flags = flags_of(command)
    assert flags["model_name_or_path"] == "models/hf-bert"
    assert flags["train_file"] == f"data/x/train-pseudo-{subset}.json"
    assert flags["predict_file"] == f"data/x/expmrc-{subset}-dev.json"
    assert (flags["task_name"], flags["loss_lambda"]) == (subset, lam)
    assert "do_lower_case" not in flags  # a Hugging Face folder keeps its tokenizer's casing
    [tf_command] = dry_run(script, PLM_PATH=str(TINY_TF), DATA_PATH="d", MODEL_PATH="m")
    assert flags_of(tf_command)["do_lower_case"] == lower  # an original release is read as the release says
    [forced] = dry_run(script, PLM_PATH="models/hf-bert", DATA_PATH="d", MODEL_PATH="m", DO_LOWER_CASE="True")
    assert flags_of(forced)["do_lower_case"] == "True"
    assert (flags["train_batch_size"], flags["num_train_epochs"], flags["max_seq_length"], flags["learning_rate"],
            flags["doc_stride"], flags["rand_seed"], flags["output_dir"]) == ("32", "2", "512", "3e-5", "128", "12345",
                                                                             "runs/out dir")
    assert (flags["predict_batch_size"], flags["max_query_length"]) == ("32", "64")
    assert ("max_answer_length" in flags) == (program == "run_se_mrc.py")
    parser = pytest.importorskip("expmrc.training.flags").build_parser("span" if program == "run_se_mrc.py" else "choice")
    args = parser.parse_args(command[2:])  # the training scripts' own parser accepts every flag
    assert args.loss_lambda == float(lam) and args.do_lower_case is None
    # the paper's settings are passed explicitly: left to the defaults (the original scripts'), they would change
    explicit = ("loss_lambda", "num_train_epochs", "max_seq_length", "max_query_length", "predict_batch_size")
    assert set(explicit) <= set(flags)
    defaults = parser.parse_args(["--output_dir", "x"])
    assert [name for name in explicit if getattr(args, name) != getattr(defaults, name)]


def test_tf_release_large_size_overrides_and_extra_args():
    [command] = dry_run("run_cmrc2018.sh", PLM_PATH=str(TINY_TF), DATA_PATH="d", MODEL_PATH="m", SIZE="large",
                        LAMBDA="0.2", SEED="7", TRAIN_FILE="t.json", EXTRA_ARGS="--max_steps 3 --learning_rate 1e-4")
    flags = flags_of(command)
    assert flags["init_checkpoint"] == f"{TINY_TF}/bert_model.ckpt"
    assert flags["bert_config_file"] == f"{TINY_TF}/bert_config.json" and flags["vocab_file"] == f"{TINY_TF}/vocab.txt"
    assert "model_name_or_path" not in flags
    assert (flags["gradient_accumulation_steps"], flags["train_batch_size"]) == ("4", "32")
    assert (flags["loss_lambda"], flags["rand_seed"], flags["train_file"]) == ("0.2", "7", "t.json")
    assert command[-4:] == ["--max_steps", "3", "--learning_rate", "1e-4"]  # appended last, so they win
    assert flags["learning_rate"] == "1e-4"


def test_missing_variable_or_bad_size_is_one_line():
    result = run_script("run_race.sh", PLM_PATH="p", MODEL_PATH="m")
    assert result.returncode == 2 and result.stderr.strip() == "error: set DATA_PATH (see the comment at the top of run_race.sh)"
    result = run_script("run_c3.sh", PLM_PATH="p", DATA_PATH="d", MODEL_PATH="m", SIZE="huge", DRY_RUN="1")
    assert result.returncode == 2 and "SIZE must be base or large" in result.stderr


def test_lambda_sweep_dry_run_lists_every_run_and_skips_finished_ones(tmp_path):
    done = tmp_path / "lambda_0.1" / "seed_2"
    done.mkdir(parents=True)
    (done / "run_info.json").write_text(json.dumps({"status": "finished"}))
    running = tmp_path / "lambda_0" / "seed_1"
    running.mkdir(parents=True)
    (running / "run_info.json").write_text(json.dumps({"status": "running"}))
    result = run_script("lambda_sweep.sh", DRY_RUN="1", SUBSET="race", PLM_PATH="p", DATA_PATH="d",
                        LAMBDAS="0 0.1", SEEDS="1 2", OUTPUT_ROOT=str(tmp_path), EXTRA_ARGS="--max_steps 2")
    assert result.returncode == 0, result.stderr
    commands = [shlex.split(line) for line in result.stdout.splitlines()]
    runs = [(flags_of(c)["loss_lambda"], flags_of(c)["rand_seed"], flags_of(c)["output_dir"]) for c in commands[:-1]]
    assert runs == [("0", "1", f"{tmp_path}/lambda_0/seed_1"), ("0", "2", f"{tmp_path}/lambda_0/seed_2"),
                    ("0.1", "1", f"{tmp_path}/lambda_0.1/seed_1")]
    assert f"skip {done}: finished" in result.stderr
    assert commands[-1] == [sys.executable, "-m", "expmrc.cli", "collect", str(tmp_path), "--output-dir",
                            f"{tmp_path}/results"]
    default = run_script("lambda_sweep.sh", DRY_RUN="1", SUBSET="c3", PLM_PATH="p", DATA_PATH="d", NUM_SEEDS="2",
                         COLLECT="0", OUTPUT_ROOT=str(tmp_path / "all"))
    lambdas = [flags_of(shlex.split(line))["loss_lambda"] for line in default.stdout.splitlines()]
    assert lambdas == [lam for lam in ("0", "0.01", "0.05", "0.1", "0.2", "0.5", "1.0") for _ in range(2)]


def test_launchers_wrap_the_command_and_keep_the_total_batch_size():
    env = dict(PLM_PATH="p", DATA_PATH="d", MODEL_PATH="m")
    [command] = dry_run("launch_multi_gpu.sh", "scripts/run_squad.sh", NUM_GPUS="4", MIXED_PRECISION="bf16", **env)
    assert command[:3] == [sys.executable, "-m", "accelerate.commands.launch"]
    assert command[3:command.index(str(ROOT / "baseline" / "run_se_mrc.py"))] == [
        "--num_processes", "4", "--num_machines", "1", "--mixed_precision", "bf16", "--multi_gpu"]
    assert flags_of(command)["train_batch_size"] == "32"
    [command] = dry_run("launch_multi_gpu.sh", "scripts/run_c3.sh", NUM_GPUS="8", NUM_MACHINES="2", MACHINE_RANK="1",
                        MAIN_ADDR="10.1.2.3", LAUNCHER="torchrun", **env)
    assert command[:command.index(str(ROOT / "baseline" / "run_mc_mrc.py"))] == [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "8", "--nnodes", "2", "--node_rank", "1",
        "--master_addr", "10.1.2.3", "--master_port", "29500"]
    [command] = dry_run("launch_tpu_vm.sh", "scripts/run_cmrc2018.sh", TPU_NUM_PROCESSES="8", **env)
    assert "--tpu" in command[:8] and flags_of(command)["use_tpu"] == "True"
    bad = run_script("launch_multi_gpu.sh", "scripts/run_c3.sh", NUM_GPUS="2", LAUNCHER="mpirun", DRY_RUN="1", **env)
    assert bad.returncode == 2 and "LAUNCHER must be accelerate or torchrun" in bad.stderr


@pytest.mark.parametrize("script", ["run_se_mrc.py", "run_mc_mrc.py"])
def test_training_scripts_have_the_main_the_tpu_launcher_calls(script, tmp_path, monkeypatch, capsys):
    """`accelerate launch --tpu --main_training_function main` imports the script as a module from its folder,
    sets sys.argv to the script's flags and calls main() with no arguments; a failure must exit non-zero."""
    monkeypatch.syspath_prepend(str(ROOT / "baseline"))
    module = importlib.import_module(Path(script).stem)
    monkeypatch.setattr(sys, "argv", [module.__file__, "--do_train=False", "--do_predict=False", f"--output_dir={tmp_path}"])
    with pytest.raises(SystemExit) as stopped:
        module.main()
    assert stopped.value.code == 2
    assert capsys.readouterr().err == "error: nothing to do: pass --do_train True and/or --do_predict True\n"


XMP_STAND_IN = '''
def spawn(fn, args=(), nprocs=None, join=True, daemon=False, start_method="spawn"):
    return fn(0, *args)  # torch_xla would start one process per TPU chip; here replica 0 runs in this one
'''


@pytest.mark.slow
def test_tpu_launcher_command_runs_a_baseline_through_accelerate(tmp_path):
    """The command launch_tpu_vm.sh builds, run for real through accelerate's TPU launcher, with torch_xla's
    spawn replaced by a stand-in that runs the replica in-process (no TPU here): the run finishes."""
    from helpers.span_data import make_span_file
    from helpers.tiny_bert import make_tiny_bert_folder

    (tmp_path / "xla" / "torch_xla" / "distributed").mkdir(parents=True)
    (tmp_path / "xla" / "torch_xla" / "__init__.py").write_text("")
    (tmp_path / "xla" / "torch_xla" / "distributed" / "__init__.py").write_text("")
    (tmp_path / "xla" / "torch_xla" / "distributed" / "xla_multiprocessing.py").write_text(XMP_STAND_IN)
    data = tmp_path / "data"
    data.mkdir()
    make_span_file(data / "train-pseudo-squad.json", 8, seed=1)
    make_span_file(data / "expmrc-squad-dev.json", 5, seed=2)
    out = tmp_path / "run"
    result = run_script("launch_tpu_vm.sh", "scripts/run_squad.sh", PYTHONPATH=str(tmp_path / "xla"),
                        USE_TORCH_XLA="0",  # transformers must not take the stand-in for the real torch_xla
                        OMP_NUM_THREADS="1", PLM_PATH=str(make_tiny_bert_folder(tmp_path / "bert")),
                        DATA_PATH=str(data), MODEL_PATH=str(out),
                        EXTRA_ARGS="--use_tpu False --max_steps 2 --max_seq_length 64 --doc_stride 16 "
                                   "--max_query_length 16 --train_batch_size 4")
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((out / "run_info.json").read_text(encoding="utf-8"))["status"] == "finished"
    assert len(json.loads((out / "dev_predictions.json").read_text(encoding="utf-8"))) == 5


STAND_IN_TRAINER = '''
import json, os, sys
args = dict(a[2:].split("=", 1) for a in sys.argv[2:] if a.startswith("--") and "=" in a)
out, lam, seed = args["output_dir"], float(args["loss_lambda"]), int(args["rand_seed"])
os.makedirs(out, exist_ok=True)
info = {"task": "span", "task_name": args["task_name"], "predict_file": args["predict_file"], "model": args["model_name_or_path"],
        "loss_lambda": lam, "rand_seed": seed, "global_step": 2, "flags": args}
if lam == 0.5 and seed == 2:
    json.dump({**info, "status": "failed", "error": "stand-in failure"}, open(os.path.join(out, "run_info.json"), "w"))
    sys.exit(1)
dataset = json.load(open(args["predict_file"]))
qas = [qa for article in dataset["data"] for p in article["paragraphs"] for qa in p["qas"]]
right = int(lam * 10) + seed  # how many answers this run gets right, so every run scores differently
preds = {qa["id"]: {"answer": qa["answers"][0]["text"] if i < right else "zzz", "evidence": qa["evidences"][0]}
         for i, qa in enumerate(qas)}
json.dump(preds, open(os.path.join(out, "dev_predictions.json"), "w"))
json.dump({**info, "status": "finished"}, open(os.path.join(out, "run_info.json"), "w"))
'''


@needs_punkt
def test_lambda_sweep_runs_every_run_then_collects(tmp_path):
    trainer = tmp_path / "stand_in_trainer.py"
    trainer.write_text(STAND_IN_TRAINER)
    context = " ".join(f"City{i} is here." for i in range(10))
    qas = [{"id": f"q{i}", "question": "Which?", "answers": [{"text": f"City{i}", "answer_start": context.index(f"City{i}")}],
            "evidences": [f"City{i} is here."]} for i in range(10)]
    dev = tmp_path / "dev.json"
    dev.write_text(json.dumps({"version": "expmrc-squad-dev", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}))
    root = tmp_path / "sweep"
    env = dict(SUBSET="squad", **sweep_inputs(tmp_path, "squad"), PREDICT_FILE=str(dev),
               LAMBDAS="0.1 0.5", SEEDS="1 2", OUTPUT_ROOT=str(root), LAUNCH=f"{sys.executable} {trainer}")
    result = run_script("lambda_sweep.sh", **env)
    assert result.returncode == 1, result.stderr  # one run failed; the others ran and were collected
    assert f"run failed: {root}/lambda_0.5/seed_2" in result.stderr
    rows = [line.split(",") for line in (root / "results" / "table3.csv").read_text().splitlines()[1:]]
    assert [(r[3], r[4], r[5], r[6]) for r in rows] == [("0.1", "2", "1 2", "25.000"), ("0.5", "1", "1", "60.000")]
    assert (root / "results" / "lambda.png").read_bytes()[:4] == b"\x89PNG"
    assert "lambda_0.5/seed_2` (failed): failed: stand-in failure" in (root / "results" / "table3.md").read_text()
    again = run_script("lambda_sweep.sh", COLLECT="0", **env)  # finished runs are skipped, the failed one retried
    assert again.stderr.count(": finished\n") == 3 and again.stderr.count("run failed") == 1
    assert "sweep: 0 run(s) finished, 1 failed, 3 skipped (finished before)" in again.stderr


GPU_STAND_IN = """
import json, os, sys, time
args = dict(a[2:].split("=", 1) for a in sys.argv[2:] if a.startswith("--") and "=" in a)
out = args["output_dir"]
os.makedirs(out, exist_ok=True)
began = time.time()
time.sleep(1.5)
with open(os.path.join(os.path.dirname(os.path.dirname(out)), "runs.jsonl"), "a") as log:
    log.write(json.dumps({"run": out, "gpu": os.environ.get("CUDA_VISIBLE_DEVICES"), "began": began,
                          "ended": time.time()}) + "\\n")
print("trained on GPU", os.environ.get("CUDA_VISIBLE_DEVICES"))
json.dump({"status": "failed" if args["rand_seed"] == "3" else "finished"}, open(os.path.join(out, "run_info.json"), "w"))
sys.exit(1 if args["rand_seed"] == "3" else 0)
"""


def test_lambda_sweep_runs_side_by_side_one_run_per_gpu_and_skips_finished_ones(tmp_path):
    trainer = tmp_path / "gpu_stand_in.py"
    trainer.write_text(GPU_STAND_IN)
    root = tmp_path / "sweep"
    done = root / "lambda_0.1" / "seed_1"
    done.mkdir(parents=True)
    (done / "run_info.json").write_text(json.dumps({"status": "finished"}))
    env = dict(SUBSET="squad", **sweep_inputs(tmp_path, "squad"), LAMBDAS="0.1 0.5", SEEDS="1 2 3", OUTPUT_ROOT=str(root),
               LAUNCH=f"{sys.executable} {trainer}", COLLECT="0", GPUS="4 7")
    result = run_script("lambda_sweep.sh", **env)
    assert result.returncode == 1 and result.stderr.count("run failed") == 2, result.stderr  # the seed-3 runs
    runs = [json.loads(line) for line in (root / "runs.jsonl").read_text().splitlines()]
    assert sorted(r["run"] for r in runs) == sorted(f"{root}/lambda_{lam}/seed_{seed}" for lam, seed in
                                                   [("0.1", 2), ("0.1", 3), ("0.5", 1), ("0.5", 2), ("0.5", 3)])
    assert {r["gpu"] for r in runs} == {"4", "7"}  # each run sees only its own GPU
    for gpu in ("4", "7"):  # never two runs on one GPU at once
        mine = sorted((r["began"], r["ended"]) for r in runs if r["gpu"] == gpu)
        assert all(a[1] <= b[0] for a, b in zip(mine, mine[1:]))
    first = min(runs, key=lambda r: r["began"])
    assert any(r["gpu"] != first["gpu"] and r["began"] < first["ended"] for r in runs)  # side by side
    assert "trained on GPU" in (root / "lambda_0.5" / "seed_1" / "sweep.log").read_text()
    again = run_script("lambda_sweep.sh", **env)  # finished runs are skipped, the failed ones retried
    assert again.stderr.count("\nskip ") + again.stderr.startswith("skip ") == 4 and again.stderr.count("run failed") == 2
    dry = run_script("lambda_sweep.sh", **dict(env, DRY_RUN="1"))
    assert dry.stderr.count("on GPU 4") == 1 and dry.stderr.count("on GPU 7") == 1  # the 2 unfinished, round robin


def test_runs_per_gpu_shares_each_gpu_and_a_failed_run_leaves_the_others_running(tmp_path):
    trainer = tmp_path / "gpu_stand_in.py"
    trainer.write_text(GPU_STAND_IN)
    root = tmp_path / "sweep"
    env = dict(SUBSET="squad", **sweep_inputs(tmp_path, "squad"), LAMBDAS="0.1 0.5", SEEDS="1 2 3", OUTPUT_ROOT=str(root),
               LAUNCH=f"{sys.executable} {trainer}", COLLECT="0", GPUS="5", RUNS_PER_GPU="3")
    result = run_script("lambda_sweep.sh", **env)
    assert result.returncode == 1, result.stderr
    runs = [json.loads(line) for line in (root / "runs.jsonl").read_text().splitlines()]
    assert len(runs) == 6 and {r["gpu"] for r in runs} == {"5"}
    moments = sorted(t for r in runs for t in (r["began"], r["ended"]))
    busy = [sum(r["began"] <= t < r["ended"] for r in runs) for t in moments]
    assert max(busy) == 3  # three runs at once on the one GPU, never four
    for lam in ("0.1", "0.5"):  # each run its own log, its own run_info.json
        assert "trained on GPU 5" in (root / f"lambda_{lam}" / "seed_1" / "sweep.log").read_text()
        assert json.loads((root / f"lambda_{lam}" / "seed_2" / "run_info.json").read_text())["status"] == "finished"
    assert "sweep: 4 run(s) finished, 2 failed, 0 skipped (finished before)" in result.stderr
    assert f"failed: {root}/lambda_0.1/seed_3: trained on GPU 5" in result.stderr  # the last line of its log
    assert result.stderr.count("sharing it") == 6


def test_runs_per_gpu_without_gpus_runs_that_many_at_once_on_the_one_device(tmp_path):
    trainer = tmp_path / "gpu_stand_in.py"
    trainer.write_text(GPU_STAND_IN)
    root = tmp_path / "sweep"
    result = run_script("lambda_sweep.sh", SUBSET="squad", **sweep_inputs(tmp_path, "squad"), LAMBDAS="0.1", SEEDS="1 2",
                        OUTPUT_ROOT=str(root), LAUNCH=f"{sys.executable} {trainer}", COLLECT="0", GPUS="",
                        RUNS_PER_GPU="2", CUDA_VISIBLE_DEVICES="")
    assert result.returncode == 0, result.stderr
    first, second = [json.loads(line) for line in (root / "runs.jsonl").read_text().splitlines()]
    assert first["began"] < second["ended"] and second["began"] < first["ended"]  # side by side
    assert {first["gpu"], second["gpu"]} == {""}  # the sweep assigns no GPU


def test_dry_run_with_three_runs_per_gpu_prints_three_runs_on_each_gpu(tmp_path):
    result = run_script("lambda_sweep.sh", DRY_RUN="1", RUNS_PER_GPU="3", GPUS="0 1", SUBSET="cmrc2018",
                        PLM_PATH="p", DATA_PATH="d", LAMBDAS="0 0.01", SEEDS="1 2 3", COLLECT="0",
                        OUTPUT_ROOT=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 6
    for gpu in ("0", "1"):
        assert [f"on GPU {gpu}, run {k} of 3 sharing it" in result.stderr for k in (1, 2, 3)] == [True] * 3
        assert result.stderr.count(f"on GPU {gpu},") == 3


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5", "65", ""])
def test_runs_per_gpu_must_be_a_whole_number_from_one_to_64(value):
    result = run_script("lambda_sweep.sh", DRY_RUN="1", RUNS_PER_GPU=value, SUBSET="c3", PLM_PATH="p", DATA_PATH="d")
    if value == "":  # unset or empty: the default, one run per GPU
        assert result.returncode == 0, result.stderr
        return
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == f"error: RUNS_PER_GPU must be a whole number from 1 to 64, got '{value}'\n"


@pytest.mark.parametrize("script, env, says", [
    ("run_c3.sh", {"TRAIN_BATCH_SIZE": "32x"}, "TRAIN_BATCH_SIZE must be a whole number from 1 to 1048576, got '32x'"),
    ("run_squad.sh", {"SEED": "-1"}, "SEED must be a whole number from 0 to 4294967295, got '-1'"),
    ("run_race.sh", {"LEARNING_RATE": "3e-5x"}, "LEARNING_RATE must be a number above 0 and at most 1, got '3e-5x'"),
    ("run_cmrc2018.sh", {"LAMBDA": "inf"}, "LAMBDA must be a number from 0 to 1000000, got 'inf'"),
    ("run_cmrc2018.sh", {"DRY_RUN": "yes"}, "DRY_RUN must be 0 or 1, got 'yes'"),
    ("launch_multi_gpu.sh", {"NUM_GPUS": "99999999999999999999"},
     "NUM_GPUS must be a whole number from 1 to 64, got '99999999999999999999'"),
    ("launch_multi_gpu.sh", {"NUM_GPUS": "2", "NUM_MACHINES": "2", "MAIN_ADDR": "10.0.0.1", "MACHINE_RANK": "2"},
     "MACHINE_RANK must be a whole number from 0 to 1, got '2'"),
    ("launch_multi_gpu.sh", {"NUM_GPUS": "2", "NUM_MACHINES": "2", "MAIN_ADDR": "10.0.0.1", "MAIN_PORT": "70000"},
     "MAIN_PORT must be a whole number from 1 to 65535, got '70000'"),
    ("check_flaky.sh", {"SEEDS": "0 1e9"}, "SEEDS must be whole numbers from 0 to 999999 separated by spaces, got '1e9'"),
    ("check_flaky.sh", {"THREADS": "0"}, "THREADS must be whole numbers from 1 to 999 separated by spaces, got '0'"),
])
def test_every_script_bounds_its_numbers_in_one_line_before_it_runs_anything(script, env, says):
    args = ["scripts/run_c3.sh"] if script == "launch_multi_gpu.sh" else []
    result = run_script(script, *args, **{"DRY_RUN": "1", "PLM_PATH": "p", "DATA_PATH": "d", "MODEL_PATH": "m", **env})
    assert (result.returncode, result.stdout, result.stderr) == (2, "", f"error: {says}\n")


def test_report_screenshot_bounds_its_window_in_one_line():
    result = subprocess.run([sys.executable, str(SCRIPTS / "report_screenshot.py"), "--width", "-5"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "--width: must be a whole number of pixels from 200 to 8000, got '-5'" in result.stderr


def test_lambda_sweep_help_prints_its_variables():
    result = run_script("lambda_sweep.sh", "--help")
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.startswith("Lambda sweep on one subset") and "RUNS_PER_GPU" in result.stdout
    assert "#" not in result.stdout.splitlines()[0]
