# Development run on the device: sweep variants, then ncu on the current kernel.
export PYTHONPATH=$PWD ZOO_CACHE_DIR=/tmp/zoo-cache PYTHONUNBUFFERED=1
python3 scripts/sweep.py 4096 fp32 "$@" 2>&1 | tee $OUT/sweep32.txt
NCU_CFG=${NCU_CFG:-}
if [ -n "$NCU_CFG" ]; then
ncu --clock-control none --kernel-name regex:zoo_ --launch-skip 1 --launch-count 1 --section SpeedOfLight --section Occupancy --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active python3 scripts/ncu_probe.py 4096 $NCU_CFG > $OUT/ncu.txt 2>&1
grep -E "stalled_(barrier|long|short|wait|math|mio|not_sel|selected)|bank|wavefronts|hmma|Duration|Achieved Occ" $OUT/ncu.txt
fi
