#!/usr/bin/env bash
# Lambda sweep on one subset: every lambda in LAMBDAS times every seed in SEEDS, each run in
# OUTPUT_ROOT/lambda_<lambda>/seed_<seed>, then `expmrc collect` writes the table and the figure to
# OUTPUT_ROOT/results. Runs whose run_info.json says "finished" are skipped and unfinished ones resume
# from their last checkpoint, so after a preemption the same command carries on.
#
#   SUBSET=cmrc2018 PLM_PATH=models/chinese_macbert_base DATA_PATH=data/cmrc2018 \
#     OUTPUT_ROOT=runs/sweep-cmrc2018 bash scripts/lambda_sweep.sh
#
# SUBSET       squad | cmrc2018 | race | c3 (runs scripts/run_<SUBSET>.sh)
# LAMBDAS      default "0 0.01 0.05 0.1 0.2 0.5 1.0" (the paper's sweep)
# SEEDS        default "1 2 3 4 5"; or NUM_SEEDS=N for seeds 1..N
# OUTPUT_ROOT  default runs/lambda-sweep-<SUBSET>
# COLLECT      1 (default): run `expmrc collect` at the end; 0: don't
# Everything run_<SUBSET>.sh reads passes through: PLM_PATH, DATA_PATH, SIZE, TRAIN_FILE, PREDICT_FILE,
# EXTRA_ARGS (e.g. "--max_steps 4" for a smoke sweep), LAUNCH, MIXED_PRECISION, ... DRY_RUN=1 prints
# the commands. A failed run does not stop the sweep; the script exits 1 at the end if any failed.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/_common.sh"
require SUBSET PLM_PATH DATA_PATH
case "$SUBSET" in
  squad|cmrc2018|race|c3) ;;
  *) die "SUBSET must be one of squad, cmrc2018, race, c3; got '$SUBSET'" ;;
esac
LAMBDAS="${LAMBDAS:-0 0.01 0.05 0.1 0.2 0.5 1.0}"
if [ -z "${SEEDS:-}" ]; then SEEDS="$(seq -s ' ' 1 "${NUM_SEEDS:-5}")"; fi
OUTPUT_ROOT="${OUTPUT_ROOT:-runs/lambda-sweep-$SUBSET}"

finished() {  # finished RUN_DIR: its run_info.json says "finished"
  [ -f "$1/run_info.json" ] && "$PYTHON" -c 'import json, sys
sys.exit(json.load(open(sys.argv[1], encoding="utf-8")).get("status") != "finished")' "$1/run_info.json" 2>/dev/null
}

failed=()
for lambda in $LAMBDAS; do
  for seed in $SEEDS; do
    run_dir="$OUTPUT_ROOT/lambda_$lambda/seed_$seed"
    if finished "$run_dir"; then
      echo "skip $run_dir: finished" >&2
      continue
    fi
    if ! MODEL_PATH="$run_dir" LAMBDA="$lambda" SEED="$seed" bash "$HERE/run_$SUBSET.sh"; then
      echo "run failed: $run_dir (the sweep goes on; rerun the same command to retry it)" >&2
      failed+=("$run_dir")
    fi
  done
done
if [ "${COLLECT:-1}" = 1 ]; then
  run_command "$PYTHON" -m expmrc.cli collect "$OUTPUT_ROOT" --output-dir "$OUTPUT_ROOT/results"
fi
if [ "${#failed[@]}" -gt 0 ]; then
  echo "${#failed[@]} run(s) failed: ${failed[*]}" >&2
  exit 1
fi
