#!/usr/bin/env bash
# Lambda sweep on one subset: every lambda in LAMBDAS times every seed in SEEDS, each run in
# OUTPUT_ROOT/lambda_<lambda>/seed_<seed>, then `expmrc collect` writes the table and the figure to
# OUTPUT_ROOT/results. Runs whose run_info.json says "finished" are skipped and unfinished ones resume
# from their last checkpoint, so after a preemption the same command carries on.
#
#   SUBSET=cmrc2018 PLM_PATH=models/chinese_macbert_base DATA_PATH=data/cmrc2018 \
#     OUTPUT_ROOT=runs/sweep-cmrc2018 bash scripts/lambda_sweep.sh
#   GPUS=0 RUNS_PER_GPU=3 SUBSET=cmrc2018 ... bash scripts/lambda_sweep.sh   # three runs share GPU 0
#   SCHEDULER=slurm SLURM_ARGS="--partition=gpu --time=02:00:00" SUBSET=cmrc2018 ... bash scripts/lambda_sweep.sh
#
# SUBSET        squad | cmrc2018 | race | c3 (runs scripts/run_<SUBSET>.sh)
# LAMBDAS       default "0 0.01 0.05 0.1 0.2 0.5 1.0" (the paper's sweep)
# SEEDS         default "1 2 3 4 5"; or NUM_SEEDS=N for seeds 1..N
# OUTPUT_ROOT   default runs/lambda-sweep-<SUBSET>
# COLLECT       1 (default): run `expmrc collect` at the end; 0: don't
# GPUS          "0 1 2 3": independent runs side by side on these GPUs (each run with CUDA_VISIBLE_DEVICES set to
#               its GPU, its output in RUN_DIR/sweep.log); default CUDA_VISIBLE_DEVICES, else every GPU nvidia-smi
#               lists. GPUS="" runs on whatever device there is. See docs/training.md for when one multi-GPU run is better.
# RUNS_PER_GPU  N (default 1, at most 64): N independent runs share each listed GPU at a time (with GPUS="", N at a time on the
#               one device). Pays for small models run eagerly, whose single run leaves the GPU idle between kernel
#               launches; not for compiled runs (--torch_compile True) on an H100, where three side by side trained at
#               0.95x the throughput of one (1.43x on an H200), nor for large models (docs/benchmarks.md, "GPU-hours
#               of a lambda sweep": benchmarks/bench_sweep_model.py picks N per model size from the measured gain).
# SWEEP_RUNS    "LAMBDA:SEED ..." (e.g. "0.1:1 0.5:3"): just these runs instead of LAMBDAS x SEEDS.
# SCHEDULER     local (default): run here, as above. slurm: submit the unfinished runs as one Slurm job array (a
#               task per GPUS_PER_TASK x RUNS_PER_GPU runs, each resuming its run folder) and `expmrc collect` as a job
#               that starts when every task has ended (--dependency=afterany); the job scripts and logs go to
#               OUTPUT_ROOT/.slurm/, DRY_RUN=1 prints them. The same command again submits only unfinished runs
#               (none left: it runs `expmrc collect` here).
# GPUS_PER_TASK slurm: GPUs each array task asks for (--gres=gpu:N, default 1, at most 64; 0: none). Under launch_multi_gpu.sh
#               (one run over several GPUs) set it to NUM_GPUS: each task then runs RUNS_PER_GPU runs on all of them.
# SLURM_ARGS    slurm: more #SBATCH options, e.g. "--partition=gpu --time=04:00:00 --account=nlp", split as the
#               shell splits words ('--comment "two words"' keeps its value whole); sbatch's own
#               SBATCH_* variables (SBATCH_PARTITION, ...) work too. On Cloud TPU VMs there is no scheduler: run
#               `bash scripts/launch_tpu_vm.sh scripts/lambda_sweep.sh` on the VM (one run at a time on all its chips).
# Everything run_<SUBSET>.sh reads passes through: PLM_PATH, DATA_PATH, SIZE, TRAIN_FILE, PREDICT_FILE,
# EXTRA_ARGS (e.g. "--max_steps 4" for a smoke sweep), LAUNCH, MIXED_PRECISION, ... DRY_RUN=1 prints
# the commands and the GPU each run would get. Before anything is submitted or run, every number above is checked
# against its range, and the model (a folder, or a Hub id in the Hugging Face cache or on the Hub) and both data
# files must be there (DRY_RUN=1 only warns); each problem is one line and exit 2. A failed run (out of memory included) does not stop the others; the
# summary names each failed run with the last line of its log, and the script exits 1 at the end if any failed.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/_common.sh"
no_arguments "$@"
require SUBSET PLM_PATH DATA_PATH
case "$SUBSET" in
  squad|cmrc2018|race|c3) ;;
  *) die "SUBSET must be one of squad, cmrc2018, race, c3; got '$SUBSET'" ;;
esac

# ---- input checks: every number the sweep counts with or passes to its runs, each refused in one line (exit 2)
# before anything runs (whole_number, decimal, switch and check_run_settings are _common.sh's)
words() {  # words NAME ARRAY: $NAME split at spaces, tabs and line breaks into ARRAY (no globbing: '*' stays '*')
  read -r -d '' -a "$2" <<< "${!1}" || true
}
first_repeat() {  # first_repeat VALUE...: the first value that equals one before it as a number (0.10 is 0.1), if any
  printf '%s\n' "$@" | LC_ALL=C awk '{ key = sprintf("%.17g", $1 + 0) " " $2; if (key in seen) { print; exit } seen[key] = 1 }'
}
check_run_settings
switch COLLECT 1
command -v "$PYTHON" > /dev/null || die "PYTHON=$PYTHON: no such program"
read -r -a launch <<< "${LAUNCH:-$PYTHON}"  # as run_subset splits it
[ -n "${launch[0]:-}" ] && command -v "${launch[0]}" > /dev/null || die "LAUNCH='$LAUNCH': no such program"
RUNS_PER_GPU="${RUNS_PER_GPU:-1}"
whole_number RUNS_PER_GPU 1 64
LAMBDAS="${LAMBDAS:-0 0.01 0.05 0.1 0.2 0.5 1.0}"
words LAMBDAS lambdas
for lambda in "${lambdas[@]}"; do  # each a number from 0, as --loss_lambda takes it (0.1, 1, .5, 1e-3)
  is_decimal "$lambda" 0 1000000 ||
    die "LAMBDAS must be numbers from 0 to 1000000 separated by spaces, got '$lambda' in '$LAMBDAS'"
done
if [ -z "${SEEDS:-}" ]; then
  NUM_SEEDS="${NUM_SEEDS:-5}"
  whole_number NUM_SEEDS 1 1000
  SEEDS="$(seq -s ' ' 1 "$NUM_SEEDS")"
fi
words SEEDS seeds
for i in "${!seeds[@]}"; do  # numpy's seeds end at 2^32 - 1; read as decimal, so 01 is seed 1
  [[ "${seeds[i]}" =~ ^[0-9]{1,10}$ ]] && [ "$((10#${seeds[i]}))" -le 4294967295 ] ||
    die "SEEDS must be whole numbers from 0 to 4294967295 separated by spaces, got '${seeds[i]}' in '$SEEDS'"
  seeds[i]="$((10#${seeds[i]}))"
done
[ "${#lambdas[@]}" -gt 0 ] && [ "${#seeds[@]}" -gt 0 ] || die "LAMBDAS and SEEDS must each name at least one value"
repeat="$(first_repeat "${lambdas[@]}")"
[ -z "$repeat" ] || die "LAMBDAS names $repeat twice (as a number): two runs would train it with the same seed"
repeat="$(first_repeat "${seeds[@]}")"
[ -z "$repeat" ] || die "SEEDS names $repeat twice: two runs would train the same seed"
if [ -n "${GPUS:-}" ]; then  # as CUDA_VISIBLE_DEVICES takes them: indices, or GPU-/MIG- UUIDs; commas as well
  GPUS="${GPUS//,/ }"
  words GPUS listed
  for gpu in "${listed[@]}"; do
    [[ "$gpu" =~ ^([0-9]{1,4}|(GPU|MIG)-[[:alnum:]/-]+)$ ]] ||
      die "GPUS must be GPU indices (or GPU-/MIG- UUIDs) separated by spaces or commas, got '$gpu' in '$GPUS'"
  done
fi
# ---- end of input checks
SCHEDULER="${SCHEDULER:-local}"
case "$SCHEDULER" in
  local) ;;
  slurm) source "$HERE/_slurm.sh"; slurm_check ;;
  *) die "SCHEDULER must be local or slurm, got '$SCHEDULER'" ;;
esac

OUTPUT_ROOT="${OUTPUT_ROOT:-runs/lambda-sweep-$SUBSET}"
[ ! -e "$OUTPUT_ROOT" ] || [ -d "$OUTPUT_ROOT" ] || die "OUTPUT_ROOT=$OUTPUT_ROOT: is a file, not a folder"

finished() {  # finished RUN_DIR: its run_info.json says "finished"
  [ -f "$1/run_info.json" ] && "$PYTHON" -c 'import json, sys
sys.exit(json.load(open(sys.argv[1], encoding="utf-8")).get("status") != "finished")' "$1/run_info.json" 2>/dev/null
}

# GPUS: one run at a time per listed GPU (CUDA_VISIBLE_DEVICES set to it); default: CUDA_VISIBLE_DEVICES,
# else every GPU nvidia-smi lists, else none (one run at a time on whatever device there is).
# Under a multi-GPU launcher (LAUNCH set, e.g. by launch_multi_gpu.sh) each run uses every GPU: one at a time.
if [ -z "${GPUS+x}" ] && [ -n "${LAUNCH:-}" ]; then GPUS=""; fi
if [ -z "${GPUS+x}" ]; then
  if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then GPUS="${CUDA_VISIBLE_DEVICES//,/ }"
  else GPUS="$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | tr '\n' ' ' || true)"; fi
fi
read -r -a gpus <<< "$GPUS"
slots=()  # one entry per run that may go at once: each GPU RUNS_PER_GPU times ("" for the one device without GPUS)
for gpu in "${gpus[@]:-}"; do
  for _ in $(seq "$RUNS_PER_GPU"); do slots+=("$gpu"); done
done

runs=()  # "LAMBDA SEED" of every run of the sweep: SWEEP_RUNS, else LAMBDAS x SEEDS
if [ -n "${SWEEP_RUNS:-}" ]; then
  words SWEEP_RUNS items
  [ "${#items[@]}" -gt 0 ] || die "SWEEP_RUNS names no run (LAMBDA:SEED items separated by spaces, such as '0.1:1 0.5:3')"
  for run in "${items[@]}"; do
    lambda="${run%%:*}" seed="${run#*:}"
    [[ "$run" == *:* && "$seed" =~ ^[0-9]{1,10}$ ]] && is_decimal "$lambda" 0 1000000 &&
      [ "$((10#$seed))" -le 4294967295 ] ||
      die "SWEEP_RUNS takes LAMBDA:SEED items separated by spaces, such as '0.1:1 0.5:3'; got '$run'"
    runs+=("$lambda $((10#$seed))")
  done
  repeat="$(first_repeat "${runs[@]}")"
  [ -z "$repeat" ] || die "SWEEP_RUNS names the run '${repeat/ /:}' twice (as numbers): two runs would write one folder"
else
  for lambda in "${lambdas[@]}"; do
    for seed in "${seeds[@]}"; do runs+=("$lambda $seed"); done
  done
fi

pending=()
skipped=0
for run in "${runs[@]}"; do
  read -r lambda seed <<< "$run"
  run_dir="$OUTPUT_ROOT/lambda_$lambda/seed_$seed"
  if finished "$run_dir"; then
    echo "skip $run_dir: finished" >&2
    skipped=$((skipped + 1))
  else
    pending+=("$lambda $seed")
  fi
done

if [ "${#pending[@]}" -gt 0 ]; then  # what every pending run reads, before anything is submitted or started
  check_run_inputs "$SUBSET"
fi
if [ "${DRY_RUN:-0}" != 1 ]; then
  mkdir -p -- "$OUTPUT_ROOT" 2> /dev/null && [ -w "$OUTPUT_ROOT" ] || die "OUTPUT_ROOT=$OUTPUT_ROOT: cannot write this folder"
fi

# ---- SCHEDULER=slurm: the pending runs as one job array, collect after it (scripts/_slurm.sh) ----------------------
if [ "$SCHEDULER" = slurm ] && [ "${#pending[@]}" -gt 0 ]; then
  slurm_submit "${pending[@]}"
  exit 0
fi

state="$(mktemp -d)"
trap 'rm -rf "$state"' EXIT
echo 0 > "$state/next"
: > "$state/failed"
parallel=0
if [ "${#slots[@]}" -gt 1 ] && [ "${DRY_RUN:-0}" != 1 ]; then parallel=1; fi

where() {  # where SLOT GPU: how a run's place is shown ("on GPU 3", "on GPU 3, run 2 of 3 sharing it")
  local text=""
  if [ -n "$2" ]; then text="on GPU $2"; fi
  if [ "$RUNS_PER_GPU" -gt 1 ]; then
    text="${text:+$text, }run $(($1 % RUNS_PER_GPU + 1)) of $RUNS_PER_GPU sharing $(if [ -n "$2" ]; then echo it; else echo the device; fi)"
  fi
  echo "$text"
}

run_one() {  # run_one LAMBDA SEED SLOT: one run (resuming it if unfinished); a failure is recorded, not fatal
  local lambda=$1 seed=$2 slot=$3 gpu="${slots[$3]:-}" run_dir="$OUTPUT_ROOT/lambda_$1/seed_$2" status=0 place
  local vars=(MODEL_PATH="$run_dir" LAMBDA="$lambda" SEED="$seed")
  if [ -n "$gpu" ]; then vars+=(CUDA_VISIBLE_DEVICES="$gpu"); fi
  place="$(where "$slot" "$gpu")"
  if [ -n "$place" ]; then echo "run $run_dir $place" >&2; fi
  if [ "$parallel" = 1 ]; then  # side by side: each run's output goes to its own log
    mkdir -p "$run_dir"
    env "${vars[@]}" bash "$HERE/run_$SUBSET.sh" >> "$run_dir/sweep.log" 2>&1 || status=$?
  else
    env "${vars[@]}" bash "$HERE/run_$SUBSET.sh" || status=$?
  fi
  if [ "$status" != 0 ] && [ "${DRY_RUN:-0}" = 1 ]; then
    exit "$status"  # a dry run trains nothing: the run script refused (its line said why), so does the sweep
  elif [ "$status" != 0 ]; then
    echo "run failed: $run_dir (exit $status; the sweep goes on; rerun the same command to retry it)" >&2
    echo "$run_dir" >> "$state/failed"
  fi
}

next_job() {  # the index of the next pending run, shared by the workers through a locked counter
  ( flock 9; n="$(cat "$state/next")"; echo $((n + 1)) > "$state/next"; echo "$n" ) 9> "$state/lock"
}

worker() {  # worker SLOT: take runs from the queue until none is left
  local n
  while n="$(next_job)" && [ "$n" -lt "${#pending[@]}" ]; do
    # shellcheck disable=SC2086  # "LAMBDA SEED"
    run_one ${pending[$n]} "$1"
  done
}

if [ "$parallel" = 1 ]; then
  for slot in "${!slots[@]}"; do worker "$slot" & done
  wait
else
  for i in "${!pending[@]}"; do
    # shellcheck disable=SC2086
    run_one ${pending[$i]} "$((i % ${#slots[@]}))"
  done
fi
mapfile -t failed < "$state/failed"
if [ "${COLLECT:-1}" = 1 ]; then
  run_command "$PYTHON" -m expmrc.cli collect "$OUTPUT_ROOT" --output-dir "$OUTPUT_ROOT/results"
fi
if [ "${DRY_RUN:-0}" != 1 ]; then
  echo "sweep: $((${#pending[@]} - ${#failed[@]})) run(s) finished, ${#failed[@]} failed, $skipped skipped (finished before)" >&2
fi
if [ "${#failed[@]}" -gt 0 ]; then
  for run_dir in "${failed[@]}"; do  # each failed run with the last line its log holds
    last=""
    if [ -f "$run_dir/sweep.log" ]; then last="$(grep -v '^[[:space:]]*$' "$run_dir/sweep.log" | tail -n 1 | tr '\r' '\n' | tail -n 1)"; fi
    echo "failed: $run_dir${last:+: $last}" >&2
  done
  echo "${#failed[@]} run(s) failed: ${failed[*]}" >&2
  exit 1
fi
