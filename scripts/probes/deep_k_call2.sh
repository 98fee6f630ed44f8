#!/bin/bash
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=/tmp/zoo-cache PYTHONPATH=$PWD COLUMNS=200
(timeout 150 python3 scripts/probes/deep_k_stages.py > $OUT/deep-k-nsplit.txt 2>&1; echo "rc $?" >> $OUT/deep-k-nsplit.txt)
grep -v "^built" $OUT/deep-k-nsplit.txt
S=$(date +%s)
for v in "gemm:dW:64x128s8:1" "gemm:dW:64x128c2s8:1"; do
  echo "===== $v" >> $OUT/ncu-dw-nsplit.txt
  timeout 60 ncu --clock-control none --set full -k regex:"zoo_|nvjet|gemm|xmma|cutlass" --launch-skip 3 --launch-count 1 \
     python3 scripts/probes/deep_k_stages.py --ncu $v >> $OUT/ncu-dw-nsplit.txt 2>&1
done
echo "ncu took $(( $(date +%s) - S )) s"
(timeout 380 python3 -m pytest -m gpu -q tests/test_gpu_models.py -k "resnet" > $OUT/tests-resnet.txt 2>&1; echo "rc $?" >> $OUT/tests-resnet.txt)
tail -5 $OUT/tests-resnet.txt
