#!/usr/bin/env bash
# The GPU check of issue 40 (training steps replayed as CUDA graphs at token buckets, where a run's time goes, the
# sweep planned from measured steps, start-up and packing), on a machine with a GPU and no network, from the
# checkout's root, with the .devcarry/ folder devcheck/prepare.sh filled:
#
#   bash devcheck/run.sh "$OUT"             # everything within BUDGET seconds (default 420: one call of 8 minutes,
#                                           # timeout_s 480, carrying .devcarry)
#   TINY=1 bash devcheck/run.sh /tmp/out    # the same steps at toy sizes on a CPU, to check the script itself
#   STEPS="g d" bash devcheck/run.sh "$OUT" # only the steps named (the set-up always), e.g. a second call
#
# Set-up: NLTK from the carried wheel into /tmp/devcheck/site, a randomly initialised BERT-base (all-MiniLM-L6-v2's
# vocabulary and the CMRC 2018 characters it lacks; TINY: 2 layers of 64) and the carried CMRC 2018 pseudo evidence.
# Then, in order of value, each step with a time limit that never passes the budget, its output in OUT/<step>.log
# and its figures appended to OUT/summary.md and stdout as soon as it ends (a step that does not fit in what is left
# is skipped, and says so); every figure names the device:
#   ab  benchmarks/bench_unpadded.py: BERT-base bf16 training steps at the CMRC 2018 run's real window lengths
#       (length-grouped batches of 32) on the padded path, the unpadded path and the unpadded path replayed as CUDA
#       graphs, MFU on real tokens; first, the unpadded path's logits against the padded path's, and 12 graphed
#       steps (dropout on) against the same steps eager at the same layout
#   c1  scripts/run_cmrc2018.sh as released (2 epochs, 512 tokens, batch 32, bf16 auto): --cuda_graphs auto, so
#       graphed; its run_info.json says where the time went (timing.phases) and what the graphs did
#   c2  the same with --cuda_graphs off (last round's unpadded eager path)
#   c3  the same with --attention padded --cuda_graphs off (the library's padded forward)
#   g   benchmarks/bench_subset_steps.py: each subset's steps at its real window lengths (graphed, as a run takes
#       them), its dev-set prediction; benchmarks/bench_sweep.py: 1, 2 and 3 short release runs side by side (the
#       packing gain, graphed); benchmarks/bench_sweep_model.py: the λ sweep's GPU-hours planned from the steps,
#       c1's measured start-up (--run-record) and the measured packing
#   d   benchmarks/profile_step.py: where a step's time goes, unpadded eager and graphed
# At the end every file but summary.md is packed into OUT/logs.tgz (few files come back from a device machine).
set -uo pipefail
OUT="${1:?usage: bash devcheck/run.sh OUT_DIR}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
CARRY="$ROOT/.devcarry"
WORK="${WORK:-/tmp/devcheck}"
TINY="${TINY:-0}"
START=$(date +%s)
BUDGET="${BUDGET:-420}"
if [ "$TINY" = 1 ]; then BUDGET="${TINY_BUDGET:-3000}"; fi
DEADLINE=$((START + BUDGET))
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
SUMMARY="$OUT/summary.md"
[ -d "$CARRY/whl" ] || { echo "error: $CARRY is missing: run devcheck/prepare.sh and carry .devcarry" >&2; exit 2; }

note() { echo "$*" | tee -a "$SUMMARY"; }
left() { echo $((DEADLINE - $(date +%s))); }

# run_step NAME CAP MIN CMD...: run CMD in its own process group, output in OUT/NAME.log, for at most CAP seconds
# (TINY: 6 CAP, as a loaded CPU is slow) and never past the budget; skipped when less than MIN seconds are left.
# Sets STEP_STATUS and STEP_WALL.
run_step() {
  local name=$1 cap=$2 least=$3 pid began now limit
  shift 3
  if [ "$TINY" = 1 ]; then cap=$((6 * cap)); fi
  if [ -n "${STEPS:-}" ] && [[ " $STEPS " != *" ${name%%-*} "* ]]; then
    note "- $name: not in STEPS"
    STEP_STATUS=skipped STEP_WALL=0
    return
  fi
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
export TORCHINDUCTOR_CACHE_DIR="$WORK/inductor" TRITON_CACHE_DIR="$WORK/triton"
DEV="$CARRY/data/expmrc/cmrc2018/expmrc-cmrc2018-dev.json"
PSEUDO="$CARRY/data/train-pseudo-cmrc2018.json"
MODEL="$WORK/bert"
DATA="$WORK/data/cmrc2018"

{
  echo "# issue 40 device check ($(date -u +%FT%TZ)), TINY=$TINY, budget ${BUDGET} s"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/- GPU: /'
  "$PY" -c 'import sys, torch, transformers; print(f"- python {sys.version.split()[0]}, torch {torch.__version__}, transformers {transformers.__version__}, cuda {torch.cuda.is_available()}")'
  echo "- checkout $(git rev-parse --short HEAD 2>/dev/null || echo '?'); $(nproc) CPU cores"
} | tee "$SUMMARY"

"$PY" - "$CARRY/vocab.txt" "$MODEL" "$TINY" "$PSEUDO" "$DEV" "$DATA" <<'EOF' 2>&1 | tee -a "$SUMMARY"
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
if tiny:  # the first articles only, so the checks of the script finish in minutes on a CPU
    for source, target, count in ((train, data / "train-pseudo-cmrc2018.json", 40), (dev, data / "expmrc-cmrc2018-dev.json", 8)):
        doc = json.load(open(source, encoding="utf-8"))
        doc["data"] = doc["data"][:count]
        json.dump(doc, open(target, "w", encoding="utf-8"), ensure_ascii=False)
else:
    shutil.copy(train, data / "train-pseudo-cmrc2018.json")
    shutil.copy(dev, data / "expmrc-cmrc2018-dev.json")
print(f"- model: random {'tiny' if tiny else 'BERT-base'} BERT, {size} tokens (all-MiniLM-L6-v2's vocabulary and "
      "the CMRC 2018 characters it lacks), built in "
      f"{time.perf_counter() - began:.1f} s; CMRC 2018 pseudo evidence carried from devcheck/prepare.sh")
EOF
[ -f "$DATA/train-pseudo-cmrc2018.json" ] || { note "no training data: stopping"; exit 1; }
TRAIN="$DATA/train-pseudo-cmrc2018.json"

# figures of one run of the release script: its run_info.json (training, graphs, where the rest of the time went)
# and the last score line of its log
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
t, a, g = info.get("timing", {}), info.get("attention", {}), info.get("cuda_graphs", {})
phases = t.get("phases", {})
scores = [l for l in Path(log).read_text(errors="replace").splitlines() if "answer F1" in l]
graphs = (f"graphs {g.get('graphs')} captured in {g.get('capture_seconds')} s over buckets "
          f"{(g.get('buckets') or {}).get('buckets')} ({100 * g.get('padding', 0):.1f}% padding), {g.get('eager_steps')} "
          f"steps eager" if g.get("used") else f"graphs off ({g.get('why', '?')})")
rest = ", ".join(f"{k} {v}" for k, v in phases.items() if k not in ("training", "wall"))
print(f"- {name}: {status}, wall {wall} s; run status {info.get('status', '?')}, {info.get('global_step', '?')} steps, "
      f"precision {info.get('mixed_precision', '?')}, attention {a.get('path', '?')}; training {t.get('train_seconds', '?')} s"
      f" ({graphs}), checkpoints {t.get('checkpoint_seconds', '?')} s; process {phases.get('wall', '?')} s, outside "
      f"training: {rest}; {t.get('device', '?')}" + (f"; {scores[-1].split(': ', 1)[-1]}" if scores else ""))
EOF
  cp "$2/run_info.json" "$OUT/$1.run_info.json" 2>/dev/null
}

TINY_ARGS=""
if [ "$TINY" = 1 ]; then TINY_ARGS="--max_steps 6 --max_seq_length 128 --train_batch_size 8 --predict_batch_size 64"; fi
release_run() {  # release_run NAME CAP MIN EXTRA_ARGS: scripts/run_cmrc2018.sh into WORK/runs/NAME
  local extra="$TINY_ARGS $4"
  run_step "$1" "$2" "$3" env PLM_PATH="$MODEL" DATA_PATH="$DATA" MODEL_PATH="$WORK/runs/$1" EXTRA_ARGS="$extra" \
    bash scripts/run_cmrc2018.sh
  run_figures "$1" "$WORK/runs/$1"
}

# ---- ab: steps at the real window lengths: padded, unpadded, graphs -------------------------------------------------
note ""
note "## ab. benchmarks/bench_unpadded.py (BERT-base, bf16, CMRC 2018 windows at 512 tokens, batches of 32)"
if [ "$TINY" = 1 ]; then UNPAD=(--tiny --questions 16); else UNPAD=(--questions 1200 --steps 10 --repeats 3 --warmup 4); fi
run_step ab-steps 110 50 "$PY" benchmarks/bench_unpadded.py --tokenizer "$MODEL" --train "$TRAIN" \
  --cases padded,unpadded,graphs "${UNPAD[@]}"
[ "$STEP_STATUS" = skipped ] || note "- ab-steps: $STEP_STATUS, ${STEP_WALL} s"
[ -f "$OUT/ab-steps.log" ] && grep '^|\|^device\|^agreement\|^- \|throughput\|^graphs' "$OUT/ab-steps.log" | tee -a "$SUMMARY"

# ---- c: the release's CMRC 2018 run: graphed, unpadded eager, padded eager -----------------------------------------
note ""
note "## c. scripts/run_cmrc2018.sh (2 epochs, 512 tokens, batch 32, mixed precision auto)"
release_run c1-graphs 90 40 ""
release_run c2-unpadded 90 50 "--cuda_graphs off"
release_run c3-padded 100 60 "--attention padded --cuda_graphs off"

# ---- g: each subset's steps, the packing gain, and the sweep planned from them ------------------------------------
note ""
note "## g. benchmarks/bench_subset_steps.py (BERT-base, bf16, each subset's release settings, graphed), bench_sweep.py (packing), bench_sweep_model.py"
if [ "$TINY" = 1 ]; then SUBSET_STEPS=(--tiny --sample-steps 2 --warmup-steps 1 --questions 20); else SUBSET_STEPS=(--budget 70); fi
run_step g-subset-steps 110 45 "$PY" benchmarks/bench_subset_steps.py --vocab "$CARRY/vocab.txt" \
  "${SUBSET_STEPS[@]}" --train "cmrc2018=$TRAIN" --train "c3=$CARRY/data/c3-train.json" --json "$OUT/g-subset-steps.json"
[ "$STEP_STATUS" = skipped ] || note "- g-subset-steps: $STEP_STATUS, ${STEP_WALL} s"
[ -f "$OUT/g-subset-steps.log" ] && grep '^|\|^device\|^not measured\|^total' "$OUT/g-subset-steps.log" | tee -a "$SUMMARY"
if [ "$TINY" = 1 ]; then PACK=(--tiny --plm "$MODEL" --steps 3); else PACK=(--plm "$MODEL" --steps 100); fi
run_step g-packing 90 45 "$PY" benchmarks/bench_sweep.py "${PACK[@]}" --data "cmrc2018=$DATA" --packing 1,2,3 --no-warm \
  --json "$OUT/g-packing.json"
[ "$STEP_STATUS" = skipped ] || note "- g-packing: $STEP_STATUS, ${STEP_WALL} s"
[ -f "$OUT/g-packing.log" ] && grep '^|\|^device\|^cmrc2018, k runs' "$OUT/g-packing.log" | tee -a "$SUMMARY"
if [ -f "$OUT/g-subset-steps.json" ]; then
  PLAN=(--steps "$OUT/g-subset-steps.json")
  [ -f "$OUT/g-packing.json" ] && PLAN+=(--packing "base=$OUT/g-packing.json")
  [ -f "$OUT/c1-graphs.run_info.json" ] && PLAN+=(--run-record "cmrc2018=$OUT/c1-graphs.run_info.json")
  "$PY" benchmarks/bench_sweep_model.py "${PLAN[@]}" > "$OUT/g-sweep-model.log" 2>&1
  tee -a "$SUMMARY" < "$OUT/g-sweep-model.log"
fi

# ---- d: where a step's time goes, eager and graphed -----------------------------------------------------------------
note ""
note "## d. benchmarks/profile_step.py (shares of a step's wall time, profiler on)"
if [ "$TINY" = 1 ]; then PROFILE=(--questions 40 --seq 128 --batch 4 --steps 2 --warmup 3 --top 0);
else PROFILE=(--shape base --seq 512 --batch 32 --questions 600 --steps 3 --warmup 3 --top 15); fi
run_step d-profile 70 35 "$PY" benchmarks/profile_step.py --tokenizer "$MODEL" --train "$TRAIN" \
  --variants unpadded,graphs "${PROFILE[@]}"
[ "$STEP_STATUS" = skipped ] || note "- d-profile: $STEP_STATUS, ${STEP_WALL} s"
[ -f "$OUT/d-profile.log" ] && grep '^unpadded\|^graphs\|^building\|^device' "$OUT/d-profile.log" | tee -a "$SUMMARY"
note ""
note "total $(( $(date +%s) - START )) s of the ${BUDGET} s budget"
# few files come back from the device machine: everything but the summary in one archive
( cd "$OUT" && tar czf "$WORK/logs.tgz" --exclude=summary.md . && mv "$WORK/logs.tgz" . && \
  find . -mindepth 1 ! -name logs.tgz ! -name summary.md -delete )
