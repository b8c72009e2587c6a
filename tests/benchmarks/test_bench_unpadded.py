"""benchmarks/bench_unpadded.py and profile_step.py run at toy sizes on a CPU, so the GPU check cannot rot between
GPU runs: agreement lines within FP32 precision, a timed row for every case on the same length-grouped batches,
MFU counted on real tokens; profile_step buckets a GPU step's kernels by name and the optimizer they run in."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest
from helpers.common import ROOT, load_benchmark
from helpers.span_data import make_span_file

BENCH = ROOT / "benchmarks" / "bench_unpadded.py"
PROFILE = ROOT / "benchmarks" / "profile_step.py"


def run(script, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, str(script), *args], env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_the_tiny_benchmark_checks_agreement_and_times_every_case(tmp_path):
    train = make_span_file(tmp_path / "train.json", 60, seed=1, version="cmrc2018-train")
    done = run(BENCH, "--tiny", "--train", str(train), "--compile-backend", "eager", "--questions", "60")
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    diffs = [float(x) for x in re.findall(r"logits max abs diff ([\d.e+-]+)", out)]
    assert len(diffs) == 2 and max(diffs) <= 1e-5  # unpadded and fused against padded, FP32 (a CPU: once)
    assert out.count("best start/end agree in 100.0% of rows") == 2
    grads = [float(x) for x in re.findall(r"largest gradient difference ([\d.e+-]+)", out)]
    assert len(grads) == 2 and max(grads) <= 1e-5
    rows = {line.split("|")[1].strip(): line for line in out.splitlines() if line.startswith("| ") and "---" not in line}
    cases = ("library", "padded", "unpadded", "unpadded+fused", "graphs")
    assert set(rows) >= set(cases) and all(float(rows[c].split("|")[2]) > 0 for c in cases)
    assert "unpadded / padded throughput" in out and "padded / library throughput" in out
    assert "graphs / unpadded throughput" in out and re.search(r"graphs: token buckets [\d, ]+ planned from", out)
    # uncaptured on a CPU, the graphs' steps are the eager steps at the same layout, exactly
    assert re.search(r"run uncaptured \(a CPU\) .* largest loss difference 0; largest weight difference 0 ", out)


def test_flops_are_counted_on_real_tokens():
    bench = load_benchmark("bench_unpadded")
    import torch

    mask = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0]])
    config = SimpleNamespace(hidden_size=8, intermediate_size=32, num_hidden_layers=2)
    parameters = 2 * (4 * 8 * 8 + 2 * 8 * 32)
    assert bench.flops_of({"attention_mask": mask}, config) == 6 * parameters * 4 + 12 * 2 * 8 * (9 + 1)


@pytest.mark.parametrize("name, optimizer, bucket", [
    ("flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 64, 4>>", False, "attention"),
    ("flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", False, "attention"),
    ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80", False, "attention"),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", False, "gemm"),
    ("nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTN", False, "gemm"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>", False, "elementwise"),
    ("triton_per_fused_add_native_dropout_native_layer_norm_0", False, "elementwise"),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>", False, "elementwise"),
    ("void at::native::multi_tensor_apply_kernel<FusedAdamMathFunctor>", False, "optimizer"),
    ("void at::native::vectorized_elementwise_kernel<4, MulFunctor>", True, "optimizer"),
    ("Memcpy HtoD (Pinned -> Device)", False, "copies"),
])
def test_kernels_fall_in_buckets_by_name_and_by_the_optimizer_they_run_in(name, optimizer, bucket):
    profile = load_benchmark("profile_step")
    assert profile.kernel_bucket(name, optimizer) == bucket


def test_shares_are_kernel_time_over_wall_time_and_the_rest_is_the_host():
    profile = load_benchmark("profile_step")
    step = SimpleNamespace(name="Optimizer.step#AdamW.step", cpu_parent=None, kernels=[])
    launch = SimpleNamespace(name="cudaLaunchKernel", cpu_parent=step,
                             kernels=[SimpleNamespace(name="multi_tensor_apply_kernel", duration=100.0)])
    mm = SimpleNamespace(name="aten::mm", cpu_parent=None,
                         kernels=[SimpleNamespace(name="sm90_xmma_gemm_bf16", duration=500.0),
                                  SimpleNamespace(name="flash_fwd_kernel", duration=200.0)])
    shares = profile.device_shares([step, launch, mm], wall=0.001)  # 1 ms of wall time
    assert shares == pytest.approx({"optimizer": 0.1, "gemm": 0.5, "attention": 0.2, "host": 0.2})


@pytest.mark.slow
def test_profile_step_prints_each_variant_on_a_cpu(tmp_path):
    train = make_span_file(tmp_path / "train.json", 30, seed=1, version="cmrc2018-train")
    done = run(PROFILE, "--train", str(train), "--questions", "30", "--seq", "64", "--batch", "4", "--steps", "1",
               "--warmup", "1", "--variants", "padded,unpadded,fused,graphs", "--compile-backend", "eager", "--top", "3")
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines()
             if re.match(r"^(padded|unpadded|fused|graphs): \d+ operators", line)]
    assert [line.split(":")[0] for line in lines] == ["padded", "unpadded", "fused", "graphs"]
    assert all("0 value reads per step outside the optimizer" in line for line in lines)
    assert "on the GPU" not in done.stdout  # the kernel shares need a GPU
