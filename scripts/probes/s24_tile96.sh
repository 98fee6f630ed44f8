#!/bin/bash
# 128x96p (staged): GPU tests, then forced against the automatic choice, two alternating rounds.
set -u
export PYTHONPATH=.
W=/tmp/s24b; mkdir -p $W; T0=$(date +%s)
log() { echo "$1 rc=$2 at $(( $(date +%s) - T0 )) s" >> $W/log.txt; }
timeout 150 python3 -m pytest -m gpu tests/test_scaled.py -k "other_promoted or issued_early" -q -p no:cacheprovider > $W/tests.txt 2>&1; log tests $?
S=128x11008x4096,256x11008x4096,512x11008x4096,1024x11008x4096,2048x11008x4096,4096x11008x4096,128x4096x4096,1024x4096x11008,4096x4096x4096,128x28672x8192
B() { timeout 60 bin/zoo bench --dtype fp8 --recipe $2 --shapes $S ${3:+--config $3} ${4:+--out-dtype $4} --json $W/$1.json > $W/$1.txt 2>&1; log $1 $?; }
for r in 1 2; do for rec in tensor row; do
  B auto-$rec-$r $rec
  B 96-$rec-$r $rec 128x96p
done; done
B auto-f32 tensor "" fp32
B 96-f32 tensor 128x96p fp32
tar czf $OUT/s24b.tgz -C $W .
