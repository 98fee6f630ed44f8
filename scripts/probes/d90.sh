#!/bin/bash
# Call 7 (x2): with 6e251f2's held scales, 128x128p against the wider promoted tiles where those are chosen.
# GPU0 per tensor, GPU1 per row; forced configs alternating, two rounds.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD COLUMNS=200
W=/tmp/w/d90; mkdir -p $W
pack() { tar czf $OUT/d90.tgz -C /tmp/w d90; }
trap pack EXIT
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
S=1024x11008x4096,4096x11008x4096,8192x8192x8192,16384x11008x4096,6144x6144x6144,16384x4096x4096,16384x4096x11008
run() { local g=$1 r=$2; export CUDA_VISIBLE_DEVICES=$g ZOO_CACHE_DIR=/tmp/zc$g
  for round in 1 2; do for c in 128x128p 128x192p 192x128p; do
    timeout 100 python3 -m zoo bench --dtype fp8 --recipe $r --shapes $S --config $c --json $W/$r-$c-$round.json > $W/$r-$c-$round.txt 2>&1; el "$r $c $round rc $?"
  done; done; }
( run 0 tensor ) > $W/g0.log 2>&1 &
( run 1 row ) > $W/g1.log 2>&1 &
wait
cat $W/g0.log $W/g1.log
python3 - <<'P'
import json, glob, os, statistics as st, collections
d = collections.defaultdict(list)
for f in glob.glob('/tmp/w/d90/*.json'):
    r, c, rnd = os.path.basename(f)[:-5].split('-')
    for x in json.load(open(f))['results']:
        if x['pct_of_torch']: d[(r, x['m'], x['n'], x['k'], c)].append(round(x['pct_of_torch'], 1))
for k in sorted({k[:4] for k in d}):
    print(k, '  '.join(f"{c} {st.median(d[k + (c,)]):.1f} {d[k + (c,)]}" for c in ('128x128p', '128x192p', '192x128p') if d.get(k + (c,))))
P
el done
