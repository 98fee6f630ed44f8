"""Call 2: the bias epilogue after batching its loads; decode GEMMs on the K-major streaming
kernel against torch and the swap-AB tiles (inputs rotated out of L2, CUDA-graph replays)."""
import sys, torch, zoo
from zoo import bench, gemm, registry
dev = torch.cuda.current_device(); lim = gemm.device_limits(dev)
SM90, GEMV = registry.kernel("sm90_gemm_tma_wgmma"), registry.kernel("sm75_gemv_stream")
torch.manual_seed(0)

def side(label, fns, sets, ref_key="torch"):
    t = bench.time_side_by_side(fns, sets, 5, 40, lead_cycles=bench.lead_cycles(lim))
    tt = t[ref_key].median_ms * 1e3
    rows = sorted(((k, v.median_ms * 1e3) for k, v in t.items() if k != ref_key), key=lambda r: r[1])
    print(f"{label}: torch {tt:.2f} us; " + "; ".join(f"{k} {v:.2f} ({tt / v:.3f}x)" for k, v in rows), flush=True)
    return t

def bias_case():
    H = torch.bfloat16
    mk = lambda: (torch.randn(8192, 1024, device="cuda", dtype=H), torch.randn(1024, 1024, device="cuda", dtype=H) / 32,
                  torch.randn(1024, device="cuda", dtype=H))
    sets = 11; ins = [mk() for _ in range(sets)]
    outs = [torch.empty(8192, 1024, device="cuda", dtype=H) for _ in range(2)]
    for x, w, b in ins[:1]:
        want = torch.nn.functional.linear(x.double(), w.double(), b.double())
        got = zoo.mm(x, w.t(), bias=b).double()
        print("bias check rel err", ((got - want).norm() / want.norm()).item())
    fns = {"torch": lambda i: torch.nn.functional.linear(ins[i][0], ins[i][1], ins[i][2]),
           "zoo bias": lambda i: zoo.mm(ins[i][0], ins[i][1].t(), out=outs[i % 2], bias=ins[i][2]),
           "zoo no-bias": lambda i: zoo.mm(ins[i][0], ins[i][1].t(), out=outs[i % 2]),
           "torch no-bias": lambda i: torch.mm(ins[i][0], ins[i][1].t(), out=outs[i % 2]),
           "zoo bias 128x128pp": lambda i: zoo.mm(ins[i][0], ins[i][1].t(), out=outs[i % 2], bias=ins[i][2], config="128x128pp"),
           "zoo bias (again)": lambda i: zoo.mm(ins[i][0], ins[i][1].t(), out=outs[i % 2], bias=ins[i][2])}
    for r in range(2):
        side(f"mlp fwd x@W^T+b 8192x1024x1024 bf16 round {r}", fns, sets)

def decode_case(m, n, k, dt=torch.float16):
    sets = bench.rotation_sets((m * k + n * k) * 2, lim.l2_bytes)
    ins = [(torch.randn(m, k, device="cuda", dtype=dt), torch.randn(n, k, device="cuda", dtype=dt) / k ** 0.5) for _ in range(sets)]
    outs = [torch.empty(m, n, device="cuda", dtype=dt) for _ in range(2)]
    x, w = ins[0]
    plan = gemm.plan_call(x, w.t(), None, None, None, outs[0], None)
    fns = {"torch": lambda i: torch.nn.functional.linear(*ins[i]),
           f"zoo {plan.launch.choice[:2]} grid {plan.launch.grid}": lambda i: zoo.mm(ins[i][0], ins[i][1].t(), out=outs[i % 2]),
           "16x128s": lambda i: zoo.mm(ins[i][0], ins[i][1].t(), out=outs[i % 2], kernel=SM90.name, config="16x128s")}
    cfg = registry.select(lim, registry.Problem(m, n, k, b_col=True), kernel_name=GEMV.name)[1]
    for s in (2, 4, 8, 16, 32):
        try:
            L = gemm.plan_launch(GEMV, cfg, dev, x, w.t(), outs[0], k, k, k, splits=s, b_col=True)
        except Exception as e:
            print("  ", s, e); continue
        outs[0].fill_(float("nan")); L.fire()
        ok = bench.verify(x, w.t(), outs[0]).ok
        if ok:
            fns[f"gemv/{s} (y={L.grid[1]})"] = (lambda L: lambda i: L.fire_at(ins[i][0].data_ptr(), ins[i][1].data_ptr(), outs[i % 2].data_ptr()))(L)
        else:
            print("   WRONG gemv splits", s)
    outs[0].fill_(float("nan")); zoo.mm(x, w.t(), out=outs[0])
    print(f"  {m}x{n}x{k} default verified: {bench.verify(x, w.t(), outs[0]).describe()}")
    side(f"decode {m}x{n}x{k}", fns, sets)

if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    if which in ("all", "bias"):
        bias_case()
    if which in ("all", "decode"):
        for m in (1, 8):
            for n, k in ((2048, 2048), (512, 2048), (8192, 2048), (2048, 8192), (32000, 2048), (4096, 4096), (11008, 4096), (4096, 11008)):
                decode_case(m, n, k)
