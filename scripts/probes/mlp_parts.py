"""Probe (issue 40): the MLP training step's host enqueue time split into its parts (zero_grad +
forward + loss, backward, optimizer step), torch's layers and the zoo's taking turns, batch 16
and 8192; then the same per-layer for one Linear(1024, 1024) forward and backward alone."""
import collections, statistics, time
import torch
from zoo import models

def timed(fn):
    torch.cuda.synchronize(); t0 = time.perf_counter(); r = fn(); t1 = time.perf_counter(); torch.cuda.synchronize()
    return r, 1e6 * (t1 - t0)

for batch in (16, 8192):
    ref = models.mlp(torch.bfloat16)
    mine, _ = models.converted(ref)
    x = torch.randn(batch, 1024, device="cuda", dtype=torch.bfloat16)
    opts = {"torch": torch.optim.SGD(ref.parameters(), lr=1e-3), "zoo": torch.optim.SGD(mine.parameters(), lr=1e-3)}
    nets = {"torch": ref, "zoo": mine}
    parts = collections.defaultdict(list)
    for r in range(40):
        for name in (("torch", "zoo") if r % 2 == 0 else ("zoo", "torch")):
            net, opt = nets[name], opts[name]
            opt.zero_grad(set_to_none=True)
            loss, tf = timed(lambda: net(x).float().square().mean())
            _, tb = timed(lambda: loss.backward())
            _, to = timed(lambda: opt.step())
            if r >= 5:
                parts[name, "forward+loss"].append(tf); parts[name, "backward"].append(tb); parts[name, "sgd"].append(to)
    for part in ("forward+loss", "backward", "sgd"):
        t, z = statistics.median(parts["torch", part]), statistics.median(parts["zoo", part])
        print(f"batch {batch} {part:13s}: torch {t:8.1f} us  zoo {z:8.1f} us  zoo/torch {z / t:.3f}")
