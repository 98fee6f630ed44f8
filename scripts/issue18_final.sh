#!/usr/bin/env bash
# Issue 18's targets in one run on the device, zoo and torch side by side (logs in $OUT): the
# skinny, small and square suites from graphs, the LLM suite eager, host cost per eager call,
# zoo batched (its streams mode from a graph), and the 10-stream launch floor.
#   bash scripts/issue18_final.sh
set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
OUT=${OUT:-/tmp/zoo-out}; mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
for suite in skinny small square; do
  bin/zoo bench --suite $suite --json "$OUT/bench-$suite.json" 2>&1 | grep -E "^│|geometric"
done
bin/zoo bench --suite llm --eager --json "$OUT/bench-llm-eager.json" 2>&1 | grep -E "^│|geometric"
python3 scripts/host_cost.py 2>&1 | grep -v -i warn > "$OUT/host-cost.txt"; head -14 "$OUT/host-cost.txt"
bin/zoo batched --json "$OUT/batched.json" 2>&1 | grep -E "^│|^\|" | cut -c1-150
python3 scripts/streams_floor.py 2>&1 | grep -v -i warn > "$OUT/streams-floor.txt"; head -9 "$OUT/streams-floor.txt"
