"""`zoo list` (the registry) and `zoo info` (this GPU and what the zoo picks for it)."""

from __future__ import annotations

from dataclasses import asdict

from rich.table import Table

from .. import arch, registry
from ..cuda import ZooError
from .common import EXIT_NO_GPU, EXIT_OK, console, err_console, gpu_available, write_json


def add_parsers(sub) -> None:
    s = sub.add_parser("list", help="the registry: kernels, eligible CCs, dtypes, configs")
    s.add_argument("--json", metavar="PATH", help="also write JSON to PATH ('-' for stdout only)")
    s.set_defaults(fn=cmd_list)

    s = sub.add_parser("info", help="the GPU and what --auto-arch would pick")
    s.add_argument("--json", metavar="PATH")
    s.set_defaults(fn=cmd_info)


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
    write_json(args.json, {"kernels": rows})
    return EXIT_OK


def cmd_info(args) -> int:
    if not gpu_available():
        err_console.print("zoo info: no CUDA GPU is visible; nothing to describe. "
                          f"Offline targets: {', '.join(arch.OFFLINE_ARCHS)} (zoo build --arch ...).")
        write_json(args.json, {"gpu": None})
        return EXIT_NO_GPU
    import torch
    from .. import tune
    from ..gemm import device_limits
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
    path, winners, why = tune.in_use(idx)
    facts["tuning file (zoo tune)"] = f"{path}: {len(winners)} tuned shapes in use" if why is None else why
    for k, v in facts.items():
        table.add_row(k, str(v))
    if args.json != "-":
        console.print(table)
    write_json(args.json, {"device": asdict(lim), **{k: str(v) for k, v in facts.items()}})
    return EXIT_OK
