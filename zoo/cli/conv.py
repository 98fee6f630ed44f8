"""`zoo conv`: zoo.conv2d verified and timed side by side with cuDNN, one layer or a suite."""

from __future__ import annotations

import datetime
from dataclasses import asdict

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .. import bench
from .common import (DTYPES, EXIT_FAIL, EXIT_OK, dtype_options, err_console, gpu_available, no_gpu, report_console,
                     timing_options, write_json)


def add_parsers(sub) -> None:
    s = sub.add_parser("conv", help="zoo.conv2d verified and timed side by side with cuDNN (layer, ResNet-50 suite)")
    s.add_argument("--suite", choices=("layer", "resnet50", "all"), default="all",
                   help="layer: 32x64x56x56 * 128x3x3; resnet50: its 3x3 and 1x1 layers at batch 32; all (default)")
    s.add_argument("--shape", metavar="N,C,H,W,K,R,S[,stride,padding,dilation]", help="one convolution instead of a suite")
    s.add_argument("--model", metavar="NAMES",
                   help="torchvision CNNs instead of a suite (e.g. resnet50,densenet121; needs torchvision): every "
                        "convolution of one forward against cuDNN, weighted by its count, then the whole network")
    s.add_argument("--batch", type=int, default=32, help="with --model: images per forward (32)")
    s.add_argument("--calls", type=int, default=10, help="with --model: calls per timed round of the whole network")
    s.add_argument("--repeats", type=int, default=7, help="with --model: alternating rounds of the whole network")
    dtype_options(s, fp32=False)
    s.add_argument("--kernel", help="a conv kernel instead of the automatic choice (zoo list)")
    s.add_argument("--config", help="this config instead of the automatic choice")
    timing_options(s, iters=50)
    s.set_defaults(fn=cmd_conv)


def cmd_conv(args) -> int:
    if not gpu_available():
        write_json(args.json, {"gpu": None})
        return no_gpu("conv")
    if args.model:
        return _conv_models(args)
    import torch
    from .. import conv, convnets
    from ..gemm import device_limits
    show = report_console(args)
    dtype = getattr(torch, DTYPES[args.dtype])
    out_dtype = getattr(torch, DTYPES[args.out_dtype]) if args.out_dtype else None
    groups = {"shape": [(args.shape, convnets.parse(args.shape))]} if args.shape else \
        {s: convnets.SUITES[s] for s in (convnets.SUITES if args.suite == "all" else [args.suite])}
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
            table.add_row(suite, "", "", "", "[bold]geometric mean[/]", "", "", "", f"[bold]{bench.geomean(ratios):.1f}%[/]",
                          "", "", end_section=True)
    show.print(table)
    write_json(args.json, {"device": lim.part, "date": datetime.date.today().isoformat(), "torch": torch.__version__,
                            "dtype": args.dtype, "out_dtype": args.out_dtype or args.dtype, "timing": timing,
                            "geomean_pct_of_cudnn": {g: bench.geomean([r["pct_of_cudnn"] for r in rows if r["suite"] == g])
                                                     for g in groups}, "results": rows})
    if failed:
        err_console.print(f"[bold red]verification failed[/] for {', '.join(failed)}: the result is wrong")
        return EXIT_FAIL
    return EXIT_OK


def _conv_models(args) -> int:
    """zoo conv --model: each network's convolutions alone against cuDNN, weighted by how often
    one forward runs each, then the whole network (torch's layers against zoo.nn.convert's)."""
    import torch
    from .. import models
    from ..gemm import device_limits
    show = report_console(args)
    dtype = getattr(torch, DTYPES[args.dtype])
    lim = device_limits(torch.cuda.current_device())
    payload = {"device": lim.part, "date": datetime.date.today().isoformat(), "torch": torch.__version__,
               "dtype": args.dtype, "batch": args.batch, "models": {}}
    failed = []
    for name in args.model.split(","):
        with Progress(TextColumn("{task.description}"), TimeElapsedColumn(), console=err_console,
                      transient=True) as progress:
            task = progress.add_task(name)
            step = lambda what: progress.update(task, description=what)  # noqa: E731
            rows = models.conv_layers(name, dtype, args.batch, args.warmup, args.iters, progress=step)
            whole = models.Report()
            models.bench_cnn(whole, dtype, args.calls, args.repeats, args.batch, progress=step, name=name,
                             compiled=False)
        table = Table(title=f"{name}, batch {args.batch}, {args.dtype}, channels-last, on {lim.part}: every "
                            f"convolution alone (median of {args.iters} CUDA-graph replays) against cuDNN "
                            "(cudnn.benchmark), weighted by its count in one forward")
        for col in ("layer", "x (N,C,H,W) * w (K,R,S), stride", "count", "kernel / config", "zoo ms", "cuDNN ms",
                    "% of cuDNN", "count x zoo ms", "verified"):
            table.add_column(col, justify="left" if col in ("layer", "kernel / config") or col.startswith("x")
                             else "right", no_wrap=True)
        zoo_total = cudnn_total = 0.0
        for r in rows:
            sh = r.layer.shape
            geometry = f"{sh.images},{sh.channels},{sh.height},{sh.width} * {sh.out_channels},{sh.r},{sh.s}, " \
                       f"s{sh.stride[0]}" if sh else "-"
            if r.zoo_ms is None:
                table.add_row(r.layer.name, geometry, str(r.layer.count), "not run: " + r.layer.refusal, "", "", "", "", "")
                continue
            zoo_total += r.layer.count * r.zoo_ms
            cudnn_total += r.layer.count * r.cudnn_ms
            if not r.verified:
                failed.append(f"{name} {r.layer.name}")
            table.add_row(r.layer.name, geometry, str(r.layer.count), r.kernel, f"{r.zoo_ms:.4f}", f"{r.cudnn_ms:.4f}",
                          f"{100 * r.cudnn_ms / r.zoo_ms:.1f}%", f"{r.layer.count * r.zoo_ms:.4f}",
                          "[green]yes[/]" if r.verified else "[red]NO[/]")
        timed = [r for r in rows if r.zoo_ms is not None]
        if timed:
            table.add_row("[bold]network's convolutions[/]", "", str(sum(r.layer.count for r in timed)), "",
                          f"{zoo_total:.4f}", f"{cudnn_total:.4f}", f"[bold]{100 * cudnn_total / zoo_total:.1f}%[/]",
                          "", "", end_section=True)
        show.print(table)
        if timed:
            low = min(timed, key=lambda r: r.cudnn_ms / r.zoo_ms)
            show.print(f"{name}: lowest layer {low.layer.name} at {100 * low.cudnn_ms / low.zoo_ms:.1f}% of cuDNN; "
                       f"geometric mean over {len(timed)} distinct layers "
                       f"{bench.geomean([100 * r.cudnn_ms / r.zoo_ms for r in timed]):.1f}%")
        for row in whole.rows:
            show.print(f"{name} whole network, {row.case}: torch {row.torch_ms:.3f} ms, zoo {row.zoo_ms:.3f} ms, "
                       f"{row.speedup:.2f}x {row.check}")
        show.print(f"{name}: {whole.swaps.get(name, '')}")
        payload["models"][name] = {
            "conv_total_ms": {"zoo": zoo_total, "cudnn": cudnn_total},
            "layers": [{"layer": r.layer.name, "conv": r.layer.shape.describe() if r.layer.shape else None,
                        "count": r.layer.count, "refusal": r.layer.refusal, "kernel": r.kernel, "zoo_ms": r.zoo_ms,
                        "cudnn_ms": r.cudnn_ms, "verified": r.verified} for r in rows],
            "whole": [asdict(row) for row in whole.rows], "swaps": whole.swaps.get(name, "")}
    write_json(args.json, payload)
    if failed:
        err_console.print(f"[bold red]verification failed[/] for {', '.join(failed)}: the result is wrong")
        return EXIT_FAIL
    return EXIT_OK
