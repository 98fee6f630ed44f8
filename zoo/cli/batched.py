"""`zoo batched`: many small GEMMs, zoo.bmm's modes side by side with torch.bmm, or with
--pipeline the copy-in / GEMM / copy-out stream pipeline."""

from __future__ import annotations

import datetime

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from .. import bench
from .common import (DTYPES, EXIT_FAIL, EXIT_OK, dtype_options, err_console, gpu_available, no_gpu, out_dtype_name,
                     report_console, timing_options, write_json)


def add_parsers(sub) -> None:
    s = sub.add_parser("batched", help="many small GEMMs: zoo.bmm's modes vs torch.bmm, or the stream pipeline")
    s.add_argument("--batch", type=int, default=10)
    s.add_argument("-m", type=int, default=768)
    s.add_argument("-n", type=int, default=768)
    s.add_argument("-k", type=int, default=1024)
    dtype_options(s, fp32=False)
    s.add_argument("--mode", choices=("all", "streams", "batched", "grouped"), default="all")
    s.add_argument("--streams", type=int, help="streams for the streams mode (default: two on sm_90a, else one per GEMM)")
    s.add_argument("--kernel", help="this kernel instead of the automatic choice")
    s.add_argument("--config", help="this config instead of the automatic choice")
    s.add_argument("--pipeline", action="store_true",
                   help="pinned host memory in and out: copy-in, GEMM and copy-out on three streams")
    s.add_argument("--repeats", type=int, default=5, help="pipeline runs to take the median of (5)")
    s.add_argument("--trace", metavar="PATH", help="with --pipeline: write a Chrome trace (JSON) of the steps")
    s.add_argument("--plot", metavar="PATH", help="with --pipeline: draw the copy/GEMM timeline to PATH (.png)")
    timing_options(s, iters=50, eager=False)
    s.set_defaults(fn=cmd_batched)


def cmd_batched(args) -> int:
    if not gpu_available():
        write_json(args.json, {"gpu": None})
        return no_gpu("batched")
    import torch
    from ..gemm import device_limits

    if min(args.batch, args.m, args.n, args.k, args.repeats) < 1:
        err_console.print("zoo batched: --batch, -m, -n, -k and --repeats must be >= 1")
        return EXIT_FAIL
    if (args.trace or args.plot) and not args.pipeline:
        err_console.print("zoo batched: --trace and --plot go with --pipeline (they draw the pipeline's steps)")
        return EXIT_FAIL
    out_name = out_dtype_name(args, "batched")
    if out_name is None:
        return EXIT_FAIL
    dtype, out_dtype = getattr(torch, DTYPES[args.dtype]), getattr(torch, DTYPES[out_name])
    lim = device_limits(torch.cuda.current_device())
    what = f"{args.batch} x [M={args.m}, K={args.k}, N={args.n}] {args.dtype} -> {out_name}"
    payload = {"device": lim.part, "cc": f"{lim.cc[0]}.{lim.cc[1]}", "date": datetime.date.today().isoformat(),
               "torch": torch.__version__, "batch": args.batch, "m": args.m, "n": args.n, "k": args.k,
               "dtype": args.dtype, "out_dtype": out_name}
    run = _pipeline if args.pipeline else _modes
    failed = run(args, dtype, out_dtype, lim, what, payload)
    write_json(args.json, payload)
    if failed:
        err_console.print(f"[bold red]verification failed[/]: {'; '.join(failed)}")
        return EXIT_FAIL
    return EXIT_OK


def _pipeline(args, dtype, out_dtype, lim, what: str, payload: dict) -> list[str]:
    """--pipeline: run, verify and report the stream pipeline; its figures go into payload.
    Returns what failed verification."""
    from .. import pipeline
    show = report_console(args)
    failed = []
    with show.status("pipeline: warm-up, then pipelined and serial runs"):
        result, host_a, host_b, host_c = pipeline.run(args.batch, args.m, args.n, args.k, dtype, out_dtype,
                                                      repeats=args.repeats, kernel=args.kernel, config=args.config,
                                                      seed=args.seed)
    for i in range(args.batch):
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
        from ..plot import timeline_plot
        title = f"pipeline: {what} on {lim.part}, {datetime.date.today().isoformat()}: " \
                f"{result.pipelined_us:.0f} us, {100 * result.efficiency:.0f}% of ideal"
        show.print(f"wrote {timeline_plot(result.spans, list(pipeline.LANES), title, args.plot)}")
    payload["pipeline"] = {"pipelined_us": result.pipelined_us, "serial_us": result.serial_us,
                           "ideal_us": result.ideal_us, "efficiency": result.efficiency,
                           "step_us": result.step_us, "verified": not failed}
    return failed


def _modes(args, dtype, out_dtype, lim, what: str, payload: dict) -> list[str]:
    """zoo.bmm's modes against torch.bmm (zoo.batched.measure): the table, and the rows into
    payload. Returns what failed verification."""
    from ..batched import MODES, measure
    show = report_console(args)
    flops = 2 * args.batch * args.m * args.n * args.k
    with Progress(TextColumn("timing"), BarColumn(), MofNCompleteColumn(), console=err_console,
                  transient=True) as progress:
        task = progress.add_task("timing", total=args.iters)
        timings, wrong, host, sets = measure(
            args.batch, args.m, args.n, args.k, dtype, out_dtype, MODES if args.mode == "all" else (args.mode,),
            warmup=args.warmup, iters=args.iters, seed=args.seed, streams=args.streams, kernel=args.kernel,
            config=args.config, progress=lambda i: progress.update(task, completed=i))
    ref, ref_graph = timings["torch.bmm"].median_ms, timings["torch.bmm (graph)"].median_ms
    table = Table(title=f"{what} on {lim.part}: device time, median of {args.iters} calls each, "
                        f"interleaved, {sets} rotating input sets, GPU kept {bench.LEAD_US} us ahead of the host")
    for col in ("mode", "us per batch", "TFLOP/s", "vs torch.bmm", "vs torch.bmm (graph)",
                "host us per call", "bound by", "spread", "verified"):
        table.add_column(col, justify="left" if col == "mode" else "right", no_wrap=True)
    rows = []
    for name, t in timings.items():
        ok = None if name not in wrong else not wrong[name]
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
    return [f"{name}: GEMMs {bad}" for name, bad in wrong.items() if bad]
