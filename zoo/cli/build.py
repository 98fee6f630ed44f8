"""`zoo build`, `zoo explain`, `zoo export`: a kernel compiled for an arch, offline: checked
(SASS signature, registers, occupancy), explained (occupancy, waves, roofline, the main loop's
SASS), or built with nvcc into a shared library."""

from __future__ import annotations

import re
from dataclasses import asdict

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .. import arch, configs, registry
from ..cuda import ZooError
from .common import (DTYPES, EXIT_FAIL, EXIT_OK, SHORT_NAMES, console, err_console, gpu_available, report_console,
                     write_json)

MATH_UNITS = {"fp16": "fp16 tensor", "tf32": "tf32 tensor", "fp8": "fp8 tensor", "fp32": "fp32 FFMA"}


def add_parsers(sub) -> None:
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


def cmd_build(args) -> int:
    from ..build import build_and_check
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
    write_json(args.json, {"arch": args.arch, "part": limits.part, "results": payload, "failures": failures})
    return EXIT_FAIL if failures else EXIT_OK


def _loop_json(mix) -> dict | None:
    if mix is None:
        return None
    return {**asdict(mix), "total": mix.total, "smem_read_per_mma": mix.smem_read_per_mma}


def cmd_explain(args) -> int:
    from ..explain import explain
    if args.conv:
        from .. import conv, convnets
        shape = convnets.parse(args.conv)
        lines = conv.explain(shape)
        if args.json != "-":
            for line in lines:
                console.print(line, highlight=False, markup=False)
        write_json(args.json, {"conv": shape.describe(), "gemm": {"m": shape.gemm_m, "n": shape.out_channels,
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
    in_name = SHORT_NAMES.get(in_dtype, "fp8" if in_dtype.startswith("float8") else in_dtype)
    out_name = args.out_dtype or SHORT_NAMES[first_out]
    # a kernel without a row-major B build (the FP8 one) is explained for a column-major B
    problem = registry.Problem(args.m, args.n, args.k, in_dtype, DTYPES[out_name], tf32=spec.tf32,
                               b_col="row x row" not in spec.layouts)
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
    write_json(args.json, {"kernel": spec.name, "arch": target, "part": limits.part, "m": args.m, "n": args.n,
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


def cmd_export(args) -> int:
    from pathlib import Path
    from ..export import build_shared_library, default_config, target_limits
    spec = registry.kernel(args.kernel)
    device = None
    if not args.arch and gpu_available():
        import torch
        from ..gemm import device_limits
        device = device_limits(torch.cuda.current_device())
    limits = target_limits(spec, args.arch, device)
    if limits is None:
        err_console.print(f"zoo export: no limits known for {args.arch}; known: {', '.join(arch.OFFLINE_ARCHS)}")
        return EXIT_FAIL
    target = limits.arch
    cfg = spec.config(args.config) if args.config else default_config(spec, limits)
    with err_console.status(f"nvcc: {spec.name} / {cfg.name} for {target}"):
        library = build_shared_library(spec, cfg, limits, Path(args.o))
    show = report_console(args)
    show.print(f"built {library} ({spec.name} / {cfg.name}, {target})")
    for (i, o), symbol in spec.exports.items():
        ctype = {"float16": "half", "bfloat16": "__nv_bfloat16", "float32": "float"}
        show.print(f"  int {symbol}(const {ctype[i]}* A, const {ctype[i]}* B, {ctype[o]}* C, int M, int N, int K, "
                   "cudaStream_t stream)")
    show.print("returns a cudaError_t code (0: launched); run it with examples/ctypes_gemm.py")
    write_json(args.json, {"library": str(library), "kernel": spec.name, "config": cfg.name, "arch": target,
                            "exports": {f"{i}->{o}": sym for (i, o), sym in spec.exports.items()}})
    return EXIT_OK
