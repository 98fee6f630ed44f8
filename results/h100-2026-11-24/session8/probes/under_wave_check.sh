#!/usr/bin/env bash
# Stream-K for grids under one wave (registry.STREAM_K_UNDER_WAVE_FILL), eighth session: the
# GPU tests of stream-K; on against off for the same launch (scripts/stream_k_probe.py) at
# 65-88% of the CTAs with swap-AB, ping-pong and cooperative tiles; the configs for 128 rows
# of 11008-wide weights side by side; the 10-stream launch floor with more hardware queues
# (CUDA_DEVICE_MAX_CONNECTIONS, default 8); the skinny and small suites.
#   bash scripts/under_wave_check.sh
set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
OUT=${OUT:-/tmp/zoo-out}; mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
bin/test -m gpu tests/test_gpu.py -q -k "stream_k" 2>&1 | tail -3
PROBE_CONFIG=16x128s python3 scripts/stream_k_probe.py 1x11008x4096 16x11008x4096 1x12800x4096 16x14848x4096 \
  --json "$OUT/sk-16x128s.json" 2>&1 | grep -v -i warn
PROBE_CONFIG=64x128pp python3 scripts/stream_k_probe.py 64x11008x4096 32x11008x4096 64x12800x4096 64x14848x4096 \
  --json "$OUT/sk-64x128pp.json" 2>&1 | grep -v -i warn
PROBE_CONFIG=128x128 python3 scripts/stream_k_probe.py 128x11008x4096 128x12800x4096 128x14848x4096 100x10000x3000 \
  --json "$OUT/sk-128x128.json" 2>&1 | grep -v -i warn
PROBE_VARIANTS="128x128;64x128pp;64x64pp;128x192pp" python3 scripts/variant_probe.py 128x11008x4096 \
  --json "$OUT/variants-128rows.json" 2>&1 | grep -v -i warn
for conn in 8 32; do
  echo "CUDA_DEVICE_MAX_CONNECTIONS=$conn"
  CUDA_DEVICE_MAX_CONNECTIONS=$conn python3 scripts/streams_floor.py 2>&1 | grep -v -i warn > "$OUT/streams-floor-$conn.txt"
  head -9 "$OUT/streams-floor-$conn.txt"
  CUDA_DEVICE_MAX_CONNECTIONS=$conn bin/zoo batched --json "$OUT/batched-$conn.json" 2>&1 | grep -E "^│|^\|" | cut -c1-150
done
for suite in skinny small; do
  bin/zoo bench --suite $suite --json "$OUT/bench-$suite.json" 2>&1 | grep -E "^│|geometric"
done
