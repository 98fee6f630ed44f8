"""zoo.mm measured against torch.mm on the device: `zoo tune`'s every eligible (kernel, config,
split-K) for a shape, and `zoo run` / `zoo bench`'s chosen kernels, each verified and timed side
by side. Above the launch path (it plans and fires launches); the file of winners that zoo.mm
reads is zoo/tune.py's, below it."""

from __future__ import annotations

import torch

from . import bench, configs, gemm, registry


def candidates(device_index: int, problem) -> list[tuple[object, object, int | None]]:
    """Every eligible (kernel, config, splits) for a problem on the device: each kernel that runs
    it, each config that fits, and for split-K kernels the registry's rule (None) and 1-4
    slices where a slice keeps at least MIN_SPLIT_K_TILES K-tiles."""
    limits = gemm.device_limits(device_index)
    out = []
    for spec in registry.eligible(limits.cc, problem):
        for cfg in spec.configs:
            if configs.problems(cfg, spec, limits) or not registry.serves(spec, cfg, problem):
                continue
            splits = [None]
            if spec.split_k:
                k_tiles = -(-problem.k // cfg.block_k)
                splits += [s for s in (1, 2, 3, 4) if k_tiles // s >= registry.MIN_SPLIT_K_TILES]
            out += [(spec, cfg, s) for s in splits]
    return out


def measure(device_index: int, problem, iters: int = 20, warmup: int = 5, seed: int = 0,
            progress=None) -> list[dict]:
    """Verify and time every candidate for `problem` against torch.mm in one run (CUDA-graph
    replays, the GPU kept ahead of the host): rows sorted fastest first, wrong ones last."""
    dtype, out_dtype = getattr(torch, problem.dtype), getattr(torch, problem.out_dtype)
    m, n, k = problem.m, problem.n, problem.k
    limits = gemm.device_limits(device_index)
    gen = torch.Generator(device=f"cuda:{device_index}").manual_seed(seed)
    a = torch.randn(m, k, device=f"cuda:{device_index}", dtype=dtype, generator=gen)
    b = torch.randn(k, n, device=f"cuda:{device_index}", dtype=dtype, generator=gen)
    c = torch.empty(m, n, device=f"cuda:{device_index}", dtype=out_dtype)
    fns, rows = {"torch.mm": lambda i: bench.torch_mm(a, b, out_dtype)}, []
    with bench.tf32_matmul(problem.tf32):
        for spec, cfg, splits in candidates(device_index, problem):
            name = f"{spec.name} / {cfg.name} / {'auto' if splits is None else splits}"
            a_read, lda, a_copy = gemm.row_major_plan(a, spec.aligned_rows)
            b_read, ldb, b_copy = gemm.row_major_plan(b, spec.aligned_rows)
            for dst, src in ((a_copy, a), (b_copy, b)):
                if dst is not None:
                    dst.copy_(src)
            launch = gemm.plan_launch(spec, cfg, device_index, a_read, b_read, c, k, lda, ldb, splits=splits)
            c.fill_(float("nan"))
            launch.fire()
            check = bench.verify(a, b, c)
            rows.append({"kernel": spec.name, "config": cfg.name, "splits": splits, "name": name,
                         "verified": check.ok})
            if check.ok:
                fns[name] = (lambda f: lambda i: f())(launch.fire)
            if progress:
                progress()
        lead = bench.lead_cycles(limits)
        timings = bench.time_side_by_side(fns, 1, warmup, iters, lead_cycles=lead)
    return _ranked(rows, timings, "torch.mm", "torch_us")


def _ranked(rows: list[dict], timings: dict, reference: str, field: str) -> list[dict]:
    """Each row with its median "us" (inf for one not timed: wrong) and the reference's time as
    `field`, fastest first, wrong ones last."""
    reference_us = 1e3 * timings[reference].median_ms
    for row in rows:
        t = timings.get(row["name"])
        row["us"] = 1e3 * t.median_ms if t else float("inf")
        row[field] = reference_us
    return sorted(rows, key=lambda r: (not r["verified"], r["us"]))


def measure_choices(choices, problem, warmup: int, iters: int, seed: int, limits, progress=None,
                    graph: bool = True):
    """Verify each (kernel, config) on fresh random inputs against float64, then time them
    side by side with torch.mm in one run (CUDA events, rotating input sets; graph replays
    unless graph=False). Returns (timings by name, checks by kernel name, input sets)."""
    with bench.tf32_matmul(problem.tf32):  # torch.mm and zoo.mm (allow_tf32=None) both follow it
        dtype, out_dtype = getattr(torch, problem.dtype), getattr(torch, problem.out_dtype)
        m, n, k, mm = problem.m, problem.n, problem.k, gemm.mm
        gen = torch.Generator(device="cuda").manual_seed(seed)
        a = torch.randn(m, k, device="cuda", dtype=dtype, generator=gen)
        b = torch.randn(k, n, device="cuda", dtype=dtype, generator=gen)
        checks = {}
        for spec, cfg in choices:
            out = torch.full((m, n), float("nan"), device="cuda", dtype=out_dtype)
            mm(a, b, out=out, kernel=spec.name, config=cfg.name)
            checks[spec.name] = bench.verify(a, b, out)
        sets = bench.rotation_sets((m * k + k * n) * a.element_size(), limits.l2_bytes)
        inputs = [(a, b)] + [(torch.randn_like(a), torch.randn_like(b)) for _ in range(sets - 1)]
        outs = [torch.empty(m, n, device="cuda", dtype=out_dtype) for _ in range(2)]
        fns = {"torch.mm": lambda i: bench.torch_mm(*inputs[i], out_dtype)}
        if not graph:  # whole Python calls, host and device, each making its output as torch.mm does
            for spec, cfg in choices:
                fns[spec.name] = (lambda s, c: lambda i: mm(*inputs[i], out_dtype=out_dtype, kernel=s, config=c))(
                    spec.name, cfg.name)
            return bench.wall_side_by_side(fns, sets, warmup, iters, progress=progress), checks, sets
        for spec, cfg in choices:
            fns[spec.name] = (lambda s, c: lambda i: mm(*inputs[i], out=outs[i % 2], kernel=s, config=c))(
                spec.name, cfg.name)
        # The GPU sleeps ~bench.LEAD_US before each replay: a replay's host side (tens of us on a slow
        # host) then hides behind it, and the events see the device time even for tiny GEMMs.
        timings = bench.time_side_by_side(fns, sets, warmup, iters, progress=progress, graph=graph,
                                          lead_cycles=bench.lead_cycles(limits))
        return timings, checks, sets


def conv_candidates(device_index: int, shape, dtype: str, out_dtype: str) -> list[tuple[object, object, int | None]]:
    """Every (conv kernel, config, splits) that can run a convolution on the device (each kernel
    that computes the dtypes, each config that fits; TMA kernels only where their im2col map
    can express the shape), then conv2d's routes as (route, None, None): the flat K, and one
    zoo.mm where the convolution is a GEMM as it stands (conv.runs_as_gemm). splits: None for the
    registry's split-K rule; where a config's tiles leave SMs idle (under one wave), also
    1-4 slices of at least MIN_SPLIT_K_TILES K-tiles (the small-spatial layers' candidates)."""
    from . import conv, tune
    limits = gemm.device_limits(device_index)
    problem = registry.Problem(shape.gemm_m, shape.out_channels, shape.gemm_k, dtype, out_dtype)
    out = []
    for spec in registry.eligible(limits.cc, problem, "conv"):
        for cfg in spec.configs:
            if configs.problems(cfg, spec, limits) or (spec.tma_boxes and not conv._im2col_fits(shape)):
                continue
            splits = [None]
            if spec.split_k and spec.tma_boxes and registry.stacks(cfg, shape.gemm_m, shape.out_channels) < limits.sm_count:
                k_tiles = shape.padded_k(cfg.block_k) // cfg.block_k
                splits += [n for n in (1, 2, 3, 4) if k_tiles // n >= registry.MIN_SPLIT_K_TILES]
            out += [(spec, cfg, n) for n in splits]
    return out + [(tune.FLAT, None, None)] + ([(tune.GEMM, None, None)] if conv.runs_as_gemm(shape) else [])


def measure_conv(device_index: int, shape, dtype: str, out_dtype: str, iters: int = 20, warmup: int = 5,
                 seed: int = 0, progress=None) -> list[dict]:
    """Verify every conv_candidates entry on one convolution against float64, then time them
    side by side with cuDNN (x and w channels-last, cudnn.benchmark; CUDA-graph replays, inputs
    rotated out of L2, each plan's weights laid out beforehand, as keep_layout keeps them):
    rows sorted fastest first, wrong ones last; "kernel" is the route's name for a route."""
    from . import conv, tune
    limits = gemm.device_limits(device_index)
    t, t_out = getattr(torch, dtype), getattr(torch, out_dtype)
    gen = torch.Generator(device=f"cuda:{device_index}").manual_seed(seed)
    per_set = (shape.images * shape.channels * shape.height * shape.width +
               shape.out_channels * shape.channels * shape.r * shape.s) * t.itemsize
    sets = bench.rotation_sets(per_set, limits.l2_bytes, max_sets=4)
    inputs = [conv.inputs(shape, t, gen, weight_channels_last=True) for _ in range(sets)]
    fns = {"cudnn": lambda i: conv.torch_conv(*inputs[i], shape, out_dtype=t_out)}
    rows = []
    torch.backends.cudnn.benchmark = True
    with torch.no_grad():
        for spec, cfg, splits in conv_candidates(device_index, shape, dtype, out_dtype):
            x, w = inputs[0]
            route = isinstance(spec, str)
            plan = conv.route_plan(spec, x, shape, t_out) if route else \
                conv.plan_conv(x, shape, t_out, spec.name, cfg.name, splits)
            weights = [plan.weights(w_i) for _, w_i in inputs]
            check = conv.verify(x, w, plan.run(x, weights[0]), shape)
            kernel, config = (spec, "") if route else (spec.name, cfg.name)
            name = " / ".join([kernel] + ([config] if config else []) + ([str(splits)] if splits else []))
            rows.append({"kernel": kernel, "config": config, "splits": splits, "name": name, "verified": check.ok})
            if check.ok:
                fns[name] = (lambda p, ws: lambda i: p.run(inputs[i][0], ws[i]))(plan, weights)
            if progress:
                progress()
        timings = bench.time_side_by_side(fns, sets, warmup, iters, lead_cycles=bench.lead_cycles(limits))
    return _ranked(rows, timings, "cudnn", "cudnn_us")


def measure_scaled(device_index: int, m: int, n: int, k: int, recipe: str, out_dtype: torch.dtype,
                   fast_accum: bool, warmup: int, iters: int, seed: int = 0, graph: bool = True,
                   config: str | None = None) -> dict:
    """zoo.scaled_mm against torch._scaled_mm on the same FP8 inputs and scales (zoo.fp8.quantize
    of Gaussian operands, rows of unlike sizes), side by side (inputs rotated out of L2): each
    verified against float64 of the dequantized inputs, within 2x torch's own error (the
    output dtype's rounding where torch's is not finite or refused, as for its blockwise
    fast accumulation, or past that rounding). Returns the timings, errors, the zoo's config
    and torch_wrong: torch's answer was past the output dtype's rounding (its blockwise recipe
    where K / 128 is no multiple of 4, on torch 2.11: NOTES.md), so its time is not comparable."""
    from . import fp8, scaled
    limits = gemm.device_limits(device_index)
    device = f"cuda:{device_index}"
    gen = torch.Generator(device=device).manual_seed(seed)
    sets = bench.rotation_sets(m * k + k * n, limits.l2_bytes)
    inputs = []
    for _ in range(sets):
        a = torch.randn(m, k, device=device, generator=gen) * torch.logspace(-1, 1, m, device=device).unsqueeze(1)
        w = torch.randn(n, k, device=device, generator=gen)
        inputs.append((*fp8.quantize(a, recipe, operand="a"), *fp8.quantize(w.t(), recipe, operand="b")))
    zoo_call = lambda i: scaled.scaled_mm(inputs[i][0], inputs[i][2], inputs[i][1], inputs[i][3],  # noqa: E731
                                          out_dtype=out_dtype, use_fast_accum=fast_accum, config=config)
    torch_call = lambda i: torch._scaled_mm(inputs[i][0], inputs[i][2], inputs[i][1], inputs[i][3],  # noqa: E731
                                            out_dtype=out_dtype, use_fast_accum=fast_accum)
    qa, sa, qb, sb = inputs[0]
    ref = fp8.dequantize(qa, sa, recipe, "a").double() @ fp8.dequantize(qb, sb, recipe, "b").double()
    mine = bench.relative_error(zoo_call(0), ref)
    fns = {"zoo": zoo_call}
    try:
        theirs = bench.relative_error(torch_call(0), ref)
        fns["torch"] = torch_call
    except RuntimeError:  # torch refuses some (its blockwise recipe: no fast accumulation, no fp32 out)
        theirs = float("nan")
    floor = fp8.SCALED_FLOOR[out_dtype]
    bound = 2 * theirs if theirs == theirs and theirs < floor else floor
    choice = scaled.plan(qa, qb, sa, sb, None, out_dtype, fast_accum, config=config).launch.choice
    timer = bench.time_side_by_side if graph else bench.wall_side_by_side
    timings = timer(fns, sets, warmup, iters, **({"graph": True, "lead_cycles": bench.lead_cycles(limits)}
                                                 if graph else {}))
    return {"timings": timings, "error": mine, "torch_error": theirs, "bound": bound, "ok": mine <= bound,
            "torch_wrong": theirs == theirs and theirs >= floor, "kernel": choice[0], "config": choice[1]}
