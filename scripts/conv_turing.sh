#!/usr/bin/env bash
# Issues 20 and 21 in one device run (H100/H200): the conv GPU tests, zoo conv (the issue's
# layer and the ResNet-50 suite) side by side with cuDNN, and the two Turing kernels at 4096^3
# (scripts/turing_mma.sh). Logs in $OUT.
#   bash scripts/conv_turing.sh
set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
OUT=${OUT:-/tmp/zoo-out}; mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
bin/test -m gpu -q -rs -x tests/test_gpu_conv.py 2>&1 | tee "$OUT/gpu-conv.txt" | tail -25
bin/zoo conv --suite layer --json "$OUT/conv-layer.json" 2>&1 | tee "$OUT/conv-layer.txt" | tail -8
bin/zoo conv --suite resnet50 --json "$OUT/conv-resnet50.json" 2>&1 | tee "$OUT/conv-resnet50.txt" | tail -30
[ -f scripts/turing_mma.sh ] && bash scripts/turing_mma.sh 2>&1 | tee "$OUT/turing.txt" | tail -30
