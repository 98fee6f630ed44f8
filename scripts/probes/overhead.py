"""Probe (issue 43): a small FP8 GEMM's time in a CUDA graph, 1 call against 4 in a row, zoo
and torch, after a GPU sleep (as zoo bench): the per-call time and the fixed part."""
import statistics, torch, zoo
from zoo import fp8, scaled, registry, bench, gemm
lim = gemm.device_limits(0)
lead = bench.lead_cycles(lim)
for m, n, k in [(128, 4096, 4096), (1, 4096, 4096), (128, 11008, 4096), (2048, 2048, 2048)]:
    sets = 8
    ins = []
    for s in range(sets):
        a = torch.randn(m, k, device="cuda"); w = torch.randn(n, k, device="cuda")
        ins.append((*fp8.quantize(a, "tensor", operand="a"), *fp8.quantize(w.t(), "tensor", operand="b")))
    calls = {"zoo": lambda i: zoo.scaled_mm(ins[i][0], ins[i][2], ins[i][1], ins[i][3]),
             "torch": lambda i: torch._scaled_mm(ins[i][0], ins[i][2], ins[i][1], ins[i][3], out_dtype=torch.bfloat16)}
    res = {}
    for name, f in calls.items():
        for i in range(3): f(i)
        for reps in (1, 4):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for r in range(reps): f(r)
            g.replay(); torch.cuda.synchronize()
            ts = []
            for it in range(60):
                torch.cuda.synchronize(); torch.cuda._sleep(lead)
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record(); g.replay(); e.record(); torch.cuda.synchronize()
                ts.append(s.elapsed_time(e) * 1e3)
            res[(name, reps)] = statistics.median(ts)
    line = f"{m}x{n}x{k}:"
    for name in calls:
        one, four = res[(name, 1)], res[(name, 4)]
        per = (four - one) / 3
        line += f"  {name} 1 call {one:.1f} us, 4 calls {four:.1f} us: {per:.1f} a call + {one - per:.1f}"
    print(line, flush=True)
    scaled._plans.clear()
