#!/bin/bash
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=/tmp/zoo-cache PYTHONPATH=$PWD COLUMNS=200
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/device.txt
python3 -c "import torch; print(torch.__version__)" >> $OUT/device.txt
(timeout 280 python3 scripts/probes/deep_k_stages.py > $OUT/deep-k-stages.txt 2>&1; echo "rc $?" >> $OUT/deep-k-stages.txt)
tail -40 $OUT/deep-k-stages.txt
S=$(date +%s)
for v in "gemm:dW:64x128pp:1" "gemm:dW:64x128ppc2:1" "gemm:dW:torch" "gemm:dW:64x128pps8:1"; do
  echo "===== $v" >> $OUT/ncu-dw.txt
  timeout 60 ncu --clock-control none --set full -k regex:"zoo_|nvjet|gemm|xmma|cutlass" --launch-skip 3 --launch-count 1 \
     python3 scripts/probes/deep_k_stages.py --ncu $v >> $OUT/ncu-dw.txt 2>&1
done
echo "ncu took $(( $(date +%s) - S )) s"; grep -c "=====" $OUT/ncu-dw.txt
(timeout 200 python3 -m pytest -m gpu -q -x tests/test_gpu_models.py -k "graph or training" > $OUT/tests-graph-training.txt 2>&1; echo "rc $?" >> $OUT/tests-graph-training.txt)
tail -5 $OUT/tests-graph-training.txt
