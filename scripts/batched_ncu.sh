#!/usr/bin/env bash
# ncu on 10 x [768, 1024, 768] fp16 (zoo batched's problem): torch.bmm's kernel, the zoo's one
# batched launch, and one of the streams mode's ten grids (ncu runs kernels one at a time, so
# this is a grid alone). Time, SM clock, tensor pipe, L2 and DRAM traffic. Ninth session.
#   bash scripts/batched_ncu.sh [CONFIG ...]   (the zoo's configs; default 128x192pp)
set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__cluster_dim_x
probe='
import sys, torch, zoo
who, config = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else None)
a = torch.randn(10, 768, 1024, device="cuda", dtype=torch.float16)
b = torch.randn(10, 1024, 768, device="cuda", dtype=torch.float16)
for _ in range(2):
    if who == "torch.bmm": torch.bmm(a, b)
    else: zoo.bmm(a, b, mode=who, config=config)
torch.cuda.synchronize()'
run() {  # label, skip, count, probe arguments
  echo "## $1"
  ncu --clock-control none --launch-skip $2 --launch-count $3 -k regex:'zoo_gemm|nvjet|gemm|sm90' --metrics $M --csv \
    python3 -c "$probe" "${@:4}" 2>&1 | grep -v "^==PROF==" | python3 scripts/ncu_table.py
}
run "torch.bmm" 1 1 torch.bmm
for c in ${@:-128x192pp}; do
  run "zoo batched $c" 1 1 batched "$c"
  run "zoo streams $c (the first of the second call's ten grids)" 10 1 streams "$c"
done
