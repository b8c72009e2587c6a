#!/usr/bin/env bash
# Reproduces Table 4 of the ExpMRC paper (evidence F1 of the two sentence oracles on the four dev
# sets, gold answers) and prints it as markdown with the paper's numbers beside ours.
# Needs the dev sets ($EXPMRC_DATA, or data/ after `expmrc download`) and NLTK's Punkt data.
# Extra arguments go to the report, e.g. `--subsets squad race`.
set -euo pipefail
source "$(dirname "$0")/_common.sh"  # PYTHON: .venv's when there is one
usage_on_help "$@"
cd "$REPO_ROOT"
exec "$PYTHON" -m expmrc.reports.evidence_tables table4 "$@"
