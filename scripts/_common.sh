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

# ---- checks of the variables the scripts read, each refused in one line naming it (exit 2) before anything runs
whole_number() {  # whole_number NAME LEAST MOST: $NAME must be a whole number from LEAST to MOST, read as decimal
  local value="${!1}"  # (08 is 8, where bash arithmetic would take it for octal); stored without leading zeros
  [[ "$value" =~ ^[0-9]{1,18}$ ]] && [ "$((10#$value))" -ge "$2" ] && [ "$((10#$value))" -le "$3" ] ||
    die "$1 must be a whole number from $2 to $3, got '$value'"
  printf -v "$1" '%d' "$((10#$value))"
}

is_decimal() {  # is_decimal VALUE LEAST MOST [above]: VALUE is a number (3e-5, 0.1, .5, 2) from LEAST (above it) to MOST
  # (awk writes to /dev/null: the script's own stdout may be closed, which would fail awk)
  [[ "$1" =~ ^([0-9]{1,20}([.][0-9]{0,20})?|[.][0-9]{1,20})([eE][-+]?[0-9]{1,3})?$ ]] &&
    LC_ALL=C awk -v x="$1" -v least="$2" -v most="$3" -v above="${4:-}" \
      'BEGIN { x += 0; exit !((above ? x > least : x >= least) && x <= most) }' < /dev/null > /dev/null
}

decimal() {  # decimal NAME LEAST MOST [above]: $NAME must be such a number
  local range="from $2 to $3"
  if [ -n "${4:-}" ]; then range="above $2 and at most $3"; fi
  is_decimal "${!1}" "$2" "$3" "${4:-}" || die "$1 must be a number $range, got '${!1}'"
}

switch() {  # switch NAME DEFAULT: $NAME must be 0 or 1 (a typo such as DRY_RUN=true must not run the real thing)
  case "${!1:-$2}" in 0|1) ;; *) die "$1 must be 0 or 1, got '${!1}'" ;; esac
}

check_run_settings() {  # what run_subset passes to every run, where it is set: each number in range, each choice
  local name           # one the baseline takes (booleans as expmrc.training.flags.str2bool reads them), or one line
  switch DRY_RUN 0
  case "${SIZE:-base}" in base|large) ;; *) die "SIZE must be base or large, got '$SIZE'" ;; esac
  case "${MIXED_PRECISION:-auto}" in auto|no|fp16|bf16) ;; *) die "MIXED_PRECISION must be auto, no, fp16 or bf16, got '$MIXED_PRECISION'" ;; esac
  for name in DO_LOWER_CASE USE_TPU; do
    case "${!name:-true}" in
      [Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]|[01]|[YyNnTtFf]|[Yy][Ee][Ss]|[Nn][Oo]) ;;
      *) die "$name must be True or False, got '${!name}'" ;;
    esac
  done
  for name in TRAIN_BATCH_SIZE PREDICT_BATCH_SIZE MAX_SEQ_LENGTH DOC_STRIDE MAX_QUERY_LENGTH MAX_ANSWER_LENGTH \
              GRADIENT_ACCUMULATION_STEPS; do
    if [ -n "${!name:-}" ]; then whole_number "$name" 1 1048576; fi
  done
  if [ -n "${SAVE_CHECKPOINTS_STEPS:-}" ]; then whole_number SAVE_CHECKPOINTS_STEPS 1 1000000000; fi
  if [ -n "${SEED:-}" ]; then whole_number SEED 0 4294967295; fi  # numpy's seeds end there
  if [ -n "${NUM_TRAIN_EPOCHS:-}" ]; then decimal NUM_TRAIN_EPOCHS 0 1000 above; fi  # the baseline's ranges
  if [ -n "${LEARNING_RATE:-}" ]; then decimal LEARNING_RATE 0 1 above; fi
  if [ -n "${LAMBDA:-}" ]; then decimal LAMBDA 0 1000000; fi
}

# ---- the files a run reads, checked before a sweep submits or starts anything
run_files() {  # run_files SUBSET: RUN_MODEL, RUN_TRAIN, RUN_DEV, what a run of SUBSET reads: PLM_PATH, TRAIN_FILE and
  local extra i  # PREDICT_FILE or their defaults under DATA_PATH, unless EXTRA_ARGS (appended last, so it wins) names others
  RUN_MODEL="$PLM_PATH"
  RUN_TRAIN="${TRAIN_FILE:-$DATA_PATH/train-pseudo-$1.json}"
  RUN_DEV="${PREDICT_FILE:-$DATA_PATH/expmrc-$1-dev.json}"
  read -r -a extra <<< "${EXTRA_ARGS:-}"
  for ((i = 0; i < ${#extra[@]}; i++)); do
    case "${extra[i]}" in
      --model_name_or_path=*) RUN_MODEL="${extra[i]#*=}" ;;
      --model_name_or_path) RUN_MODEL="${extra[i + 1]:-}" ;;
      --train_file=*) RUN_TRAIN="${extra[i]#*=}" ;;
      --train_file) RUN_TRAIN="${extra[i + 1]:-}" ;;
      --predict_file=*) RUN_DEV="${extra[i]#*=}" ;;
      --predict_file) RUN_DEV="${extra[i + 1]:-}" ;;
    esac
  done
}

input_problem() {  # input_problem MESSAGE: one line and exit 2; DRY_RUN=1, which runs nothing, only warns
  if [ "${DRY_RUN:-0}" = 1 ]; then echo "warning: $* (a real run stops here)" >&2; else die "$*"; fi
}

check_run_inputs() {  # check_run_inputs SUBSET: the model and both data files of its runs are there and readable
  local file
  run_files "$1"
  check_model "$RUN_MODEL"
  for file in "$RUN_TRAIN" "$RUN_DEV"; do
    if [ -d "$file" ]; then input_problem "$file: is a folder, not a data file"
    elif [ ! -e "$file" ]; then input_problem "$file: no such data file"
    elif [ ! -f "$file" ] || [ ! -r "$file" ]; then input_problem "$file: not a readable regular file"
    elif [ ! -s "$file" ]; then input_problem "$file: an empty data file"
    fi
  done
}

check_model() {  # check_model PATH: an original release folder, a Hugging Face folder, or a Hub id it can be had from
  local p=$1 file
  if [ -e "$p/bert_model.ckpt.index" ]; then
    for file in vocab.txt bert_config.json; do
      [ -f "$p/$file" ] || input_problem "$p: an original release folder without $file"
    done
  elif [ -d "$p" ]; then
    if [ ! -f "$p/config.json" ]; then
      input_problem "$p: no config.json: not a Hugging Face model folder (nor an original release: no bert_model.ckpt.index)"
    elif [ ! -f "$p/model.safetensors" ] && [ ! -f "$p/pytorch_model.bin" ] && ! compgen -G "$p/model*.safetensors" > /dev/null; then
      input_problem "$p: a model folder without weights (no model.safetensors nor pytorch_model.bin)"
    fi
  elif [ -e "$p" ]; then
    input_problem "$p: is a file, not a model folder (PLM_PATH takes a model folder or a Hub id)"
  elif [[ ! "$p" =~ ^[[:alnum:]_][[:alnum:]_.-]*(/[[:alnum:]_.-]+)?$ ]]; then
    input_problem "$p: no such model folder (PLM_PATH takes a model folder or a Hub id)"
  elif [ "${DRY_RUN:-0}" != 1 ]; then  # a Hub id (a dry run asks nothing): in the cache, or the Hub has it
    "$PYTHON" - "$p" <<'HUB' || exit 2
import sys

name = sys.argv[1]
try:
    from huggingface_hub import HfApi, constants, try_to_load_from_cache
except ImportError:
    sys.exit(f"error: {name}: no such folder, and no huggingface_hub installed to get it as a Hub id")
try:
    cached = isinstance(try_to_load_from_cache(name, "config.json"), str)
except Exception:  # not a repo id the Hub library takes
    cached = False
if not cached and constants.HF_HUB_OFFLINE:
    sys.exit(f"error: {name}: no such folder, and not in the Hugging Face cache while HF_HUB_OFFLINE is set; download "
             f"it where the network is reachable (`hf download {name}`), or give the model's folder")
if not cached:
    try:
        HfApi().model_info(name, timeout=10)
    except Exception as exc:  # asked once, no retries: no such model, a gated one, or no network
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        sys.exit(f"error: {name}: no such folder, not in the Hugging Face cache, and the Hub does not give it "
                 f"({reason}); give the model's folder, or download it first (`hf download {name}`)")
HUB
  fi
}

run_command() {  # run "$@", or print it shell-quoted when DRY_RUN=1
  if [ "${DRY_RUN:-0}" = 1 ]; then
    local out
    printf -v out '%q ' "$@"
    printf '%s\n' "${out% }" 2> /dev/null || die "cannot write to standard output (DRY_RUN=1 prints the commands there)"
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
  check_run_settings
  case "$task" in
    span) script=run_se_mrc.py ;;
    choice) script=run_mc_mrc.py ;;
  esac
  case "${SIZE:-base}" in  # (base or large: checked above) the release uses the same hyper-parameters for both
    large) accumulation=4 ;;  # sizes; large only splits each batch of 32 into 4 micro-batches so 512 tokens fit
    *) accumulation=1 ;;
  esac
  model_flags "$default_lower"
  local flags=(
    "${MODEL_FLAGS[@]}"
    "--task_name=$subset"
    --do_train=True
    --do_predict=True
    "--train_file=${TRAIN_FILE:-$DATA_PATH/train-pseudo-$subset.json}"  # the defaults run_files checks
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
