#!/bin/bash
# Staged (twenty-second session, not yet run): the FP8 swap tiles with consumers free of turns
# (16x128spf, 32x128spf, 64x128spf; free: 1) against 16x128sp, 32x128sp, 64x128sp, per tensor and
# per row, on the shapes each serves; GPU answers first, then two alternating rounds. Run on an
# H200 from the root of a tree with the staged build applied:
#   bash scripts/probes/s22_free.sh    (everything lands in $OUT/free.tgz: the device returns 8 files)
set -u
export PYTHONPATH=.
W=/tmp/free; mkdir -p $W
T0=$(date +%s)
timeout 150 python3 -m pytest -m gpu tests/test_scaled.py -k "swap_ab_tile_matches" -q -p no:cacheprovider > $W/tests.txt 2>&1
echo "tests rc=$? at $(( $(date +%s) - T0 )) s" >> $W/log.txt
B() {  # tag recipe shapes config
  timeout 60 bin/zoo bench --dtype fp8 --recipe $2 --shapes $3 --config $4 --json $W/$1.json > $W/$1.txt 2>&1
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
      B ${t}spf-$rec-$r $rec $S ${t}x128spf
    done
  done
done
tar czf ${OUT:-/tmp}/free.tgz -C $W .
