"""Training throughput on one and two CPU processes, and what each checkpoint save costs.

    python benchmarks/bench_scaling.py                 # about 2-3 minutes on 2 cores
    python benchmarks/bench_scaling.py --no-base       # skip the BERT-base checkpoint part (about 1 minute)
    python benchmarks/bench_scaling.py --steps 100 --threads 2

Runs `expmrc.training.loop.train` on the span model (`SpanModel`: BERT + answer and evidence heads) with
random weights and synthetic full-length features (no data or download needed):
1. scaling: a BERT-Tiny-shaped encoder (vocabulary 30522, hidden 128, 2 layers, 2 heads) at sequence
   length 128 and a total batch of 16, in one process (plain `python`, as on one machine) and in two
   (`torchrun --standalone --nproc_per_node 2`: gloo, data-parallel, 8 examples per process per step).
   Every process gets `--threads` torch/OpenMP threads (default 1), so one process uses one core and
   two use two, instead of one process spreading over both cores. The workers run with
   ACCELERATE_USE_CPU=1: without it accelerate 1.15 does not join torchrun's processes on a machine
   without GPUs, and each would train alone. The 1-process run also times the parts of a step
   (forward + backward at the full and the half batch, clipping + AdamW) and the 2-process run one
   all-reduce of the gradients' size, which bound the ratio two processes can reach;
2. checkpoints: every `--save-every` steps the loop's own `save_checkpoint` writes model, optimizer,
   scheduler and RNG states (keeping the last 3); each save is timed, as is each training step net of
   saves, and a BERT-base-shaped encoder (hidden 768, 12 layers, about 110M parameters, a 1.3 GB
   checkpoint with the AdamW moments) is run for `--base-steps` steps saving after every step.

Examples/s counts steps after `--warmup` steps, excluding the time spent saving. On a shared machine
other programs take cores from the two processes more than from one, so the CPU time each process
got per wall-clock second and the CPU time per example (which contention hardly changes) are printed
next to the wall-clock ratio. Every figure and ratio printed comes from this one run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TINY = {"hidden": 128, "layers": 2, "heads": 2}
BASE = {"hidden": 768, "layers": 12, "heads": 12}
VOCAB_SIZE = 30522  # English uncased BERT's vocabulary
QUESTION_TOKENS = 20
RELEASE_SAVE_STEPS = 1000  # the original scripts' --save_checkpoints_steps


# ---- worker: one training run in one of the launched processes -----------------------------------

def synthetic_features(count: int, seq_length: int, seed: int) -> list:
    """Full-length `[CLS] question [SEP] passage [SEP]` windows with random tokens and in-window labels."""
    import numpy as np

    from expmrc.features.span import SpanFeature

    rng = np.random.default_rng(seed)
    context_start = QUESTION_TOKENS + 2
    passage = seq_length - context_start - 1
    features = []
    for index in range(count):
        ids = rng.integers(1000, VOCAB_SIZE, seq_length).tolist()
        ids[0], ids[context_start - 1], ids[-1] = 101, 102, 102  # [CLS], [SEP], [SEP]
        start = int(rng.integers(context_start, context_start + passage - 10))
        end = start + int(rng.integers(0, 5))
        features.append(SpanFeature(
            question_index=index, input_ids=ids, context_start=context_start,
            offsets=[(i, i + 1) for i in range(passage)], max_context=[True] * passage,
            start_position=start, end_position=end, evidence_start=start - 3, evidence_end=end + 4))
    return features


def step_breakdown(model: Any, dataset: Any, batch: int, repeats: int = 3) -> dict[str, float]:
    """Seconds of forward + backward at the full and the half batch, and of clipping + one AdamW update.

    Data parallelism splits only the forward and backward passes: every process clips and updates all
    the parameters itself, so this gives the best ratio two processes could reach on idle cores.
    """
    import torch

    from expmrc.training import loop as training
    from expmrc.features.span import collate_span

    def forward_backward(size: int) -> float:
        inputs = collate_span([dataset[i] for i in range(size)])
        began = time.perf_counter()
        model(**inputs)["loss"].backward()
        return time.perf_counter() - began

    model.train()
    optimizer = torch.optim.AdamW(training.parameter_groups(model, 0.01), lr=1e-5, eps=training.ADAM_EPSILON)
    figures = {"forward_backward": [], "forward_backward_half": [], "optimizer": []}
    for _ in range(repeats + 1):  # the first round fills the AdamW moments and is not counted
        figures["forward_backward"].append(forward_backward(batch))
        figures["forward_backward_half"].append(forward_backward(batch // 2))
        began = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        figures["optimizer"].append(time.perf_counter() - began)
    return {key: sum(values[1:]) / repeats for key, values in figures.items()}


def run_worker(args: argparse.Namespace) -> None:
    """Train for --steps steps, timing every step and every checkpoint save; rank 0 writes the figures."""
    import torch

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    from transformers import BertConfig, BertModel

    from expmrc.training import loop as training
    from expmrc.features.span import SpanDataset, collate_span
    from expmrc.models.span import SpanModel

    config = training.TrainConfig(output_dir=args.output_dir, max_steps=args.steps, train_batch_size=args.batch,
                                  save_checkpoints_steps=args.save_every, logging_steps=args.steps, seed=1)
    accelerator = training.make_accelerator(config)
    launched = int(os.environ.get("WORLD_SIZE", "1"))
    if accelerator.num_processes != launched:
        sys.exit(f"error: torchrun started {launched} processes but accelerate sees {accelerator.num_processes} "
                 f"({accelerator.distributed_type}); on a machine without GPUs it needs ACCELERATE_USE_CPU=1")
    bert_config = BertConfig(vocab_size=VOCAB_SIZE, hidden_size=args.hidden, num_hidden_layers=args.layers,
                             num_attention_heads=args.heads, intermediate_size=4 * args.hidden,
                             max_position_embeddings=512)
    model = SpanModel(BertModel(bert_config, add_pooling_layer=False), loss_lambda=0.01)
    dataset = SpanDataset(synthetic_features(args.features, args.seq_length, seed=0), with_labels=True)

    step_starts: list[float] = []  # collate runs once per step (no accumulation): the step's start
    cpu_starts: list[float] = []  # this process's CPU time then, to see how much of a core it got

    def timed_collate(items: list) -> dict:
        step_starts.append(time.perf_counter())
        cpu_starts.append(time.process_time())
        return collate_span(items)

    saves: dict[int, float] = {}  # step -> seconds in save_checkpoint
    save_checkpoint = training.save_checkpoint

    def timed_save(output_dir: str, step: int, *rest, **kwargs) -> Path:
        began = time.perf_counter()
        path = save_checkpoint(output_dir, step, *rest, **kwargs)
        saves[step] = time.perf_counter() - began
        return path

    training.save_checkpoint = timed_save  # train() looks the function up in its module at each save
    result = training.train(model, dataset, timed_collate, config, accelerator)
    ended, cpu_ended = time.perf_counter(), time.process_time()

    bounds, cpu_bounds = step_starts + [ended], cpu_starts + [cpu_ended]
    net = [bounds[i + 1] - bounds[i] - saves.get(i + 1, 0.0) for i in range(len(step_starts))]
    plain = [i for i in range(args.warmup, len(step_starts)) if i + 1 not in saves]  # steps without a save
    cpu = [sum(cpu_bounds[i + 1] - cpu_bounds[i] for i in plain)]
    if accelerator.num_processes > 1:
        from accelerate.utils import gather_object

        cpu = gather_object(cpu)  # every process's CPU seconds over those steps
    newest = training.checkpoint_path(args.output_dir, max(saves))
    parameters = sum(p.numel() for p in model.parameters())
    figures = {
        "processes": accelerator.num_processes, "distributed_type": accelerator.distributed_type.value,
        "parameters": parameters, "step_seconds": net, "save_seconds": [saves[s] for s in sorted(saves)],
        "checkpoint_bytes": sum(f.stat().st_size for f in newest.iterdir()),
        "train_examples_per_second": result.examples_per_second,
        "plain_steps": len(plain), "plain_wall_seconds": sum(bounds[i + 1] - bounds[i] for i in plain),
        "plain_cpu_seconds": cpu,
    }
    if args.breakdown:
        figures["breakdown"] = step_breakdown(accelerator.unwrap_model(model), dataset, args.batch)
    if accelerator.num_processes > 1:
        figures["all_reduce_seconds"] = all_reduce_seconds(parameters)
    if accelerator.is_main_process:
        Path(args.result).write_text(json.dumps(figures) + "\n", encoding="utf-8")


def all_reduce_seconds(numel: int, repeats: int = 5) -> float:
    """Mean seconds of one all-reduce of `numel` float32 values, the size of DDP's gradient traffic per step."""
    import torch

    buffer = torch.ones(numel)
    torch.distributed.all_reduce(buffer)  # warm-up
    began = time.perf_counter()
    for _ in range(repeats):
        torch.distributed.all_reduce(buffer)
    return (time.perf_counter() - began) / repeats


# ---- driver: launch the workers and print the figures --------------------------------------------

def launch(args: argparse.Namespace, processes: int, shape: dict[str, int], steps: int, save_every: int,
           warmup: int, scratch: Path, name: str, breakdown: bool = False) -> dict:
    """Run one worker (under torchrun for several processes) and return rank 0's figures."""
    result = scratch / f"{name}.json"
    # One process runs as a user runs on one machine (plain python); two through torchrun.
    launcher = [] if processes == 1 else ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(processes)]
    command = [
        sys.executable, *launcher,
        str(Path(__file__).resolve()), "--worker", "--result", str(result), "--output-dir", str(scratch / name),
        "--hidden", str(shape["hidden"]), "--layers", str(shape["layers"]), "--heads", str(shape["heads"]),
        "--steps", str(steps), "--save-every", str(save_every), "--batch", str(args.batch),
        "--seq-length", str(args.seq_length), "--features", str(args.features), "--threads", str(args.threads),
        "--warmup", str(warmup),
        *(["--breakdown"] if breakdown else []),
    ]
    threads = str(args.threads)
    # Without ACCELERATE_USE_CPU, accelerate (1.15) ignores torchrun's WORLD_SIZE on a machine without
    # GPUs: every process would train alone on the whole batch instead of joining a gloo group.
    env = {**os.environ, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "ACCELERATE_USE_CPU": "1"}
    print(f"running {name}: {processes} process(es) x {args.threads} thread(s) ...", file=sys.stderr, flush=True)
    done = subprocess.run(command, env=env, cwd=ROOT)
    if done.returncode != 0 or not result.is_file():
        sys.exit(f"error: the {name} run failed (exit status {done.returncode}); its output is above")
    return json.loads(result.read_text(encoding="utf-8"))


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def steady(figures: dict, warmup: int) -> float:
    """Mean seconds per step after the warm-up steps, net of checkpoint saves."""
    return mean(figures["step_seconds"][warmup:])


def report_checkpoints(label: str, figures: dict, step_seconds: float) -> None:
    """Print the mean save time, its write rate and its share of training time."""
    save = mean(figures["save_seconds"])
    size = figures["checkpoint_bytes"]
    print(f"  {label}: {figures['parameters'] / 1e6:.1f}M parameters, checkpoint {size / 1e6:.1f} MB, "
          f"{len(figures['save_seconds'])} saves")
    print(f"    per save: {save:.3f} s (min {min(figures['save_seconds']):.3f}, max {max(figures['save_seconds']):.3f}),"
          f" {size / 1e6 / save:.0f} MB/s")
    print(f"    training step (net of saves): {step_seconds:.3f} s -> one save = {save / step_seconds:.2f} steps "
          f"({100 * save / step_seconds:.1f}% of a step)")
    print(f"    overhead at --save_checkpoints_steps {RELEASE_SAVE_STEPS}: "
          f"{100 * save / (save + RELEASE_SAVE_STEPS * step_seconds):.3f}% of training time")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=65, help="training steps per scaling run (default 65)")
    parser.add_argument("--warmup", type=int, default=5, help="first steps left out of the rates (default 5)")
    parser.add_argument("--save-every", type=int, default=20, help="checkpoint every N steps in the scaling runs (default 20)")
    parser.add_argument("--batch", type=int, default=16, help="total batch size over processes (default 16)")
    parser.add_argument("--seq-length", type=int, default=128, help="tokens per example (default 128)")
    parser.add_argument("--threads", type=int, default=1, help="torch/OpenMP threads per process (default 1)")
    parser.add_argument("--base-steps", type=int, default=2,
                        help="steps of the BERT-base-shaped run, saving after each; the first is warm-up (default 2)")
    parser.add_argument("--no-base", action="store_true", help="skip the BERT-base-shaped checkpoint run")
    parser.add_argument("--features", type=int, default=512, help="synthetic training features (default 512)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--breakdown", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    parser.add_argument("--output-dir", help=argparse.SUPPRESS)
    parser.add_argument("--hidden", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--layers", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--heads", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        run_worker(args)
        return 0
    if args.steps <= args.warmup or args.base_steps < 2 or args.batch % 2:
        parser.error("need --steps > --warmup, --base-steps >= 2 and an even --batch")

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-scaling-") as tmp:
        scratch = Path(tmp)
        runs = {n: launch(args, n, TINY, args.steps, args.save_every, args.warmup, scratch, f"tiny-{n}proc", breakdown=n == 1)
                for n in (1, 2)}
        base = None if args.no_base else launch(args, 1, BASE, args.base_steps, 1, 1, scratch, "base-1proc")
    load_after = os.getloadavg()

    print(f"\nspan model training, synthetic features: total batch {args.batch}, sequence length {args.seq_length}, "
          f"{args.threads} thread(s) per process, {os.cpu_count()} CPU cores")
    print(f"load average (1 min) before / after: {load_before[0]:.2f} / {load_after[0]:.2f}")
    print(f"\n1. scaling, BERT-Tiny shape (hidden {TINY['hidden']}, {TINY['layers']} layers), "
          f"{args.steps - args.warmup} steps after {args.warmup} warm-up, saves excluded:")
    rates = {}
    for n, figures in runs.items():
        seconds = steady(figures, args.warmup)
        rates[n] = args.batch / seconds
        how = "plain python" if n == 1 else f"torchrun, {figures['distributed_type']}, gloo"
        print(f"  {n} process{'es' if n > 1 else ''} ({how}): {rates[n]:6.1f} examples/s "
              f"({1000 * seconds:.1f} ms/step; train() itself reports {figures['train_examples_per_second']:.1f} "
              f"examples/s with warm-up and saves)")
    ratio = rates[2] / rates[1]
    print(f"  2 processes / 1 process: {ratio:.2f}x (scaling efficiency {100 * ratio / 2:.0f}%)")
    cpu_ms = {n: 1000 * sum(f["plain_cpu_seconds"]) / (f["plain_steps"] * args.batch) for n, f in runs.items()}
    shares = {n: ", ".join(f"{c / f['plain_wall_seconds']:.2f}" for c in f["plain_cpu_seconds"]) for n, f in runs.items()}
    print(f"  CPU time per example, all processes: {cpu_ms[1]:.2f} ms with 1 process, {cpu_ms[2]:.2f} ms with 2 "
          f"({100 * (cpu_ms[2] / cpu_ms[1] - 1):+.0f}%)")
    print(f"  CPU seconds each process got per wall-clock second: {shares[1]} (1 process); {shares[2]} (2 processes);"
          f" below {args.threads} means other programs were using the cores")
    parts, all_reduce = runs[1]["breakdown"], runs[2]["all_reduce_seconds"]
    whole = parts["forward_backward"] + parts["optimizer"]
    print(f"  parts of a 1-process step: forward+backward {1000 * parts['forward_backward']:.1f} ms "
          f"(half batch: {1000 * parts['forward_backward_half']:.1f} ms), gradient clipping + AdamW update "
          f"{1000 * parts['optimizer']:.1f} ms ({100 * parts['optimizer'] / whole:.0f}%; every process does all of it)")
    print(f"  all-reduce of the {4 * runs[2]['parameters'] / 1e6:.1f} MB of gradients between the 2 processes: "
          f"{1000 * all_reduce:.1f} ms")
    print(f"  best ratio these parts allow: {whole / (parts['forward_backward_half'] + parts['optimizer']):.2f}x "
          f"without the all-reduce, {whole / (parts['forward_backward_half'] + parts['optimizer'] + all_reduce):.2f}x "
          "with it not overlapped with the backward pass (each process on a core of its own)")

    print("\n2. checkpoint saves (model + AdamW moments + scheduler + RNG states, atomic rename, keep 3):")
    for n, figures in runs.items():
        report_checkpoints(f"BERT-Tiny shape, {n} process{'es' if n > 1 else ''}", figures, steady(figures, args.warmup))
    if base is not None:
        report_checkpoints("BERT-base shape, 1 process (first step left out)", base, steady(base, 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
