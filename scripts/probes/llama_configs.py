"""Llama 3.2 1B's GEMMs (fp16, x @ W^T) on each config the zoo has for them, against torch's
F.linear and the zoo's default: CUDA-graph replays side by side, weights rotated out of L2."""
import torch
from zoo import bench, gemm

H = torch.float16
torch.manual_seed(0)
lim = gemm.device_limits(torch.cuda.current_device())
lead = bench.lead_cycles(lim)
PREFILL = ["128x256", "128x192pp", "128x128pp", "256x192", "128x192", "128x128", "128x256c2", "128x192ppc2",
           "128x128ppc2", "128x128c2", "128x192ppc2x2"]
DECODE = [("sm75_gemv_stream", "1x8"), ("sm90_gemm_tma_wgmma", "16x128s"), ("sm90_gemm_tma_wgmma", "32x128s"),
          ("sm90_gemm_tma_wgmma", "32x64s"), ("sm90_gemm_tma_wgmma", "64x64s")]


def sweep(m, n, k, choices):
    sets = bench.rotation_sets(n * k * 2, lim.l2_bytes)
    Ws = [torch.randn(n, k, device="cuda", dtype=H) / k ** 0.5 for _ in range(sets)]
    x = torch.randn(m, k, device="cuda", dtype=H)
    outs = [torch.empty(m, n, device="cuda", dtype=H) for _ in range(2)]
    fns = {"torch": lambda i: torch.nn.functional.linear(x, Ws[i]), "zoo": lambda i: gemm.mm(x, Ws[i].t(), out=outs[i % 2])}
    ref = torch.nn.functional.linear(x, Ws[0]).float()
    for kernel, config in choices:
        try:
            got = gemm.mm(x, Ws[0].t(), kernel=kernel, config=config).float()
            assert (got - ref).abs().max().item() <= 1e-2 * ref.abs().max().item() + 1e-2, "wrong"
        except Exception as exc:
            print(f"   {config}: {type(exc).__name__}: {str(exc)[:90]}")
            continue
        fns[config] = (lambda kk, c: lambda i: gemm.mm(x, Ws[i].t(), out=outs[i % 2], kernel=kk, config=c))(kernel, config)
    t = bench.time_side_by_side(fns, sets, 3, 40, lead_cycles=lead)
    tt = t["torch"].median_ms * 1e3
    rows = sorted(((c, v.median_ms * 1e3) for c, v in t.items() if c != "torch"), key=lambda r: r[1])
    print(f"{m}x{n}x{k}: torch {tt:.2f} us; " + ", ".join(f"{c} {v:.2f} ({tt / v:.3f}x)" for c, v in rows), flush=True)


for n, k in ((2048, 2048), (8192, 2048), (2048, 8192), (512, 2048)):
    sweep(2048, n, k, [("sm90_gemm_tma_wgmma", c) for c in PREFILL])
for n, k in ((2048, 2048), (512, 2048), (2048, 8192), (8192, 2048)):
    sweep(1, n, k, DECODE)
