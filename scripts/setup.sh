#!/usr/bin/env bash
# Sets everything up in .venv: PyTorch 2.13.0 first unless .venv already has a torch (an unpinned
# torch would pull CUDA wheels),
# then this package with every extra (the test extra), then NLTK's Punkt data if it is not found where
# NLTK looks (NLTK_DATA first, then ~/nltk_data and the usual places). It fails if Punkt is still missing
# afterwards, since the scorer cannot run without it: offline, set NLTK_DATA to a folder holding
# tokenizers/punkt_tab before running it (and keep it set for the tests).
set -euo pipefail
source "$(dirname "$0")/_common.sh"
usage_on_help "$@"
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/python -m pip install -q "torch==2.13.0"
fi
.venv/bin/python -m pip install -q -e ".[test]"
has_punkt() { .venv/bin/python -c "import nltk; nltk.data.find('tokenizers/punkt_tab/english/')" 2>/dev/null; }
if ! has_punkt; then
  echo "NLTK Punkt data not found${NLTK_DATA:+ (NLTK_DATA=$NLTK_DATA)}; fetching it (python -m nltk.downloader punkt_tab)"
  # NLTK's downloader exits 0 even when the download failed, so look for the data again afterwards.
  .venv/bin/python -m nltk.downloader -q punkt_tab || true
  if ! has_punkt; then
    echo "error: NLTK's Punkt data (tokenizers/punkt_tab/english/) is missing and the download failed (offline?):" \
         "run 'export NLTK_DATA=/path/to/nltk_data' (a folder holding tokenizers/punkt_tab) and then" \
         "'bash scripts/setup.sh' again; or, where the network is reachable, '.venv/bin/python -m nltk.downloader punkt_tab'." >&2
    exit 1
  fi
fi
echo "ready: source .venv/bin/activate"
