#!/usr/bin/env bash
# The eager streams mode's host cost, the code before this session (old/, `git archive f5bb5bb`)
# and the working tree, in alternating processes.
set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zc}
here=$(dirname "$0")
for round in 1 2 3; do
  PYTHONPATH=$PWD/old python3 "$here/streams_host_ab.py" before 2>&1 | grep -v -i warn
  PYTHONPATH=$PWD python3 "$here/streams_host_ab.py" after 2>&1 | grep -v -i warn
done
