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
  whole_number GPUS_PER_TASK 0 64  # 0: tasks without a GPU
  slurm_words
  if [ "${DRY_RUN:-0}" != 1 ] && ! command -v sbatch > /dev/null; then
    die "SCHEDULER=slurm submits with sbatch, which is not on PATH (run it on the cluster's login node; DRY_RUN=1 prints the job scripts)"
  fi
}

slurm_words() {  # SLURM_ARGS split into SLURM_WORDS as the shell splits words: quotes and backslashes, nothing expanded
  local out word
  SLURM_WORDS=()
  out="$("$PYTHON" -c 'import shlex, sys
try:
    words = shlex.split(sys.argv[1])
except ValueError as exc:
    sys.exit(f"error: SLURM_ARGS: {str(exc).lower()} in {sys.argv[1]!r} (quote as in the shell: --comment \"two words\")")
for word in words:
    if "\n" in word or "\r" in word:
        sys.exit(f"error: SLURM_ARGS: {word!r} holds a line break, which no #SBATCH line can")
    print(word)' "${SLURM_ARGS:-}")" || exit 2
  if [ -n "$out" ]; then mapfile -t SLURM_WORDS <<< "$out"; fi
  for word in "${SLURM_WORDS[@]}"; do
    case "$word" in
      -a*|--array|--array=*|--wrap|--wrap=*) die "SLURM_ARGS: $word is the sweep's to set (a task per share of the runs)" ;;
    esac
  done
}

sbatch_word() {  # sbatch_word WORD: WORD as an #SBATCH line gives it back to sbatch: quoted where a space, a quote, a
  local quoted  # backslash or a # (a comment there) would cut it, a backslash before each " and \ inside the quotes
  if [[ -n "$1" && "$1" != :* && "$1" != *[[:space:]\"\'\\#]* ]]; then printf '%s' "$1"; return; fi
  quoted="${1//\\/\\\\}"
  printf '"%s"' "${quoted//\"/\\\"}"
}

slurm_runs_per_task() {  # what the one-machine sweep runs at once on one task's GPUs
  if [ -n "${LAUNCH:-}" ] || [ "$GPUS_PER_TASK" = 0 ]; then echo "$RUNS_PER_GPU"
  else echo $((GPUS_PER_TASK * RUNS_PER_GPU)); fi
}

slurm_header() {  # slurm_header NAME LOG_DIR LOG_NAME GPUS [ARRAY]: the #SBATCH lines, SLURM_ARGS last so that they win
  local word
  echo "#!/usr/bin/env bash"
  echo "#SBATCH $(sbatch_word "--job-name=$1")"
  if [ -n "${5:-}" ]; then echo "#SBATCH --array=$5"; fi
  echo "#SBATCH --ntasks=1"
  echo "#SBATCH $(sbatch_word "--output=${2//%/%%}/$3")"  # a % of the folder's own is no file name pattern
  if [ "$4" -gt 0 ]; then echo "#SBATCH --gres=gpu:$4"; fi
  for word in "${SLURM_WORDS[@]}"; do echo "#SBATCH $(sbatch_word "$word")"; done
  echo "set -euo pipefail"
  printf 'cd %q\n' "$PWD"  # where the sweep was started: relative paths stay right
}

slurm_array_script() {  # slurm_array_script LOG_DIR PER_TASK "LAMBDA SEED"...: task i runs the i-th share of the runs
  local logs=$1 per=$2 i run share name value
  shift 2
  local runs=("$@")
  local tasks=$(( (${#runs[@]} + per - 1) / per ))
  slurm_header "expmrc-sweep-$SUBSET" "$logs" "%A_%a.log" "$GPUS_PER_TASK" "0-$((tasks - 1))"
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
  cat << 'TASK'
task="${SLURM_ARRAY_TASK_ID:-}"  # submitted by hand without its array, a task must not run the whole sweep
if [[ ! "$task" =~ ^[0-9]+$ ]] || [ "$task" -ge "${#shares[@]}" ]; then
  echo "error: array task '$task' has no share of the runs (tasks 0-$((${#shares[@]} - 1)) have)" >&2
  exit 2
fi
TASK
  # shellcheck disable=SC2016  # expanded by the job, not here
  printf 'SCHEDULER=local COLLECT=0 SWEEP_RUNS="${shares[$task]}" exec bash %q\n' "$HERE/lambda_sweep.sh"
}

slurm_collect_script() {  # slurm_collect_script LOG_DIR: `expmrc collect` of the whole sweep, no GPU
  slurm_header "expmrc-sweep-$SUBSET-collect" "$1" "collect_%j.log" 0
  printf 'exec %q -m expmrc.cli collect %q --output-dir %q\n' "$PYTHON" "$OUTPUT_ROOT" "$OUTPUT_ROOT/results"
}

slurm_write() {  # slurm_write FILE TEXT: TEXT into FILE through a temporary file, so no half-written script is left
  { printf '%s\n' "$2" > "$1.partial" && mv -f -- "$1.partial" "$1"; } 2> /dev/null ||
    { rm -f -- "$1.partial"; die "$1: cannot write the job script"; }
}

slurm_sbatch() {  # slurm_sbatch VAR WHAT THEN ARGS...: `sbatch --parsable ARGS`, the job id it printed into VAR; a
  # refusal, or anything on its stdout but a job id, is one line naming WHAT, then THEN (what was or was not queued)
  local out said status=0 err="$SLURM_LOGS/.sbatch.err" form='^[1-9][0-9]{0,17}(;[[:alnum:]_.-]+)?$'
  out="$(sbatch --parsable "${@:4}" 2> "$err")" || status=$?  # its stderr apart: a warning there is no job id
  said="$(grep -v '^[[:space:]]*$' "$err" | tail -n 1 || true)"
  if [ "$status" != 0 ]; then
    rm -f -- "$err"
    die "sbatch refused $2 (exit $status): ${said:-${out:-no message}}$3"
  fi
  cat -- "$err" >&2  # its warnings, as it printed them
  rm -f -- "$err"
  if [[ ! "$out" =~ $form ]]; then
    if [ -z "$out" ]; then said="nothing"
    elif [[ "$out" == *[[:cntrl:]]* ]]; then printf -v said '%q' "${out:0:120}"  # $'...': a line break shown, not cut
    else said="'${out:0:120}'"; fi
    die "sbatch --parsable printed $said for $2, not a job id (JOB_ID or JOB_ID;CLUSTER): it may be queued (squeue --me)$3"
  fi
  printf -v "$1" '%s' "${out%%;*}"  # --parsable prints JOB_ID or JOB_ID;CLUSTER
}

slurm_submit() {  # slurm_submit "LAMBDA SEED"...: write the two job scripts and submit them (DRY_RUN=1: print them)
  local logs per array collect array_id collect_id text
  case "$OUTPUT_ROOT" in /*) logs="$OUTPUT_ROOT/.slurm" ;; *) logs="$PWD/$OUTPUT_ROOT/.slurm" ;; esac
  case "$logs" in *$'\n'*|*$'\r'*) die "OUTPUT_ROOT: a folder whose name holds a line break cannot go into an #SBATCH line" ;; esac
  per="$(slurm_runs_per_task)"
  array="$logs/array.sbatch"
  collect="$logs/collect.sbatch"
  if [ "${DRY_RUN:-0}" = 1 ]; then  # printed at once, so a stdout that cannot take it is one line
    text="# $array"$'\n'"$(slurm_array_script "$logs" "$per" "$@")"$'\n'"sbatch --parsable $(printf '%q' "$array")"
    if [ "${COLLECT:-1}" = 1 ]; then
      text+=$'\n'"# $collect"$'\n'"$(slurm_collect_script "$logs")"
      text+=$'\n'"sbatch --parsable --dependency=afterany:ARRAY_JOB_ID $(printf '%q' "$collect")"
    fi
    printf '%s\n' "$text" 2> /dev/null || die "cannot write to standard output (DRY_RUN=1 prints the job scripts there)"
    return 0
  fi
  mkdir -p -- "$logs" 2> /dev/null || die "$logs: cannot create the folder of the job scripts"
  SLURM_LOGS="$logs"
  trap 'rm -f -- "$SLURM_LOGS/.sbatch.err" "$SLURM_LOGS"/*.partial' EXIT  # nothing half-written left, even after Ctrl-C
  text="$(slurm_array_script "$logs" "$per" "$@")"
  slurm_write "$array" "$text"
  slurm_sbatch array_id "the job array $array" "; nothing more is submitted" "$array"
  echo "submitted job array $array_id: $# run(s), $(( ($# + per - 1) / per )) task(s) of at most $per run(s)," \
       "${GPUS_PER_TASK} GPU(s) each; logs in $logs" >&2
  if [ "${COLLECT:-1}" = 1 ]; then
    text="$(slurm_collect_script "$logs")"
    slurm_write "$collect" "$text"
    slurm_sbatch collect_id "the collect job $collect, after job array $array_id" \
      "; if it is not, run \`expmrc collect $OUTPUT_ROOT --output-dir $OUTPUT_ROOT/results\` when the array ends" \
      "--dependency=afterany:$array_id" "$collect"
    echo "submitted collect job $collect_id, to start when every task of $array_id has ended: $OUTPUT_ROOT/results" >&2
  fi
  echo "follow with: squeue -j $array_id${collect_id:+,$collect_id}; the same command again resubmits only unfinished runs" >&2
}
