#!/bin/bash
# Call 2 (one H200): the boxes probe (a_boxes / b_boxes variants against the kept configs,
# interleaved with torch._scaled_mm), then the FP8 Linear's model tests (bounds against bf16).
set -u
export PYTHONUNBUFFERED=1 COLUMNS=200
W=/tmp/w/c2; mkdir -p $W
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
R=$(pwd); mkdir -p /tmp/tX; tar --exclude=./.git -cf - . | tar -xf - -C /tmp/tX
cp .devrun/boxes/sm90_scaled_fp8.yaml /tmp/tX/configs/
export ZOO_CACHE_DIR=/tmp/zc-X
cd /tmp/tX
for c in $(python3 -c "import yaml; print(' '.join(yaml.safe_load(open('configs/sm90_scaled_fp8.yaml'))['configs']))"); do
  case $c in 32x128sp*|16x128sp*|64x128sp*|128x128p|128x128pB2|128x128pA2B2|128x192p|128x192pB2|192x128p*|128x128pb*|192x128pb*)
    (PYTHONPATH=/tmp/tX timeout 200 python3 -m zoo build --arch sm_90a --kernel sm90_scaled_fp8 --config $c --check > $W/build-$c.txt 2>&1; echo "$c rc $?" >> $W/builds.txt) & ;;
  esac
done
wait; el "builds"; sort $W/builds.txt | tr '\n' ' '; echo
grep -h -i "local\|spill\|FAIL" $W/build-*.txt | sort | uniq -c | head -10
PYTHONPATH=/tmp/tX timeout 330 python3 $R/.devrun/boxes_probe.py 3 $W/boxes.json > $W/boxes.txt 2>&1; el "probe rc $?"
sed -n '/medians/,$p' $W/boxes.txt
cd $R
timeout 200 python3 -m pytest -m gpu -q -rP tests/test_gpu_models.py -k fp8 > $W/tests-fp8-models.txt 2>&1; el "fp8 model tests rc $?"
grep -E "zoo / torch|over eager|passed|failed|Error" $W/tests-fp8-models.txt | head -20
tar czf $OUT/c2.tgz -C /tmp/w c2
