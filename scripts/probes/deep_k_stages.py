"""Deep-K grids of one wave or less: 8-stage rings and 2-CTA clusters against the 6-stage tiles.
dW = dY^T X of the MLP step (1024 x 1024 x 8192 bf16, A column-major in place), Llama's
2048 x 512 x 2048 (x W^T), ResNet-50's 3x3 512->512 layers at 7x7 output (stride 1 and 2).

python deep_k_stages.py            build every variant (in parallel processes), verify, time
python deep_k_stages.py --ncu NAME  fire one variant 4 times (under ncu: --launch-skip 3)
"""
import concurrent.futures as cf
import multiprocessing as mp
import sys
import time

import torch

from zoo import bench, conv, gemm, registry

H = torch.bfloat16

# Configs named ...old build the kernel as it was (warpgroup index not broadcast from lane 0).
from zoo.specs import base as _base  # noqa: E402
_defines = _base.KernelSpec.defines
_base.KernelSpec.defines = lambda self, c, *a, **k: {**_defines(self, c, *a, **k), **({"ZOO_WG_OLD": 1} if c.name.endswith("old") else {})}
# name: (M, N, K, a_col, b_col), then (config, splits) variants
GEMMS = {
    "dW": ((1024, 1024, 8192, True, False),
           [("64x128pp", 1), ("64x128ppold", 1), ("64x128s8", 1), ("64x128pps8", 1), ("64x128ppc2", 1), ("128x128", 2),
            ("128x128old", 2), ("64x128c2s8", 1)]),
    "llama-2048x512x2048": ((2048, 512, 2048, False, True),
                            [("64x128pp", 1), ("64x128ppold", 1), ("64x128s8", 1), ("64x128pps8", 1)]),
    "1024^3": ((1024, 1024, 1024, False, False),
               [("64x128pp", 1), ("64x128ppold", 1), ("64x128s8", 1), ("64x128ppc2", 1)]),
    "8192x1024x1024 xW^T": ((8192, 1024, 1024, False, True),
                            [("128x128pp", 1), ("128x128ppold", 1), ("64x128s8", 1)]),
    "4096^3": ((4096, 4096, 4096, False, False),
               [("128x256", 1), ("128x256old", 1), ("128x128pp", 1), ("128x128ppold", 1)]),
    "2048x8192x2048 xW^T": ((2048, 8192, 2048, False, True),
                            [("128x256", 1), ("128x256old", 1)]),
}
CONVS = {
    "3x3 512->512 7x7": (conv.Conv(32, 7, 7, 512, 512, 3, 3, (1, 1), (1, 1), (1, 1)),
                         [("128x128", 2), ("128x128old", 2), ("64x128s8", 1), ("64x128pp", 1), ("64x128s8", 2)]),
    "3x3 512->512 s2": (conv.Conv(32, 14, 14, 512, 512, 3, 3, (2, 2), (1, 1), (1, 1)),
                        [("128x128", 2), ("128x128old", 2), ("64x128s8", 1)]),
    "3x3 256->256 14x14": (conv.Conv(32, 14, 14, 256, 256, 3, 3, (1, 1), (1, 1), (1, 1)),
                           [("128x128", None), ("128x128old", None), ("128x128pp", None), ("128x128ppold", None),
                            ("64x128s8", 1)]),
}


def gemm_inputs(m, n, k, a_col, b_col, sets):
    g = torch.Generator(device="cuda").manual_seed(0)
    out = []
    for _ in range(sets):
        a = torch.randn(k, m, device="cuda", dtype=H, generator=g).t() if a_col else \
            torch.randn(m, k, device="cuda", dtype=H, generator=g)
        b = torch.randn(n, k, device="cuda", dtype=H, generator=g).t() if b_col else \
            torch.randn(k, n, device="cuda", dtype=H, generator=g)
        out.append((a, b, torch.empty(m, n, device="cuda", dtype=H)))
    return out


def gemm_launch(problem, cfg_name, splits, a, b, c):
    m, n, k, a_col, b_col = problem
    spec = registry.kernel("sm90_gemm_tma_wgmma")
    lda = a.stride(1) if a_col else a.stride(0)
    ldb = b.stride(1) if b_col else b.stride(0)
    return gemm.plan_launch(spec, spec.config(cfg_name), 0, a, b, c, k, lda, ldb, splits=splits,
                            a_col=a_col, b_col=b_col)


def conv_plan(shape, cfg_name, splits, x):
    return conv.plan_conv(x, shape, H, "sm90_conv_tma_wgmma", cfg_name, splits)


def build(job):
    kind, name, cfg, splits = job
    t0 = time.time()
    try:
        if kind == "gemm":
            problem = GEMMS[name][0]
            (a, b, c), = gemm_inputs(*problem, 1)
            gemm_launch(problem, cfg, splits, a, b, c)
        else:
            shape = CONVS[name][0]
            x, w = conv.inputs(shape, H, torch.Generator(device="cuda").manual_seed(0), weight_channels_last=True)
            conv_plan(shape, cfg, splits, x)
        return f"built {kind} {name} {cfg}/{splits} in {time.time() - t0:.0f} s"
    except Exception as exc:  # noqa: BLE001
        return f"REFUSED {kind} {name} {cfg}/{splits}: {str(exc)[:200]}"


def jobs():
    return [("gemm", n, c, s) for n, (_, vs) in GEMMS.items() for c, s in vs] + \
           [("conv", n, c, s) for n, (_, vs) in CONVS.items() for c, s in vs]


def main():
    t0 = time.time()
    with cf.ProcessPoolExecutor(8, mp_context=mp.get_context("spawn")) as pool:
        for line in pool.map(build, jobs()):
            print(line, flush=True)
    print(f"all built in {time.time() - t0:.0f} s", flush=True)
    lim = gemm.device_limits(0)
    for name, (problem, variants) in GEMMS.items():
        m, n, k, a_col, b_col = problem
        sets = 4
        ins = gemm_inputs(*problem, sets)
        want = ins[0][0].double() @ ins[0][1].double()
        fns = {"torch": (lambda i: torch.mm(ins[i][0], ins[i][1]))}
        plan = gemm.plan_call(ins[0][0], ins[0][1], None, None, None, None, None)
        fns[f"zoo default {plan.launch.choice[1]}/{plan.launch.choice[2]}"] = (lambda i: gemm.mm(ins[i][0], ins[i][1]))
        for cfg, splits in variants:
            try:
                launches = [gemm_launch(problem, cfg, splits, *ins[i]) for i in range(sets)]
            except Exception as exc:  # noqa: BLE001
                print(name, cfg, splits, "refused:", str(exc)[:150])
                continue
            ins[0][2].fill_(float("nan"))
            launches[0].fire()
            err = bench.relative_error(ins[0][2].float(), want)
            if not err < 1e-2:
                print(name, cfg, splits, "WRONG", err)
                continue
            fns[f"{cfg}/{splits}"] = (lambda ls: lambda i: ls[i].fire())(launches)
        t = bench.time_side_by_side(fns, sets, 3, 30, lead_cycles=bench.lead_cycles(lim))
        ref = t["torch"].median_ms
        print(f"== {name} ({m}x{n}x{k}, a_col {a_col}, b_col {b_col}), CUDA-graph replays, medians of 30")
        for key, v in sorted(t.items(), key=lambda kv: kv[1].median_ms):
            print(f"  {key:28s} {1e3 * v.median_ms:6.1f} us  {ref / v.median_ms:.3f}x of torch", flush=True)
    torch.backends.cudnn.benchmark = True
    with torch.no_grad():
        for name, (shape, variants) in CONVS.items():
            sets = 4
            gen = torch.Generator(device="cuda").manual_seed(0)
            ins = [conv.inputs(shape, H, gen, weight_channels_last=True) for _ in range(sets)]
            fns = {"cudnn": lambda i: conv.torch_conv(*ins[i], shape)}
            for cfg, splits in variants:
                plan = conv_plan(shape, cfg, splits, ins[0][0])
                ws = [plan.weights(w) for _, w in ins]
                check = conv.verify(ins[0][0], ins[0][1], plan.run(ins[0][0], ws[0]), shape)
                if not check.ok:
                    print(name, cfg, splits, "WRONG", check)
                    continue
                fns[f"{cfg}/{splits}"] = (lambda p, ws: lambda i: p.run(ins[i][0], ws[i]))(plan, ws)
            t = bench.time_side_by_side(fns, sets, 3, 30, lead_cycles=bench.lead_cycles(lim))
            ref = t["cudnn"].median_ms
            print(f"== conv {name} ({shape.describe()}), CUDA-graph replays, medians of 30")
            for key, v in sorted(t.items(), key=lambda kv: kv[1].median_ms):
                print(f"  {key:28s} {1e3 * v.median_ms:6.1f} us  {ref / v.median_ms:.3f}x of cuDNN", flush=True)


def one(label):
    """label: gemm:NAME:CFG:SPLITS, or gemm:NAME:torch"""
    kind, name, cfg, *rest = label.split(":")
    problem = GEMMS[name][0]
    (a, b, c), = gemm_inputs(*problem, 1)
    fire = (lambda: torch.mm(a, b)) if cfg == "torch" else gemm_launch(problem, cfg, int(rest[0]), a, b, c).fire
    for _ in range(4):
        fire()
        torch.cuda.synchronize()


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--ncu":
        one(sys.argv[2])
    else:
        main()
