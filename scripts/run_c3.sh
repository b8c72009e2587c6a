#!/usr/bin/env bash
# ExpMRC C3 (Chinese, multiple choice): train on pseudo evidence, predict the dev set, with the
# original release's settings (batch 32 in total, 2 epochs, 512 tokens, learning rate 3e-5, lambda 0.1,
# do_lower_case True for a Chinese BERT/MacBERT release; a Hugging Face folder keeps its own
# casing).
#
#   PLM_PATH=models/chinese_macbert_base DATA_PATH=data/c3 MODEL_PATH=runs/c3-base \
#     LAMBDA=0.1 bash scripts/run_c3.sh
#
# PLM_PATH    the pre-trained model: an original TensorFlow release folder (bert_config.json, vocab.txt,
#             bert_model.ckpt.*) or a Hugging Face folder (for example from `expmrc convert-checkpoint`)
# DATA_PATH   folder holding train-pseudo-c3.json and expmrc-c3-dev.json
#             (or name the files with TRAIN_FILE and PREDICT_FILE)
# MODEL_PATH  the run directory; running the same command again resumes from its last checkpoint
# LAMBDA      weight of the evidence loss (default 0.1)
# SIZE        base (default) or large, e.g. chinese_macbert_large: the same hyper-parameters; large
#             accumulates 4 micro-batches per step of 32 so that 512 tokens fit on one device
# Optional:   as in run_squad.sh (SEED, DO_LOWER_CASE, TRAIN_BATCH_SIZE, ..., LAUNCH, EXTRA_ARGS, DRY_RUN=1).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"
no_arguments "$@"
run_subset c3 choice 0.1 True
