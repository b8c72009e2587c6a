#!/usr/bin/env bash
# ExpMRC RACE+ (English, multiple choice): train on pseudo evidence, predict the dev set, with the
# original release's settings (batch 32 in total, 2 epochs, 512 tokens, learning rate 3e-5, lambda 0.1,
# do_lower_case False for the cased English BERT release; a Hugging Face folder keeps its own
# casing).
#
#   PLM_PATH=models/cased_L-12_H-768_A-12 DATA_PATH=data/race MODEL_PATH=runs/race-base \
#     LAMBDA=0.1 bash scripts/run_race.sh
#
# PLM_PATH    the pre-trained model: an original TensorFlow release folder (bert_config.json, vocab.txt,
#             bert_model.ckpt.*) or a Hugging Face folder (for example from `expmrc convert-checkpoint`)
# DATA_PATH   folder holding train-pseudo-race.json and expmrc-race-dev.json
#             (or name the files with TRAIN_FILE and PREDICT_FILE)
# MODEL_PATH  the run directory; running the same command again resumes from its last checkpoint
# LAMBDA      weight of the evidence loss (default 0.1)
# SIZE        base (default) or large, e.g. cased_L-24_H-1024_A-16: the same hyper-parameters; large
#             accumulates 4 micro-batches per step of 32 so that 512 tokens fit on one device
# Optional:   as in run_squad.sh (SEED, DO_LOWER_CASE, TRAIN_BATCH_SIZE, ..., LAUNCH, EXTRA_ARGS, DRY_RUN=1).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"
no_arguments "$@"
run_subset race choice 0.1 False
