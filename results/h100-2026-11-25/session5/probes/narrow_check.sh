# Session 5, run 3: the shapes whose choice the small-grid rule moved (narrow_choice: 64x64pp
# for one GEMM whose listed tiles leave over half the SMs idle and would run whole), each
# with the registry's new choice (auto) and the configs it replaced (32x64s, 64x128pp), side
# by side with torch.mm (zoo bench: graph replays, inputs out of L2, the GPU idle before each).
set -u
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
S=128x128x128,192x192x192,576x576x576,500x500x500,500x1000x1000,64x1024x1024,128x1000x1000,256x1024x1024,1024x512x1024,192x2048x1024,2048x256x1024,256x256x512
for cfg in auto 32x64s 64x128pp; do
  echo "## $cfg"
  if [ $cfg = auto ]; then a=""; else a="--config $cfg"; fi
  bin/zoo bench --shapes $S $a --json "$OUT/narrow-$cfg.json" 2>&1 | grep -E "^│|geometric"
done 2>&1 | tee "$OUT/narrow-check.txt"
bin/zoo bench --suite small --json "$OUT/bench-small.json" 2>&1 | grep -E "^│|geometric" | tee -a "$OUT/narrow-check.txt"
