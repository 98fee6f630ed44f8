# Session 4, run 3: the shapes whose choice the new split-K rule (slices of at least 32 K-tiles
# on sm90, narrow tiles unsplit from a third of a wave) changes, the old choice against the new,
# then the skinny and small suites as `zoo bench` times them.
set -u
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
probe() { PROBE_VARIANTS="$1" python3 scripts/variant_probe.py --idle "${@:2}" 2>&1 | grep -v -i warn | tee -a "$OUT/policy.txt"; }
probe "64x128pp/2;64x128pp/1;32x64s/1" 500x1000x1000 64x1024x1024
probe "64x128pp/4;64x128pp/1;32x64s/1" 256x1024x2048 128x1024x2048
probe "64x128pp/8;64x128pp/4;64x128pp/2;64x64pp/1" 64x2048x4096 32x4096x4096
probe "16x128s/8;16x128s/4;16x128s/2;16x128s/1" 1x4096x2048 16x1024x4096
for suite in skinny small; do
  bin/zoo bench --suite $suite --json "$OUT/bench-$suite.json" 2>&1 | grep -E "^│|geometric" | tee -a "$OUT/policy.txt"
done
