"""Quick device check: every config, both out dtypes, ragged shapes (used during development)."""
import itertools, sys, torch, zoo
from zoo import bench, registry
spec = registry.SM75_HGEMM
fails = 0
for cfg in spec.configs:
    for (m, n, k), od in itertools.product([(1, 1, 1), (7, 129, 33), (127, 736, 1504), (2112, 129, 7), (129, 1504, 736)], (torch.float16, torch.float32)):
        a = torch.randn(m, k, device="cuda", dtype=torch.float16); b = torch.randn(k, n, device="cuda", dtype=torch.float16)
        out = torch.full((m, n), float("nan"), device="cuda", dtype=od)
        zoo.mm(a, b, out=out, config=cfg.name)
        c = bench.verify(a, b, out)
        if not c.ok: fails += 1; print("FAIL", cfg.name, m, n, k, od, c.describe())
print("smoke fails:", fails)
