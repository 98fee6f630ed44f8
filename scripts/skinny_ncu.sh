export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
which ncu || ls /usr/local/cuda*/bin/ncu
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,lts__t_bytes.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__cluster_dim_x,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__cycles_active.avg,gpc__cycles_elapsed.max
run() { ncu --launch-skip 1 --launch-count 1 -k regex:'zoo_gemm|nvjet' --metrics $M --csv python3 scripts/skinny_ncu.py "$@" 2>&1 | grep -v "^==PROF==" > /tmp/n.csv; echo "## $*"; python3 - <<'PY'
import csv,io
rows=[r for r in csv.reader(open('/tmp/n.csv')) if len(r)>10]
if not rows: print(open('/tmp/n.csv').read()[-1500:])
hdr=rows[0]; i=hdr.index('Metric Name'); u=hdr.index('Metric Unit'); v=hdr.index('Metric Value'); kn=hdr.index('Kernel Name')
print('  kernel', rows[1][kn][:60])
for r in rows[1:]: print('  %-70s %14s %s'%(r[i],r[v],r[u]))
PY
}
for s in "128x4096x4096 torch" "128x4096x4096 64x128pp 2" "128x4096x4096 64x128pp 1" "128x4096x4096 128x128 1" "128x4096x4096 128x128pp 2" "128x4096x4096 64x128ppc2 2" "128x11008x4096 torch" "128x11008x4096 128x128 1" "128x4096x11008 torch" "128x4096x11008 64x128pp 2"; do run $s; done
for s in "128x4096x4096 torch" "128x4096x4096 64x128pp 2"; do echo "### sections $s"; ncu --launch-skip 1 --launch-count 1 -k regex:'zoo_gemm|nvjet' --section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats --section WarpStateStats python3 scripts/skinny_ncu.py $s 2>&1 | grep -v "^==PROF==" | grep -v "^    ---" | head -90; done
