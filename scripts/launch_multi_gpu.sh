#!/usr/bin/env bash
# Run one of the training scripts on several GPUs, on one machine or several, through accelerate
# (default) or torchrun. The script's own variables (PLM_PATH, DATA_PATH, MODEL_PATH, ...) pass through.
#
#   NUM_GPUS=4 PLM_PATH=models/chinese_macbert_large DATA_PATH=data/cmrc2018 MODEL_PATH=runs/cmrc-large \
#     SIZE=large MIXED_PRECISION=bf16 bash scripts/launch_multi_gpu.sh scripts/run_cmrc2018.sh
#   NUM_GPUS=8 SUBSET=c3 PLM_PATH=... DATA_PATH=... bash scripts/launch_multi_gpu.sh scripts/lambda_sweep.sh
#
# LAUNCHER      accelerate (default) or torchrun
# NUM_GPUS      processes per machine (default: the GPUs nvidia-smi lists)
# NUM_MACHINES  default 1; with more, run the same command on every machine with its MACHINE_RANK
#               (0 on the main one) and MAIN_ADDR / MAIN_PORT (29500) of the main machine
# TRAIN_BATCH_SIZE keeps its meaning: the TOTAL over all GPUs and machines (32 by default), as in the
# original scripts, so results do not depend on how many devices ran them. DRY_RUN=1 prints the command.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"
usage_on_help "$@"
[ $# -ge 1 ] || die "usage: bash scripts/launch_multi_gpu.sh scripts/run_<subset>.sh|scripts/lambda_sweep.sh"
script=$1
shift
[ -f "$script" ] || die "$script: no such script"
if [ -z "${NUM_GPUS:-}" ]; then
  NUM_GPUS="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)"
  [ "${NUM_GPUS:-0}" != 0 ] || die "no GPU found by nvidia-smi; set NUM_GPUS"
fi
whole_number NUM_GPUS 1 64  # each number refused in one line, before anything is launched (_common.sh)
NUM_MACHINES="${NUM_MACHINES:-1}"
whole_number NUM_MACHINES 1 4096
machines="$NUM_MACHINES"
if [ "$machines" -gt 1 ]; then
  require MAIN_ADDR
  [[ "$MAIN_ADDR" =~ ^[[:alnum:]._:-]+$ ]] || die "MAIN_ADDR must be a host name or address, got '$MAIN_ADDR'"
  MACHINE_RANK="${MACHINE_RANK:-0}"
  whole_number MACHINE_RANK 0 $((machines - 1))
  MAIN_PORT="${MAIN_PORT:-29500}"
  whole_number MAIN_PORT 1 65535
fi
[[ "$PYTHON" != *[[:space:]]* ]] || die "PYTHON=$PYTHON: a path with a space, which the launch command cannot hold"
case "${LAUNCHER:-accelerate}" in
  accelerate)
    launch="$PYTHON -m accelerate.commands.launch --num_processes $((NUM_GPUS * machines)) --num_machines $machines"
    case "${MIXED_PRECISION:-auto}" in  # auto: the training script resolves it (bf16 on GPUs with bf16)
      auto) ;;
      *) launch+=" --mixed_precision $MIXED_PRECISION" ;;
    esac
    if [ $((NUM_GPUS * machines)) -gt 1 ]; then launch+=" --multi_gpu"; fi
    if [ "$machines" -gt 1 ]; then
      launch+=" --machine_rank $MACHINE_RANK --main_process_ip $MAIN_ADDR --main_process_port $MAIN_PORT"
    fi
    ;;
  torchrun)
    launch="$PYTHON -m torch.distributed.run --nproc_per_node $NUM_GPUS --nnodes $machines"
    if [ "$machines" -gt 1 ]; then
      launch+=" --node_rank $MACHINE_RANK --master_addr $MAIN_ADDR --master_port $MAIN_PORT"
    fi
    ;;
  *) die "LAUNCHER must be accelerate or torchrun, got '$LAUNCHER'" ;;
esac
LAUNCH="$launch" exec bash "$script" "$@"
