#!/usr/bin/env bash
# Session 9: each config as the committed kernel builds it and as each probe diff here changes
# it (AB_VARIANTS, names of *.diff beside this script: plain-divisions = the kernel before the
# host-worked unit divisions and the early map prefetch; late-prefetch = without the early
# prefetch), side by side with torch.mm, the GPU idle before each call, two rounds.
#   AB_VARIANTS="deep-wait early-unit" bash results/h100-2026-11-24/session9/probes/ab.sh
set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
OUT=${OUT:-/tmp/zoo-out}; mkdir -p "$OUT"
cd "$(dirname "$0")/../../../.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
P=results/h100-2026-11-24/session9/probes
AB_VARIANTS=${AB_VARIANTS:-plain-divisions late-prefetch}
SRC=/tmp/zoo-ab; mkdir -p $SRC
for v in $AB_VARIANTS; do
  patch -s -o "$SRC/${v//-/_}.cu" kernels/sm90/gemm_tma_wgmma.cu "$P/$v.diff" || exit 1
done
ab() {  # config, json name, shapes...
  local cfg=$1 name=$2; shift 2
  local v list=$cfg
  for v in $AB_VARIANTS; do list="$list;$cfg@$SRC/${v//-/_}.cu"; done
  PROBE_VARIANTS="$list" \
    python3 scripts/variant_probe.py "$@" --idle --json "$OUT/part-$name-$round.json" 2>&1 | grep -v -i warn | tee -a "$OUT/ab.log"
}
python3 - "$SRC" ${AB_VARIANTS//-/_} <<'PY'  # every cubin below, compiled in parallel first
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from zoo import cuda, registry
spec = registry.SM90_GEMM
def build(job):
    src, cfg = job
    cuda.compile_cubin(Path(src), "sm_90a", spec.defines(spec.config(cfg)), kernel=spec.name, config=cfg)
jobs = [(src, cfg) for src in [spec.source] + [f"{sys.argv[1]}/{v}.cu" for v in sys.argv[2:]]
        for cfg in ("32x64s", "64x128ppc2", "64x128pp", "16x128s", "128x192ppc2", "128x256")]
with ProcessPoolExecutor(16) as pool:
    list(pool.map(build, jobs))
print(len(jobs), "cubins ready")
PY
for round in 1 2; do
  echo "== round $round"
  ab 32x64s small 256x256x256 512x512x512
  ab 64x128ppc2 1000 1000x1000x1000
  ab 64x128pp 1024 1024x1024x1024
  ab 16x128s skinny 1x4096x4096 16x11008x4096
  ab 128x192ppc2 3000 3000x3000x3000
  ab 128x256 4096 4096x4096x4096
done
python3 - "$OUT" <<'PY'
import glob, json, os, sys
parts = sorted(glob.glob(os.path.join(sys.argv[1], "part-*.json")))
merged = {os.path.basename(p)[5:-5]: json.load(open(p)) for p in parts}
json.dump(merged, open(os.path.join(sys.argv[1], "ab.json"), "w"), indent=1)
for p in parts: os.remove(p)
PY
