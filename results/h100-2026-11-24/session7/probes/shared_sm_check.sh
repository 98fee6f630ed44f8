#!/usr/bin/env bash
# Two blocks per SM (configs with blocks_per_sm: 2) on the device, seventh session: their GPU
# tests, the streams and batched modes with them side by side with torch.bmm, then 4096^3 by
# zoo bench's method (an idle GPU before each call) with and without clusters, and the kernel
# cuBLAS runs there.
#   bash scripts/shared_sm_check.sh
set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
OUT=${OUT:-/tmp/zoo-out}; mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
bin/test -m gpu -q -rs tests/test_gpu.py -k "every_config_every_shape or occupancy or grouped_launches_every_config or batched_tensor_maps or every_mode" 2>&1 | tail -4
python3 scripts/streams_floor.py auto 128x192b2 128x128b2 2>&1 | grep -v -i warn > "$OUT/streams-floor.txt"; cat "$OUT/streams-floor.txt" | cut -c1-300
for cfg in 128x192pp 128x192b2 128x128b2; do
  bin/zoo batched --mode all --config $cfg --json "$OUT/batched-$cfg.json" 2>&1 | grep -E "^│" | cut -c1-110
done
for cfg in 128x256 128x256c2; do
  bin/zoo bench --shapes 4096x4096x4096,8192x8192x8192 --config $cfg --iters 40 --json "$OUT/bench-4096-$cfg.json" 2>&1 | grep -E "^│"
done
python3 scripts/kernel_names.py 4096x4096x4096 8192x8192x8192 2>&1 | grep -v -i warn
