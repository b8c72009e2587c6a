#!/usr/bin/env bash
# Sets everything up in .venv: PyTorch 2.13.0 first unless .venv already has a torch (an unpinned
# torch would pull CUDA wheels), then this package with every extra (the test extra).
# NLTK's English Punkt tables, which the scorer needs, ship inside the package (expmrc/metrics/nltk_data,
# Apache 2.0): nothing is downloaded for them. They are looked for first, before anything is installed: a
# checkout that lacks them stops at once unless NLTK_DATA (or ~/nltk_data) holds tokenizers/punkt_tab/english.
set -euo pipefail
source "$(dirname "$0")/_common.sh"
no_arguments "$@"
cd "$(dirname "$0")/.."
PUNKT=tokenizers/punkt_tab/english
punkt_places() {  # the shipped copy, then where NLTK itself looks first (NLTK_DATA's folders, ~/nltk_data)
  echo "expmrc/metrics/nltk_data"
  local IFS=:
  for folder in ${NLTK_DATA:-}; do echo "$folder"; done
  echo "${HOME:-}/nltk_data"
}
found_punkt=""
while read -r folder; do
  if [ -n "$folder" ] && [ -f "$folder/$PUNKT/ortho_context.tab" ]; then found_punkt="$folder"; break; fi
done < <(punkt_places)
if [ -z "$found_punkt" ]; then
  echo "error: NLTK's English Punkt tables ($PUNKT) are missing: the package's copy" \
       "(expmrc/metrics/nltk_data/$PUNKT) is not in this checkout${NLTK_DATA:+ and NLTK_DATA=$NLTK_DATA has none};" \
       "restore it (git checkout -- expmrc/metrics/nltk_data) or set NLTK_DATA to a folder holding $PUNKT" >&2
  exit 1
fi
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/python -m pip install -q "torch==2.13.0"
fi
.venv/bin/python -m pip install -q -e ".[test]"
if ! .venv/bin/python -c "from expmrc.metrics.leaderboard import find_punkt; assert find_punkt()" 2>/dev/null; then
  echo "error: the installed expmrc finds no Punkt tables (looked in $found_punkt before installing)" >&2
  exit 1
fi
echo "ready: source .venv/bin/activate"
