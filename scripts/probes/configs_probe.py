"""Issue 40 probe: the GEMMs of the MLP step, Llama prefill and decode, torch vs the zoo's default
and candidates (config x split-K), inputs rotated out of L2, CUDA-graph replays."""
import os, sys, time, itertools, multiprocessing as mp
import torch, zoo
from zoo import bench, gemm, registry, cuda

dev = torch.cuda.current_device()
lim = gemm.device_limits(dev)
spec = registry.kernel("sm90_gemm_tma_wgmma")
gemv = registry.kernel("sm75_gemv_stream")
BIG = ["128x256", "128x128", "128x128pp", "64x128pp", "128x192pp", "128x256c2", "128x128c2", "64x64pp"]
SWAP = [c.name for c in spec.configs if c.swap_ab]


def _compile(job):
    name, cfg_name, a_col, b_col = job
    s = registry.kernel(name)
    c = s.config(cfg_name)
    try:
        cuda.compile_cubin(s.source, lim.arch, s.defines(c, a_col, b_col), kernel=s.name, config=c.name)
    except Exception as e:
        return f"{name}/{cfg_name}/{a_col}{b_col}: {e}"[:200]


def warm(jobs):
    t = time.time()
    with mp.get_context("fork").Pool(14) as p:
        errs = [e for e in p.map(_compile, jobs) if e]
    print(f"warmed {len(jobs)} builds in {time.time() - t:.0f} s; errors: {errs}", flush=True)


def launch_for(s, cfg, a, b, c, splits):
    a_col, b_col = gemm.read_in_place(s, cfg, a, b)
    a_read, lda, ac = (a, a.stride(1), None) if a_col else gemm.row_major_plan(a, s.aligned_rows)
    b_read, ldb, bc = (b, b.stride(1), None) if b_col else gemm.row_major_plan(b, s.aligned_rows)
    assert ac is None and bc is None, "probe inputs need no copy"
    return gemm.plan_launch(s, cfg, dev, a_read, b_read, c, a.shape[1], lda, ldb, splits=splits, a_col=a_col, b_col=b_col)


def case(label, make, configs, splits_list=(None,), bias=False, gemv_ok=False, sets=None):
    """make() -> (a, b, bias_or_None, torch_fn(a, b, bias)); rotated copies beat L2."""
    a0, b0, bias0, ref = make()
    m, k = a0.shape; n = b0.shape[1]
    nbytes = (a0.numel() + b0.numel()) * a0.element_size()
    sets = sets or bench.rotation_sets(nbytes, lim.l2_bytes)
    inputs = [(a0, b0, bias0)] + [make()[:3] for _ in range(sets - 1)]
    outs = [torch.empty(m, n, device="cuda", dtype=a0.dtype) for _ in range(2)]
    want = ref(a0, b0, bias0).float()
    fns = {"torch": lambda i: ref(*inputs[i])}
    fns["zoo"] = lambda i: zoo.mm(inputs[i][0], inputs[i][1], out=outs[i % 2], bias=inputs[i][2])
    plan = gemm.plan_call(a0, b0, None, None, None, outs[0], None, bias0)
    bad = []
    for cname, sp in itertools.product(configs, splits_list):
        cfg = spec.config(cname)
        c = outs[0]
        try:
            L = launch_for(spec, cfg, a0, b0, c, sp)
        except Exception as e:
            bad.append(f"{cname}/{sp}: {type(e).__name__} {str(e)[:60]}"); continue
        c.fill_(float("nan")); L.fire_at(a0.data_ptr(), b0.data_ptr(), c.data_ptr())
        got = c.float() + (bias0.float() if bias0 is not None else 0)
        err = ((got - want).norm() / want.norm()).item()
        if not err < 2e-2:
            bad.append(f"{cname}/{sp}: err {err:.1e}"); continue
        key = f"{cname}/{sp if sp else 'auto'}"
        if bias0 is not None:  # the launch without bias + torch's add: only for ranking
            fns[key] = (lambda L: lambda i: (L.fire_at(inputs[i][0].data_ptr(), inputs[i][1].data_ptr(), outs[i % 2].data_ptr()), outs[i % 2].add_(inputs[i][2])))(L)
        else:
            fns[key] = (lambda L: lambda i: L.fire_at(inputs[i][0].data_ptr(), inputs[i][1].data_ptr(), outs[i % 2].data_ptr()))(L)
    if gemv_ok and m <= 8:
        fns["gemv"] = lambda i: zoo.mm(inputs[i][0], inputs[i][1], out=outs[i % 2], bias=inputs[i][2], kernel=gemv.name)
    if bias0 is not None:
        fns["zoo no-bias"] = lambda i: zoo.mm(inputs[i][0], inputs[i][1], out=outs[i % 2])
        fns["torch no-bias"] = lambda i: torch.mm(inputs[i][0], inputs[i][1], out=outs[i % 2])
    t = bench.time_side_by_side(fns, sets, 5, 40, lead_cycles=bench.lead_cycles(lim))
    tt = t["torch"].median_ms * 1e3
    rows = sorted(((kk, v.median_ms * 1e3) for kk, v in t.items() if kk != "torch"), key=lambda r: r[1])
    print(f"\n{label} (sets {sets}): torch {tt:.2f} us; zoo default {t['zoo'].median_ms * 1e3:.2f} us "
          f"{plan.launch.choice} ({tt / (t['zoo'].median_ms * 1e3):.3f}x)", flush=True)
    print("   " + "; ".join(f"{kk} {v:.2f} ({tt / v:.2f}x)" for kk, v in rows[:10]), flush=True)
    if bad:
        print("   skipped: " + "; ".join(bad[:8]))


def W(n, k, dt):
    return torch.randn(n, k, device="cuda", dtype=dt) / k ** 0.5


if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    H, F = torch.bfloat16, torch.float16
    jobs = set()
    for c in BIG:
        for ab in ((False, False), (False, True), (True, False)):
            jobs.add((spec.name, c, *ab))
    for c in SWAP:
        jobs.add((spec.name, c, False, True)); jobs.add((spec.name, c, False, False))
    for c in gemv.configs:
        jobs.add((gemv.name, c.name, False, False))
    warm(sorted(jobs))
    torch.manual_seed(0)
    if which in ("all", "mlp"):
        def fwd():
            x = torch.randn(8192, 1024, device="cuda", dtype=H); w = W(1024, 1024, H); b = torch.randn(1024, device="cuda", dtype=H)
            return x, w.t(), b, lambda x, wt, b: torch.nn.functional.linear(x, wt.t(), b)
        case("mlp fwd x@W^T+b 8192x1024x1024 bf16", fwd, BIG[:5])
        def dx():
            return torch.randn(8192, 1024, device="cuda", dtype=H), W(1024, 1024, H), None, lambda g, w, _: torch.mm(g, w)
        case("mlp dX g@W 8192x1024x1024 bf16", dx, BIG[:5])
        def dw():
            g = torch.randn(8192, 1024, device="cuda", dtype=H); x = torch.randn(8192, 1024, device="cuda", dtype=H)
            return g.t(), x, None, lambda gt, x, _: torch.mm(gt, x)
        case("mlp dW g^T@x 1024x1024x8192 bf16", dw, ["128x128", "128x128pp", "64x128pp", "64x64pp", "128x128c2"], (None, 1, 2, 4))
    if which in ("all", "decode"):
        for m in (1, 16):
            for n, k in ((2048, 2048), (512, 2048), (8192, 2048), (2048, 8192)):
                def dec(m=m, n=n, k=k):
                    x = torch.randn(m, k, device="cuda", dtype=F); w = W(n, k, F)
                    return x, w.t(), None, lambda x, wt, _: torch.nn.functional.linear(x, wt.t())
                case(f"decode x@W^T {m}x{n}x{k} fp16", dec, SWAP + ["64x64pp"], (None, 1, 2, 4, 8), gemv_ok=True)
    if which in ("all", "prefill"):
        for n, k in ((2048, 2048), (512, 2048), (8192, 2048), (2048, 8192), (32000, 2048)):
            def pre(n=n, k=k):
                x = torch.randn(2048, k, device="cuda", dtype=F); w = W(n, k, F)
                return x, w.t(), None, lambda x, wt, _: torch.nn.functional.linear(x, wt.t())
            case(f"prefill x@W^T 2048x{n}x{k} fp16", pre, BIG, (None,) if n > 600 else (None, 1, 2))
