"""Llama 3.2 1B's GEMMs (fp16, x @ W^T as zoo.nn.Linear runs them): decode (M = 1) and prefill
(M = 2048), torch's F.linear against zoo.linear, CUDA-graph replays side by side. Each shape
rotates over weight copies (out of L2); 'chain' is one decode token's 113 GEMMs (16 layers of
q, k, v, o, gate, up, down and the LM head, every weight its own) in one graph."""
import sys, torch
from zoo import bench, gemm, linear

H = torch.float16
torch.manual_seed(0)
lim = gemm.device_limits(torch.cuda.current_device())
lead = bench.lead_cycles(lim)
LAYER = [(2048, 2048), (512, 2048), (512, 2048), (2048, 2048), (8192, 2048), (8192, 2048), (2048, 8192)]
which = sys.argv[1:] or ["chain", "decode", "prefill"]


def side(label, fns, sets, iters=30):
    t = bench.time_side_by_side(fns, sets, 3, iters, lead_cycles=lead)
    tt, zz = t["torch"].median_ms * 1e3, t["zoo"].median_ms * 1e3
    print(f"{label}: torch {tt:.2f} us, zoo {zz:.2f} us, {tt / zz:.3f}x "
          f"(spreads {t['torch'].spread:.1%} / {t['zoo'].spread:.1%})", flush=True)


if "chain" in which:
    Ws = [[torch.randn(n, k, device="cuda", dtype=H) / k ** 0.5 for n, k in LAYER] for _ in range(16)]
    Ws.append([torch.randn(32000, 2048, device="cuda", dtype=H) / 45])
    xs = {k: torch.randn(1, 1, k, device="cuda", dtype=H) for k in (2048, 8192)}

    def chain(f):
        def run(i):
            for layer in Ws:
                for W in layer:
                    f(xs[W.shape[1]], W)
        return run
    side("decode chain (113 GEMMs)", {"torch": chain(torch.nn.functional.linear), "zoo": chain(linear.linear)}, 1, 20)

for label, m in (("decode", 1), ("prefill", 2048)):
    if label not in which:
        continue
    for n, k in sorted(set(LAYER)) + [(32000, 2048)]:
        sets = bench.rotation_sets(n * k * 2, lim.l2_bytes)
        Ws = [torch.randn(n, k, device="cuda", dtype=H) / k ** 0.5 for _ in range(sets)]
        x = torch.randn(m, k, device="cuda", dtype=H) if m > 1 else torch.randn(1, 1, k, device="cuda", dtype=H)
        plan_note = ""
        try:
            plan_note = gemm.plan_call(x.reshape(-1, k), Ws[0].t(), None, None, None,
                                       torch.empty(m, n, device="cuda", dtype=H), None, None).launch.choice
        except Exception as exc:  # the probe reports, never stops
            plan_note = type(exc).__name__
        side(f"{label} {m}x{n}x{k} [{plan_note}]",
             {"torch": lambda i: torch.nn.functional.linear(x, Ws[i]), "zoo": lambda i: linear.linear(x, Ws[i])}, sets)
