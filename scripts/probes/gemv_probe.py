"""Decode GEMMs x @ W^T (W (N, K) read in place): torch F.linear, zoo.mm's choice, and the
K-major streaming kernel in narrow-block variants, each replayed from a CUDA graph of 20 calls
over weights rotated out of L2; device us per call; each output verified."""
import statistics, sys
from dataclasses import replace
import torch
from zoo import bench, gemm, registry
torch.manual_seed(0)
H = torch.bfloat16
SPEC = registry.kernel("sm75_gemv_stream")

def graph_time(fn, reps=20):
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3): fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps): fn()
    ts = []
    for _ in range(15):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record(); g.replay(); e1.record(); torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1) * 1e3 / reps)
    return statistics.median(ts)

def variant(text, m, k):
    # "BNxTHREADS:stages/splits"
    text = text.replace("+pdl", "")
    head, _, splits = text.partition("/")
    bn_t, _, stages = head.partition(":")
    bn, threads = (int(v) for v in bn_t.split("x"))
    rows = next(r for r in (1, 2, 4, 8) if r >= m)
    cfg = SPEC.config(f"{rows}x256")
    bk = min(k, 16384 // rows)
    cfg = replace(cfg, name=f"p{text}_{rows}", block_n=bn, warp_n=bn, threads=threads, stages=int(stages or 4), block_k=bk)
    return cfg, (int(splits) if splits else None)

VARIANTS = sys.argv[1].split(",") if len(sys.argv) > 1 else [
    "16x128:4/1", "32x256:4/1", "32x128:8/1", "64x256:8/1", "16x128:4", "32x256:4", "64x256:4", "256x256:4"]
shapes = [(2048, 2048), (512, 2048), (8192, 2048), (2048, 8192), (128256, 2048)]
print(f"{'M':>2} {'N':>6} {'K':>5} {'torch':>7} {'zoo':>7}  " + " ".join(f"{v:>12}" for v in VARIANTS))
for m in (1, 4):
    for n, k in shapes:
        sets = 8 if n * k < 64e6 else 2
        ws = [torch.randn(n, k, device="cuda", dtype=H) for _ in range(sets)]
        x = torch.randn(m, k, device="cuda", dtype=H)
        i = [0]
        def t():
            i[0] = (i[0] + 1) % sets; return torch.nn.functional.linear(x, ws[i[0]])
        import zoo
        def z():
            i[0] = (i[0] + 1) % sets; return zoo.mm(x, ws[i[0]].t())
        row = [graph_time(t), graph_time(z)]
        for text in VARIANTS:
            cfg, splits = variant(text, m, k)
            c = torch.empty(m, n, device="cuda", dtype=H)
            try:
                launch = gemm.plan_launch(SPEC, cfg, 0, x, ws[0].t(), c, k, k, k, splits=splits, b_col=True)
            except Exception as e:
                row.append((float("nan"), 0)); print("  ", text, "plan failed:", str(e)[:200]); continue
            launch.pdl = text.endswith("+pdl")
            launch.fire(); torch.cuda.synchronize()
            ok = bench.verify(x, ws[0].t(), c).ok
            def g():
                i[0] = (i[0] + 1) % sets; launch.fire_at(x.data_ptr(), ws[i[0]].data_ptr(), c.data_ptr())
            us = graph_time(g)
            row.append((us if ok else -us, launch.grid[1]))
        print(f"{m:>2} {n:>6} {k:>5} " + " ".join(f"{v:7.2f}" for v in row[:2]) + "  " +
              " ".join(f"{v:8.2f}/{y:<3}" for v, y in row[2:]), flush=True)
        del ws
        torch.cuda.empty_cache()
print("negative: output WRONG; /N after a time: its K slices (grid y)")
