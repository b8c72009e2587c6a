# Shared by scripts/run_*.sh, lambda_sweep.sh and the launchers (sourced, not run).
# It builds one baseline command line from environment variables and runs it, or prints it when
# DRY_RUN=1 (shell-quoted, one command per line), so every script can be checked without training.

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -z "${PYTHON:-}" ]; then
  if [ -x "$REPO_ROOT/.venv/bin/python" ]; then PYTHON="$REPO_ROOT/.venv/bin/python"; else PYTHON=python3; fi
fi

die() { echo "error: $*" >&2; exit 2; }

usage_on_help() {  # usage_on_help "$@": on -h or --help, print the calling script's leading comment and exit 0
  case "${1:-}" in
    -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
  esac
}

no_arguments() {  # no_arguments "$@": -h/--help as usage_on_help; any other argument is refused (settings are variables)
  usage_on_help "$@"
  [ $# -eq 0 ] || die "$(basename "$0") takes no arguments, got '$1' (its settings are environment variables: see --help)"
}

require() {  # require NAME...: each environment variable must be set and non-empty
  local name
  for name in "$@"; do
    [ -n "${!name:-}" ] || die "set $name (see the comment at the top of $(basename "$0"))"
  done
}

run_command() {  # run "$@", or print it shell-quoted when DRY_RUN=1
  if [ "${DRY_RUN:-0}" = 1 ]; then
    local out
    printf -v out '%q ' "$@"
    echo "${out% }"
  else
    "$@"
  fi
}

# model_flags LOWER: PLM_PATH is an original TensorFlow release (bert_model.ckpt.index inside), read with
# --do_lower_case LOWER (or DO_LOWER_CASE), or a Hugging Face folder or Hub id, whose tokenizer keeps its own
# casing (--do_lower_case only when DO_LOWER_CASE is set: a forced value would contradict an uncased model)
model_flags() {
  if [ -e "$PLM_PATH/bert_model.ckpt.index" ]; then
    MODEL_FLAGS=("--vocab_file=$PLM_PATH/vocab.txt" "--bert_config_file=$PLM_PATH/bert_config.json"
                 "--init_checkpoint=$PLM_PATH/bert_model.ckpt" "--do_lower_case=${DO_LOWER_CASE:-$1}")
  else
    MODEL_FLAGS=("--model_name_or_path=$PLM_PATH")
    if [ -n "${DO_LOWER_CASE:-}" ]; then MODEL_FLAGS+=("--do_lower_case=$DO_LOWER_CASE"); fi
  fi
}

# run_subset SUBSET TASK LAMBDA LOWER: train and predict one subset with the release scripts' settings,
# every one passed explicitly (the baseline scripts' own defaults are the original scripts', which differ:
# see "Original command lines" in docs/training.md).
# TASK is span (run_se_mrc.py) or choice (run_mc_mrc.py); LAMBDA and LOWER are the subset's defaults.
run_subset() {
  local subset=$1 task=$2 default_lambda=$3 default_lower=$4 script accumulation
  require PLM_PATH DATA_PATH MODEL_PATH
  case "$task" in
    span) script=run_se_mrc.py ;;
    choice) script=run_mc_mrc.py ;;
  esac
  case "${SIZE:-base}" in  # the release uses the same hyper-parameters for both sizes; large only
    base) accumulation=1 ;;  # splits each batch of 32 into 4 micro-batches so 512 tokens fit in memory
    large) accumulation=4 ;;
    *) die "SIZE must be base or large, got '$SIZE'" ;;
  esac
  model_flags "$default_lower"
  local flags=(
    "${MODEL_FLAGS[@]}"
    "--task_name=$subset"
    --do_train=True
    --do_predict=True
    "--train_file=${TRAIN_FILE:-$DATA_PATH/train-pseudo-$subset.json}"
    "--predict_file=${PREDICT_FILE:-$DATA_PATH/expmrc-$subset-dev.json}"
    "--train_batch_size=${TRAIN_BATCH_SIZE:-32}"
    "--predict_batch_size=${PREDICT_BATCH_SIZE:-32}"
    "--num_train_epochs=${NUM_TRAIN_EPOCHS:-2}"
    "--max_seq_length=${MAX_SEQ_LENGTH:-512}"
    "--doc_stride=${DOC_STRIDE:-128}"
    "--max_query_length=${MAX_QUERY_LENGTH:-64}"
    "--learning_rate=${LEARNING_RATE:-3e-5}"
    "--loss_lambda=${LAMBDA:-$default_lambda}"
    "--rand_seed=${SEED:-12345}"
    "--save_checkpoints_steps=${SAVE_CHECKPOINTS_STEPS:-1000}"
    "--gradient_accumulation_steps=${GRADIENT_ACCUMULATION_STEPS:-$accumulation}"
    "--mixed_precision=${MIXED_PRECISION:-auto}"
    "--output_dir=$MODEL_PATH"
    "--use_tpu=${USE_TPU:-False}"
  )
  if [ "$task" = span ]; then flags+=("--max_answer_length=${MAX_ANSWER_LENGTH:-40}"); fi
  local launch extra
  read -r -a launch <<< "${LAUNCH:-$PYTHON}"
  read -r -a extra <<< "${EXTRA_ARGS:-}"
  run_command "${launch[@]}" "$REPO_ROOT/baseline/$script" "${flags[@]}" "${extra[@]}"
}
