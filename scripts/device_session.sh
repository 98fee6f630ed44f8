#!/usr/bin/env bash
# The device run behind the README's results: facts, the GPU tests, every eligible kernel side
# by side with torch.mm in each dtype pair, the bench suites (4096^3, 8192^3, LLM shapes), whole
# models (zoo bench --model all) and CNNs' convolutions (zoo conv --model), the
# fp32 kernels (SIMT without TF32, TF32) at 1024^3, 4096^3 and 8192^3, compute-sanitizer on
# the sm_90a kernels and the SIMT one, and ncu's bank-conflict, occupancy and tensor-pipe
# figures for each kernel's automatic config. Logs land in $LOGS (/tmp/zoo-session); the device
# tool returns at most eight files from $OUT, so they go back as one archive there.
#   run on a GPU machine from the checkout: bash scripts/device_session.sh
set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
LOGS=${LOGS:-/tmp/zoo-session}; mkdir -p "$LOGS"
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
python3 -c "import torch, cuda.bindings; print('torch', torch.__version__, 'CUDA', torch.version.cuda, '| cuda-bindings', cuda.bindings.__version__)"
bin/zoo info --json "$LOGS/info.json" > /dev/null
bin/test -m gpu -q -rs 2>&1 | tee "$LOGS/gpu-tests.txt" | tail -3
for pair in "fp16 fp16" "fp16 fp32" "bf16 bf16" "bf16 fp32"; do
  set -- $pair
  bin/zoo run --auto-arch --all-kernels --dtype "$1" --out-dtype "$2" --json "$LOGS/run-$1-$2.json" | tail -6
done
bin/zoo bench --json "$LOGS/bench-fp16-fp16.json" | tail -20
for pair in "fp16 fp32" "bf16 bf16" "bf16 fp32"; do
  set -- $pair
  bin/zoo bench --suite square --dtype "$1" --out-dtype "$2" --json "$LOGS/bench-square-$1-$2.json" | grep -E "^│ square"
done
bin/zoo bench --suite llm --eager --json "$LOGS/bench-llm-eager.json" | grep geometric
for n in 1024 4096 8192; do
  bin/zoo run --dtype fp32 -m $n -n $n -k $n --json "$LOGS/fp32-$n.json" | grep -E "^│ sm"
  bin/zoo run --dtype fp32 --tf32 -m $n -n $n -k $n --json "$LOGS/tf32-$n.json" | grep -E "^│ sm"
done
bin/zoo bench --suite llm --dtype fp32 --tf32 --json "$LOGS/bench-llm-tf32.json" | grep geometric
bin/zoo bench --model all --plot "$LOGS/models.png" --json "$LOGS/models.json" | tail -24
bin/zoo conv --model resnet50,densenet121 --json "$LOGS/conv-models.json" | tail -40
bin/zoo batched --json "$LOGS/batched.json" | tail -14
bin/zoo batched --pipeline --trace "$LOGS/pipeline-trace.json" --json "$LOGS/pipeline.json" | tail -18
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for kernel in sm90_gemm_tma_wgmma sm90_gemm_tf32 sm75_sgemm_simt; do
  for tool in memcheck racecheck; do
    # --report-api-errors no: torch and cuda-python probe driver entry points that do not exist
    "$SAN" --tool $tool --report-api-errors no python3 scripts/sanitize.py $kernel > "$LOGS/sanitizer-$kernel-$tool.txt" 2>&1
    echo "compute-sanitizer $kernel $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOGS/sanitizer-$kernel-$tool.txt")"
  done
done
ncu --clock-control none --kernel-name regex:zoo_ --launch-skip 1 --launch-count 1 --section SpeedOfLight \
  --print-details all python3 scripts/ncu_probe.py 4096 sm90_gemm_tma_wgmma 128x256 > "$LOGS/ncu-sm90.txt" 2>&1
echo "ncu sm90_gemm_tma_wgmma / 128x256, 4096^3 fp16:"
grep -E "Duration|SM Frequency|Hgmma|L2 Cache Throughput|DRAM Throughput" "$LOGS/ncu-sm90.txt"
metrics=l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
for kernel_out in "sm80_gemm_mma fp16" "sm75_hgemm_wmma fp32"; do
  set -- $kernel_out
  cfg=$(python3 -c "import json; r=json.load(open('$LOGS/run-fp16-$2.json'))['results']; print([x['config'] for x in r if x['kernel']=='$1'][0])")
  ncu --clock-control none --kernel-name regex:zoo_ --launch-skip 1 --launch-count 1 --section Occupancy \
    --metrics "$metrics" python3 scripts/ncu_probe.py 4096 "$1" "$cfg" "$2" > "$LOGS/ncu-$1.txt" 2>&1
  echo "ncu $1 / $cfg, 4096^3 fp16 -> $2:"
  grep -E "bank_conflicts|wavefronts|hmma|Achieved Occupancy|Theoretical Occupancy" "$LOGS/ncu-$1.txt"
done
# The lent machine returns a few files from $OUT: the logs go back as one archive.
archive=${OUT:-/tmp}/zoo-session.tgz
tar czf "$archive" -C "$(dirname "$LOGS")" "$(basename "$LOGS")" && echo "archive: $archive"
