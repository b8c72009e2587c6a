# SCHEDULER=slurm for lambda_sweep.sh (sourced, not run): the sweep's unfinished runs as one Slurm job array,
# then `expmrc collect` as a job that waits for the whole array (--dependency=afterany:ARRAY_ID).
#
# Each array task holds GPUS_PER_TASK GPUs and runs as many runs as the one-machine sweep would run at once on
# them (GPUS_PER_TASK x RUNS_PER_GPU; RUNS_PER_GPU alone under a multi-GPU LAUNCH or with GPUS_PER_TASK=0), by
# calling lambda_sweep.sh itself with SWEEP_RUNS set to its share: finished runs are skipped, unfinished ones
# resume from their checkpoints. The job scripts go to OUTPUT_ROOT/.slurm/ (a hidden folder, so `expmrc collect`
# never takes it for a run) beside the tasks' logs; DRY_RUN=1 prints them and the sbatch commands instead.

# what the run scripts read, carried explicitly by the job scripts (the rest of the environment goes with the jobs
# as sbatch passes it by default); the sweep sets MODEL_PATH, LAMBDA and SEED itself
SLURM_CARRIED=(SUBSET PLM_PATH DATA_PATH OUTPUT_ROOT SIZE TRAIN_FILE PREDICT_FILE DO_LOWER_CASE TRAIN_BATCH_SIZE
               PREDICT_BATCH_SIZE NUM_TRAIN_EPOCHS MAX_SEQ_LENGTH DOC_STRIDE MAX_QUERY_LENGTH MAX_ANSWER_LENGTH
               LEARNING_RATE SAVE_CHECKPOINTS_STEPS GRADIENT_ACCUMULATION_STEPS MIXED_PRECISION USE_TPU EXTRA_ARGS
               LAUNCH PYTHON RUNS_PER_GPU)

slurm_check() {  # the scheduler's own variables, checked before anything is written or submitted
  GPUS_PER_TASK="${GPUS_PER_TASK:-1}"
  [[ "$GPUS_PER_TASK" =~ ^(0|[1-9][0-9]*)$ ]] ||
    die "GPUS_PER_TASK must be a whole number (0: tasks without a GPU), got '$GPUS_PER_TASK'"
  if [ "${DRY_RUN:-0}" != 1 ] && ! command -v sbatch > /dev/null; then
    die "SCHEDULER=slurm submits with sbatch, which is not on PATH (run it on the cluster's login node; DRY_RUN=1 prints the job scripts)"
  fi
}

slurm_runs_per_task() {  # what the one-machine sweep runs at once on one task's GPUs
  if [ -n "${LAUNCH:-}" ] || [ "$GPUS_PER_TASK" = 0 ]; then echo "$RUNS_PER_GPU"
  else echo $((GPUS_PER_TASK * RUNS_PER_GPU)); fi
}

slurm_header() {  # slurm_header NAME LOG GPUS [ARRAY]: the #SBATCH lines, SLURM_ARGS last so that they win
  local extra option
  echo "#!/usr/bin/env bash"
  echo "#SBATCH --job-name=$1"
  if [ -n "${4:-}" ]; then echo "#SBATCH --array=$4"; fi
  echo "#SBATCH --ntasks=1"
  echo "#SBATCH --output=$2"
  if [ "$3" -gt 0 ]; then echo "#SBATCH --gres=gpu:$3"; fi
  read -r -a extra <<< "${SLURM_ARGS:-}"
  for option in "${extra[@]}"; do echo "#SBATCH $option"; done
  echo "set -euo pipefail"
  printf 'cd %q\n' "$PWD"  # where the sweep was started: relative paths stay right
}

slurm_array_script() {  # slurm_array_script LOG_DIR PER_TASK "LAMBDA SEED"...: task i runs the i-th share of the runs
  local logs=$1 per=$2 i run share name value
  shift 2
  local runs=("$@")
  local tasks=$(( (${#runs[@]} + per - 1) / per ))
  slurm_header "expmrc-sweep-$SUBSET" "$logs/%A_%a.log" "$GPUS_PER_TASK" "0-$((tasks - 1))"
  echo "# ${#runs[@]} run(s) of scripts/lambda_sweep.sh (SCHEDULER=slurm), at most $per per task, each resuming its folder"
  for name in "${SLURM_CARRIED[@]}"; do  # single-quoted, as a reader would write them
    if [ -n "${!name+x}" ]; then value="${!name}"; echo "export $name='${value//\'/\'\\\'\'}'"; fi
  done
  echo "shares=(  # each task's runs, LAMBDA:SEED"
  for ((i = 0; i < ${#runs[@]}; i += per)); do
    share=""
    for run in "${runs[@]:i:per}"; do share+="${share:+ }${run/ /:}"; done
    if [[ "$share" =~ ^[[:alnum:].:+\ -]+$ ]]; then echo "  \"$share\""; else printf '  %q\n' "$share"; fi
  done
  echo ")"
  if [ "$GPUS_PER_TASK" = 0 ]; then echo 'export GPUS=""'
  else echo "unset GPUS  # the task's own GPUs: CUDA_VISIBLE_DEVICES, as Slurm sets it"; fi
  # shellcheck disable=SC2016  # expanded by the job, not here
  printf 'SCHEDULER=local COLLECT=0 SWEEP_RUNS="${shares[$SLURM_ARRAY_TASK_ID]}" exec bash %q\n' "$HERE/lambda_sweep.sh"
}

slurm_collect_script() {  # slurm_collect_script LOG_DIR: `expmrc collect` of the whole sweep, no GPU
  slurm_header "expmrc-sweep-$SUBSET-collect" "$1/collect_%j.log" 0
  printf 'exec %q -m expmrc.cli collect %q --output-dir %q\n' "$PYTHON" "$OUTPUT_ROOT" "$OUTPUT_ROOT/results"
}

slurm_write() {  # slurm_write FILE: stdin into FILE through a temporary file, so no half-written script is left
  cat > "$1.partial" && mv "$1.partial" "$1"
}

slurm_submit() {  # slurm_submit "LAMBDA SEED"...: write the two job scripts and submit them (DRY_RUN=1: print them)
  local logs per array collect array_id collect_id out
  case "$OUTPUT_ROOT" in /*) logs="$OUTPUT_ROOT/.slurm" ;; *) logs="$PWD/$OUTPUT_ROOT/.slurm" ;; esac
  per="$(slurm_runs_per_task)"
  array="$logs/array.sbatch"
  collect="$logs/collect.sbatch"
  if [ "${DRY_RUN:-0}" = 1 ]; then
    echo "# $array"
    slurm_array_script "$logs" "$per" "$@"
    echo "sbatch --parsable $(printf '%q' "$array")"
    if [ "${COLLECT:-1}" = 1 ]; then
      echo "# $collect"
      slurm_collect_script "$logs"
      echo "sbatch --parsable --dependency=afterany:ARRAY_JOB_ID $(printf '%q' "$collect")"
    fi
    return 0
  fi
  mkdir -p "$logs"
  slurm_array_script "$logs" "$per" "$@" | slurm_write "$array"
  out="$(sbatch --parsable "$array" 2>&1)" || die "sbatch refused the job array $array: $(echo "$out" | tail -n 1)"
  array_id="${out%%;*}"  # --parsable prints JOB_ID or JOB_ID;CLUSTER
  echo "submitted job array $array_id: $# run(s), $(( ($# + per - 1) / per )) task(s) of at most $per run(s)," \
       "${GPUS_PER_TASK} GPU(s) each; logs in $logs" >&2
  if [ "${COLLECT:-1}" = 1 ]; then
    slurm_collect_script "$logs" | slurm_write "$collect"
    out="$(sbatch --parsable "--dependency=afterany:$array_id" "$collect" 2>&1)" ||
      die "job array $array_id is submitted, but sbatch refused the collect job: $(echo "$out" | tail -n 1); run \`expmrc collect $OUTPUT_ROOT --output-dir $OUTPUT_ROOT/results\` when the array ends"
    collect_id="${out%%;*}"
    echo "submitted collect job $collect_id, to start when every task of $array_id has ended: $OUTPUT_ROOT/results" >&2
  fi
  echo "follow with: squeue -j $array_id${collect_id:+,$collect_id}; the same command again resubmits only unfinished runs" >&2
}
