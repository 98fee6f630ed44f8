# Development run on the device: sweep a kernel's configs (and variants), ncu on one config.
#   NCU="KERNEL CONFIG OUT" bash scripts/device_dev.sh KERNEL DTYPE OUT [variant.cu ...]
export PYTHONPATH=$PWD ZOO_CACHE_DIR=/tmp/zoo-cache PYTHONUNBUFFERED=1
kernel=$1 dtype=$2 out=$3; shift 3
python3 scripts/sweep.py "$kernel" 4096 "$dtype" "$out" "$@" 2>&1 | tee $OUT/sweep.txt
if [ -n "${NCU:-}" ]; then
ncu --clock-control none --kernel-name regex:zoo_ --launch-skip 1 --launch-count 1 --section SpeedOfLight --section Occupancy --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active python3 scripts/ncu_probe.py 4096 $NCU > $OUT/ncu.txt 2>&1
grep -E "stalled_(barrier|long|short|wait|math|mio|not_sel|selected)|bank|wavefronts|hmma|Duration|Achieved Occ|L1/TEX Cache|Memory Throughput" $OUT/ncu.txt
fi
