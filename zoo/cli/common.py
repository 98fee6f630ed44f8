"""What every command of the CLI shares: the consoles, exit codes, the GPU check, --json
output, the dtype and timing options and what they mean."""

from __future__ import annotations

import json
import sys

from rich.console import Console

from .. import registry

# Logs and pipes get wide tables rather than rich's 80-column default.
console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 160)

EXIT_OK, EXIT_FAIL, EXIT_NO_GPU = 0, 1, 2

DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}
SHORT_NAMES = {v: k for k, v in DTYPES.items()}


def gpu_available() -> bool:
    import torch
    return torch.cuda.is_available()


def no_gpu(what: str) -> int:
    err_console.print(f"[bold red]zoo {what}: no CUDA GPU is visible[/] (torch.cuda.is_available() "
                      "is False). Offline commands work anywhere: `zoo list`, `zoo build --arch sm_75 --check`.")
    return EXIT_NO_GPU


def write_json(path: str | None, payload: dict) -> None:
    if not path:
        return
    text = json.dumps(payload, indent=2, default=str)
    if path == "-":
        print(text)
    else:
        with open(path, "w") as f:
            f.write(text + "\n")
        console.print(f"wrote {path}")


def report_console(args):
    """With --json - stdout carries only the JSON document; the report goes to stderr."""
    return err_console if args.json == "-" else console


def select_device(index: int, command: str) -> int:
    """Make GPU `index` torch's current device for the command; a clear error when there is no
    such GPU (a machine without any is the command's own message)."""
    import torch
    if not gpu_available():
        return EXIT_OK
    count = torch.cuda.device_count()
    if not 0 <= index < count:
        err_console.print(f"[bold red]zoo {command}:[/] no GPU {index}: this machine shows {count} "
                          f"(--device 0{f' to {count - 1}' if count > 1 else ''}; CUDA_VISIBLE_DEVICES picks and "
                          "renumbers them)")
        return EXIT_FAIL
    torch.cuda.set_device(index)
    return EXIT_OK


# ----------------------------------------------------------------------------- dtypes and timing

def dtype_options(s, fp32: bool = True, fp8: bool = False) -> None:
    s.add_argument("--dtype", choices=("fp16", "bf16", "fp32") + (("fp8",) if fp8 else ()) if fp32 else ("fp16", "bf16"),
                   default="fp16",
                   help="input dtype (fp16)" + ("; fp32 runs in full precision unless --tf32" if fp32 else "")
                        + ("; fp8: e4m3 with scales, zoo.scaled_mm against torch._scaled_mm" if fp8 else ""))
    s.add_argument("--out-dtype", choices=tuple(DTYPES),
                   help="output dtype: the input dtype (default) or fp32" + ("; with fp8 bf16 (default), fp16 or fp32"
                                                                             if fp8 else ""))
    if fp32:
        s.add_argument("--tf32", action="store_true",
                       help="with --dtype fp32: allow TF32 rounding, for the zoo and for torch.mm alike")
    if fp8:
        s.add_argument("--recipe", choices=("tensor", "row", "block"), default="tensor",
                       help="with --dtype fp8: the scales, per tensor (default), per row, or blockwise (1x128, 128x128)")
        s.add_argument("--fast-accum", action="store_true",
                       help="with --dtype fp8: use_fast_accum=True for both (no fp32 promotion of the partial sums)")


def timing_options(s, iters: int, eager: bool = True) -> None:
    s.add_argument("--warmup", type=int, default=10)
    s.add_argument("--iters", type=int, default=iters)
    s.add_argument("--seed", type=int, default=0)
    if eager:
        s.add_argument("--eager", action="store_true",
                       help="time whole Python calls (host and device, a fresh output each, wall clock per call) "
                            "instead of CUDA-graph replays")
    s.add_argument("--json", metavar="PATH")


def out_dtype_name(args, command: str) -> str | None:
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


def problem_for(args, m: int, n: int, k: int, out_name: str) -> registry.Problem:
    return registry.Problem(m, n, k, DTYPES[args.dtype], DTYPES[out_name], tf32=getattr(args, "tf32", False))


def dtype_label(args, out_name: str) -> str:
    return f"{args.dtype}{' (TF32)' if getattr(args, 'tf32', False) else ''} -> {out_name}"


def timing_name(args) -> str:
    return "wall clock per eager call (host + device)" if args.eager else "CUDA-graph replays"
