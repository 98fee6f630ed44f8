"""The `zoo` command: list, info, build, explain, export, run, bench, conv, tune, batched. Tables for people, --json for machines."""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
from dataclasses import asdict

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from . import arch, configs, cuda, registry
from ._version import __version__
from .cuda import ZooError

# Logs and pipes get wide tables rather than rich's 80-column default.
console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 160)

EXIT_OK, EXIT_FAIL, EXIT_NO_GPU = 0, 1, 2


def _gpu_available() -> bool:
    import torch
    return torch.cuda.is_available()


def _no_gpu(what: str) -> int:
    err_console.print(f"[bold red]zoo {what}: no CUDA GPU is visible[/] (torch.cuda.is_available() "
                      "is False). Offline commands work anywhere: `zoo list`, `zoo build --arch sm_75 --check`.")
    return EXIT_NO_GPU


def _write_json(path: str | None, payload: dict) -> None:
    if not path:
        return
    text = json.dumps(payload, indent=2, default=str)
    if path == "-":
        print(text)
    else:
        with open(path, "w") as f:
            f.write(text + "\n")
        console.print(f"wrote {path}")


# ----------------------------------------------------------------------------- list

def cmd_list(args) -> int:
    table = Table(title="zoo kernels")
    for col in ("kernel", "runs on CC", "offline archs", "dtypes", "layout", "configs", "what"):
        table.add_column(col)
    rows = []
    for k in registry.KERNELS:
        names = ", ".join(c.name for c in k.configs)
        pairs = ", ".join(f"{i}->{o}" for i, o in k.entry) + (" (TF32, where allowed)" if k.tf32 else "")
        table.add_row(k.name, k.eligible_ccs(), ", ".join(k.offline_archs), pairs, ", ".join(k.layouts),
                      names, k.description)
        rows.append({"kernel": k.name, "op": k.op, "eligible_cc": k.eligible_ccs(), "offline_archs": k.offline_archs,
                     "dtypes": [list(pair) for pair in k.entry], "tf32": k.tf32, "layouts": k.layouts,
                     "configs": [asdict(c) for c in k.configs]})
    if args.json != "-":
        console.print(table)
    _write_json(args.json, {"kernels": rows})
    return EXIT_OK


# ----------------------------------------------------------------------------- info

def cmd_info(args) -> int:
    if not _gpu_available():
        err_console.print("zoo info: no CUDA GPU is visible; nothing to describe. "
                          f"Offline targets: {', '.join(arch.OFFLINE_ARCHS)} (zoo build --arch ...).")
        _write_json(args.json, {"gpu": None})
        return EXIT_NO_GPU
    import torch
    from .gemm import device_limits
    idx = torch.cuda.current_device()
    lim = device_limits(idx)
    problem = registry.Problem(4096, 4096, 4096)
    table = Table(title=f"GPU {idx}: {lim.part}", show_header=False)
    facts = {
        "compute capability": f"{lim.cc[0]}.{lim.cc[1]} ({lim.arch})",
        "SMs": lim.sm_count,
        "shared memory per SM": f"{lim.smem_per_sm // 1024} KiB",
        "shared memory per block (opt-in)": f"{lim.smem_per_block_optin // 1024} KiB",
        "registers per SM": lim.regs_per_sm,
        "max threads per SM": lim.max_threads_per_sm,
        "L2 cache": f"{lim.l2_bytes / 2**20:.0f} MiB",
        "SM clock (max)": f"{lim.sm_clock_mhz} MHz",
        "memory": f"{lim.mem_bus_bits}-bit at {lim.mem_clock_mhz} MHz",
    }
    try:
        spec, cfg = registry.select(lim, problem)
        facts["--auto-arch picks (4096^3 fp16)"] = f"{spec.name} / {cfg.name} ({cfg.describe()})"
    except ZooError as exc:
        facts["--auto-arch picks"] = f"nothing: {exc}"
    from . import tune
    path, winners, why = tune.in_use(idx)
    facts["tuning file (zoo tune)"] = f"{path}: {len(winners)} tuned shapes in use" if why is None else why
    for k, v in facts.items():
        table.add_row(k, str(v))
    if args.json != "-":
        console.print(table)
    _write_json(args.json, {"device": asdict(lim), **{k: str(v) for k, v in facts.items()}})
    return EXIT_OK


# ----------------------------------------------------------------------------- build

def cmd_build(args) -> int:
    from .build import build_and_check
    limits = arch.offline(args.arch)
    specs = [registry.kernel(args.kernel)] if args.kernel else \
        [k for k in registry.KERNELS if args.arch in k.offline_archs]
    jobs = [(s, c) for s in specs for c in s.configs if not args.config or c.name == args.config]
    if not jobs:
        err_console.print(f"zoo build: nothing to build for {args.arch}")
        return EXIT_FAIL
    reports, failures = [], 0
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err_console, transient=True) as progress:
        task = progress.add_task(f"compiling for {args.arch}", total=len(jobs))
        for spec, cfg in jobs:
            progress.update(task, description=f"{spec.name} / {cfg.name}")
            try:
                reports.append(build_and_check(spec, cfg, limits))
            except ZooError as exc:
                failures += 1
                err_console.print(f"[red]FAIL[/] {spec.name} / {cfg.name} on {args.arch}: {exc}")
            progress.advance(task)
    problem = registry.Problem(args.m, args.n, args.k)
    table = Table(title=f"zoo build --arch {args.arch} ({limits.part}: {limits.sm_count} SMs, "
                        f"{limits.smem_per_sm // 1024} KiB smem/SM, {limits.regs_per_sm // 1024}K regs/SM)")
    cols = ["kernel", "config", "dtypes", "regs", "smem/block", "local"]
    if args.check:
        cols += ["SASS", "blocks/SM", "warps/SM", "limited by", f"waves {args.m}x{args.n}", "verdict"]
    rows, payload = [], []
    for r in reports:
        for e in r.entries:
            row = [r.kernel, r.config.name, e.dtypes, str(e.resources.registers),
                   f"{(r.smem_bytes + e.resources.static_smem) / 1024:.1f} KiB", f"{e.resources.local_bytes} B"]
            tiles = r.config.tiles(problem.m, problem.n)
            if args.check:
                # The instructions' names; what each proves is in --json and `zoo explain`.
                sig = ", ".join(re.sub(r" \(.*\)$", "", f) for f in e.signature.found) if e.signature.ok \
                    else "; ".join(e.problems)
                row += [sig, str(e.occupancy.blocks_per_sm), str(e.occupancy.warps_per_sm), e.occupancy.limiter,
                        f"{e.occupancy.waves(tiles, limits.sm_count):.1f}",
                        "[green]ok[/]" if e.ok else "[red]FAIL[/]"]
                failures += 0 if e.ok else 1
            rows.append(row)
            payload.append({"kernel": r.kernel, "config": r.config.name, "arch": r.arch, "entry": e.function, "dtypes": e.dtypes,
                            "registers": e.resources.registers, "smem_bytes": r.smem_bytes + e.resources.static_smem,
                            "local_bytes": e.resources.local_bytes, "sass_found": e.signature.found,
                            "problems": list(e.problems), "blocks_per_sm": e.occupancy.blocks_per_sm,
                            "warps_per_sm": e.occupancy.warps_per_sm, "limiter": e.occupancy.limiter,
                            "tiles": tiles, "waves": e.occupancy.waves(tiles, limits.sm_count), "ok": e.ok})
    # Names are never cut: their columns are as wide as their longest value (a log or a pipe
    # gets 160 columns); the SASS signature, the one long text, folds onto further lines.
    for i, col in enumerate(cols):
        longest = max((len(row[i]) for row in rows), default=0)
        table.add_column(col, justify="right" if col in ("regs", "smem/block", "local", "blocks/SM", "warps/SM") else "left",
                         no_wrap=col != "SASS", overflow="fold",
                         min_width=longest if col in ("kernel", "config", "dtypes", "limited by") else None)
    for row in rows:
        table.add_row(*row)
    if args.json != "-":
        console.print(table)
        console.print(f"{len(reports)} config(s) compiled for {args.arch}"
                      + (f", [red]{failures} failure(s)[/]" if failures else ", all checks passed" if args.check else ""))
    _write_json(args.json, {"arch": args.arch, "part": limits.part, "results": payload, "failures": failures})
    return EXIT_FAIL if failures else EXIT_OK


# ----------------------------------------------------------------------------- explain

def _loop_json(mix) -> dict | None:
    if mix is None:
        return None
    from dataclasses import asdict
    return {**asdict(mix), "total": mix.total, "smem_read_per_mma": mix.smem_read_per_mma}


def cmd_explain(args) -> int:
    from .explain import explain
    if args.conv:
        from . import conv
        shape = conv.parse(args.conv)
        lines = conv.explain(shape)
        if args.json != "-":
            for line in lines:
                console.print(line, highlight=False, markup=False)
        _write_json(args.json, {"conv": shape.describe(), "gemm": {"m": shape.gemm_m, "n": shape.out_channels,
                                                                   "k": shape.gemm_k}, "explanation": lines})
        return EXIT_OK
    if not args.kernel:
        err_console.print("zoo explain: name a kernel (zoo list), or --conv N,C,H,W,K,R,S[,stride,padding,dilation]")
        return EXIT_FAIL
    spec = registry.kernel(args.kernel)
    args.m = args.m or (1 if spec.max_m else 4096)  # a streaming kernel is for a few rows
    target = args.arch or spec.offline_archs[0]
    if target not in spec.offline_archs:
        err_console.print(f"zoo explain: {spec.name} builds for {', '.join(spec.offline_archs)}, not {target}")
        return EXIT_FAIL
    limits = arch.offline(target)
    in_dtype, first_out = next(iter(spec.entry))  # explained for the kernel's first input dtype
    in_name = SHORT_NAMES[in_dtype]
    out_name = args.out_dtype or SHORT_NAMES[first_out]
    problem = registry.Problem(args.m, args.n, args.k, in_dtype, DTYPES[out_name], tf32=spec.tf32)
    if not spec.supports(problem):
        err_console.print(f"zoo explain: {spec.name} does not compute {in_name} -> {out_name}")
        return EXIT_FAIL
    cfgs_ = [spec.config(args.config)] if args.config else \
        [c for c in spec.configs if not configs.problems(c, spec, limits)]
    with err_console.status(f"compiling {spec.name} for {target} (NVRTC, cached)"):
        found = [explain(spec, c, limits, problem) for c in cfgs_]
    chosen = registry.pick_config(spec, limits, problem)
    title = (f"zoo explain {spec.name} on {target} ({limits.part}: {limits.sm_count} SMs, "
             f"{limits.smem_per_sm // 1024} KiB smem and {limits.regs_per_sm // 1024}K registers per SM, "
             f"{limits.max_warps_per_sm} warps), {args.m}x{args.n}x{args.k} {in_name} -> {out_name}")
    table = Table(title=title)
    for col in ("config", "threads", "regs/thread", "smem/block", "blocks/SM", "warps/SM", "limited by",
                "tiles", "waves", "tile FLOP/B", "stages", "K-tile loop (SASS, per warp)", "smem B/MMA"):
        table.add_column(col, justify="left" if col in ("config", "limited by", "K-tile loop (SASS, per warp)") else "right")
    for e in found:
        mark = " (chosen)" if e.config == chosen.name else ""
        table.add_row(e.config + mark, str(e.threads), str(e.registers), f"{e.smem_bytes / 1024:.1f} KiB",
                      str(e.occupancy.blocks_per_sm), str(e.occupancy.warps_per_sm), e.occupancy.limiter,
                      str(e.tiles), f"{e.waves:.1f}", f"{e.tile_flop_per_byte:.0f}", str(spec.config(e.config).stages),
                      e.loop.describe() if e.loop else "-", f"{e.loop.smem_read_per_mma:.0f}" if e.loop else "-")
    if args.json != "-":
        console.print(table)
        if found:
            e = next((x for x in found if x.config == chosen.name), found[0])
            ridge = e.ridge_flop_per_byte
            console.print(f"Pipeline ({e.config}): {e.pipeline}.")
            console.print(
                f"Roofline ({limits.part} datasheet: {limits.peak_tflops(e.math):g} TFLOP/s "
                f"{MATH_UNITS[e.math]}, "
                f"{limits.dram_gbps:g} GB/s): ridge point {ridge:.0f} FLOP per DRAM byte. The whole GEMM "
                f"moves {e.problem_flop_per_byte:.0f} FLOP/B if A, B and C cross DRAM once: "
                + ("compute-bound." if e.problem_flop_per_byte >= ridge else "memory-bound.")
                + " One block tile's K-step does tile FLOP/B on the operands it loads; below the ridge, the"
                " math units keep busy only because neighbouring tiles re-read A and B from L2 (the"
                " grouped block order), not DRAM.")
            console.print("blocks/SM is the least of the limits by threads, blocks, registers and shared memory "
                          "(CUDA occupancy rules); waves = tiles / (SMs x blocks per SM).")
            if any(x.loop for x in found):
                console.print("K-tile loop: one pass of the main loop's interior path in the SASS, per warp "
                              "(static counts); smem B/MMA: bytes read from shared memory per m16n8k8 MMA "
                              "(2048 FLOP).")
    compared = []
    if args.compare:
        other = registry.kernel(args.compare)
        if target not in other.offline_archs or not other.supports(problem):
            err_console.print(f"zoo explain: {other.name} does not build for {target} or compute this problem")
            return EXIT_FAIL
        with err_console.status(f"compiling {other.name} for {target} (NVRTC, cached)"):
            compared = [explain(s, registry.pick_config(s, limits, problem), limits, problem) for s in (spec, other)]
        side = Table(title=f"side by side on {target} ({limits.part}), {args.m}x{args.n}x{args.k} {in_name} -> "
                           f"{out_name}: each kernel's chosen config")
        for col in ("kernel", "config", "regs/thread", "smem/block", "blocks/SM", "warps/SM", "HMMA", "LDSM",
                    "LDG", "STS", "BAR", "other", "smem B/MMA"):
            side.add_column(col, justify="left" if col in ("kernel", "config") else "right")
        for e in compared:
            mix = e.loop
            side.add_row(e.kernel, e.config, str(e.registers), f"{e.smem_bytes / 1024:.1f} KiB",
                         str(e.occupancy.blocks_per_sm), str(e.occupancy.warps_per_sm),
                         *([str(mix.hmma), str(mix.ldsm), str(mix.ldg), str(mix.sts), str(mix.bar), str(mix.other),
                            f"{mix.smem_read_per_mma:.0f}"] if mix else ["-"] * 7))
        if args.json != "-":
            console.print(side)
            console.print("Per warp, one pass of each main loop's interior path (static SASS counts; a thread of "
                          "a 3-stage WMMA config loads and stores every other K-tile, so halve its LDG and STS).")
    _write_json(args.json, {"kernel": spec.name, "arch": target, "part": limits.part, "m": args.m, "n": args.n,
                            "k": args.k, "out_dtype": out_name, "chosen": chosen.name,
                            "ridge_flop_per_byte": found[0].ridge_flop_per_byte if found else None,
                            "configs": [{"config": e.config, "function": e.function, "threads": e.threads,
                                         "registers": e.registers, "smem_bytes": e.smem_bytes,
                                         "blocks_per_sm": e.occupancy.blocks_per_sm,
                                         "warps_per_sm": e.occupancy.warps_per_sm, "limiter": e.occupancy.limiter,
                                         "by_resource": e.occupancy.by_resource, "tiles": e.tiles, "waves": e.waves,
                                         "tile_flop_per_byte": e.tile_flop_per_byte,
                                         "problem_flop_per_byte": e.problem_flop_per_byte,
                                         "pipeline": e.pipeline,
                                         "loop": _loop_json(e.loop)} for e in found],
                            **({"compare": [{"kernel": e.kernel, "config": e.config, "registers": e.registers,
                                             "smem_bytes": e.smem_bytes, "blocks_per_sm": e.occupancy.blocks_per_sm,
                                             "warps_per_sm": e.occupancy.warps_per_sm, "loop": _loop_json(e.loop)}
                                            for e in compared]} if compared else {})})
    return EXIT_OK


# ----------------------------------------------------------------------------- export

def cmd_export(args) -> int:
    from pathlib import Path
    from .export import build_shared_library, default_config, target_limits
    spec = registry.kernel(args.kernel)
    device = None
    if not args.arch and _gpu_available():
        import torch
        from .gemm import device_limits
        device = device_limits(torch.cuda.current_device())
    limits = target_limits(spec, args.arch, device)
    if limits is None:
        err_console.print(f"zoo export: no limits known for {args.arch}; known: {', '.join(arch.OFFLINE_ARCHS)}")
        return EXIT_FAIL
    target = limits.arch
    cfg = spec.config(args.config) if args.config else default_config(spec, limits)
    with err_console.status(f"nvcc: {spec.name} / {cfg.name} for {target}"):
        library = build_shared_library(spec, cfg, limits, Path(args.o))
    show = err_console if args.json == "-" else console
    show.print(f"built {library} ({spec.name} / {cfg.name}, {target})")
    for (i, o), symbol in spec.exports.items():
        ctype = {"float16": "half", "bfloat16": "__nv_bfloat16", "float32": "float"}
        show.print(f"  int {symbol}(const {ctype[i]}* A, const {ctype[i]}* B, {ctype[o]}* C, int M, int N, int K, "
                   "cudaStream_t stream)")
    show.print("returns a cudaError_t code (0: launched); run it with examples/ctypes_gemm.py")
    _write_json(args.json, {"library": str(library), "kernel": spec.name, "config": cfg.name, "arch": target,
                            "exports": {f"{i}->{o}": sym for (i, o), sym in spec.exports.items()}})
    return EXIT_OK


# ----------------------------------------------------------------------------- run

DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}
SHORT_NAMES = {v: k for k, v in DTYPES.items()}
MATH_UNITS = {"fp16": "fp16 tensor", "tf32": "tf32 tensor", "fp32": "fp32 FFMA"}


def _run_candidates(args, lim, problem):
    """(kernel, config) pairs to run: the automatic or named choice, or with --all-kernels
    every kernel eligible on this GPU for the dtypes, each with its own config choice."""
    if not args.all_kernels:
        return [registry.select(lim, problem, kernel_name=args.kernel, config_name=args.config)]
    specs = registry.eligible(lim.cc, problem)
    if not specs:
        raise ZooError(f"no kernel computes {problem.dtype} -> {problem.out_dtype} on CC {lim.cc[0]}.{lim.cc[1]}")
    return [registry.select(lim, problem, kernel_name=k.name,
                            config_name=args.config if args.config in {c.name for c in k.configs} else None)
            for k in specs]


def _measure(candidates, problem, warmup: int, iters: int, seed: int, lim, progress=None,
             graph: bool = True):
    """Verify each (kernel, config) on fresh random inputs against float64, then time them
    side by side with torch.mm in one run (CUDA events, rotating input sets; graph replays
    unless graph=False). Returns (timings by name, checks by kernel name, input sets)."""
    from . import bench

    with bench.tf32_matmul(problem.tf32):  # torch.mm and zoo.mm (allow_tf32=None) both follow it
        return _measure_in_mode(candidates, problem, warmup, iters, seed, lim, progress, graph)


def _measure_in_mode(candidates, problem, warmup, iters, seed, lim, progress, graph):
    import torch
    from . import bench
    from .gemm import mm

    dtype, out_dtype = getattr(torch, problem.dtype), getattr(torch, problem.out_dtype)
    m, n, k = problem.m, problem.n, problem.k
    gen = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", dtype=dtype, generator=gen)
    b = torch.randn(k, n, device="cuda", dtype=dtype, generator=gen)
    checks = {}
    for spec, cfg in candidates:
        out = torch.full((m, n), float("nan"), device="cuda", dtype=out_dtype)
        mm(a, b, out=out, kernel=spec.name, config=cfg.name)
        checks[spec.name] = bench.verify(a, b, out)
    sets = bench.rotation_sets((m * k + k * n) * a.element_size(), lim.l2_bytes)
    inputs = [(a, b)] + [(torch.randn_like(a), torch.randn_like(b)) for _ in range(sets - 1)]
    outs = [torch.empty(m, n, device="cuda", dtype=out_dtype) for _ in range(2)]
    if not graph:  # whole Python calls, host and device, each making its output as torch.mm does
        fns = {"torch.mm": lambda i: bench.torch_mm(*inputs[i], out_dtype)}
        for spec, cfg in candidates:
            fns[spec.name] = (lambda s, c: lambda i: mm(*inputs[i], out_dtype=out_dtype, kernel=s, config=c))(
                spec.name, cfg.name)
        return bench.wall_side_by_side(fns, sets, warmup, iters, progress=progress), checks, sets
    fns = {"torch.mm": lambda i: bench.torch_mm(*inputs[i], out_dtype)}
    for spec, cfg in candidates:
        fns[spec.name] = (lambda s, c: lambda i: mm(*inputs[i], out=outs[i % 2], kernel=s, config=c))(spec.name, cfg.name)
    # The GPU sleeps ~bench.LEAD_US before each replay: a replay's host side (tens of us on a slow
    # host) then hides behind it, and the events see the device time even for tiny GEMMs.
    timings = bench.time_side_by_side(fns, sets, warmup, iters, progress=progress, graph=graph,
                                      lead_cycles=bench.lead_cycles(lim))
    return timings, checks, sets


def _out_dtype_name(args, command: str) -> str | None:
    """The output dtype's name (default: the input's); None after saying why it is refused."""
    out_name = args.out_dtype or args.dtype
    if out_name not in (args.dtype, "fp32"):
        allowed = "fp32" if args.dtype == "fp32" else f"{args.dtype} (the input dtype) or fp32"
        err_console.print(f"zoo {command}: --out-dtype must be {allowed}, got {out_name}")
        return None
    if getattr(args, "tf32", False) and args.dtype != "fp32":
        err_console.print(f"zoo {command}: --tf32 rounds fp32 inputs; it goes with --dtype fp32, not {args.dtype}")
        return None
    return out_name


def _problem(args, m: int, n: int, k: int, out_name: str) -> registry.Problem:
    return registry.Problem(m, n, k, DTYPES[args.dtype], DTYPES[out_name], tf32=getattr(args, "tf32", False))


def _dtype_label(args, out_name: str) -> str:
    return f"{args.dtype}{' (TF32)' if getattr(args, 'tf32', False) else ''} -> {out_name}"


def _timing_name(args) -> str:
    return "wall clock per eager call (host + device)" if args.eager else "CUDA-graph replays"


def cmd_run(args) -> int:
    if not _gpu_available():
        _write_json(args.json, {"gpu": None})
        return _no_gpu("run")
    # With --json - stdout carries only the JSON document; the report goes to stderr.
    show = err_console if args.json == "-" else console
    import torch
    from .gemm import compiled, device_limits

    if min(args.m, args.n, args.k) < 1:
        err_console.print(f"zoo run: -m, -n and -k must be >= 1, got {args.m}, {args.n}, {args.k}")
        return EXIT_FAIL
    out_name = _out_dtype_name(args, "run")
    if out_name is None:
        return EXIT_FAIL
    idx = torch.cuda.current_device()
    lim = device_limits(idx)
    problem = _problem(args, args.m, args.n, args.k, out_name)
    what = f"{args.m}x{args.n}x{args.k} {_dtype_label(args, out_name)}"
    candidates = _run_candidates(args, lim, problem)
    show.print(f"[bold]{lim.part}[/] (CC {lim.cc[0]}.{lim.cc[1]}, {lim.sm_count} SMs), {what}:")
    for spec, cfg in candidates:
        with show.status(f"compiling {spec.name} / {cfg.name} for {spec.compile_arch(lim.cc)} (NVRTC, cached)"):
            compiled(spec, cfg, problem.dtype, problem.out_dtype, idx)
        show.print(f"  {spec.name} / {cfg.name} ({cfg.describe()})")

    with Progress(TextColumn("timing"), BarColumn(), MofNCompleteColumn(), console=err_console,
                  transient=True) as progress:
        task = progress.add_task("timing", total=args.iters)
        timings, checks, sets = _measure(candidates, problem, args.warmup, args.iters, args.seed, lim,
                                         progress=lambda i: progress.update(task, completed=i),
                                         graph=not args.eager)
    for name, check in checks.items():
        show.print(f"verify {name} vs float64: {check.describe()}")
    ref_tflops = timings["torch.mm"].tflops(problem.flops)
    table = Table(title=f"{what} on {lim.part} (median of {args.iters}, {sets} rotating input sets, "
                        f"{_timing_name(args)})")
    for col in ("kernel", "config", "ms", "TFLOP/s", "% of torch.mm", "spread (IQR)", "verified"):
        table.add_column(col, justify="left" if col in ("kernel", "config") else "right", no_wrap=True)
    configs = {spec.name: cfg.name for spec, cfg in candidates}
    rows = []
    for name, t in timings.items():
        is_ref = name == "torch.mm"
        pct = 100 * t.tflops(problem.flops) / ref_tflops
        ok = None if is_ref else checks[name].ok
        table.add_row(name, "cuBLAS" if is_ref else configs[name], f"{t.median_ms:.4f}",
                      f"{t.tflops(problem.flops):.1f}", f"{pct:.1f}%", f"{100 * t.spread:.1f}%",
                      "ref" if is_ref else ("[green]yes[/]" if ok else "[red]NO[/]"))
        rows.append({"kernel": name, "config": None if is_ref else configs[name], "median_ms": t.median_ms,
                     "tflops": t.tflops(problem.flops), "pct_of_torch": pct, "spread": t.spread,
                     "verify": None if is_ref else asdict(checks[name])})
    show.print(table)
    first_spec, first_cfg = candidates[0]
    _write_json(args.json, {
        "device": lim.part, "cc": f"{lim.cc[0]}.{lim.cc[1]}", "date": datetime.date.today().isoformat(),
        "torch": torch.__version__, "m": args.m, "n": args.n, "k": args.k, "dtype": args.dtype,
        "out_dtype": out_name, "tf32": problem.tf32, "kernel": first_spec.name, "config": first_cfg.name, "iters": args.iters,
        "warmup": args.warmup, "rotating_sets": sets, "timing": _timing_name(args), "results": rows})
    failed = [name for name, c in checks.items() if not c.ok]
    if failed:
        err_console.print(f"[bold red]verification failed[/] for {', '.join(failed)}: the result is wrong")
        return EXIT_FAIL
    return EXIT_OK


# ----------------------------------------------------------------------------- batched

def _host_us(fn, calls: int = 20) -> float:
    """Host time of one call (launch overhead): `calls` back-to-back calls, no synchronize,
    after two untimed ones (a graph=True call captures its graph on the second call with a set
    of buffers: a one-time cost, not a call's)."""
    import time
    import torch
    fn()
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return 1e6 * elapsed / calls




def cmd_batched(args) -> int:
    if not _gpu_available():
        _write_json(args.json, {"gpu": None})
        return _no_gpu("batched")
    show = err_console if args.json == "-" else console
    import torch
    from . import bench, pipeline
    from .batched import MODES, bmm
    from .gemm import device_limits

    if min(args.batch, args.m, args.n, args.k, args.repeats) < 1:
        err_console.print("zoo batched: --batch, -m, -n, -k and --repeats must be >= 1")
        return EXIT_FAIL
    if (args.trace or args.plot) and not args.pipeline:
        err_console.print("zoo batched: --trace and --plot go with --pipeline (they draw the pipeline's steps)")
        return EXIT_FAIL
    out_name = _out_dtype_name(args, "batched")
    if out_name is None:
        return EXIT_FAIL
    dtype, out_dtype = getattr(torch, DTYPES[args.dtype]), getattr(torch, DTYPES[out_name])
    lim = device_limits(torch.cuda.current_device())
    bsz, m, n, k = args.batch, args.m, args.n, args.k
    flops = 2 * bsz * m * n * k
    what = f"{bsz} x [M={m}, K={k}, N={n}] {args.dtype} -> {out_name}"
    payload = {"device": lim.part, "cc": f"{lim.cc[0]}.{lim.cc[1]}", "date": datetime.date.today().isoformat(),
               "torch": torch.__version__, "batch": bsz, "m": m, "n": n, "k": k, "dtype": args.dtype,
               "out_dtype": out_name}
    failed = []

    if args.pipeline:
        with show.status("pipeline: warm-up, then pipelined and serial runs"):
            result, host_a, host_b, host_c = pipeline.run(bsz, m, n, k, dtype, out_dtype, repeats=args.repeats,
                                                          kernel=args.kernel, config=args.config, seed=args.seed)
        for i in range(bsz):
            check = bench.verify(host_a[i].cuda(), host_b[i].cuda(), host_c[i].cuda())
            if not check.ok:
                failed.append(f"pipeline GEMM {i}: {check.describe()}")
        table = Table(title=f"pipeline: {what}, pinned host memory in and out, on {lim.part} "
                            f"(median of {args.repeats})")
        for col in ("", "us"):
            table.add_column(col, justify="right" if col else "left")
        sums = {lane: sum(v) for lane, v in result.step_us.items()}
        for lane in pipeline.LANES:
            table.add_row(f"sum of {lane} steps (each alone)", f"{sums[lane]:.1f}")
        table.add_row("serial: one stream", f"{result.serial_us:.1f}")
        table.add_row("ideal: the busiest engine", f"{result.ideal_us:.1f}")
        table.add_row("[bold]pipelined: three streams[/]", f"[bold]{result.pipelined_us:.1f}[/]")
        table.add_row("[bold]efficiency (ideal / pipelined)[/]", f"[bold]{100 * result.efficiency:.1f}%[/]")
        table.add_row("speed-up over serial", f"{result.serial_us / result.pipelined_us:.2f}x")
        show.print(table)
        show.print("timeline of the pipelined run (digit = GEMM index):")
        for row in pipeline.timeline(result.spans):
            show.print(row, markup=False, highlight=False)
        if args.trace:
            with open(args.trace, "w") as f:
                f.write(pipeline.chrome_trace(result, what))
            show.print(f"wrote {args.trace} (open in ui.perfetto.dev or chrome://tracing)")
        if args.plot:
            from .plot import timeline_plot
            title = f"pipeline: {what} on {lim.part}, {datetime.date.today().isoformat()}: " \
                    f"{result.pipelined_us:.0f} us, {100 * result.efficiency:.0f}% of ideal"
            show.print(f"wrote {timeline_plot(result.spans, list(pipeline.LANES), title, args.plot)}")
        payload["pipeline"] = {"pipelined_us": result.pipelined_us, "serial_us": result.serial_us,
                               "ideal_us": result.ideal_us, "efficiency": result.efficiency,
                               "step_us": result.step_us, "verified": not failed}
    else:
        modes = MODES if args.mode == "all" else (args.mode,)
        gen = torch.Generator(device="cuda").manual_seed(args.seed)
        sets = bench.rotation_sets(bsz * (m * k + k * n) * 2, lim.l2_bytes)
        inputs = [(torch.randn(bsz, m, k, device="cuda", dtype=dtype, generator=gen),
                   torch.randn(bsz, k, n, device="cuda", dtype=dtype, generator=gen)) for _ in range(sets)]
        outs = [torch.empty(bsz, m, n, device="cuda", dtype=out_dtype) for _ in range(sets)]
        lists = [(list(a.unbind(0)), list(b.unbind(0)), list(c.unbind(0))) for (a, b), c in zip(inputs, outs)]

        def torch_bmm(i):
            return bench.torch_bmm(*inputs[i], out_dtype)

        def zoo_call(mode, graph):
            if mode == "grouped":
                return lambda i: bmm(lists[i][0], lists[i][1], mode=mode, graph=graph, out=lists[i][2],
                                     kernel=args.kernel, config=args.config)
            return lambda i: bmm(*inputs[i], mode=mode, graph=graph, out=outs[i], streams=args.streams,
                                 kernel=args.kernel, config=args.config)

        graphs = []
        for i in range(sets):  # torch.bmm captured once per input set, replayed when timed
            torch_bmm(i)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                torch_bmm(i)
            graphs.append(g)
        fns = {"torch.bmm": torch_bmm, "torch.bmm (graph)": lambda i: graphs[i].replay()}
        for mode in modes:
            fns[f"zoo {mode}"] = zoo_call(mode, False)
            fns[f"zoo {mode} (graph)"] = zoo_call(mode, True)
        checks = {}
        for name, fn in fns.items():
            if not name.startswith("zoo"):
                continue
            for i in range(sets):
                outs[i].fill_(float("nan"))
                fn(i)
            torch.cuda.synchronize()
            bad = [j for j in range(bsz) if not bench.verify(inputs[0][0][j], inputs[0][1][j], outs[0][j]).ok]
            checks[name] = not bad
            if bad:
                failed.append(f"{name}: GEMMs {bad}")
        host = {name: _host_us(lambda: fn(0)) for name, fn in fns.items()}
        with Progress(TextColumn("timing"), BarColumn(), MofNCompleteColumn(), console=err_console,
                      transient=True) as progress:
            task = progress.add_task("timing", total=args.iters)
            # The GPU sleeps ~bench.LEAD_US before each call, so calls whose host side is shorter
            # (graph replays, torch.bmm) are timed on the device alone; eager zoo modes, whose
            # Python takes longer, stay host-bound and their column says so.
            lead = bench.lead_cycles(lim)
            timings = bench.time_side_by_side(fns, sets, args.warmup, args.iters, graph=False, lead_cycles=lead,
                                              progress=lambda i: progress.update(task, completed=i))
        ref, ref_graph = timings["torch.bmm"].median_ms, timings["torch.bmm (graph)"].median_ms
        table = Table(title=f"{what} on {lim.part}: device time, median of {args.iters} calls each, "
                            f"interleaved, {sets} rotating input sets, GPU kept {bench.LEAD_US} us ahead of the host")
        for col in ("mode", "us per batch", "TFLOP/s", "vs torch.bmm", "vs torch.bmm (graph)",
                    "host us per call", "bound by", "spread", "verified"):
            table.add_column(col, justify="left" if col == "mode" else "right", no_wrap=True)
        rows = []
        for name, t in timings.items():
            ok = checks.get(name)
            bound = "host" if host[name] > bench.LEAD_US else "device"  # the host could not get ahead
            table.add_row(name, f"{1e3 * t.median_ms:.1f}", f"{t.tflops(flops):.1f}", f"{ref / t.median_ms:.2f}x",
                          f"{ref_graph / t.median_ms:.2f}x", f"{host[name]:.1f}", bound, f"{100 * t.spread:.1f}%",
                          "ref" if ok is None else ("[green]yes[/]" if ok else "[red]NO[/]"))
            rows.append({"mode": name, "us": 1e3 * t.median_ms, "tflops": t.tflops(flops),
                         "vs_torch_bmm": ref / t.median_ms, "vs_torch_bmm_graph": ref_graph / t.median_ms,
                         "host_us_per_call": host[name], "bound_by": bound, "spread": t.spread, "verified": ok})
        show.print(table)
        best = min((r for r in rows if r["mode"].startswith("zoo") and "streams" not in r["mode"]),
                   key=lambda r: r["us"], default=None)
        if best:
            show.print(f"best one-launch mode: {best['mode']}, {best['vs_torch_bmm_graph']:.2f}x torch.bmm "
                       f"replayed from a CUDA graph")
        payload.update({"iters": args.iters, "rotating_sets": sets, "lead_us": bench.LEAD_US, "results": rows})
    _write_json(args.json, payload)
    if failed:
        err_console.print(f"[bold red]verification failed[/]: {'; '.join(failed)}")
        return EXIT_FAIL
    return EXIT_OK


# ----------------------------------------------------------------------------- bench

LLM_NK = ((4096, 4096), (11008, 4096), (4096, 11008))  # hidden 4096 -> 4096, MLP up, MLP down
SUITES = {
    "square": [(4096, 4096, 4096), (8192, 8192, 8192)],
    # LLM projections: tokens M x (hidden 4096 -> 4096, 4096 -> 11008 MLP up, 11008 -> 4096 down)
    "llm": [(m, n, k) for m in (128, 1024, 4096, 16384) for n, k in LLM_NK],
    # Decoding and small batches: a few tokens against the same weights.
    "skinny": [(m, n, k) for m in (1, 16, 64, 128) for n, k in LLM_NK],
    # Under a few waves, and rows off 16-byte multiples (1000, 3000).
    "small": [(s, s, s) for s in (256, 512, 1024, 2048)] + [(1000, 1000, 1000), (3000, 3000, 3000)],
}


def _parse_shapes(text: str) -> list[tuple[int, int, int]]:
    shapes = []
    for item in text.split(","):
        parts = item.strip().lower().split("x")
        if len(parts) != 3 or not all(p.isdigit() and int(p) >= 1 for p in parts):
            raise ZooError(f"--shapes: {item.strip()!r} is not MxNxK with positive integers (e.g. 4096x4096x4096)")
        shapes.append(tuple(int(p) for p in parts))
    return shapes


def _geomean(values: list[float]) -> float:
    import math
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def cmd_bench(args) -> int:
    if not _gpu_available():
        _write_json(args.json, {"gpu": None})
        return _no_gpu("bench")
    if args.model:
        return _bench_models(args)
    show = err_console if args.json == "-" else console
    import torch
    from .gemm import compiled, device_limits

    out_name = _out_dtype_name(args, "bench")
    if out_name is None:
        return EXIT_FAIL
    suites = list(SUITES) if args.suite == "all" else [args.suite]
    groups = {"shapes": _parse_shapes(args.shapes)} if args.shapes else {s: SUITES[s] for s in suites}
    idx = torch.cuda.current_device()
    lim = device_limits(idx)
    title = f"{_dtype_label(args, out_name)} on {lim.part} (CC {lim.cc[0]}.{lim.cc[1]}), each shape timed " \
            f"side by side with torch.mm, median of {args.iters}, {_timing_name(args)}"
    table = Table(title=title)
    for col in ("suite", "M", "N", "K", "kernel / config", "ms", "TFLOP/s", "torch.mm TFLOP/s",
                "% of torch.mm", "spread", "verified"):
        table.add_column(col, justify="left" if col in ("suite", "kernel / config") else "right", no_wrap=True)
    rows, failed = [], []
    total = sum(len(v) for v in groups.values())
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console, transient=True) as progress:
        task = progress.add_task("bench", total=total)
        for suite, shapes in groups.items():
            ratios = []
            for m, n, k in shapes:
                problem = _problem(args, m, n, k, out_name)
                spec, cfg = registry.select(lim, problem, kernel_name=args.kernel, config_name=args.config)
                progress.update(task, description=f"{m}x{n}x{k}: {spec.name} / {cfg.name}")
                compiled(spec, cfg, problem.dtype, problem.out_dtype, idx)
                timings, checks, _ = _measure([(spec, cfg)], problem, args.warmup, args.iters, args.seed, lim,
                                              graph=not args.eager)
                ref, mine, check = timings["torch.mm"], timings[spec.name], checks[spec.name]
                pct = 100 * ref.median_ms / mine.median_ms
                ratios.append(pct)
                if not check.ok:
                    failed.append(f"{m}x{n}x{k}")
                table.add_row(suite, str(m), str(n), str(k), f"{spec.name} / {cfg.name}", f"{mine.median_ms:.4f}",
                              f"{mine.tflops(problem.flops):.1f}", f"{ref.tflops(problem.flops):.1f}",
                              f"{pct:.1f}%", f"{100 * max(mine.spread, ref.spread):.1f}%",
                              "[green]yes[/]" if check.ok else "[red]NO[/]")
                rows.append({"suite": suite, "m": m, "n": n, "k": k, "kernel": spec.name, "config": cfg.name,
                             "median_ms": mine.median_ms, "tflops": mine.tflops(problem.flops),
                             "torch_median_ms": ref.median_ms, "torch_tflops": ref.tflops(problem.flops),
                             "pct_of_torch": pct, "spread": mine.spread, "torch_spread": ref.spread,
                             "verify": asdict(check)})
                progress.advance(task)
            table.add_row(suite, "", "", "", "[bold]geometric mean[/]", "", "", "", f"[bold]{_geomean(ratios):.1f}%[/]",
                          "", "", end_section=True)
    show.print(table)
    geomeans = {g: _geomean([r["pct_of_torch"] for r in rows if r["suite"] == g]) for g in groups}
    if args.plot:
        from .plot import bench_plot
        label = f"zoo vs torch.mm, {_dtype_label(args, out_name)}, {_timing_name(args)}\n" \
                f"{lim.part}, {datetime.date.today().isoformat()}"
        show.print(f"wrote {bench_plot(rows, label, args.plot)}")
    _write_json(args.json, {
        "device": lim.part, "cc": f"{lim.cc[0]}.{lim.cc[1]}", "date": datetime.date.today().isoformat(),
        "torch": torch.__version__, "dtype": args.dtype, "out_dtype": out_name,
        "tf32": getattr(args, "tf32", False), "iters": args.iters,
        "warmup": args.warmup, "timing": _timing_name(args), "geomean_pct_of_torch": geomeans, "results": rows})
    if failed:
        err_console.print(f"[bold red]verification failed[/] for {', '.join(failed)}: the result is wrong")
        return EXIT_FAIL
    return EXIT_OK


def _bench_models(args) -> int:
    """zoo bench --model: whole models on torch's layers and on the zoo's (zoo/models.py)."""
    import torch
    from . import models
    from .gemm import device_limits
    show = err_console if args.json == "-" else console
    lim = device_limits(torch.cuda.current_device())
    names = list(models.MODELS) if args.model == "all" else args.model.split(",")
    with Progress(TextColumn("{task.description}"), TimeElapsedColumn(), console=err_console, transient=True) as progress:
        task = progress.add_task("models")
        report = models.run(names, dtype=getattr(torch, DTYPES[args.dtype]), calls=args.calls, repeats=args.repeats,
                            progress=lambda text: progress.update(task, description=text))
    table = Table(title=f"whole models on {lim.part} (CC {lim.cc[0]}.{lim.cc[1]}), torch's layers and the zoo's "
                        f"side by side: median ms of {args.repeats} alternating rounds of {args.calls} calls")
    for col in ("model", "how", "torch ms", "zoo ms", "zoo speed-up", "spread", "outputs"):
        table.add_column(col, justify="left" if col in ("model", "how", "outputs") else "right", no_wrap=col != "outputs")
    for r in report.rows:
        color = "green" if r.speedup >= 1 else "red"
        table.add_row(r.model, r.case, f"{r.torch_ms:.3f}", f"{r.zoo_ms:.3f}", f"[{color}]{r.speedup:.2f}x[/]",
                      f"{100 * max(r.spreads):.1f}%", r.check)
    show.print(table)
    for model, line in report.swaps.items():
        show.print(f"{model}: {line}")
    rows = [{"model": r.model, "case": r.case, "torch_ms": r.torch_ms, "zoo_ms": r.zoo_ms, "speedup": r.speedup,
             "spreads": list(r.spreads), "check": r.check} for r in report.rows]
    if args.plot:
        from .plot import models_plot
        label = f"whole models, zoo vs torch ({args.dtype}; mlp-train bf16), {lim.part}, {datetime.date.today().isoformat()}"
        show.print(f"wrote {models_plot(rows, label, args.plot)}")
    _write_json(args.json, {"device": lim.part, "cc": f"{lim.cc[0]}.{lim.cc[1]}",
                            "date": datetime.date.today().isoformat(), "torch": torch.__version__,
                            "dtype": args.dtype, "calls": args.calls, "repeats": args.repeats,
                            "layers_on_the_zoo": report.swaps, "results": rows})
    return EXIT_OK


# ----------------------------------------------------------------------------- conv

def cmd_conv(args) -> int:
    if not _gpu_available():
        _write_json(args.json, {"gpu": None})
        return _no_gpu("conv")
    import torch
    from . import conv
    from .gemm import device_limits
    show = err_console if args.json == "-" else console
    dtype = getattr(torch, DTYPES[args.dtype])
    out_dtype = getattr(torch, DTYPES[args.out_dtype]) if args.out_dtype else None
    groups = {"shape": [(args.shape, conv.parse(args.shape))]} if args.shape else \
        {s: conv.SUITES[s] for s in (conv.SUITES if args.suite == "all" else [args.suite])}
    lim = device_limits(torch.cuda.current_device())
    timing = "CUDA-graph replays" if not args.eager else "wall clock per eager call"
    table = Table(title=f"zoo.conv2d vs cuDNN (F.conv2d, channels-last, cudnn.benchmark), {args.dtype} -> "
                        f"{args.out_dtype or args.dtype}, on {lim.part}, median of {args.iters}, {timing}")
    for col in ("suite", "layer", "x (N,C,H,W) * w (K,R,S), stride", "GEMM M x N x K", "kernel / config", "ms",
                "TFLOP/s", "cuDNN TFLOP/s", "% of cuDNN", "spread", "verified"):
        table.add_column(col, justify="left" if col in ("suite", "layer", "kernel / config") or col.startswith("x") else "right",
                         no_wrap=True)
    rows, failed = [], []
    total = sum(len(v) for v in groups.values())
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console, transient=True) as progress:
        task = progress.add_task("conv", total=total)
        for suite, layers in groups.items():
            ratios = []
            for name, shape in layers:
                progress.update(task, description=name)
                timings, check, kernel, config = conv.measure(shape, dtype, out_dtype, args.warmup, args.iters,
                                                              args.seed, args.kernel, args.config, graph=not args.eager)
                mine, ref = timings["zoo"], timings["cudnn"]
                pct = 100 * ref.median_ms / mine.median_ms
                ratios.append(pct)
                if not check.ok:
                    failed.append(name)
                geometry = (f"{shape.images},{shape.channels},{shape.height},{shape.width} * {shape.out_channels},"
                            f"{shape.r},{shape.s}, s{shape.stride[0]}")
                table.add_row(suite, name, geometry, f"{shape.gemm_m}x{shape.out_channels}x{shape.gemm_k}",
                              f"{kernel} / {config}", f"{mine.median_ms:.4f}", f"{mine.tflops(shape.flops):.1f}",
                              f"{ref.tflops(shape.flops):.1f}", f"{pct:.1f}%",
                              f"{100 * max(mine.spread, ref.spread):.1f}%",
                              "[green]yes[/]" if check.ok else "[red]NO[/]")
                rows.append({"suite": suite, "layer": name, "conv": shape.describe(), "m": shape.gemm_m,
                             "n": shape.out_channels, "k": shape.gemm_k, "kernel": kernel, "config": config,
                             "median_ms": mine.median_ms, "tflops": mine.tflops(shape.flops),
                             "cudnn_median_ms": ref.median_ms, "cudnn_tflops": ref.tflops(shape.flops),
                             "pct_of_cudnn": pct, "verify": asdict(check)})
                progress.advance(task)
            table.add_row(suite, "", "", "", "[bold]geometric mean[/]", "", "", "", f"[bold]{_geomean(ratios):.1f}%[/]",
                          "", "", end_section=True)
    show.print(table)
    _write_json(args.json, {"device": lim.part, "date": datetime.date.today().isoformat(), "torch": torch.__version__,
                            "dtype": args.dtype, "out_dtype": args.out_dtype or args.dtype, "timing": timing,
                            "geomean_pct_of_cudnn": {g: _geomean([r["pct_of_cudnn"] for r in rows if r["suite"] == g])
                                                     for g in groups}, "results": rows})
    if failed:
        err_console.print(f"[bold red]verification failed[/] for {', '.join(failed)}: the result is wrong")
        return EXIT_FAIL
    return EXIT_OK


# ----------------------------------------------------------------------------- tune

def cmd_tune(args) -> int:
    from . import tune, tuner
    if not _gpu_available():
        _write_json(args.json, {"gpu": None})
        return _no_gpu("tune")
    import torch
    from . import gemm
    idx = torch.cuda.current_device()
    lim = gemm.device_limits(idx)
    show = err_console if args.json == "-" else console
    attrs = cuda.device_attributes(idx)
    key = tune.device_key(attrs["name"], lim.cc, cuda.driver_version())
    path = tune.tuning_file(attrs["name"])
    if path is None:
        err_console.print("zoo tune: no cache folder to keep a tuning file in (set ZOO_CACHE_DIR)")
        return EXIT_FAIL
    if args.show:
        winners, why = tune.read(path, key)
        table = Table(title=f"{path}: " + (why or f"{len(winners)} tuned shapes, in use"))
        for col in ("problem", "kernel / config / splits", "us", "torch.mm us"):
            table.add_column(col, justify="left" if col != "us" and "torch" not in col else "right")
        for problem, w in sorted(winners.items()):
            table.add_row(problem, f"{w['kernel']} / {w['config']} / {w.get('splits') or 'auto'}",
                          f"{w['us']:.1f}", f"{w['torch_us']:.1f}")
        show.print(table)
        _write_json(args.json, {"file": str(path), "key": key, "in_use": why is None, "why": why, "winners": winners})
        return EXIT_OK
    out_name = _out_dtype_name(args, "tune")
    if out_name is None:
        return EXIT_FAIL
    shapes = _parse_shapes(args.shapes) if args.shapes else SUITES[args.suite]
    problems = [_problem(args, m, n, k, out_name) for m, n, k in shapes]
    total = sum(len(tuner.candidates(idx, p)) for p in problems)
    winners, report = {}, []
    table = Table(title=f"zoo tune on {lim.part}: the fastest verified (kernel, config, split-K) per shape")
    for col in ("problem", "winner", "us", "torch.mm us", "model's choice us", "candidates"):
        table.add_column(col, justify="left" if col in ("problem", "winner") else "right")
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console, transient=True) as progress:
        task = progress.add_task("tune", total=total)
        for problem in problems:
            progress.update(task, description=f"{problem.m}x{problem.n}x{problem.k}")
            rows = tuner.measure(idx, problem, iters=args.iters, warmup=args.warmup, seed=args.seed,
                                progress=lambda: progress.advance(task))
            best = rows[0]
            if not best["verified"]:
                err_console.print(f"zoo tune: no candidate verified for {problem}")
                return EXIT_FAIL
            name = tune.problem_key(problem.dtype, problem.out_dtype, problem.tf32, problem.m, problem.n, problem.k)
            winners[name] = {k: best[k] for k in ("kernel", "config", "splits", "us", "torch_us")}
            model = next((r for r in rows if r["splits"] is None and (r["kernel"], r["config"]) ==
                          tuple(x.name for x in registry.select(lim, problem))), None)
            table.add_row(name, f"{best['kernel']} / {best['config']} / {best['splits'] or 'auto'}",
                          f"{best['us']:.1f}", f"{best['torch_us']:.1f}",
                          f"{model['us']:.1f}" if model else "-", str(len(rows)))
            report.append({"problem": name, "rows": rows})
    tune.write(path, key, winners)
    tune.forget()
    gemm._calls.clear()  # plans made before the file changed
    show.print(table)
    show.print(f"wrote {path}: zoo.mm takes these choices for these shapes on this GPU (zoo tune --show)")
    _write_json(args.json, {"file": str(path), "key": key, "winners": winners, "measured": report})
    return EXIT_OK


# ----------------------------------------------------------------------------- main

def _dtype_options(s, fp32: bool = True) -> None:
    s.add_argument("--dtype", choices=("fp16", "bf16", "fp32") if fp32 else ("fp16", "bf16"), default="fp16",
                   help="input dtype (fp16)" + ("; fp32 runs in full precision unless --tf32" if fp32 else ""))
    s.add_argument("--out-dtype", choices=tuple(DTYPES), help="output dtype: the input dtype (default) or fp32")
    if fp32:
        s.add_argument("--tf32", action="store_true",
                       help="with --dtype fp32: allow TF32 rounding, for the zoo and for torch.mm alike")


def _timing_options(s, iters: int, eager: bool = True) -> None:
    s.add_argument("--warmup", type=int, default=10)
    s.add_argument("--iters", type=int, default=iters)
    s.add_argument("--seed", type=int, default=0)
    if eager:
        s.add_argument("--eager", action="store_true",
                       help="time whole Python calls (host and device, a fresh output each, wall clock per call) "
                            "instead of CUDA-graph replays")
    s.add_argument("--json", metavar="PATH")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="zoo", description="A multi-architecture GEMM kernel zoo with dispatch.")
    p.add_argument("--version", action="version", version=f"zoo {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("list", help="the registry: kernels, eligible CCs, dtypes, configs")
    s.add_argument("--json", metavar="PATH", help="also write JSON to PATH ('-' for stdout only)")
    s.set_defaults(fn=cmd_list)

    s = sub.add_parser("info", help="the GPU and what --auto-arch would pick")
    s.add_argument("--json", metavar="PATH")
    s.set_defaults(fn=cmd_info)

    s = sub.add_parser("build", help="compile every kernel/config for an arch, offline")
    s.add_argument("--arch", required=True, choices=arch.OFFLINE_ARCHS)
    s.add_argument("--check", action="store_true", help="check SASS signature, local memory, budgets")
    s.add_argument("--kernel", help="only this kernel")
    s.add_argument("--config", help="only this config")
    s.add_argument("-m", type=int, default=4096, help="problem M for the waves column (4096)")
    s.add_argument("-n", type=int, default=4096, help="problem N for the waves column (4096)")
    s.add_argument("-k", type=int, default=4096)
    s.add_argument("--json", metavar="PATH")
    s.set_defaults(fn=cmd_build)

    s = sub.add_parser("explain", help="offline: occupancy, waves, arithmetic intensity and pipeline of a kernel's configs")
    s.add_argument("kernel", nargs="?", help="a registered kernel (zoo list)")
    s.add_argument("--conv", metavar="N,C,H,W,K,R,S[,stride,padding,dilation]",
                   help="instead: the GEMM this convolution becomes, and what one A tile reads")
    s.add_argument("--arch", choices=arch.OFFLINE_ARCHS, help="target (default: the kernel's first offline arch)")
    s.add_argument("--config", help="only this config")
    s.add_argument("-m", type=int, default=None, help="rows of C (4096; 1 for a streaming kernel)")
    s.add_argument("-n", type=int, default=4096)
    s.add_argument("-k", type=int, default=4096)
    s.add_argument("--out-dtype", choices=("fp16", "fp32"), help="output dtype (fp16)")
    s.add_argument("--compare", metavar="KERNEL",
                   help="also: this kernel and KERNEL side by side (chosen configs, SASS loop mix)")
    s.add_argument("--json", metavar="PATH")
    s.set_defaults(fn=cmd_explain)

    s = sub.add_parser("export", help="build a kernel's .cu with nvcc into a shared library (extern \"C\", for ctypes)")
    s.add_argument("--kernel", required=True, help="a registered kernel (zoo list)")
    s.add_argument("--arch", help="target, e.g. sm_75 (default: this GPU's, else the kernel's first)")
    s.add_argument("--config", help="tile config (default: the first that fits the arch)")
    s.add_argument("-o", default="build", help="output folder (build/)")
    s.add_argument("--json", metavar="PATH")
    s.set_defaults(fn=cmd_export)

    s = sub.add_parser("run", help="select, compile, verify and benchmark against torch.mm")
    s.add_argument("--auto-arch", action="store_true",
                   help="pick the kernel and config for this GPU's compute capability (the default)")
    s.add_argument("-m", type=int, default=4096)
    s.add_argument("-n", type=int, default=4096)
    s.add_argument("-k", type=int, default=4096)
    _dtype_options(s)
    s.add_argument("--kernel", help="run this kernel instead of the automatic choice")
    s.add_argument("--all-kernels", action="store_true",
                   help="every kernel eligible on this GPU, side by side with torch.mm in one table")
    s.add_argument("--config", help="run this config instead of the automatic choice")
    _timing_options(s, iters=100)
    s.set_defaults(fn=cmd_run)

    s = sub.add_parser("bench", help="a suite of shapes, each verified and timed against torch.mm")
    s.add_argument("--suite", choices=(*SUITES, "all"), default="all",
                   help="square: 4096^3 and 8192^3; llm: M in 128..16384 x LLM projections; all (default)")
    s.add_argument("--shapes", help="comma-separated MxNxK list instead of a suite, e.g. 4096x4096x4096,128x11008x4096")
    _dtype_options(s)
    s.add_argument("--kernel", help="this kernel instead of the automatic choice per shape")
    s.add_argument("--config", help="this config instead of the automatic choice per shape")
    s.add_argument("--plot", metavar="PATH", help="draw TFLOP/s against problem size, zoo and torch.mm, to PATH (.png)")
    s.add_argument("--model", metavar="NAME",
                   help="whole models instead of shapes: llama, resnet50, mlp-train (comma-separated) or all; "
                        "torch's layers against zoo.nn.convert's (needs transformers / torchvision)")
    s.add_argument("--calls", type=int, default=10, help="with --model: calls per timed round (10)")
    s.add_argument("--repeats", type=int, default=7, help="with --model: alternating rounds (7)")
    _timing_options(s, iters=50)
    s.set_defaults(fn=cmd_bench)

    s = sub.add_parser("conv", help="zoo.conv2d verified and timed side by side with cuDNN (layer, ResNet-50 suite)")
    s.add_argument("--suite", choices=("layer", "resnet50", "all"), default="all",
                   help="layer: 32x64x56x56 * 128x3x3; resnet50: its 3x3 and 1x1 layers at batch 32; all (default)")
    s.add_argument("--shape", metavar="N,C,H,W,K,R,S[,stride,padding,dilation]", help="one convolution instead of a suite")
    _dtype_options(s, fp32=False)
    s.add_argument("--kernel", help="a conv kernel instead of the automatic choice (zoo list)")
    s.add_argument("--config", help="this config instead of the automatic choice")
    _timing_options(s, iters=50)
    s.set_defaults(fn=cmd_conv)

    s = sub.add_parser("tune", help="measure every kernel/config/split for shapes on this GPU; zoo.mm then uses the winners")
    s.add_argument("--suite", choices=tuple(SUITES), default="skinny", help="shapes to tune (skinny)")
    s.add_argument("--shapes", help="comma-separated MxNxK list instead of a suite")
    _dtype_options(s)
    s.add_argument("--show", action="store_true", help="print the tuning file in use and measure nothing")
    s.add_argument("--iters", type=int, default=20)
    s.add_argument("--warmup", type=int, default=5)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--json", metavar="PATH")
    s.set_defaults(fn=cmd_tune)

    s = sub.add_parser("batched", help="many small GEMMs: zoo.bmm's modes vs torch.bmm, or the stream pipeline")
    s.add_argument("--batch", type=int, default=10)
    s.add_argument("-m", type=int, default=768)
    s.add_argument("-n", type=int, default=768)
    s.add_argument("-k", type=int, default=1024)
    _dtype_options(s, fp32=False)
    s.add_argument("--mode", choices=("all", "streams", "batched", "grouped"), default="all")
    s.add_argument("--streams", type=int, help="streams for the streams mode (default: two on sm_90a, else one per GEMM)")
    s.add_argument("--kernel", help="this kernel instead of the automatic choice")
    s.add_argument("--config", help="this config instead of the automatic choice")
    s.add_argument("--pipeline", action="store_true",
                   help="pinned host memory in and out: copy-in, GEMM and copy-out on three streams")
    s.add_argument("--repeats", type=int, default=5, help="pipeline runs to take the median of (5)")
    s.add_argument("--trace", metavar="PATH", help="with --pipeline: write a Chrome trace (JSON) of the steps")
    s.add_argument("--plot", metavar="PATH", help="with --pipeline: draw the copy/GEMM timeline to PATH (.png)")
    _timing_options(s, iters=50, eager=False)
    s.set_defaults(fn=cmd_batched)
    for name in GPU_COMMANDS:
        sub.choices[name].add_argument(
            "--device", type=int, metavar="N",
            help="the GPU to run on (default: torch's current device; CUDA_VISIBLE_DEVICES picks and renumbers them)")
    return p


GPU_COMMANDS = ("info", "run", "bench", "conv", "tune", "batched")


def _select_device(index: int, command: str) -> int:
    """Make GPU `index` torch's current device for the command; a clear error when there is no
    such GPU (a machine without any is the command's own message)."""
    import torch
    if not _gpu_available():
        return EXIT_OK
    count = torch.cuda.device_count()
    if not 0 <= index < count:
        err_console.print(f"[bold red]zoo {command}:[/] no GPU {index}: this machine shows {count} "
                          f"(--device 0{f' to {count - 1}' if count > 1 else ''}; CUDA_VISIBLE_DEVICES picks and "
                          "renumbers them)")
        return EXIT_FAIL
    torch.cuda.set_device(index)
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if getattr(args, "iters", 1) < 1 or getattr(args, "warmup", 0) < 0:
        err_console.print("zoo: --iters must be >= 1 and --warmup >= 0")
        return EXIT_FAIL
    if getattr(args, "device", None) is not None:
        failed = _select_device(args.device, args.command)
        if failed:
            return failed
    try:
        return args.fn(args)
    except ZooError as exc:
        err_console.print(f"[bold red]zoo {args.command}:[/] {exc}")
        return EXIT_FAIL
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
