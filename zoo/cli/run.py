"""`zoo run` (one shape, the chosen kernel or every eligible one) and `zoo bench` (suites of
shapes, or whole models with --model): verified and timed side by side with torch.mm."""

from __future__ import annotations

import datetime
from dataclasses import asdict

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .. import bench, registry, tuner
from ..cuda import ZooError
from .common import (DTYPES, EXIT_FAIL, EXIT_OK, dtype_label, dtype_options, err_console, gpu_available, no_gpu,
                     out_dtype_name, problem_for, report_console, timing_name, timing_options, write_json)


def add_parsers(sub) -> None:
    s = sub.add_parser("run", help="select, compile, verify and benchmark against torch.mm")
    s.add_argument("--auto-arch", action="store_true",
                   help="pick the kernel and config for this GPU's compute capability (the default)")
    s.add_argument("-m", type=int, default=4096)
    s.add_argument("-n", type=int, default=4096)
    s.add_argument("-k", type=int, default=4096)
    dtype_options(s, fp8=True)
    s.add_argument("--kernel", help="run this kernel instead of the automatic choice")
    s.add_argument("--all-kernels", action="store_true",
                   help="every kernel eligible on this GPU, side by side with torch.mm in one table")
    s.add_argument("--config", help="run this config instead of the automatic choice")
    timing_options(s, iters=100)
    s.set_defaults(fn=cmd_run)

    s = sub.add_parser("bench", help="a suite of shapes, each verified and timed against torch.mm")
    s.add_argument("--suite", choices=(*bench.SUITES, "all"), default="all",
                   help="square: 4096^3 and 8192^3; llm: M in 128..16384 x LLM projections; all (default)")
    s.add_argument("--shapes", help="comma-separated MxNxK list instead of a suite, e.g. 4096x4096x4096,128x11008x4096")
    dtype_options(s, fp8=True)
    s.add_argument("--kernel", help="this kernel instead of the automatic choice per shape")
    s.add_argument("--config", help="this config instead of the automatic choice per shape")
    s.add_argument("--plot", metavar="PATH", help="draw TFLOP/s against problem size, zoo and torch.mm, to PATH (.png)")
    s.add_argument("--model", metavar="NAME",
                   help="whole models instead of shapes: llama, llama-fp8, resnet50, mlp-train (comma-separated) or "
                        "all; torch's layers against zoo.nn.convert's (needs transformers / torchvision); "
                        "llama-fp8: --recipe's FP8 Linears, torch._scaled_mm's against zoo.scaled_mm's")
    s.add_argument("--calls", type=int, default=10, help="with --model: calls per timed round (10)")
    s.add_argument("--repeats", type=int, default=7, help="with --model: alternating rounds (7)")
    timing_options(s, iters=50)
    s.set_defaults(fn=cmd_bench)


def cmd_run(args) -> int:
    if not gpu_available():
        write_json(args.json, {"gpu": None})
        return no_gpu("run")
    show = report_console(args)
    import torch
    from ..gemm import compiled, device_limits

    if min(args.m, args.n, args.k) < 1:
        err_console.print(f"zoo run: -m, -n and -k must be >= 1, got {args.m}, {args.n}, {args.k}")
        return EXIT_FAIL
    if args.dtype == "fp8":
        return _scaled(args, {"shape": [(args.m, args.n, args.k)]}, "run")
    out_name = out_dtype_name(args, "run")
    if out_name is None:
        return EXIT_FAIL
    idx = torch.cuda.current_device()
    lim = device_limits(idx)
    problem = problem_for(args, args.m, args.n, args.k, out_name)
    what = f"{args.m}x{args.n}x{args.k} {dtype_label(args, out_name)}"
    candidates = registry.select_each(lim, problem, args.config) if args.all_kernels else \
        [registry.select(lim, problem, kernel_name=args.kernel, config_name=args.config)]
    show.print(f"[bold]{lim.part}[/] (CC {lim.cc[0]}.{lim.cc[1]}, {lim.sm_count} SMs), {what}:")
    for spec, cfg in candidates:
        with show.status(f"compiling {spec.name} / {cfg.name} for {spec.compile_arch(lim.cc)} (NVRTC, cached)"):
            compiled(spec, cfg, problem.dtype, problem.out_dtype, idx)
        show.print(f"  {spec.name} / {cfg.name} ({cfg.describe()})")

    with Progress(TextColumn("timing"), BarColumn(), MofNCompleteColumn(), console=err_console,
                  transient=True) as progress:
        task = progress.add_task("timing", total=args.iters)
        timings, checks, sets = tuner.measure_choices(candidates, problem, args.warmup, args.iters, args.seed, lim,
                                                      progress=lambda i: progress.update(task, completed=i),
                                                      graph=not args.eager)
    for name, check in checks.items():
        show.print(f"verify {name} vs float64: {check.describe()}")
    ref_tflops = timings["torch.mm"].tflops(problem.flops)
    table = Table(title=f"{what} on {lim.part} (median of {args.iters}, {sets} rotating input sets, "
                        f"{timing_name(args)})")
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
    write_json(args.json, {
        "device": lim.part, "cc": f"{lim.cc[0]}.{lim.cc[1]}", "date": datetime.date.today().isoformat(),
        "torch": torch.__version__, "m": args.m, "n": args.n, "k": args.k, "dtype": args.dtype,
        "out_dtype": out_name, "tf32": problem.tf32, "kernel": first_spec.name, "config": first_cfg.name, "iters": args.iters,
        "warmup": args.warmup, "rotating_sets": sets, "timing": timing_name(args), "results": rows})
    failed = [name for name, c in checks.items() if not c.ok]
    if failed:
        err_console.print(f"[bold red]verification failed[/] for {', '.join(failed)}: the result is wrong")
        return EXIT_FAIL
    return EXIT_OK


def cmd_bench(args) -> int:
    if not gpu_available():
        write_json(args.json, {"gpu": None})
        return no_gpu("bench")
    if args.model:
        return _bench_models(args)
    if args.dtype == "fp8":
        suites = list(bench.SUITES) if args.suite == "all" else [args.suite]
        return _scaled(args, {"shapes": bench.parse_shapes(args.shapes)} if args.shapes else
                       {s: bench.SUITES[s] for s in suites}, "bench")
    show = report_console(args)
    import torch
    from ..gemm import compiled, device_limits

    out_name = out_dtype_name(args, "bench")
    if out_name is None:
        return EXIT_FAIL
    suites = list(bench.SUITES) if args.suite == "all" else [args.suite]
    groups = {"shapes": bench.parse_shapes(args.shapes)} if args.shapes else {s: bench.SUITES[s] for s in suites}
    idx = torch.cuda.current_device()
    lim = device_limits(idx)
    title = f"{dtype_label(args, out_name)} on {lim.part} (CC {lim.cc[0]}.{lim.cc[1]}), each shape timed " \
            f"side by side with torch.mm, median of {args.iters}, {timing_name(args)}"
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
                problem = problem_for(args, m, n, k, out_name)
                spec, cfg = registry.select(lim, problem, kernel_name=args.kernel, config_name=args.config)
                progress.update(task, description=f"{m}x{n}x{k}: {spec.name} / {cfg.name}")
                compiled(spec, cfg, problem.dtype, problem.out_dtype, idx)
                timings, checks, _ = tuner.measure_choices([(spec, cfg)], problem, args.warmup, args.iters,
                                                           args.seed, lim, graph=not args.eager)
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
            table.add_row(suite, "", "", "", "[bold]geometric mean[/]", "", "", "", f"[bold]{bench.geomean(ratios):.1f}%[/]",
                          "", "", end_section=True)
    show.print(table)
    geomeans = {g: bench.geomean([r["pct_of_torch"] for r in rows if r["suite"] == g]) for g in groups}
    if args.plot:
        from ..plot import bench_plot
        label = f"zoo vs torch.mm, {dtype_label(args, out_name)}, {timing_name(args)}\n" \
                f"{lim.part}, {datetime.date.today().isoformat()}"
        show.print(f"wrote {bench_plot(rows, label, args.plot)}")
    write_json(args.json, {
        "device": lim.part, "cc": f"{lim.cc[0]}.{lim.cc[1]}", "date": datetime.date.today().isoformat(),
        "torch": torch.__version__, "dtype": args.dtype, "out_dtype": out_name,
        "tf32": getattr(args, "tf32", False), "iters": args.iters,
        "warmup": args.warmup, "timing": timing_name(args), "geomean_pct_of_torch": geomeans, "results": rows})
    if failed:
        err_console.print(f"[bold red]verification failed[/] for {', '.join(failed)}: the result is wrong")
        return EXIT_FAIL
    return EXIT_OK


def _bench_models(args) -> int:
    """zoo bench --model: whole models on torch's layers and on the zoo's (zoo/models.py)."""
    import torch
    from .. import models
    from ..gemm import device_limits
    show = report_console(args)
    lim = device_limits(torch.cuda.current_device())
    names = list(models.MODELS) if args.model == "all" else args.model.split(",")
    with Progress(TextColumn("{task.description}"), TimeElapsedColumn(), console=err_console, transient=True) as progress:
        task = progress.add_task("models")
        report = models.run(names, dtype=getattr(torch, DTYPES[args.dtype]), calls=args.calls, repeats=args.repeats,
                            recipe=args.recipe,
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
    for line in report.notes:
        show.print(f"[yellow]{line}[/]")
    rows = [{"model": r.model, "case": r.case, "torch_ms": r.torch_ms, "zoo_ms": r.zoo_ms, "speedup": r.speedup,
             "spreads": list(r.spreads), "check": r.check} for r in report.rows]
    if args.plot:
        from ..plot import models_plot
        label = f"whole models, zoo vs torch ({args.dtype}; mlp-train, llama-fp8 bf16), {lim.part}, {datetime.date.today().isoformat()}"
        show.print(f"wrote {models_plot(rows, label, args.plot)}")
    write_json(args.json, {"device": lim.part, "cc": f"{lim.cc[0]}.{lim.cc[1]}",
                            "date": datetime.date.today().isoformat(), "torch": torch.__version__,
                            "dtype": args.dtype, "calls": args.calls, "repeats": args.repeats,
                            "layers_on_the_zoo": report.swaps, "notes": report.notes, "results": rows})
    return EXIT_OK


def _scaled(args, groups: dict, command: str) -> int:
    """zoo run / bench --dtype fp8: zoo.scaled_mm against torch._scaled_mm, shape by shape
    (zoo/tuner.py, measure_scaled)."""
    import torch
    from ..gemm import device_limits
    show = report_console(args)
    out_name = args.out_dtype or "bf16"  # --out-dtype's choices are the FP8 kernel's outputs
    if args.kernel or getattr(args, "all_kernels", False) or args.tf32:
        err_console.print(f"zoo {command}: --dtype fp8 runs zoo.scaled_mm's own kernel (--config may name its config; "
                          "no --kernel, --all-kernels or --tf32)")
        return EXIT_FAIL
    idx = torch.cuda.current_device()
    lim = device_limits(idx)
    out_dtype = getattr(torch, DTYPES[out_name])
    accum = "fast accumulation" if args.fast_accum else "fp32 promotion"
    table = Table(title=f"e4m3 -> {out_name}, {args.recipe} scales, {accum}, on {lim.part} (CC {lim.cc[0]}.{lim.cc[1]}): "
                        f"zoo.scaled_mm and torch._scaled_mm side by side, median of {args.iters}, {timing_name(args)}")
    for col in ("suite", "M", "N", "K", "config", "ms", "TFLOP/s", "torch TFLOP/s", "% of torch", "error",
                "torch error", "verified"):
        table.add_column(col, justify="left" if col in ("suite", "config") else "right", no_wrap=True)
    rows, failed, refused = [], [], []
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console, transient=True) as progress:
        task = progress.add_task("fp8", total=sum(len(v) for v in groups.values()))
        for suite, shapes in groups.items():
            ratios = []
            for m, n, k in shapes:
                progress.update(task, description=f"{m}x{n}x{k} fp8 {args.recipe}")
                try:
                    r = tuner.measure_scaled(idx, m, n, k, args.recipe, out_dtype, args.fast_accum, args.warmup,
                                             args.iters, args.seed, graph=not args.eager, config=args.config)
                except ZooError as exc:  # a shape FP8 cannot take (K, N off 16): said, and the next one
                    # The reason goes under the table: in a no_wrap cell it squeezed every other column.
                    table.add_row(suite, str(m), str(n), str(k), "[yellow]not run[/]", *[""] * 7)
                    refused.append(f"{m}x{n}x{k}: {exc}")
                    rows.append({"suite": suite, "m": m, "n": n, "k": k, "refused": str(exc), "pct_of_torch": None})
                    progress.advance(task)
                    continue
                flops = 2 * m * n * k
                mine, ref = r["timings"]["zoo"], r["timings"].get("torch")
                # torch's time counts only where its answer is right (not in the geometric mean else)
                pct = 100 * ref.median_ms / mine.median_ms if ref and not r["torch_wrong"] else None
                if pct:
                    ratios.append(pct)
                if not r["ok"]:
                    failed.append(f"{m}x{n}x{k}")
                table.add_row(suite, str(m), str(n), str(k), r["config"], f"{mine.median_ms:.4f}",
                              f"{mine.tflops(flops):.1f}", f"{ref.tflops(flops):.1f}" if ref else "refused",
                              f"{pct:.1f}%" if pct else "[yellow]torch wrong[/]" if r["torch_wrong"] else "-",
                              f"{r['error']:.1e}", f"{r['torch_error']:.1e}",
                              "[green]yes[/]" if r["ok"] else "[red]NO[/]")
                rows.append({"suite": suite, "m": m, "n": n, "k": k, "kernel": r["kernel"], "config": r["config"],
                             "median_ms": mine.median_ms, "tflops": mine.tflops(flops),
                             "torch_median_ms": ref.median_ms if ref else None,
                             "torch_tflops": ref.tflops(flops) if ref else None, "pct_of_torch": pct,
                             "error": r["error"], "torch_error": r["torch_error"], "bound": r["bound"],
                             "torch_wrong": r["torch_wrong"], "verified": r["ok"]})
                progress.advance(task)
            if ratios:
                table.add_row(suite, "", "", "", "[bold]geometric mean[/]", "", "", "", f"[bold]{bench.geomean(ratios):.1f}%[/]",
                              "", "", "", end_section=True)
    show.print(table)
    for line in refused:
        show.print(f"[yellow]not run[/] {line}")
    if any(r.get("torch_wrong") for r in rows):
        show.print("[yellow]torch wrong[/]: torch._scaled_mm's answer was past the output dtype's rounding "
                   "(its blockwise recipe where K / 128 is no multiple of 4, on torch 2.11); its time is left out")
    write_json(args.json, {
        "device": lim.part, "cc": f"{lim.cc[0]}.{lim.cc[1]}", "date": datetime.date.today().isoformat(),
        "torch": torch.__version__, "dtype": "fp8_e4m3", "out_dtype": out_name, "recipe": args.recipe,
        "fast_accum": args.fast_accum, "iters": args.iters, "warmup": args.warmup, "timing": timing_name(args),
        "geomean_pct_of_torch": {g: bench.geomean([r["pct_of_torch"] for r in rows if r["suite"] == g and r["pct_of_torch"]])
                                 for g in groups if any(r["pct_of_torch"] for r in rows if r["suite"] == g)},
        "results": rows})
    if failed:
        err_console.print(f"[bold red]verification failed[/] for {', '.join(failed)}: the result is wrong")
        return EXIT_FAIL
    return EXIT_OK
