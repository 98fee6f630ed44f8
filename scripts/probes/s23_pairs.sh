#!/bin/bash
# Staged (twenty-third session, not yet run): the FP8 swap tiles issuing, waiting for and adding
# two K-tiles at once (16x128sp2k, 32x128sp2k, 64x128sp2k; pairs: 1) against 16x128sp, 32x128sp,
# 64x128sp, per tensor and per row, on the shapes each serves; then the LLM suite's weakest
# per-tensor shape, 128 x 11008 x 4096, on each swap tile against the automatic choice
# (128x128p). GPU answers first, then two alternating rounds. Run on an H200 from the root of a
# tree with the staged build applied:
#   bash scripts/probes/s23_pairs.sh    (everything lands in $OUT/pairs.tgz: the device returns 8 files)
set -u
export PYTHONPATH=.
W=/tmp/pairs; mkdir -p $W
T0=$(date +%s)
timeout 120 python3 -m pytest -m gpu tests/test_scaled.py -k "swap_ab_tile_matches" -q -p no:cacheprovider > $W/tests.txt 2>&1
echo "tests rc=$? at $(( $(date +%s) - T0 )) s" >> $W/log.txt
B() {  # tag recipe shapes [config]
  timeout 40 bin/zoo bench --dtype fp8 --recipe $2 --shapes $3 ${4:+--config $4} --json $W/$1.json > $W/$1.txt 2>&1
  echo "$1 rc=$? at $(( $(date +%s) - T0 )) s" >> $W/log.txt
}
S16=1x4096x4096,16x4096x4096,64x4096x4096,64x4096x11008
S32=128x4096x4096,128x4096x11008,128x2048x11008,32x11008x4096
S64=256x4096x4096,64x11008x4096,128x4096x16384,128x2048x14336
for r in 1 2; do
  for rec in tensor row; do
    for t in 16 32 64; do
      eval S=\$S$t
      B ${t}sp-$rec-$r $rec $S ${t}x128sp
      B ${t}sp2k-$rec-$r $rec $S ${t}x128sp2k
    done
  done
  for c in auto 16x128sp 32x128sp 64x128sp; do
    B wide-$c-$r tensor 128x11008x4096 $([ $c = auto ] || echo $c)
  done
done
tar czf ${OUT:-/tmp}/pairs.tgz -C $W .
