#!/usr/bin/env bash
# Run the learning tests (pytest marker `learning`: a trained model must reach a figure) under several seeds
# and torch thread counts, since their figures depend on the floating-point path, then print for each test the
# lowest and highest value of every figure it records and which settings failed. Exit status 1 if any failed.
#
#   bash scripts/check_flaky.sh                      # seeds 0 1 2 x threads 1 2
#   SEEDS="0 1" THREADS="1" bash scripts/check_flaky.sh -k choice   # extra arguments go to pytest
#
# SEEDS    offsets added to every seed of the learning tests (EXPMRC_TEST_SEED; default "0 1 2", 0 = plain pytest)
# THREADS  torch threads (EXPMRC_TEST_THREADS; default "1 2", 1 = plain pytest)
# FIGURES  the JSON-lines file the tests append their figures to (default: a temporary file, removed at the end)
# Takes about 15 minutes per setting at 1 thread on a busy 2-core machine, more at 2 threads.
set -uo pipefail
source "$(dirname "$0")/_common.sh"
usage_on_help "$@"
cd "$REPO_ROOT" || exit 2
SEEDS="${SEEDS:-0 1 2}"
THREADS="${THREADS:-1 2}"
read -r -d '' -a seed_list <<< "$SEEDS" || true
read -r -d '' -a thread_list <<< "$THREADS" || true
[ "${#seed_list[@]}" -gt 0 ] && [ "${#thread_list[@]}" -gt 0 ] || die "SEEDS and THREADS must each name at least one value"
for seed in "${seed_list[@]}"; do  # each refused in one line before any test runs
  [[ "$seed" =~ ^[0-9]{1,6}$ ]] || die "SEEDS must be whole numbers from 0 to 999999 separated by spaces, got '$seed'"
done
for threads in "${thread_list[@]}"; do
  [[ "$threads" =~ ^[1-9][0-9]{0,2}$ ]] || die "THREADS must be whole numbers from 1 to 999 separated by spaces, got '$threads'"
done
if [ -n "${FIGURES:-}" ]; then
  : >"$FIGURES" || die "cannot write FIGURES=$FIGURES"
else
  FIGURES="$(mktemp "${TMPDIR:-/tmp}/expmrc-flaky-XXXXXX.jsonl")" || die "cannot create a temporary file"
  trap 'rm -f "$FIGURES"' EXIT
fi
failed=()
for seed in "${seed_list[@]}"; do
  for threads in "${thread_list[@]}"; do
    echo "== EXPMRC_TEST_SEED=$seed EXPMRC_TEST_THREADS=$threads" >&2
    start=$SECONDS
    if ! EXPMRC_TEST_SEED="$seed" EXPMRC_TEST_THREADS="$threads" EXPMRC_TEST_FIGURES="$FIGURES" \
        "$PYTHON" -m pytest -q -p no:cacheprovider -m learning "$@" >&2; then
      failed+=("seed $seed threads $threads")
    fi
    echo "== $((SECONDS - start)) s" >&2
  done
done
"$PYTHON" - "$FIGURES" <<'EOF'
import json
import sys
from collections import defaultdict

rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
by_test = defaultdict(list)
for row in rows:
    by_test[row["test"]].append(row)
for test, runs in by_test.items():
    print(f"{test}  ({len(runs)} runs)")
    for key in runs[0]["figures"]:
        values = [(r["figures"][key], r["seed"], r["threads"]) for r in runs if key in r["figures"]]
        low, high = min(values), max(values)
        print(f"    {key:32} min {low[0]:>8} (seed {low[1]}, {low[2]} thr)   max {high[0]:>8} "
              f"(seed {high[1]}, {high[2]} thr)")
EOF
if [ ${#failed[@]} -gt 0 ]; then
  printf 'FAILED under: %s\n' "${failed[@]}"
  exit 1
fi
echo "all learning tests passed under seeds {$SEEDS} x threads {$THREADS}"
