"""The `zoo` command: list, info, build, explain, export, run, bench, conv, tune, batched. Tables for people, --json for machines.

A thin layer over the library: each module here parses one group of commands' arguments
(add_parsers) and reports what the library computes (cmd_*)."""

from __future__ import annotations

import argparse

from .._version import __version__
from ..cuda import ZooError
from . import batched, build, conv, kernels, run, tune
from .common import EXIT_FAIL, err_console, select_device

GPU_COMMANDS = ("info", "run", "bench", "conv", "tune", "batched")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="zoo", description="A multi-architecture GEMM kernel zoo with dispatch.")
    p.add_argument("--version", action="version", version=f"zoo {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for group in (kernels, build, run, conv, tune, batched):  # the order `zoo --help` lists them in
        group.add_parsers(sub)
    for name in GPU_COMMANDS:
        sub.choices[name].add_argument(
            "--device", type=int, metavar="N",
            help="the GPU to run on (default: torch's current device; CUDA_VISIBLE_DEVICES picks and renumbers them)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if getattr(args, "iters", 1) < 1 or getattr(args, "warmup", 0) < 0:
        err_console.print("zoo: --iters must be >= 1 and --warmup >= 0")
        return EXIT_FAIL
    if getattr(args, "device", None) is not None:
        failed = select_device(args.device, args.command)
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
