#!/usr/bin/env bash
# Session 9: the small squares' ping-pong tiles (one tile per CTA: one consumer works) against the
# same tiles cut between two cooperative consumers (pingpong=0, warp_n=64), variant_probe --idle,
# two rounds.
#   bash results/h100-2026-11-24/session9/probes/coop_small.sh
set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
cd "$(dirname "$0")/../../../.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
for round in 1 2; do
  echo "== round $round"
  PROBE_VARIANTS="64x128pp;64x128pp:pingpong=0,warp_n=64" python3 scripts/variant_probe.py 1024x1024x1024 768x768x768 2048x1024x1024 --idle 2>&1 | grep -v -i warn
  PROBE_VARIANTS="64x128ppc2;64x128ppc2:pingpong=0,warp_n=64" python3 scripts/variant_probe.py 1000x1000x1000 --idle 2>&1 | grep -v -i warn
  PROBE_VARIANTS="32x64s;64x64pp;64x128pp:pingpong=0,warp_n=64" python3 scripts/variant_probe.py 512x512x512 --idle 2>&1 | grep -v -i warn
done
