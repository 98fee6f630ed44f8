"""Probe (issue 40): Llama prefill's GEMM shapes with x hot in L2 (as in the model: x was just
written), the zoo's choice and alternatives against torch.mm, CUDA-graph replays, alternating."""
import torch, zoo
from zoo import bench, gemm
for m, n, k, cfgs in [(2048, 512, 2048, (None, "128x128pp", "128x256", "64x128pp", "64x64pp")),
                      (2048, 2048, 2048, (None, "128x128pp", "128x256")),
                      (2048, 8192, 2048, (None, "128x128pp")), (2048, 2048, 8192, (None, "128x128pp"))]:
    x = torch.randn(m, k, device="cuda", dtype=torch.float16)
    w = torch.randn(n, k, device="cuda", dtype=torch.float16) / 32
    fns = {"torch": lambda i: torch.mm(x, w.t())}
    for cfg in cfgs:
        name = cfg or "zoo default"
        try:
            y = zoo.mm(x, w.t(), config=cfg)
            assert bench.verify(x, w.t(), y).ok, name
        except Exception as e:
            print(m, n, k, name, "error", str(e)[:100]); continue
        fns[name] = (lambda c: lambda i: zoo.mm(x, w.t(), config=c))(cfg)
    choice = gemm.plan_call(x, w.t(), None, None, None, None, None).launch.choice
    for rnd in range(2):
        t = bench.time_side_by_side(fns, 1, 10, 200)
        base = t["torch"].median_ms
        print(f"{m}x{n}x{k} (default {choice[1]}) round {rnd}: torch {base*1e3:.1f} us; " +
              "; ".join(f"{k2} {v.median_ms*1e3:.1f} us {100*base/v.median_ms:.1f}%" for k2, v in t.items() if k2 != "torch"),
              flush=True)
        fns = dict(reversed(list(fns.items())))
