#!/usr/bin/env bash
# The streams mode with a stream's GEMMs chained as independent programmatic dependents: the
# new GPU test, the same test on the kernel without its wait before exiting (no-end-wait.diff),
# the streams mode in 10 / 5 / 3 / 2 / 1 streams from graphs (streams_floor.py), and zoo batched
# with its default and --streams 2.
#   bash results/h100-2026-11-25/session1/probes/chain.sh
set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
OUT=${OUT:-/tmp/zoo-out}; mkdir -p "$OUT"
cd "$(dirname "$0")/../../../.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
here=results/h100-2026-11-25/session1/probes
test=tests/test_gpu.py::test_streams_mode_keeps_stream_order_when_a_streams_gemms_overlap
python3 -m pytest -q -p no:cacheprovider $test 2>&1 | tail -3
echo "== without the wait before exiting"
patch -s -p1 < $here/no-end-wait.diff && python3 -m pytest -q -p no:cacheprovider $test 2>&1 | grep -E "passed|failed|assert" | head -5
patch -s -R -p1 < $here/no-end-wait.diff
python3 scripts/streams_floor.py auto auto/5 auto/3 auto/2 auto/1 2>&1 | grep -v -i warn | tee "$OUT/streams-floor.txt"
bin/zoo batched --json "$OUT/batched.json" 2>&1 | grep -E "^│|^\|" | cut -c1-150
bin/zoo batched --streams 2 --mode streams --json "$OUT/batched-s2.json" 2>&1 | grep -E "^│|^\|" | cut -c1-150
