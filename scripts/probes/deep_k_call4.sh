#!/bin/bash
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=/tmp/zoo-cache PYTHONPATH=$PWD COLUMNS=200
(timeout 200 python3 scripts/probes/deep_k_stages.py > $OUT/deep-k-chains.txt 2>&1; echo "rc $?" >> $OUT/deep-k-chains.txt)
grep -v "^built" $OUT/deep-k-chains.txt
