"""benchmarks/bench_sweep_model.py: the λ sweep's GPU-hours from the JSON that bench_subset_steps.py, bench_sweep.py
and bench_gpu.py write, RUNS_PER_GPU chosen per size from the measured packing gain, and every figure that was not
measured on the device marked as modelled, with what it was modelled from."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from helpers.common import ROOT, load_benchmark

SCRIPT = ROOT / "benchmarks" / "bench_sweep_model.py"
H100 = "NVIDIA H100 80GB HBM3"


def subset(kind: str, train: float | None, predict: float, decode: float, **extra) -> dict:
    shapes = {"base": {"train_seconds": train, "predict_seconds": predict, "decode_seconds": decode}} if train else {}
    return {"kind": kind, "shapes": shapes, "computed_tokens": 3.2e7, "computed_token_length": 3.2e7 * 300,
            "full_steps": 5000, "dev_windows": 500, "epoch_windows": 80000, **extra}


def steps_file(tmp_path, subsets: dict, device: str = H100) -> str:
    path = tmp_path / "steps.json"
    path.write_text(json.dumps({"device": device, "command": "benchmarks/bench_subset_steps.py --json steps.json",
                                "subsets": subsets}))
    return str(path)


def sweep_file(tmp_path, name: str, gains: dict, overheads: dict, extra_args: str = "", device: str = H100) -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"device": device, "extra_args": extra_args, "packing_subset": "cmrc2018",
                                "subsets": {s: {"overhead": o} for s, o in overheads.items()},
                                "packing": {str(k): {"gain_train": g} for k, g in gains.items()}}))
    return str(path)


def plan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))


def row(out: str, name: str, size: str) -> list[str]:
    [line] = [line for line in out.splitlines() if line.startswith(f"| {name} | {size} |")]
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_measured_inputs_give_a_measured_base_sweep_and_the_best_packing(tmp_path):
    steps = steps_file(tmp_path, {"squad": subset("span", 300.0, 4.0, 2.0), "cmrc2018": subset("span", 60.0, 3.0, 1.0),
                                  "race": subset("choice", 900.0, 8.0, 1.0), "c3": subset("choice", 100.0, 5.0, 1.0)})
    sweep = sweep_file(tmp_path, "sweep.json", {1: 1.0, 2: 1.30, 3: 1.34}, {"cmrc2018": 30.0})
    starts = sweep_file(tmp_path, "starts.json", {1: 1.0}, {"squad": 26.0, "race": 35.0, "c3": 31.0})
    done = plan("--steps", steps, "--packing", f"base={sweep}", "--packing", f"base={starts}")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    # cmrc2018: start-up 30 - (3 + 1) = 26 s; a run 26 + 60 + 4 = 90 s; 35 runs; three to a GPU at 1.34x
    assert row(out, "cmrc2018", "base") == ["cmrc2018", "base", "60.0", "4.0", "26.0", "90.0", "3", "1.34",
                                            f"{35 * 90 / 3600:.2f}", f"{35 * 90 / 3600 / 1.34:.2f}", "measured"]
    race = row(out, "race", "base")  # its own start-up (35 - 9), cmrc2018's packing gain: modelled
    assert race[2:6] == ["900.0", "9.0", "26.0", "935.0"] and race[8] == f"{35 * 935 / 3600:.2f}"
    assert race[7].startswith("1.34 (") and race[10].startswith("modelled (")
    one_gpu = 35 * (90 + (20 + 300 + 6) + 935 + (25 + 100 + 6)) / 3600  # squad 26 - 6, c3 31 - 6
    assert f"base sweep: {one_gpu:.2f} GPU-hours one run a GPU (measured)" in out
    assert re.search(r"base sweep: .* with RUNS_PER_GPU=3 \(modelled\)", out)
    assert ("RUNS_PER_GPU for base: 3 (gain 1.34; bench_sweep.py on NVIDIA H100 80GB HBM3, cmrc2018 runs as released, gains "
            "k=1: 1.00, k=2: 1.30, k=3: 1.34)") in out
    assert "gain: bench_sweep.py on NVIDIA H100 80GB HBM3, cmrc2018 runs as released, gains k=1: 1.00, k=2: 1.30, k=3: 1.34; " \
           "cmrc2018's, for the other subsets" in out
    assert "RUNS_PER_GPU for large: 1 (packing not measured for large: one run per GPU)" in out


def test_large_is_modelled_from_base_by_bench_gpus_ratio_or_the_flops(tmp_path):
    steps = steps_file(tmp_path, {"cmrc2018": subset("span", 60.0, 3.0, 1.0)})
    gpu = tmp_path / "gpu.json"
    gpu.write_text(json.dumps({"device": H100, "seq": 512, "batch": 32, "cases": [
        {"shape": "base", "task": "span", "precision": "bf16", "compile": False, "model": "ours", "step_ms": 40.0},
        {"shape": "base", "task": "span", "precision": "bf16", "compile": False, "model": "library", "step_ms": 39.0},
        {"shape": "large", "task": "span", "precision": "bf16", "compile": False, "model": "ours", "step_ms": 130.0}]}))
    done = plan("--steps", steps, "--gpu", str(gpu))
    assert done.returncode == 0, done.stderr
    large = row(done.stdout, "cmrc2018", "large")
    assert large[2].startswith("195.0 (") and large[3].startswith("10.8 (")  # 60 × 3.25; 3 × 3.25 + 1
    assert "large: base's measured training and prediction × 3.25 (bench_gpu.py's large / base step at 512 tokens" \
           in done.stdout
    assert "modelled: an assumed start-up of 30 s" in done.stdout
    assert "large sweep (1 of 4 subsets)" in done.stdout and "not projected: squad (not in --steps" in done.stdout
    by_flops = plan("--steps", steps)
    assert "large: base's measured training and prediction × (the FLOP ratio of the two shapes" in by_flops.stdout


def test_packing_that_gains_nothing_keeps_one_run_per_gpu(tmp_path):
    """Three compiled runs side by side on an H100 trained at 0.95x the throughput of one (issue 32): no packing."""
    steps = steps_file(tmp_path, {"cmrc2018": subset("span", 60.0, 3.0, 1.0)})
    sweep = sweep_file(tmp_path, "sweep.json", {1: 1.0, 3: 0.95}, {"cmrc2018": 30.0}, "--torch_compile True")
    done = plan("--steps", steps, "--packing", f"base={sweep}")
    assert row(done.stdout, "cmrc2018", "base")[6:8] == ["1", "1.00"]
    assert "RUNS_PER_GPU for base: 1 (bench_sweep.py on NVIDIA H100 80GB HBM3, cmrc2018 runs with --torch_compile True" \
           in done.stdout


def test_untimed_subsets_are_left_out_or_modelled_at_a_stated_throughput(tmp_path):
    steps = steps_file(tmp_path, {"race": subset("choice", None, 0, 0)}, device="CPU (2 cores)")
    left = plan("--steps", steps)
    assert "not projected: race base (neither it nor the other size was timed; --tflops models it)" in left.stdout
    modelled = plan("--steps", steps, "--tflops", "200")
    base = row(modelled.stdout, "race", "base")
    seconds = 3 * 12 * (24 * 768 ** 2 * 3.2e7 + 4 * 768 * 3.2e7 * 300) / 200e12
    assert base[2] == f"{seconds:.1f} (a)" and base[10] == "modelled (a) (b)"
    assert "(a) modelled: the epoch's computed tokens (counted on CPU (2 cores)) at an assumed 200 TFLOP/s" in modelled.stdout


def test_bench_gpu_writes_the_step_times_the_model_reads(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--tiny", "--tasks", "span",
                           "--precisions", "bf16", "--compile", "off", "--steps", "1", "--repeats", "1", "--warmup", "1",
                           "--max-warmup", "1", "--skip-epoch", "--json", str(tmp_path / "gpu.json")],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1"))
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads((tmp_path / "gpu.json").read_text())
    assert figures["device"].startswith("CPU") and (figures["seq"], figures["batch"]) == (64, 4)
    assert [(c["shape"], c["task"], c["precision"], c["compile"], c["model"]) for c in figures["cases"]] == [
        ("tiny", "span", "bf16", False, "ours"), ("tiny", "span", "bf16", False, "library")]
    assert all(c["step_ms"] > 0 and c["mfu"] is None for c in figures["cases"])


@pytest.mark.parametrize("argv, message", [
    (["--steps", "/nowhere.json"], "/nowhere.json: cannot read --steps's JSON"),
    (["--steps", str(SCRIPT)], "cannot read --steps's JSON"),
    (["--steps", "STEPS", "--packing", "huge=x.json"], "--packing takes SIZE=FILE with SIZE base or large"),
])
def test_bad_inputs_are_one_line(tmp_path, argv, message):
    argv = [a.replace("STEPS", steps_file(tmp_path, {})) for a in argv]
    done = plan(*argv)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and message in done.stderr


def measured_inputs(tmp_path) -> dict[str, dict]:
    """One well-formed file of each input, as Python objects the cases below damage one key of."""
    return {"steps": {"device": H100, "subsets": {"cmrc2018": subset("span", 60.0, 3.0, 1.0)}},
            "packing": {"device": H100, "packing_subset": "cmrc2018", "subsets": {"cmrc2018": {"overhead": 30.0}},
                        "packing": {"1": {"gain_train": 1.0}, "2": {"gain_train": 1.3}}},
            "gpu": {"device": H100, "seq": 512, "batch": 32, "cases": [
                {"shape": "base", "task": "span", "precision": "bf16", "compile": False, "model": "ours", "step_ms": 40.0}]}}


DELETE = object()


def damage(files: dict, which: str, path: str, value) -> None:
    """Set (or, with value DELETE, remove) the key at `path` (KEY.KEY...) of input `which`."""
    *outer, last = path.split(".")
    node = files[which]
    for key in outer:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is DELETE:
        del node[last]
    else:
        node[last] = value


@pytest.mark.parametrize("which, path, value, says", [
    ("steps", "subsets.cmrc2018.kind", DELETE, "subsets.cmrc2018 has no 'kind'"),
    ("steps", "subsets", DELETE, "the file has no 'subsets'"),
    ("steps", "subsets.cmrc2018.epoch_windows", 0, "subsets.cmrc2018.epoch_windows is 0, not a whole number above 0"),
    ("steps", "subsets.cmrc2018.computed_tokens", 0, "subsets.cmrc2018.computed_tokens is 0, not a number above 0"),
    ("steps", "subsets.cmrc2018.shapes.base.train_seconds", float("nan"),
     "subsets.cmrc2018.shapes.base.train_seconds is NaN, not a number above 0"),
    ("steps", "subsets.cmrc2018.shapes.base.predict_seconds", -3.0,
     "subsets.cmrc2018.shapes.base.predict_seconds is -3.0, not a number of at least 0"),
    ("steps", "subsets.cmrc2018.shapes.base.decode_seconds", float("inf"), "decode_seconds is Infinity, not a number"),
    ("steps", "subsets.cmrc2018.shapes.base.train_seconds", True, "train_seconds is true, not a number"),
    ("steps", "subsets.cmrc2018.shapes.base.train_seconds", "60", 'train_seconds is "60", not a number'),
    ("steps", "subsets.wikiqa", subset("span", 60.0, 3.0, 1.0),
     "subsets has 'wikiqa', which this model does not know (it knows squad, cmrc2018, race, c3)"),
    ("steps", "subsets.cmrc2018.shapes.xl", {"train_seconds": 1.0, "predict_seconds": 1.0, "decode_seconds": 1.0},
     "subsets.cmrc2018.shapes has 'xl', which this model does not know"),
    ("steps", "settings", None, "settings is null, not an object"),
    ("packing", "packing.two", {"gain_train": 1.3}, "packing has the key 'two', not a number of runs side by side"),
    ("packing", "packing.2.gain_train", float("nan"), "packing.2.gain_train is NaN, not a number above 0"),
    ("packing", "packing.1.gain_train", DELETE, "packing.1 has no 'gain_train'"),
    ("packing", "subsets.cmrc2018.overhead", -5, "subsets.cmrc2018.overhead is -5, not a number of at least 0"),
    ("packing", "subsets.foo", {"overhead": 5.0}, "subsets has 'foo', which this model does not know"),
    ("packing", "packing_subset", "foo", 'packing_subset is "foo", not one of squad, cmrc2018, race, c3'),
    ("gpu", "cases.0.step_ms", 0, "cases[0].step_ms is 0, not a number above 0"),
    ("gpu", "cases.0.model", DELETE, "cases[0] has no 'model'"),
])
def test_every_input_key_the_model_reads_is_checked_in_one_line_and_no_figure_is_printed(
        tmp_path, capsys, which, path, value, says):
    """Today's KeyError, ValueError and ZeroDivisionError, and the NaN or negative GPU-hours printed with exit 0, are
    each one line naming the file and the key, exit 2, and nothing on stdout."""
    files = measured_inputs(tmp_path)
    damage(files, which, path, value)
    for name, content in files.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(content))
    model = load_benchmark("bench_sweep_model")
    flag = {"steps": "--steps", "packing": "--packing", "gpu": "--gpu"}[which]
    with pytest.raises(SystemExit) as refused:
        model.main(["--steps", str(tmp_path / "steps.json"), "--packing", f"base={tmp_path / 'packing.json'}",
                    "--gpu", str(tmp_path / "gpu.json")])
    out, err = capsys.readouterr()
    assert (refused.value.code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith(f"error: bench_sweep_model.py: {tmp_path / which}.json ({flag}): ")
    assert says in err


def test_the_unharmed_inputs_give_figures(tmp_path, capsys):
    for name, content in measured_inputs(tmp_path).items():
        (tmp_path / f"{name}.json").write_text(json.dumps(content))
    assert load_benchmark("bench_sweep_model").main(
        ["--steps", str(tmp_path / "steps.json"), "--packing", f"base={tmp_path / 'packing.json'}",
         "--gpu", str(tmp_path / "gpu.json")]) == 0
    assert row(capsys.readouterr().out, "cmrc2018", "base")[10] == "measured"


@pytest.mark.parametrize("text, says", [
    ('{"device": "x", "device": "y", "subsets": {}}', "the key 'device' is given twice in one object"),
    ("[" * 100_000 + "]" * 100_000, "cannot read --steps's JSON (maximum recursion depth exceeded"),
    ("", "cannot read --steps's JSON (Expecting value"),
    ('{"device": "x", "subsets": {"c3": {"kind": "choice", "computed_tokens": 1' + "0" * 400 +
     ', "computed_token_length": 1, "dev_windows": 1, "epoch_windows": 1}}}',
     "subsets.c3.computed_tokens is 1000000000000000000000000000000000000..., not a number above 0"),
])
def test_damaged_json_is_one_line(tmp_path, capsys, text, says):
    (tmp_path / "steps.json").write_text(text)
    with pytest.raises(SystemExit) as refused:
        load_benchmark("bench_sweep_model").main(["--steps", str(tmp_path / "steps.json")])
    out, err = capsys.readouterr()
    assert (refused.value.code, out, err.count("\n")) == (2, "", 1) and says in err


@pytest.mark.parametrize("flag, value", [("--tflops", "-200"), ("--tflops", "0"), ("--tflops", "nan"),
                                         ("--tflops", "inf"), ("--startup", "-1"), ("--startup", "nan")])
def test_a_throughput_or_start_up_that_is_not_a_positive_finite_number_is_refused(tmp_path, capsys, flag, value):
    steps = steps_file(tmp_path, {"race": subset("choice", None, 0, 0)})
    with pytest.raises(SystemExit) as refused:
        load_benchmark("bench_sweep_model").main(["--steps", steps, f"{flag}={value}"])
    out, err = capsys.readouterr()
    assert (refused.value.code, out) == (2, "")
    assert err.startswith(f"error: bench_sweep_model.py: {flag} is ") and "not a number of at least" in err


def test_a_fifo_or_a_folder_is_refused_without_reading_it(tmp_path, capsys):
    os.mkfifo(tmp_path / "fifo.json")
    for path, says in ((tmp_path / "fifo.json", "not a regular file"), (tmp_path, "a folder")):
        with pytest.raises(SystemExit):
            load_benchmark("bench_sweep_model").main(["--steps", str(path)])
        assert f"cannot read --steps's JSON ({says})" in capsys.readouterr().err


def test_a_full_device_or_a_closed_stdout_is_one_line(tmp_path):
    steps = steps_file(tmp_path, {"cmrc2018": subset("span", 60.0, 3.0, 1.0)})
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, str(SCRIPT), "--steps", steps], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert (done.returncode, done.stderr) == (2, "error: cannot write to standard output: No space left on device\n")
    done = subprocess.run(f"{sys.executable} {SCRIPT} --steps {steps} >&-", shell=True, stderr=subprocess.PIPE,
                          text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert (done.returncode, done.stderr) == (2, "error: cannot write to standard output: it is closed\n")


def run_record(tmp_path, name: str, phases: dict, device: str = H100, status: str = "finished") -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"status": status, "timing": {"device": device, "phases": phases}}))
    return str(path)


def test_a_release_run_s_record_gives_the_measured_start_up(tmp_path):
    steps = steps_file(tmp_path, {"cmrc2018": subset("span", 60.0, 3.0, 1.0), "c3": subset("choice", 100.0, 5.0, 1.0)})
    record = run_record(tmp_path, "run_info.json", {"startup": 4.0, "model_load": 1.5, "training": 24.0,
                                                     "prediction": 2.0, "scoring": 0.5, "wall": 34.0})
    done = plan("--steps", steps, "--run-record", f"cmrc2018={record}")
    assert done.returncode == 0, done.stderr
    # 34 s of wall less 24 s of training and 2 s of prediction: 8 s, measured for cmrc2018 base on the same device
    assert row(done.stdout, "cmrc2018", "base")[4] == "8.0" and row(done.stdout, "cmrc2018", "base")[-1] == "measured"
    assert row(done.stdout, "c3", "base")[4].startswith("8.0 (")  # another subset: modelled from cmrc2018's
    assert f"measured: cmrc2018's release run ({record}) outside training and prediction, on {H100}" in done.stdout


@pytest.mark.parametrize("value, says", [
    ("wiki=x.json", "--run-record takes SUBSET=FILE"), ("cmrc2018=/nowhere.json", "cannot read --run-record's JSON"),
])
def test_a_bad_run_record_is_one_line(tmp_path, value, says):
    steps = steps_file(tmp_path, {"cmrc2018": subset("span", 60.0, 3.0, 1.0)})
    done = plan("--steps", steps, "--run-record", value)
    assert done.returncode == 2 and says in done.stderr and done.stderr.count("\n") == 1


def test_a_record_without_phases_or_unfinished_is_one_line(tmp_path):
    steps = steps_file(tmp_path, {"cmrc2018": subset("span", 60.0, 3.0, 1.0)})
    for record in (run_record(tmp_path, "old.json", {}), run_record(tmp_path, "running.json", {"wall": 3.0}, status="running"),
                   run_record(tmp_path, "odd.json", {"wall": "x"})):
        done = plan("--steps", steps, "--run-record", f"cmrc2018={record}")
        assert done.returncode == 2 and "a finished run's record with its time per phase" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
