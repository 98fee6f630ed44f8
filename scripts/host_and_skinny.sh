#!/usr/bin/env bash
# Issue 18's measurements in one run (H100/H200): host cost per eager call, zoo against torch;
# the skinny and small suites replayed from graphs with the automatic configs and with
# 128x128 forced; the same suites eager (wall clock per call); zoo batched. Logs in $OUT.
#   bash scripts/host_and_skinny.sh
set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
OUT=${OUT:-/tmp/zoo-out}; mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
python3 scripts/host_cost.py 2>&1 | tee "$OUT/host-cost.txt"
for suite in skinny small; do
  bin/zoo bench --suite $suite --json "$OUT/bench-$suite.json" --plot "$OUT/bench-$suite.png" 2>&1 | tail -26 > "$OUT/bench-$suite.txt"
  bin/zoo bench --suite $suite --config "${FORCE:-128x128}" --json "$OUT/bench-$suite-forced.json" 2>&1 | tail -26 > "$OUT/bench-$suite-forced.txt"
  bin/zoo bench --suite $suite --eager --iters 10 --json "$OUT/bench-$suite-eager.json" 2>&1 | tail -26 > "$OUT/bench-$suite-eager.txt"
done
bin/zoo bench --suite llm --eager --iters 10 --json "$OUT/bench-llm-eager.json" 2>&1 | tail -20 > "$OUT/bench-llm-eager.txt"
bin/zoo bench --suite square --json "$OUT/bench-square.json" 2>&1 | tail -8 > "$OUT/bench-square.txt"
bin/zoo bench --suite llm --json "$OUT/bench-llm.json" --plot "$OUT/bench-llm.png" 2>&1 | tail -20 > "$OUT/bench-llm.txt"
bin/zoo batched --pipeline --plot "$OUT/pipeline.png" --json "$OUT/pipeline.json" 2>&1 | tail -12 > "$OUT/pipeline.txt"
bin/zoo batched --json "$OUT/batched.json" 2>&1 | tail -14 > "$OUT/batched.txt"
python3 - "$OUT" <<'PY'
import json, sys, pathlib
for f in sorted(pathlib.Path(sys.argv[1]).glob("bench-*.json")):
    d = json.loads(f.read_text())
    rows = d.get("results", [])
    worst = min(rows, key=lambda r: r["pct_of_torch"]) if rows else None
    print(f"{f.stem:26s} geomean {d.get('geomean_pct_of_torch')}  worst {worst and (worst['m'], worst['n'], worst['k'], worst['config'], round(worst['pct_of_torch'], 1))}")
PY
tail -12 "$OUT/batched.txt"
