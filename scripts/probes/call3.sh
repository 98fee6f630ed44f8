#!/bin/bash
# Call 3 (one H200): the FP8 Llama side by side (zoo bench --model llama-fp8, per row), then the
# FP8 Linear's GPU tests in models (with their measured bounds printed).
set -u
export PYTHONUNBUFFERED=1 COLUMNS=200
W=/tmp/w/c3; mkdir -p $W
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
timeout 280 bin/zoo bench --model llama-fp8 --recipe row --repeats 5 --calls 5 --json $W/llama-fp8-row.json > $W/llama-fp8-row.txt 2>&1; el "llama-fp8 rc $?"
cat $W/llama-fp8-row.txt | tail -22
timeout 290 python3 -m pytest -m gpu -q -s tests/test_gpu_models.py -k fp8 > $W/tests-fp8-models.txt 2>&1; el "fp8 model tests rc $?"
grep -E "zoo / torch|over eager|passed|failed|Error|^E " $W/tests-fp8-models.txt | head -30
tar czf $OUT/c3.tgz -C /tmp/w c3
