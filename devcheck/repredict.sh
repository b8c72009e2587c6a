#!/usr/bin/env bash
# The GPU check of issue 31: does a saved bf16 CUDA run re-predict its own dev_predictions.json? On a machine with
# a GPU and no network, from the checkout's root, with the .devcarry/ folder devcheck/prepare.sh filled:
#
#   bash devcheck/repredict.sh "$OUT"            # about a minute on an H100 (BUDGET, default 150 s, caps it)
#   TINY=1 bash devcheck/repredict.sh /tmp/out   # the same steps at toy sizes on a CPU, to check the script itself
#
# 1. Set-up: NLTK from the carried wheel into WORK/site (default /tmp/repredict), a randomly initialised BERT-base
#    (all-MiniLM-L6-v2's vocabulary plus the CMRC 2018 characters it lacks; TINY: 2 layers of 64), the first
#    TRAIN_QUESTIONS (default 300; TINY 40) questions of the CMRC 2018 training set with pseudo evidence made by
#    `expmrc pseudo`, and the whole ExpMRC CMRC 2018 dev set (TINY: its first 8 articles).
# 2. Train: scripts/run_cmrc2018.sh as released (2 epochs, 512 tokens, batch 32, mixed precision auto: bf16 on a
#    GPU), which predicts the dev set at its end (WORK/run/dev_predictions.json). TINY: 6 steps of 8 at 128 tokens.
# 3. Re-predict the saved folder as a user would, in a new folder:
#      python baseline/run_se_mrc.py --model_name_or_path WORK/run/model --do_predict True \
#        --predict_file DEV --output_dir WORK/repredict --mixed_precision auto
#    (the settings and --predict_batch_size come from the model's record; the precision flag is the one the run was
#    given, as a predict-only run does not read it from the record), and through `FineTuned` (the library path
#    `expmrc faithfulness` predicts with, which reads the recorded precision) on the same device.
#    MIXED_PRECISION (default auto) goes to both runs: e.g. MIXED_PRECISION=bf16 TINY=1 runs bf16 autocast on a CPU.
# 4. Compare each re-prediction's dev_predictions.json and dev_nbest.json with the run's: byte-identical, or the
#    number of questions whose answer or evidence differs with examples. One paragraph goes to stdout and is appended
#    to OUT/summary.md; each step's output is in OUT/<step>.log and the three prediction files are copied into OUT.
# Exit status: 0 when both re-predictions are byte-identical to the run, 1 when they differ or a step failed.
set -uo pipefail
OUT="${1:?usage: bash devcheck/repredict.sh OUT_DIR}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
CARRY="${DEVCARRY:-$ROOT/.devcarry}"  # DEVCARRY: another folder of the same layout (the tests build one)
WORK="${WORK:-/tmp/repredict}"
TINY="${TINY:-0}"
BUDGET="${BUDGET:-150}"
if [ "$TINY" = 1 ]; then BUDGET="${TINY_BUDGET:-600}"; fi
DEADLINE=$(($(date +%s) + BUDGET))
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
SUMMARY="$OUT/summary.md"
PY="${PYTHON:-python3}"
for need in vocab.txt data/cmrc2018-train.json data/expmrc/cmrc2018/expmrc-cmrc2018-dev.json; do
  [ -f "$CARRY/$need" ] || { echo "error: $CARRY/$need is missing: run devcheck/prepare.sh and carry .devcarry" >&2; exit 2; }
done

# step NAME CMD...: run CMD with its output in OUT/NAME.log, killed when the budget is spent; fails the check on error
step() {
  local name=$1 left=$((DEADLINE - $(date +%s)))
  shift
  if [ "$left" -lt 5 ]; then echo "budget of ${BUDGET} s spent before $name" > "$OUT/$name.log"; return 1; fi
  echo "[$(date +%T)] $name (at most ${left} s)" >&2
  timeout -k 5 "$left" "$@" > "$OUT/$name.log" 2>&1
}
fail() {  # fail STEP: the summary names the step that failed and the end of its log
  local text
  text="repredict ($(date -u +%FT%TZ), TINY=$TINY): step $1 failed, nothing compared; the end of OUT/$1.log: $(tail -n 3 "$OUT/$1.log" | tr '\n' ' ')"
  echo "$text" | tee -a "$SUMMARY"
  exit 1
}

rm -rf "$WORK"
mkdir -p "$WORK/site" "$WORK/data"
if compgen -G "$CARRY/whl/*.whl" > /dev/null; then
  "$PY" - "$WORK/site" "$CARRY"/whl/*.whl <<'EOF'
import sys, zipfile
for wheel in sys.argv[2:]:
    zipfile.ZipFile(wheel).extractall(sys.argv[1])  # pure-Python wheels: unpacking is installing
EOF
fi
export PYTHONPATH="$WORK/site:$ROOT${PYTHONPATH:+:$PYTHONPATH}" PYTHON="$PY" PYTHONUNBUFFERED=1 TQDM_MININTERVAL=10
export NLTK_DATA="$CARRY/nltk_data" EXPMRC_CACHE="$WORK/cache" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export TOKENIZERS_PARALLELISM=false
MODEL="$WORK/bert" DATA="$WORK/data" RUN="$WORK/run" AGAIN="$WORK/repredict"
DEV="$DATA/expmrc-cmrc2018-dev.json"

step setup "$PY" - "$CARRY" "$MODEL" "$DATA" "$TINY" "${TRAIN_QUESTIONS:-}" <<'EOF' || fail setup
import json, shutil, sys
from pathlib import Path
import torch
from transformers import BertConfig, BertModel
carry, folder, data, tiny = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4] == "1"
wanted = int(sys.argv[5] or (40 if tiny else 300))
size = sum(1 for line in open(carry / "vocab.txt", encoding="utf-8") if line.strip())
shape = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128) if tiny else \
    dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072)
torch.manual_seed(0)
BertModel(BertConfig(vocab_size=size, max_position_embeddings=512, **shape)).save_pretrained(str(folder))
shutil.copy(carry / "vocab.txt", folder / "vocab.txt")
(folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True, "tokenizer_class": "BertTokenizer"}))
train = json.loads((carry / "data" / "cmrc2018-train.json").read_text(encoding="utf-8"))
articles, count = [], 0
for article in train["data"]:  # whole articles, until the slice holds the questions wanted
    if count >= wanted:
        break
    articles.append(article)
    count += sum(len(p["qas"]) for p in article["paragraphs"])
train["data"] = articles
(data / "train-slice.json").write_text(json.dumps(train, ensure_ascii=False), encoding="utf-8")
dev = json.loads((carry / "data" / "expmrc" / "cmrc2018" / "expmrc-cmrc2018-dev.json").read_text(encoding="utf-8"))
if tiny:
    dev["data"] = dev["data"][:8]
(data / "expmrc-cmrc2018-dev.json").write_text(json.dumps(dev, ensure_ascii=False), encoding="utf-8")
print(f"{count} training questions of {len(articles)} articles; model {'tiny' if tiny else 'BERT-base'}, {size} tokens")
EOF
step pseudo "$PY" -m expmrc.cli pseudo --subset cmrc2018 "$DATA/train-slice.json" \
  --output "$DATA/train-pseudo-cmrc2018.json" || fail pseudo

TINY_ARGS=""
if [ "$TINY" = 1 ]; then TINY_ARGS="--max_steps 6 --max_seq_length 128 --train_batch_size 8 --predict_batch_size 64"; fi
began=$(date +%s.%N)
step train env PLM_PATH="$MODEL" DATA_PATH="$DATA" MODEL_PATH="$RUN" EXTRA_ARGS="$TINY_ARGS" \
  bash scripts/run_cmrc2018.sh || fail train
TRAIN_WALL=$(awk -v a="$(date +%s.%N)" -v b="$began" 'BEGIN { printf "%.1f", a - b }')
began=$(date +%s.%N)
step repredict "$PY" baseline/run_se_mrc.py --model_name_or_path "$RUN/model" --do_predict True \
  --predict_file "$DEV" --output_dir "$AGAIN" --mixed_precision "${MIXED_PRECISION:-auto}" || fail repredict
AGAIN_WALL=$(awk -v a="$(date +%s.%N)" -v b="$began" 'BEGIN { printf "%.1f", a - b }')
step finetuned "$PY" - "$RUN" "$DEV" "$WORK/finetuned" <<'EOF' || fail finetuned
import sys
from expmrc.data.datasets import load_dataset
from expmrc.data.submissions import write_predictions
from expmrc.inference.rerun import FineTuned
model = FineTuned(sys.argv[1])
predicted = model.predict(load_dataset(sys.argv[2]).questions)
write_predictions(sys.argv[3], predicted.predictions, predicted.nbest)
print(f"FineTuned on {model.predictor.device}: {len(predicted.predictions)} questions, {predicted.windows} windows")
EOF
for name in run repredict finetuned; do cp "$WORK/$name/dev_predictions.json" "$OUT/$name.dev_predictions.json"; done

"$PY" - "$RUN" "$AGAIN" "$WORK/finetuned" "$TINY" "$TRAIN_WALL" "$AGAIN_WALL" <<'EOF' | tee -a "$SUMMARY"
import json, sys
from datetime import datetime, timezone
from pathlib import Path
import torch
run, again, finetuned, tiny, train_wall, again_wall = sys.argv[1:7]

def differences(theirs: Path, name: str) -> str:
    """'byte-identical', or how many questions differ (answer, evidence, n-best) with examples."""
    ours, mine = Path(run), Path(theirs)
    if all((ours / f).read_bytes() == (mine / f).read_bytes() for f in ("dev_predictions.json", "dev_nbest.json")):
        return f"{name}: dev_predictions.json and dev_nbest.json byte-identical"
    a, b = (json.loads((p / "dev_predictions.json").read_text(encoding="utf-8")) for p in (ours, mine))
    na, nb = (json.loads((p / "dev_nbest.json").read_text(encoding="utf-8")) for p in (ours, mine))
    answer = [q for q in a if a[q].get("answer") != b.get(q, {}).get("answer")]
    evidence = [q for q in a if a[q].get("evidence") != b.get(q, {}).get("evidence")]
    nbest = [q for q in na if na[q] != nb.get(q)]
    gap = max((abs(x["probability"] - y["probability"]) for q in na if q in nb for head in ("answer", "evidence")
               for x, y in zip(na[q][head], nb[q][head])), default=0.0)
    examples = "; ".join(f"{q}: {a[q]['answer']!r} vs {b.get(q, {}).get('answer')!r}" for q in answer[:3])
    return (f"{name}: DIFFERENT: answers differ in {len(answer)}, evidence in {len(evidence)}, n-best lists in "
            f"{len(nbest)} of {len(a)} questions (largest candidate probability gap {gap:.2g})"
            + (f"; e.g. {examples}" if examples else ""))

found = [differences(Path(again), "run_se_mrc.py --do_predict"), differences(Path(finetuned), "FineTuned")]
info = json.loads((Path(run) / "run_info.json").read_text(encoding="utf-8"))
again_info = json.loads((Path(again) / "run_info.json").read_text(encoding="utf-8"))
device = torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU"
timing = info.get("timing", {})
print(f"repredict ({datetime.now(timezone.utc):%Y-%m-%dT%H:%M:%SZ}, TINY={tiny}, {device}, torch {torch.__version__}): "
      f"scripts/run_cmrc2018.sh trained {info.get('global_step')} steps on {info['train_features']['questions']} "
      f"questions ({info['train_features']['windows']} windows, {info['settings']['max_seq_length']} tokens) in "
      f"{timing.get('train_seconds')} s (the whole run {train_wall} s), precision {info.get('mixed_precision')}, and "
      f"predicted {info['predict_features']['questions']} dev questions ({info['predict_features']['windows']} windows); "
      f"run_se_mrc.py --do_predict re-predicted the saved folder in {again_wall} s at precision "
      f"{again_info.get('mixed_precision')}. {found[0]}. {found[1]}.")
sys.exit(0 if all(line.endswith("byte-identical") for line in found) else 1)
EOF
