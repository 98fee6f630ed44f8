#!/usr/bin/env bash
# Stream-K on the device: its GPU tests, then on against off side by side with torch.mm
# (scripts/stream_k_probe.py), then the square and LLM suites as zoo bench runs them.
#   bash scripts/stream_k_check.sh
set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
OUT=${OUT:-/tmp/zoo-out}; mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
bin/test -m gpu -q -rs -k "stream_k or split_k or 128x256 or repeated_calls" 2>&1 | tail -4
python3 scripts/stream_k_probe.py --json "$OUT/stream-k-probe.json" 2>&1 | grep -v -i warn
bin/zoo bench --suite square --json "$OUT/bench-square.json" 2>&1 | grep -E "^│|geometric"
