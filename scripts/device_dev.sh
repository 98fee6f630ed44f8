export PYTHONPATH=$PWD ZOO_CACHE_DIR=/tmp/zoo-cache PYTHONUNBUFFERED=1
python3 scripts/sweep.py 4096 fp32 2>&1 | tee $OUT/sweep32.txt
python3 scripts/sweep.py 4096 fp16 2>&1 | tee $OUT/sweep16.txt
ncu --clock-control none --kernel-name regex:zoo_ --launch-skip 1 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section Occupancy --section SchedulerStats --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active python3 scripts/ncu_probe.py 4096 128x256 > $OUT/ncu.txt 2>&1
grep -E "stalled|Bank|bank|wavefronts|hmma|Stall|Warp Cycles|Achieved|Issued|Eligible|Throughput|Duration|Theoretical|No Eligible" $OUT/ncu.txt | head -90
