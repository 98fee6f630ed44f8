#!/bin/bash
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=/tmp/zoo-cache PYTHONPATH=$PWD COLUMNS=200
for v in "gemm:dW:torch" "gemm:dW:64x128pp:1" "gemm:dW:64x128ppc2:1" "gemm:dW:64x128s8:1"; do
  n=$(echo $v | tr ':' '_')
  timeout 90 ncu --clock-control none --set full --import-source yes -k regex:"zoo_|nvjet|gemm|xmma|cutlass" --launch-skip 3 --launch-count 1 \
     -o /tmp/$n python3 scripts/probes/deep_k_stages.py --ncu $v > /tmp/$n.log 2>&1 || tail -5 /tmp/$n.log
  ncu -i /tmp/$n.ncu-rep --page source --csv --print-source sass > /tmp/$n.csv 2>&1
  python3 .devrun/src_stalls.py /tmp/$n.csv > $OUT/stalls-$n.txt 2>&1
  head -45 $OUT/stalls-$n.txt | cut -c1-150
done
