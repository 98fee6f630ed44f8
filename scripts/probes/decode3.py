"""One row of x @ W^T: the narrow streaming blocks against the swap-AB tiles and F.linear, same
run, CUDA-graph replays of 20 calls over 8 weight sets."""
import statistics, sys
sys.path.insert(0, __import__("os").path.dirname(__file__))
import torch, zoo
from decode2 import graph_time  # noqa: E402
from zoo import registry
H = torch.bfloat16
print(f"{'N':>6} {'K':>6} {'torch':>8} {'narrow':>8} {'tiles':>8}")
for n, k in ((2048, 2048), (512, 2048), (1024, 4096), (4096, 1024)):
    ws = [torch.randn(n, k, device="cuda", dtype=H) for _ in range(8)]
    x = torch.randn(1, k, device="cuda", dtype=H)
    i = [0]
    def f(**kw):
        def g():
            i[0] = (i[0] + 1) % 8; return zoo.mm(x, ws[i[0]].t(), **kw)
        return g
    def t():
        i[0] = (i[0] + 1) % 8; return torch.nn.functional.linear(x, ws[i[0]])
    row = [graph_time(t), graph_time(f(kernel=registry.SM75_GEMV.name, config="1x8")),
           graph_time(f(kernel=registry.SM90_GEMM.name, config="16x128s"))]
    print(f"{n:>6} {k:>6} " + " ".join(f"{v:8.2f}" for v in row), flush=True)
