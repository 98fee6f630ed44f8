"""`zoo tune`: every (kernel, config, split-K) measured per shape on this GPU, the winners
written to the tuning file zoo.mm reads; --conv: every conv kernel and config (and the flat
K) per convolution of a suite, for zoo.conv2d; --show prints the file in use."""

from __future__ import annotations

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .. import bench, cuda, registry
from .common import (DTYPES, EXIT_FAIL, EXIT_OK, dtype_options, err_console, gpu_available, no_gpu,
                     out_dtype_name, problem_for, report_console, write_json)


def add_parsers(sub) -> None:
    s = sub.add_parser("tune", help="measure every kernel/config/split for shapes on this GPU; zoo.mm then uses the winners")
    s.add_argument("--suite", choices=tuple(bench.SUITES), default="skinny", help="shapes to tune (skinny)")
    s.add_argument("--shapes", help="comma-separated MxNxK list instead of a suite")
    s.add_argument("--conv", metavar="SUITE", help="tune zoo.conv2d on a convolution suite instead "
                   "(zoo conv's: layer, resnet50, all)")
    dtype_options(s)
    s.add_argument("--show", action="store_true", help="print the tuning file in use and measure nothing")
    s.add_argument("--iters", type=int, default=20)
    s.add_argument("--warmup", type=int, default=5)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--json", metavar="PATH")
    s.set_defaults(fn=cmd_tune)


def cmd_tune(args) -> int:
    from .. import tune, tuner
    if not gpu_available():
        write_json(args.json, {"gpu": None})
        return no_gpu("tune")
    import torch
    from .. import gemm
    idx = torch.cuda.current_device()
    lim = gemm.device_limits(idx)
    show = report_console(args)
    attrs = cuda.device_attributes(idx)
    key = tune.device_key(attrs["name"], lim.cc, cuda.driver_version())
    path = tune.tuning_file(attrs["name"])
    if path is None:
        err_console.print("zoo tune: no cache folder to keep a tuning file in (set ZOO_CACHE_DIR)")
        return EXIT_FAIL
    if args.show:
        winners, why = tune.read(path, key)
        table = Table(title=f"{path}: " + (why or f"{len(winners)} tuned shapes, in use"))
        for col in ("problem", "kernel / config / splits", "us", "torch.mm or cuDNN us"):
            table.add_column(col, justify="left" if col in ("problem", "kernel / config / splits") else "right")
        for problem, w in sorted(winners.items()):
            choice = f"{w['kernel']} / {w['config']} / {w.get('splits') or 'auto'}" if "torch_us" in w else \
                " / ".join(filter(None, (w["kernel"], w["config"], str(w.get("splits") or ""))))  # a convolution's
            table.add_row(problem, choice, f"{w['us']:.1f}", f"{w.get('torch_us', w.get('cudnn_us', 0.0)):.1f}")
        show.print(table)
        write_json(args.json, {"file": str(path), "key": key, "in_use": why is None, "why": why, "winners": winners})
        return EXIT_OK
    out_name = out_dtype_name(args, "tune")
    if out_name is None:
        return EXIT_FAIL
    if args.conv:
        return tune_convs(args, idx, lim, path, key, out_name, show)
    shapes = bench.parse_shapes(args.shapes) if args.shapes else bench.SUITES[args.suite]
    problems = [problem_for(args, m, n, k, out_name) for m, n, k in shapes]
    total = sum(len(tuner.candidates(idx, p)) for p in problems)
    winners, report = {}, []
    table = Table(title=f"zoo tune on {lim.part}: the fastest verified (kernel, config, split-K) per shape")
    for col in ("problem", "winner", "us", "torch.mm us", "model's choice us", "candidates"):
        table.add_column(col, justify="left" if col in ("problem", "winner") else "right")
    measured = _measured(problems, total, lambda p: f"{p.m}x{p.n}x{p.k}",
                         lambda p, step: tuner.measure(idx, p, iters=args.iters, warmup=args.warmup,
                                                       seed=args.seed, progress=step))
    for problem, rows in measured:
        best = rows[0]
        if not best["verified"]:
            err_console.print(f"zoo tune: no candidate verified for {problem}")
            measured.close()  # the progress bar goes
            return EXIT_FAIL
        name = tune.problem_key(problem.dtype, problem.out_dtype, problem.tf32, problem.m, problem.n, problem.k)
        winners[name] = {k: best[k] for k in ("kernel", "config", "splits", "us", "torch_us")}
        model = next((r for r in rows if r["splits"] is None and (r["kernel"], r["config"]) ==
                      tuple(x.name for x in registry.select(lim, problem))), None)
        table.add_row(name, f"{best['kernel']} / {best['config']} / {best['splits'] or 'auto'}",
                      f"{best['us']:.1f}", f"{best['torch_us']:.1f}",
                      f"{model['us']:.1f}" if model else "-", str(len(rows)))
        report.append({"problem": name, "rows": rows})
    gemm._calls.clear()  # plans made before the file changed
    return _saved(args, show, table, path, key, winners, report, "zoo.mm takes these choices for these shapes")


def tune_convs(args, idx, lim, path, key, out_name, show) -> int:
    """zoo tune --conv SUITE: each convolution's fastest verified conv kernel / config or flat K."""
    from .. import conv, convnets, tune, tuner
    suites = {**convnets.SUITES, "all": [lay for name in convnets.SUITES for lay in convnets.SUITES[name]]}
    if args.conv not in suites or args.dtype == "fp32":
        err_console.print(f"zoo tune: --conv takes one of {', '.join(suites)} with --dtype fp16 or bf16; "
                          f"got {args.conv} with {args.dtype}")
        return EXIT_FAIL
    dtype, out_dtype = DTYPES[args.dtype], DTYPES[out_name]
    layers = suites[args.conv]
    total = sum(len(tuner.conv_candidates(idx, shape, dtype, out_dtype)) for _, shape in layers)
    winners, report = {}, []
    table = Table(title=f"zoo tune --conv {args.conv} on {lim.part}: the fastest verified conv kernel / config per layer")
    for col in ("layer", "winner", "us", "cuDNN us", "automatic choice us", "candidates"):
        table.add_column(col, justify="left" if col in ("layer", "winner") else "right")
    measured = _measured(layers, total, lambda layer: layer[0],
                         lambda layer, step: tuner.measure_conv(idx, layer[1], dtype, out_dtype, iters=args.iters,
                                                                warmup=args.warmup, seed=args.seed, progress=step))
    for (label, shape), rows in measured:
        best = rows[0]
        if not best["verified"]:
            err_console.print(f"zoo tune: no candidate verified for {shape.describe()}")
            measured.close()
            return EXIT_FAIL
        name = conv.tune_key(shape, dtype, out_dtype)
        winners[name] = {k: best[k] for k in ("kernel", "config", "splits", "us", "cudnn_us")}
        auto = conv.automatic(lim, shape, dtype, out_dtype)
        auto = (auto, "") if isinstance(auto, str) else (auto[0].name, auto[1].name)
        model = next((r for r in rows if (r["kernel"], r["config"]) == auto and r["splits"] is None), None)
        table.add_row(label, best["name"], f"{best['us']:.1f}", f"{best['cudnn_us']:.1f}",
                      f"{model['us']:.1f}" if model else "-", str(len(rows)))
        report.append({"layer": label, "key": name, "rows": rows})
    conv.forget_plans()  # plans made before the file changed
    return _saved(args, show, table, path, key, winners, report,
                  "zoo.conv2d takes these choices for these convolutions")


def _measured(items, total: int, label, measure):
    """(item, measure(item, step)) for each item, under one progress bar of `total` candidates
    that each measure advances by calling step()."""
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console, transient=True) as progress:
        task = progress.add_task("tune", total=total)
        for item in items:
            progress.update(task, description=label(item))
            yield item, measure(item, lambda: progress.advance(task))


def _saved(args, show, table, path, key, winners: dict, report: list, takes: str) -> int:
    """The winners merged into the tuning file (read afresh from then on), the table, the JSON."""
    from .. import tune
    tune.write(path, key, winners)
    tune.forget()
    show.print(table)
    show.print(f"wrote {path}: {takes} on this GPU (zoo tune --show)")
    write_json(args.json, {"file": str(path), "key": key, "winners": winners, "measured": report})
    return EXIT_OK
