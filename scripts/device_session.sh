#!/usr/bin/env bash
# The device run behind the README's results: facts, the GPU tests, `zoo run` in both output
# dtypes, and ncu's shared-memory bank-conflict and occupancy figures. Logs land in $OUT.
#   run on a GPU machine from the checkout: bash scripts/device_session.sh
set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
OUT=${OUT:-/tmp/zoo-out}; mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
python3 -c "import torch, cuda.bindings; print('torch', torch.__version__, 'CUDA', torch.version.cuda, '| cuda-bindings', cuda.bindings.__version__)"
bin/zoo info --json "$OUT/info.json"
bin/test -m gpu -q -rs 2>&1 | tee "$OUT/gpu-tests.txt" | tail -5
for od in fp32 fp16; do
  bin/zoo run --auto-arch --out-dtype "$od" --json "$OUT/run-$od.json"
done
cfg=$(python3 -c "import json; print(json.load(open('$OUT/run-fp32.json'))['config'])")
ncu --clock-control none --kernel-name regex:zoo_ --launch-skip 1 --launch-count 1 --section Occupancy \
  --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
  python3 scripts/ncu_probe.py 4096 "$cfg" > "$OUT/ncu.txt" 2>&1
echo "ncu, config $cfg, 4096^3 fp16 -> fp32:"
grep -E "bank_conflicts|wavefronts|hmma|Achieved Occupancy|Theoretical Occupancy|Block Limit" "$OUT/ncu.txt"
