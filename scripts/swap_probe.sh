#!/usr/bin/env bash
# Development run on the device for the swap-AB tiles: their GPU correctness tests, then every
# (config, split-K) candidate of the small and skinny suites timed against torch.mm (zoo tune,
# its tuning file removed after so later runs keep the registry's choice). Logs in $OUT.
set -u
export PYTHONPATH=$PWD ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache} PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/zoo-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -m pytest -m gpu -q -rs tests/test_gpu.py -k "${TESTS:-16x128s or 32x64s or 64x64s or 32x128s or split_k or grouped_launches_every_config}" 2>&1 | tail -8 | tee "$OUT/swap-tests.txt"
# SHAPES="MxNxK,...": those shapes instead of the suites.
if [ -n "${SHAPES:-}" ]; then runs=shapes; else runs=${SUITES:-skinny small}; fi
for suite in $runs; do
  what="--suite $suite"; [ "$suite" = shapes ] && what="--shapes $SHAPES"
  bin/zoo tune $what --iters 30 --json "$OUT/tune-$suite.json" > "$OUT/tune-$suite.txt" 2>&1
  rm -f "$ZOO_CACHE_DIR"/tune-*.json
  python3 - "$OUT/tune-$suite.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for p in d["measured"]:
    rows = [r for r in p["rows"] if r["verified"]]
    best = {}
    for r in rows:
        best.setdefault(r["config"], r)  # rows are sorted fastest first
    bad = [r["name"] for r in p["rows"] if not r["verified"]]
    torch_us = rows[0]["torch_us"]
    print(f'{p["problem"]:<28} torch {torch_us:6.1f} | ' + "  ".join(f'{c}/{r["splits"] or "a"} {r["us"]:.1f}' for c, r in sorted(best.items(), key=lambda x: x[1]["us"])[:8]) + (f" | WRONG {bad}" if bad else ""))
PY
done
