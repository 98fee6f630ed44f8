"""Llama prefill and the MLP step's GEMMs in their real layouts: torch vs the zoo's default and
each candidate config (CUDA-graph replays side by side, inputs out of L2)."""
import sys, torch, zoo
from zoo import bench, gemm, registry
torch.manual_seed(0)
H = torch.float16 if "fp16" in sys.argv else torch.bfloat16
dev = torch.cuda.current_device()
lim = gemm.device_limits(dev)
big = ["256x128", "256x128c1x2", "128x256", "128x192pp", "128x128pp", "256x192", "128x192", "128x256c2", "128x192ppc2", "128x128ppc2", "128x192ppc2x2", "128x128c2"]
which = sys.argv[1] if len(sys.argv) > 1 else "all"

def case(label, a, b, ref, bias=None, configs=big):
    m, n = a.shape[0], b.shape[1]
    outs = [torch.empty(m, n, device="cuda", dtype=H) for _ in range(2)]
    fns = {"torch": lambda i: ref()}
    fns["zoo"] = lambda i: zoo.mm(a, b, out=outs[i % 2], bias=bias)
    plan = gemm.plan_call(a, b, None, None, None, outs[0], None, bias)
    for name in configs:
        for splits in (None,):
            try:
                zoo.mm(a, b, out=outs[0], bias=bias, config=name)
            except Exception as e:
                print(f"   {name}: {type(e).__name__}: {str(e)[:80]}"); continue
            fns[name] = (lambda c: lambda i: zoo.mm(a, b, out=outs[i % 2], bias=bias, config=c))(name)
    t = bench.time_side_by_side(fns, 1, 5, 30, lead_cycles=bench.lead_cycles(lim))
    tt = t["torch"].median_ms * 1e3
    rows = sorted(((k, v.median_ms * 1e3) for k, v in t.items() if k not in ("torch",)), key=lambda r: r[1])
    print(f"{label}: torch {tt:.2f} us; zoo default {t['zoo'].median_ms*1e3:.2f} us {plan.launch.choice} "
          f"({tt / (t['zoo'].median_ms*1e3):.2f}x); all: " +
          ", ".join(f"{k} {v:.2f} ({tt / v:.2f}x)" for k, v in rows), flush=True)

if which in ("all", "llama"):
    x = torch.randn(2048, 2048, device="cuda", dtype=H); x8 = torch.randn(2048, 8192, device="cuda", dtype=H)
    for n, k in ((8192, 2048), (2048, 8192), (2048, 2048), (512, 2048), (32000, 2048)):
        W = torch.randn(n, k, device="cuda", dtype=H) / k ** 0.5
        xi = x if k == 2048 else x8
        case(f"llama prefill x@W^T 2048x{n}x{k}", xi, W.t(), lambda: torch.nn.functional.linear(xi, W))
if which in ("all", "mlp"):
    x = torch.randn(8192, 1024, device="cuda", dtype=H); W = torch.randn(1024, 1024, device="cuda", dtype=H) / 32
    g = torch.randn(8192, 1024, device="cuda", dtype=H); bias = torch.randn(1024, device="cuda", dtype=H)
    case("mlp fwd x@W^T+b 8192x1024x1024", x, W.t(), lambda: torch.nn.functional.linear(x, W, bias), bias)
    case("mlp dX g@W 8192x1024x1024", g, W, lambda: torch.mm(g, W))
    case("mlp dW g^T@x 1024x1024x8192", g.t(), x, lambda: torch.mm(g.t(), x), configs=big + ["64x128pp", "128x128"])
