#!/usr/bin/env bash
# Issue 21's check in one run (H100/H200, about 2-3 minutes): sm75_hgemm_mma against
# sm75_hgemm_wmma at 4096^3 fp16 -> fp32, every config of the new kernel (zoo run verifies each
# against float64 and times it side by side with torch.mm), fp16 out for the automatic config,
# a one-line mma/wmma ratio per run, then the GPU tests of the new kernel only (odd shapes,
# strides and offsets, both out dtypes, grouped launches, graph replays). Logs in $OUT.
#   bash scripts/turing_mma.sh
set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
OUT=${OUT:-/tmp/zoo-out}; mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
S="-m 4096 -n 4096 -k 4096 --iters ${ITERS:-50}"
configs=$(python3 -c "from zoo import registry; print(' '.join(c.name for c in registry.SM75_HMMA.configs))")
bin/zoo run --kernel sm75_hgemm_wmma $S --out-dtype fp32 --json "$OUT/t-wmma.json" > "$OUT/t-wmma.txt" 2>&1
for c in $configs; do
  bin/zoo run --kernel sm75_hgemm_mma --config "$c" $S --out-dtype fp32 --json "$OUT/t-mma-$c.json" > "$OUT/t-mma-$c.txt" 2>&1
done
bin/zoo run --kernel sm75_hgemm_wmma $S --out-dtype fp16 --json "$OUT/t-wmma-fp16.json" > "$OUT/t-wmma-fp16.txt" 2>&1
bin/zoo run --kernel sm75_hgemm_mma $S --out-dtype fp16 --json "$OUT/t-mma-fp16.json" > "$OUT/t-mma-fp16.txt" 2>&1
python3 - "$OUT" $configs <<'PY'
import json, sys, pathlib
out, configs = pathlib.Path(sys.argv[1]), sys.argv[2:]
def result(name, kernel):
    path = out / name
    try:
        d = json.loads(path.read_text())
        r = next(r for r in d["results"] if r["kernel"] == kernel)
    except (OSError, ValueError, StopIteration) as exc:
        return None, f"{name}: no result ({type(exc).__name__}; see {path.with_suffix('.txt').name})"
    torch_ = next(r for r in d["results"] if r["kernel"] == "torch.mm")
    return r, (f"{r['config']} {r['tflops']:.1f} TFLOP/s = {r['pct_of_torch']:.1f}% of torch.mm "
               f"({torch_['tflops']:.1f}), verified={(r['verify'] or {}).get('ok')}, {d['device']}")
runs = [("fp32", "t-wmma.json", f"t-mma-{c}.json") for c in configs] + [("fp16", "t-wmma-fp16.json", "t-mma-fp16.json")]
w_seen = set()
for od, w_name, m_name in runs:
    w, w_line = result(w_name, "sm75_hgemm_wmma")
    if w_name not in w_seen:
        print(f"4096^3 fp16->{od} sm75_hgemm_wmma {w_line}")
        w_seen.add(w_name)
    m, m_line = result(m_name, "sm75_hgemm_mma")
    ratio = f"{m['tflops'] / w['tflops']:.2f}x" if m and w else "n/a"
    print(f"4096^3 fp16->{od} mma/wmma = {ratio} (issue 21: >= 1.30x fp32)  sm75_hgemm_mma {m_line}")
PY
timeout 170 bin/test -m gpu -q -k "sm75_hgemm_mma" 2>&1 | tail -15
