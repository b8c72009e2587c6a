#!/usr/bin/env bash
# ExpMRC CMRC 2018 (Chinese, span extraction): train on pseudo evidence, predict the dev set, with the
# original release's settings (batch 32 in total, 2 epochs, 512 tokens, stride 128, answers up to 40
# tokens, learning rate 3e-5, lambda 0.01; a TensorFlow release is read with do_lower_case True, as for the
# Chinese BERT/MacBERT releases; a Hugging Face folder keeps its tokenizer's own casing).
#
#   PLM_PATH=models/chinese_macbert_base DATA_PATH=data/cmrc2018 MODEL_PATH=runs/cmrc2018-base \
#     LAMBDA=0.01 bash scripts/run_cmrc2018.sh
#
# PLM_PATH    the pre-trained model: an original TensorFlow release folder (bert_config.json, vocab.txt,
#             bert_model.ckpt.*) or a Hugging Face folder (for example from `expmrc convert-checkpoint`)
# DATA_PATH   folder holding train-pseudo-cmrc2018.json and expmrc-cmrc2018-dev.json
#             (or name the files with TRAIN_FILE and PREDICT_FILE)
# MODEL_PATH  the run directory; running the same command again resumes from its last checkpoint
# LAMBDA      weight of the evidence loss (default 0.01)
# SIZE        base (default) or large, e.g. chinese_macbert_large: the same hyper-parameters; large
#             accumulates 4 micro-batches per step of 32 so that 512 tokens fit on one device
# Optional:   as in run_squad.sh (SEED, DO_LOWER_CASE, TRAIN_BATCH_SIZE, ..., LAUNCH, EXTRA_ARGS, DRY_RUN=1).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"
no_arguments "$@"
run_subset cmrc2018 span 0.01 True
