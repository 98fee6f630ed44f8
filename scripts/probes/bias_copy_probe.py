"""Call 3: the bias epilogue with pipelined loads; the K-major streaming kernel against the
copy path it replaces where no swap-AB tiles serve (row-major gemv on a copy of W^T, which
zoo.mm did per call) and against the swap-AB tiles; CUDA-graph replays, inputs out of L2."""
import torch, zoo
from zoo import bench, gemm, registry
dev = torch.cuda.current_device(); lim = gemm.device_limits(dev)
SM90, GEMV = registry.kernel("sm90_gemm_tma_wgmma"), registry.kernel("sm75_gemv_stream")
torch.manual_seed(0)

def side(label, fns, sets):
    t = bench.time_side_by_side(fns, sets, 5, 40, lead_cycles=bench.lead_cycles(lim))
    tt = t["torch"].median_ms * 1e3
    rows = sorted(((k, v.median_ms * 1e3) for k, v in t.items() if k != "torch"), key=lambda r: r[1])
    print(f"{label}: torch {tt:.2f} us; " + "; ".join(f"{k} {v:.2f} ({tt / v:.3f}x)" for k, v in rows), flush=True)

H = torch.bfloat16
mk = lambda: (torch.randn(8192, 1024, device="cuda", dtype=H), torch.randn(1024, 1024, device="cuda", dtype=H) / 32,
              torch.randn(1024, device="cuda", dtype=H))
sets = 11; ins = [mk() for _ in range(sets)]
outs = [torch.empty(8192, 1024, device="cuda", dtype=H) for _ in range(2)]
x, w, b = ins[0]
want = torch.nn.functional.linear(x.double(), w.double(), b.double())
for cfg in (None, "128x128pp", "128x192pp"):
    got = zoo.mm(x, w.t(), bias=b, config=cfg).double()
    print(cfg, "bias rel err", f"{((got - want).norm() / want.norm()).item():.2e}")
fns = {"torch": lambda i: torch.nn.functional.linear(ins[i][0], ins[i][1], ins[i][2]),
       "zoo bias": lambda i: zoo.mm(ins[i][0], ins[i][1].t(), out=outs[i % 2], bias=ins[i][2]),
       "zoo no-bias": lambda i: zoo.mm(ins[i][0], ins[i][1].t(), out=outs[i % 2]),
       "zoo bias 128x128pp": lambda i: zoo.mm(ins[i][0], ins[i][1].t(), out=outs[i % 2], bias=ins[i][2], config="128x128pp"),
       "zoo no-bias 128x128pp": lambda i: zoo.mm(ins[i][0], ins[i][1].t(), out=outs[i % 2], config="128x128pp")}
for r in range(2):
    side(f"mlp fwd x@W^T+b 8192x1024x1024 bf16 round {r}", fns, sets)

for m in (1, 4, 8):
    for n, k in ((2048, 2048), (4096, 4096), (11008, 4096)):
        dt = torch.float16
        sets = bench.rotation_sets((m * k + n * k) * 2, lim.l2_bytes)
        ins2 = [(torch.randn(m, k, device="cuda", dtype=dt), torch.randn(n, k, device="cuda", dtype=dt) / k ** 0.5) for _ in range(sets)]
        o = [torch.empty(m, n, device="cuda", dtype=dt) for _ in range(2)]
        xx, ww = ins2[0]
        o[0].fill_(float("nan")); zoo.mm(xx, ww.t(), out=o[0], kernel=GEMV.name)
        print(f"  {m}x{n}x{k} K-major gemv: {bench.verify(xx, ww.t(), o[0]).describe()}")
        fns2 = {"torch": lambda i: torch.nn.functional.linear(*ins2[i]),
                "gemv K-major (W in place)": lambda i: zoo.mm(ins2[i][0], ins2[i][1].t(), out=o[i % 2], kernel=GEMV.name),
                "gemv on a copy of W^T (before)": lambda i: zoo.mm(ins2[i][0], ins2[i][1].t().contiguous(), out=o[i % 2], kernel=GEMV.name),
                "sm90 16x128s": lambda i: zoo.mm(ins2[i][0], ins2[i][1].t(), out=o[i % 2], kernel=SM90.name, config="16x128s")}
        side(f"skinny {m}x{n}x{k} fp16", fns2, sets)
