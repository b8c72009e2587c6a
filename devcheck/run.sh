#!/usr/bin/env bash
# The GPU check of issue 26, on a machine with a GPU and no network, from the checkout's root, with the
# .devcarry/ folder devcheck/prepare.sh filled:
#
#   bash devcheck/run.sh "$OUT"             # everything within BUDGET seconds (default 540)
#   TINY=1 bash devcheck/run.sh /tmp/out    # the same steps at toy sizes on a CPU, to check the script itself
#
# Set-up: NLTK from the carried wheel into /tmp/devcheck/site, a randomly initialised BERT-base (all-MiniLM-L6-v2's
# vocabulary; TINY: 2 layers of 64) and CMRC 2018 pseudo evidence made with `expmrc pseudo`. Then, in this order,
# each step with a time limit that never passes the budget, its output in OUT/<step>.log and its figures appended to
# OUT/summary.md as soon as it ends (a step that does not fit in what is left is skipped, and says so):
#   a1  scripts/run_cmrc2018.sh as released (2 epochs, 512 tokens, batch 32, bf16 auto), eager
#   a2  the same with --torch_compile True (length buckets), compiling timed apart
#   b   benchmarks/bench_sweep.py: 200-step CMRC 2018 runs, k = 1, 2, 3 side by side (lambda_sweep.sh RUNS_PER_GPU)
#   c   benchmarks/bench_gpu.py part 1: BERT-base span and choice, bf16, eager, ours against the library's heads
#   d   if time is left: a2 again (the compiled kernels now in the machine's inductor cache, as for a sweep's later runs)
#   e   if time is left: a2 with --torch_compile_mode reduce-overhead (CUDA graphs)
set -uo pipefail
OUT="${1:?usage: bash devcheck/run.sh OUT_DIR}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
CARRY="$ROOT/.devcarry"
WORK="${WORK:-/tmp/devcheck}"
TINY="${TINY:-0}"
START=$(date +%s)
BUDGET="${BUDGET:-540}"
if [ "$TINY" = 1 ]; then BUDGET="${TINY_BUDGET:-3000}"; fi
DEADLINE=$((START + BUDGET))
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
SUMMARY="$OUT/summary.md"
[ -d "$CARRY/whl" ] || { echo "error: $CARRY is missing: run devcheck/prepare.sh and carry .devcarry" >&2; exit 2; }

note() { echo "$*" | tee -a "$SUMMARY"; }
left() { echo $((DEADLINE - $(date +%s))); }

# run_step NAME CAP MIN CMD...: run CMD in its own process group, output in OUT/NAME.log, for at most CAP seconds
# and never past the budget; skipped when less than MIN seconds are left. Sets STEP_STATUS and STEP_WALL.
run_step() {
  local name=$1 cap=$2 least=$3 pid began now limit
  shift 3
  limit=$(left)
  if [ "$limit" -lt "$least" ]; then
    note "- $name: skipped, ${limit} s left of the budget (needs ${least})"
    STEP_STATUS=skipped STEP_WALL=0
    return
  fi
  if [ "$cap" -lt "$limit" ]; then limit=$cap; fi
  echo "[$(date +%T)] $name: starting, at most ${limit} s" >&2
  began=$(date +%s.%N)
  "$PY" -c 'import os, sys; os.setsid(); os.execvp(sys.argv[1], sys.argv[1:])' "$@" > "$OUT/$name.log" 2>&1 &
  pid=$!
  STEP_STATUS=""
  while kill -0 "$pid" 2>/dev/null; do
    now=$(date +%s.%N)
    if awk -v a="$now" -v b="$began" -v l="$limit" 'BEGIN { exit !(a - b > l) }'; then
      kill -TERM -- "-$pid" 2>/dev/null; sleep 5; kill -KILL -- "-$pid" 2>/dev/null
      STEP_STATUS="timed out after ${limit} s"
      break
    fi
    sleep 1
  done
  wait "$pid"; local status=$?
  STEP_WALL=$(awk -v a="$(date +%s.%N)" -v b="$began" 'BEGIN { printf "%.1f", a - b }')
  STEP_STATUS="${STEP_STATUS:-exit $status}"
  echo "[$(date +%T)] $name: $STEP_STATUS, ${STEP_WALL} s" >&2
}

# ---- set-up --------------------------------------------------------------------------------------------------
rm -rf "$WORK"
mkdir -p "$WORK/site" "$WORK/data/cmrc2018" "$WORK/runs"
PY="${PYTHON:-python3}"
"$PY" - "$WORK/site" "$CARRY"/whl/*.whl <<'EOF'
import sys, zipfile
for wheel in sys.argv[2:]:
    zipfile.ZipFile(wheel).extractall(sys.argv[1])  # pure-Python wheels: unpacking is installing
EOF
export PYTHONPATH="$WORK/site:$ROOT${PYTHONPATH:+:$PYTHONPATH}" PYTHON="$PY" PYTHONUNBUFFERED=1 TQDM_MININTERVAL=10
export NLTK_DATA="$CARRY/nltk_data" EXPMRC_DATA="$CARRY/data/expmrc" EXPMRC_TRAIN_DATA="$CARRY/data"
export EXPMRC_CACHE="$WORK/cache" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# compiled kernels cached under WORK, emptied above: a2 compiles from nothing, d from what a2 left
export TORCHINDUCTOR_CACHE_DIR="$WORK/inductor" TRITON_CACHE_DIR="$WORK/triton"
DEV="$CARRY/data/expmrc/cmrc2018/expmrc-cmrc2018-dev.json"
TRAIN="$CARRY/data/cmrc2018-train.json"
MODEL="$WORK/bert"
DATA="$WORK/data/cmrc2018"

{
  echo "# issue 26 device check ($(date -u +%FT%TZ)), TINY=$TINY, budget ${BUDGET} s"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/- GPU: /'
  "$PY" -c 'import sys, torch, transformers; print(f"- python {sys.version.split()[0]}, torch {torch.__version__}, transformers {transformers.__version__}, cuda {torch.cuda.is_available()}")'
  echo "- checkout $(git rev-parse --short HEAD 2>/dev/null || echo '?'); $(nproc) CPU cores"
} | tee "$SUMMARY"

"$PY" - "$CARRY/vocab.txt" "$MODEL" "$TINY" "$TRAIN" "$DEV" "$DATA" <<'EOF' 2>&1 | tee -a "$SUMMARY"
import json, shutil, sys, time
from pathlib import Path
import torch
from transformers import BertConfig, BertModel
from transformers.utils import logging
logging.disable_progress_bar()
vocab, folder, tiny, train, dev, data = sys.argv[1], Path(sys.argv[2]), sys.argv[3] == "1", sys.argv[4], sys.argv[5], Path(sys.argv[6])
began = time.perf_counter()
size = sum(1 for line in open(vocab, encoding="utf-8") if line.strip())
shape = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128) if tiny else \
    dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072)
torch.manual_seed(0)
BertModel(BertConfig(vocab_size=size, max_position_embeddings=512, **shape), add_pooling_layer=True).save_pretrained(str(folder))
shutil.copy(vocab, folder / "vocab.txt")
(folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True, "tokenizer_class": "BertTokenizer"}))
dev_target = data / "expmrc-cmrc2018-dev.json"
if tiny:  # the first articles only, so the checks of the script finish in minutes on a CPU
    for source, target, count in ((train, data / "train-cut.json", 40), (dev, dev_target, 8)):
        doc = json.load(open(source, encoding="utf-8"))
        doc["data"] = doc["data"][:count]
        json.dump(doc, open(target, "w", encoding="utf-8"), ensure_ascii=False)
else:
    shutil.copy(dev, dev_target)
print(f"- model: random {'tiny' if tiny else 'BERT-base'} BERT, {size} tokens (all-MiniLM-L6-v2's vocabulary and "
      "the CMRC 2018 characters it lacks), "
      f"built in {time.perf_counter() - began:.1f} s")
EOF
PSEUDO_FROM="$TRAIN"
if [ "$TINY" = 1 ]; then PSEUDO_FROM="$DATA/train-cut.json"; fi
run_step setup-pseudo 120 10 "$PY" -m expmrc.cli pseudo --subset cmrc2018 "$PSEUDO_FROM" \
  --output "$DATA/train-pseudo-cmrc2018.json"
note "- pseudo evidence: $STEP_STATUS, ${STEP_WALL} s ($(tail -n 2 "$OUT/setup-pseudo.log" | head -n 1 | tr -d '\r'))"
[ -f "$DATA/train-pseudo-cmrc2018.json" ] || { note "no training data: stopping"; exit 1; }

# figures of one run of the release script, from its run_info.json and the last score line of its log
run_figures() {  # run_figures NAME RUN_DIR
  if [ "$STEP_STATUS" = skipped ]; then return; fi
  "$PY" - "$1" "$2" "$OUT/$1.log" "$STEP_STATUS" "$STEP_WALL" <<'EOF' | tee -a "$SUMMARY"
import json, sys
from pathlib import Path
name, run, log, status, wall = sys.argv[1:6]
try:
    info = json.loads((Path(run) / "run_info.json").read_text())
except (OSError, ValueError):
    info = {}
t = info.get("timing", {})
scores = [l for l in Path(log).read_text(errors="replace").splitlines() if "answer F1" in l]
print(f"- {name}: {status}, wall {wall} s; run status {info.get('status', '?')}, {info.get('global_step', '?')} steps, "
      f"precision {info.get('mixed_precision', '?')}; training {t.get('train_seconds', '?')} s, of it compiling "
      f"{t.get('compile_seconds', '?')} s (shapes {t.get('compiled_shapes', [])}), checkpoints "
      f"{t.get('checkpoint_seconds', '?')} s" + (f"; {scores[-1].split(': ', 1)[-1]}" if scores else ""))
EOF
  cp "$2/run_info.json" "$OUT/$1.run_info.json" 2>/dev/null
}

release_run() {  # release_run NAME CAP MIN EXTRA_ARGS: scripts/run_cmrc2018.sh into WORK/runs/NAME
  local extra="$4"
  if [ "$TINY" = 1 ]; then extra="--max_steps 6 --max_seq_length 128 --train_batch_size 8 --predict_batch_size 64 $extra"; fi
  run_step "$1" "$2" "$3" env PLM_PATH="$MODEL" DATA_PATH="$DATA" MODEL_PATH="$WORK/runs/$1" EXTRA_ARGS="$extra" \
    bash scripts/run_cmrc2018.sh
  run_figures "$1" "$WORK/runs/$1"
}

# ---- a: the release's CMRC 2018 run, eager, then compiled ---------------------------------------------------------
note ""
note "## a. scripts/run_cmrc2018.sh (2 epochs, 512 tokens, batch 32, mixed precision auto)"
release_run a1-eager 170 60 ""
release_run a2-compiled 230 90 "--torch_compile True"

# ---- b: packing --------------------------------------------------------------------------------------------------
note ""
note "## b. k runs side by side on one GPU: benchmarks/bench_sweep.py (lambda_sweep.sh RUNS_PER_GPU=k)"
if [ "$TINY" = 1 ]; then SWEEP=(--tiny --steps 3); else SWEEP=(--steps "${SWEEP_STEPS:-200}"); fi
run_step b-packing 200 100 "$PY" benchmarks/bench_sweep.py --plm "$MODEL" --data "cmrc2018=$DATA" "${SWEEP[@]}" \
  --packing 1,2,3 --no-warm --timeout 120 --output-root "$WORK/runs/sweep" --json "$OUT/b-packing.json"
note "- b-packing: $STEP_STATUS, ${STEP_WALL} s"
grep '^|\|^full sweep\|^not measured' "$OUT/b-packing.log" | tee -a "$SUMMARY"

# ---- c: bench_gpu.py part 1 ----------------------------------------------------------------------------------------
note ""
note "## c. benchmarks/bench_gpu.py part 1 (BERT-base, 512 tokens, 32 sequences, bf16, eager)"
if [ "$TINY" = 1 ]; then BENCH=(--tiny --steps 2 --repeats 2 --max-warmup 3); else BENCH=(--shapes base --steps 10 --repeats 3); fi
run_step c-bench-gpu 100 40 "$PY" benchmarks/bench_gpu.py "${BENCH[@]}" --tasks span,choice --precisions bf16 \
  --compile off --skip-epoch
note "- c-bench-gpu: $STEP_STATUS, ${STEP_WALL} s"
grep '^|\|^device\|^steps' "$OUT/c-bench-gpu.log" | tee -a "$SUMMARY"

# ---- d, e: what is left of the budget --------------------------------------------------------------------------
note ""
note "## d, e. with the time left"
release_run d-compiled-warm-cache 150 100 "--torch_compile True"
release_run e-compiled-cuda-graphs 200 120 "--torch_compile True --torch_compile_mode reduce-overhead"
note ""
note "total $(( $(date +%s) - START )) s of the ${BUDGET} s budget"
