#!/usr/bin/env bash
# Sets everything up in .venv: PyTorch 2.13.0 first unless .venv already has a torch (an unpinned
# torch would pull CUDA wheels),
# then this package with its test extras, then NLTK's Punkt data if it is not found.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/python -m pip install -q "torch==2.13.0"
fi
.venv/bin/python -m pip install -q -e ".[test]"
if ! .venv/bin/python -c "import nltk; nltk.data.find('tokenizers/punkt_tab/english/')" 2>/dev/null; then
  echo "NLTK Punkt data not found; fetching it (python -m nltk.downloader punkt_tab)"
  .venv/bin/python -m nltk.downloader -q punkt_tab || echo "warning: could not fetch punkt_tab; set NLTK_DATA to a folder that has it" >&2
fi
echo "ready: source .venv/bin/activate"
