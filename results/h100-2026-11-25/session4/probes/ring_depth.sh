# Session 4, run 5: does one CTA's streaming rate follow its ring's bytes in flight (rate =
# ring bytes / latency)? 16x128s whole and split with 4, 8 (listed) and 10 stages; 32x64s with
# 8 (listed) and 16.
set -u
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
PROBE_VARIANTS="16x128s:stages=4/1;16x128s/1;16x128s:stages=10/1;16x128s/2;16x128s:stages=10/2;32x64s/1;32x64s:stages=16/1" \
  python3 scripts/variant_probe.py --idle 1x4096x4096 1x4096x8192 16x4096x4096 16x1024x4096 1x4096x11008 \
  --json "$OUT/ring.json" 2>&1 | grep -v -i warn | tee "$OUT/ring.txt"
python3 - "$OUT" <<'PY'
import json, sys
from zoo.plot import bench_plot
out = sys.argv[1]
rows = json.load(open("results/h100-2026-11-25/session4/run4/final/bench-skinny.json"))["results"]
print("wrote", bench_plot(rows, "zoo vs torch.mm, fp16 -> fp16, CUDA-graph replays, inputs out of L2\nNVIDIA H100 80GB HBM3, 2026-11-25 (session 4, run 4)", f"{out}/bench-skinny.png"))
PY
