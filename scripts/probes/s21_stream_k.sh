#!/bin/bash
# Staged (twenty-first session, not yet run): 128x192p's stream-K twin (128x192psk) against
# 128x192p and the automatic choice, per tensor and per row, three alternating rounds; its GPU
# test first. Run on an H200 from the root of a tree at the staged commit:
#   bash scripts/probes/s21_stream_k.sh    (everything lands in $OUT/sk.tgz: the device returns 8 files)
set -u
export PYTHONPATH=.
W=/tmp/sk; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.current.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $W/gpu.txt
T0=$(date +%s)
timeout 200 python3 -m pytest -m gpu tests/test_scaled.py -k "stream_k or larger_promoted" -q -p no:cacheprovider \
  > $W/tests.txt 2>&1; echo "tests rc=$? at $(( $(date +%s) - T0 )) s" >> $W/log.txt
# tails past the last wave of 128x192 tiles: 4096^3 44 of 704 (33%), 1024 x 4096 x 4096 44 of 176,
# 1024 x 11008 x 4096 68 of 464 (52%), 4096 x 4096 x 11008 44 of 704; 8192^3 none (85% fill)
S=4096x4096x4096,1024x4096x4096,1024x11008x4096,4096x4096x11008,8192x8192x8192
for r in 1 2 3; do
  for rec in tensor row; do
    for c in auto 128x192p 128x192psk; do
      extra=""; [ $c != auto ] && extra="--config $c"
      timeout 120 bin/zoo bench --dtype fp8 --recipe $rec --shapes $S $extra --json $W/$rec-$c-$r.json \
        > $W/$rec-$c-$r.txt 2>&1; echo "$rec $c $r rc=$? at $(( $(date +%s) - T0 )) s" >> $W/log.txt
    done
  done
done
tar czf ${OUT:-/tmp}/sk.tgz -C $W .
