#!/usr/bin/env bash
# ExpMRC SQuAD (English, span extraction): train on pseudo evidence, predict the dev set, with the
# original release's settings (batch 32 in total, 2 epochs, 512 tokens, stride 128, answers up to 40
# tokens, learning rate 3e-5, lambda 0.01; a TensorFlow release is read with do_lower_case False, for
# the cased English BERT; a Hugging Face folder keeps its tokenizer's own casing).
#
#   PLM_PATH=models/cased_L-12_H-768_A-12 DATA_PATH=data/squad MODEL_PATH=runs/squad-base \
#     LAMBDA=0.01 bash scripts/run_squad.sh
#
# PLM_PATH    the pre-trained model: an original TensorFlow release folder (bert_config.json, vocab.txt,
#             bert_model.ckpt.*) or a Hugging Face folder (for example from `expmrc convert-checkpoint`)
# DATA_PATH   folder holding train-pseudo-squad.json and expmrc-squad-dev.json
#             (or name the files with TRAIN_FILE and PREDICT_FILE)
# MODEL_PATH  the run directory; running the same command again resumes from its last checkpoint
# LAMBDA      weight of the evidence loss (default 0.01)
# SIZE        base (default) or large, e.g. cased_L-24_H-1024_A-16: the same hyper-parameters; large
#             accumulates 4 micro-batches per step of 32 so that 512 tokens fit on one device
# Optional:   SEED (12345), DO_LOWER_CASE (a TensorFlow release: False by default, True for an uncased
#             one; a Hugging Face folder follows its tokenizer unless this is set), TRAIN_BATCH_SIZE (32,
#             total over all devices), PREDICT_BATCH_SIZE, NUM_TRAIN_EPOCHS, MAX_SEQ_LENGTH, DOC_STRIDE,
#             MAX_QUERY_LENGTH (64), MAX_ANSWER_LENGTH, LEARNING_RATE, SAVE_CHECKPOINTS_STEPS,
#             GRADIENT_ACCUMULATION_STEPS, MIXED_PRECISION (auto|no|fp16|bf16; auto: bf16 on GPUs and
#             TPUs, FP32 on CPU), USE_TPU, EXTRA_ARGS (more flags, appended last),
#             LAUNCH (the launcher, default the project's python; see launch_multi_gpu.sh),
#             DRY_RUN=1 prints the command instead of running it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"
no_arguments "$@"
run_subset squad span 0.01 False
