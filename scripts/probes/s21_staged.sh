#!/bin/bash
# Staged (twenty-first session, not yet run): (1) 128x192p's stream-K twin (128x192psk) against
# 128x192p and the automatic choice, per tensor and per row; (2) the blockwise tiles' 2x1 cluster
# twins on the producer tail against their single-CTA tiles. GPU tests first, then two
# alternating rounds. Run on an H200 from the root of a tree with the staged build applied:
#   bash scripts/probes/s21_staged.sh    (everything lands in $OUT/staged.tgz: the device returns 8 files)
set -u
export PYTHONPATH=.
W=/tmp/staged; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.current.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $W/gpu.txt
T0=$(date +%s)
timeout 200 python3 -m pytest -m gpu tests/test_scaled.py -k "stream_k or larger_promoted or staged_per_k_tile" -q \
  -p no:cacheprovider > $W/tests.txt 2>&1; echo "tests rc=$? at $(( $(date +%s) - T0 )) s" >> $W/log.txt
B() {  # tag recipe shapes config|auto
  local extra=""; [ "$4" != auto ] && extra="--config $4"
  timeout 120 bin/zoo bench --dtype fp8 --recipe $2 --shapes $3 $extra --json $W/$1.json > $W/$1.txt 2>&1
  echo "$1 rc=$? at $(( $(date +%s) - T0 )) s" >> $W/log.txt
}
# (1) tails past the last wave of 128x192 tiles: 4096^3 44 of 704 (33%), 1024 x 4096 x 4096 44 of
# 176, 1024 x 11008 x 4096 68 of 464 (52%), 4096 x 4096 x 11008 44 of 704; 8192^3 none (85% fill)
SK=4096x4096x4096,1024x4096x4096,1024x11008x4096,4096x4096x11008,8192x8192x8192
# (2) the blockwise recipe's shapes of the twelfth session's twins
BW=4096x4096x4096,1024x4096x4096,8192x8192x8192,2048x8192x8192
for r in 1 2; do
  for rec in tensor row; do for c in auto 128x192p 128x192psk; do B sk-$rec-$c-$r $rec $SK $c; done; done
  for c in 128x128pb 128x128pbc2 192x128pb 192x128pbc2; do B bw-$c-$r block $BW $c; done
done
tar czf ${OUT:-/tmp}/staged.tgz -C $W .
