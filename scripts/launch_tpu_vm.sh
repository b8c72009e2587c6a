#!/usr/bin/env bash
# Run one of the training scripts on a Cloud TPU VM through accelerate's TPU launcher and torch_xla
# (PJRT runtime). Sets PJRT_DEVICE=TPU and --use_tpu=True; the script's own variables pass through.
# Install on the VM first: the project (bash scripts/setup.sh) plus the torch_xla wheel matching its torch.
#
#   PLM_PATH=models/chinese_macbert_base DATA_PATH=data/cmrc2018 MODEL_PATH=gs-mounted/runs/cmrc \
#     MIXED_PRECISION=bf16 bash scripts/launch_tpu_vm.sh scripts/run_cmrc2018.sh
#
# accelerate imports the training script and calls its main() in one process per TPU chip of this host
# (torch_xla's PJRT runtime decides; accelerate's TPU launcher passes no process count, so there is none to set).
# TRAIN_BATCH_SIZE stays the total over all TPU cores (32 by default), as with --use_tpu=True in the
# original scripts (--tpu_name and --tpu_zone are accepted and not needed on the VM itself).
# On a pod slice, run the same command on every worker, e.g.
#   gcloud compute tpus tpu-vm ssh NAME --zone ZONE --worker=all --command "cd expmrc && ... bash scripts/launch_tpu_vm.sh ..."
# DRY_RUN=1 prints the command.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"
usage_on_help "$@"
[ $# -ge 1 ] || die "usage: bash scripts/launch_tpu_vm.sh scripts/run_<subset>.sh|scripts/lambda_sweep.sh"
script=$1
shift
[ -f "$script" ] || die "$script: no such script"
export PJRT_DEVICE="${PJRT_DEVICE:-TPU}" USE_TPU=True
launch="$PYTHON -m accelerate.commands.launch --tpu --main_training_function main"
case "${MIXED_PRECISION:-auto}" in  # auto: the training script resolves it (bf16 on TPUs)
  auto) ;;
  *) launch+=" --mixed_precision $MIXED_PRECISION" ;;
esac
if [ -n "${TPU_NUM_PROCESSES:-}" ]; then
  echo "note: TPU_NUM_PROCESSES is not used: the TPU launcher runs one process per TPU chip" >&2
fi
LAUNCH="$launch" exec bash "$script" "$@"
