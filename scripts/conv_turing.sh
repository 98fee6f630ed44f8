#!/usr/bin/env bash
# Issues 20 and 21 in one device run (H100/H200): the whole GPU suite, zoo conv (the issue's
# layer and the ResNet-50 suite) side by side with cuDNN, the issue's layer on each conv
# kernel, and the two Turing kernels at 4096^3 (scripts/turing_mma.sh). Logs in $OUT.
#   bash scripts/conv_turing.sh
set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
OUT=${OUT:-/tmp/zoo-out}; mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
bin/test -m gpu -q -rs 2>&1 | tee "$OUT/gpu-suite.txt" | tail -4
bin/zoo conv --json "$OUT/conv-all.json" > "$OUT/conv-all.txt" 2>&1; tail -30 "$OUT/conv-all.txt"
for k in sm90_conv_tma_wgmma sm80_conv_mma sm75_conv_wmma; do
  bin/zoo conv --suite layer --kernel $k --json "$OUT/conv-layer-$k.json" > "$OUT/conv-layer-$k.txt" 2>&1
done
python3 - "$OUT" <<'PY'
import json, pathlib, sys
for f in sorted(pathlib.Path(sys.argv[1]).glob("conv-layer-*.json")):
    r = json.loads(f.read_text())["results"][0]
    print(f"{r['kernel']:22s} {r['config']:10s} {r['median_ms'] * 1e3:7.1f} us {r['tflops']:6.1f} TFLOP/s "
          f"{r['pct_of_cudnn']:6.1f}% of cuDNN verified={r['verify']['ok']}")
PY
bash scripts/turing_mma.sh > "$OUT/turing.txt" 2>&1; grep -E "mma/wmma|wmma [0-9]" "$OUT/turing.txt"
bash scripts/collect.sh
