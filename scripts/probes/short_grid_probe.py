"""Call 4: the short-grid ping-pong rule: 128x256 against 128x128pp and the zoo's default, side
by side with torch (CUDA-graph replays, inputs out of L2)."""
import torch, zoo
from zoo import bench, gemm
dev = torch.cuda.current_device(); lim = gemm.device_limits(dev)
torch.manual_seed(0)
H = torch.bfloat16
for m, n, k, bias in ((8192, 1024, 1024, True), (8192, 1024, 1024, False), (2048, 4096, 4096, False),
                      (4096, 2048, 2048, False), (8192, 1024, 4096, False), (2048, 4096, 1024, False)):
    sets = bench.rotation_sets((m * k + n * k) * 2, lim.l2_bytes)
    ins = [(torch.randn(m, k, device="cuda", dtype=H), torch.randn(n, k, device="cuda", dtype=H) / k ** 0.5,
            torch.randn(n, device="cuda", dtype=H) if bias else None) for _ in range(sets)]
    outs = [torch.empty(m, n, device="cuda", dtype=H) for _ in range(2)]
    x, w, b = ins[0]
    plan = gemm.plan_call(x, w.t(), None, None, None, outs[0], None, b)
    fns = {"torch": lambda i: torch.nn.functional.linear(*ins[i])}
    fns[f"zoo {plan.launch.choice[1]}"] = lambda i: zoo.mm(ins[i][0], ins[i][1].t(), out=outs[i % 2], bias=ins[i][2])
    for c in ("128x256", "128x128pp"):
        fns[c] = (lambda c: lambda i: zoo.mm(ins[i][0], ins[i][1].t(), out=outs[i % 2], bias=ins[i][2], config=c))(c)
        outs[0].fill_(float("nan")); zoo.mm(x, w.t(), out=outs[0], bias=b, config=c)
        want = torch.nn.functional.linear(x.double(), w.double(), None if b is None else b.double())
        err = ((outs[0].double() - want).norm() / want.norm()).item()
        assert err < 1e-2, (c, err)
    t = bench.time_side_by_side(fns, sets, 5, 40, lead_cycles=bench.lead_cycles(lim))
    tt = t["torch"].median_ms * 1e3
    print(f"x@W^T{'+b' if bias else ''} {m}x{n}x{k} bf16: torch {tt:.2f} us; " +
          "; ".join(f"{kk} {v.median_ms * 1e3:.2f} ({tt / (v.median_ms * 1e3):.3f}x)" for kk, v in t.items() if kk != "torch"), flush=True)
