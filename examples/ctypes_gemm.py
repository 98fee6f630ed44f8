"""Build a zoo kernel's .cu into a shared library with nvcc, call its extern "C" launcher from
ctypes, check the result against torch.mm and time both.

    python examples/ctypes_gemm.py                         # 4096^3, fp16 in, fp32 out
    python examples/ctypes_gemm.py --kernel sm75_hgemm_wmma -m 1024 -n 1024 -k 1024 --out-dtype fp16

The launcher: int fn(const half* A, const half* B, float* C, int M, int N, int K,
cudaStream_t stream) returns a cudaError_t code (0: launched). A, B and C are row-major and
packed. The library is built from the same source the zoo compiles with NVRTC.
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout
from zoo import registry  # noqa: E402
from zoo.gemm import device_limits  # noqa: E402
from zoo.export import build_shared_library, default_config, target_limits  # noqa: E402

DTYPES = {"fp16": torch.float16, "fp32": torch.float32}


def load(kernel: str, out_dir: Path):
    """(spec, library) for `kernel` built for this GPU's arch."""
    spec = registry.kernel(kernel)
    cc = torch.cuda.get_device_capability()
    if not spec.runs_on(cc):
        raise SystemExit(f"{spec.name} does not run on this GPU (CC {cc[0]}.{cc[1]}); it needs {spec.eligible_ccs()}")
    limits = target_limits(spec, device=device_limits(torch.cuda.current_device()))
    cfg = default_config(spec, limits)
    print(f"nvcc: {spec.source.name} ({spec.name} / {cfg.name}) for {limits.arch} ...", flush=True)
    return spec, ctypes.CDLL(str(build_shared_library(spec, cfg, limits, out_dir)))


def launcher(spec, library, out_dtype: torch.dtype):
    name = spec.exports[("float16", str(out_dtype).removeprefix("torch."))]
    fn = getattr(library, name)
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int] * 3 + [ctypes.c_void_p]
    return name, fn


def run(kernel: str, m: int, n: int, k: int, out_dtype: torch.dtype, out_dir: Path,
        warmup: int = 10, iters: int = 100) -> dict:
    spec, library = load(kernel, out_dir)
    name, fn = launcher(spec, library, out_dtype)
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=out_dtype)
    stream = torch.cuda.current_stream().cuda_stream

    def call():
        rc = fn(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, stream)
        if rc != 0:
            raise RuntimeError(f"{name} returned CUDA error {rc}")

    def reference():
        return torch.mm(a, b, out_dtype=out_dtype) if out_dtype != a.dtype else torch.mm(a, b)

    call()
    torch.cuda.synchronize()
    exact = a.double() @ b.double()
    error = ((c.double() - exact).norm() / exact.norm()).item()
    torch_error = ((reference().double() - exact).norm() / exact.norm()).item()
    if not error < 1e-2:  # NaN fails too
        raise SystemExit(f"{name}: relative error {error:.3g} vs float64 (torch.mm: {torch_error:.3g})")

    times = {}
    for label, fn_ in ((name, call), ("torch.mm", reference)):
        for _ in range(warmup):
            fn_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn_()
        end.record()
        end.synchronize()
        times[label] = start.elapsed_time(end) / iters
    flop = 2 * m * n * k
    print(f"{m}x{n}x{k} fp16 -> {str(out_dtype).removeprefix('torch.')} on {torch.cuda.get_device_name()}")
    print(f"relative error vs float64: {error:.2e} (torch.mm: {torch_error:.2e})")
    for label, ms in times.items():
        print(f"{label:24s} {ms:8.4f} ms {flop / ms / 1e9:8.1f} TFLOP/s")
    pct = 100 * times["torch.mm"] / times[name]
    print(f"Performance relative to torch.mm (%): {pct:.1f}")
    return {"kernel": spec.name, "launcher": name, "error": error, "torch_error": torch_error,
            "ms": times[name], "torch_ms": times["torch.mm"], "pct_of_torch": pct}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kernel", help="an exportable kernel (default: the newest one this GPU runs)")
    p.add_argument("-m", type=int, default=4096)
    p.add_argument("-n", type=int, default=4096)
    p.add_argument("-k", type=int, default=4096)
    p.add_argument("--out-dtype", choices=tuple(DTYPES), default="fp32")
    p.add_argument("-o", help="where to put the library (default: a temporary folder)")
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA GPU is visible: this example runs the kernel")
    cc = torch.cuda.get_device_capability()
    kernel = args.kernel or next(s.name for s in registry.eligible(cc) if s.exports)
    with tempfile.TemporaryDirectory() as tmp:
        return run(kernel, args.m, args.n, args.k, DTYPES[args.out_dtype], Path(args.o or tmp))


if __name__ == "__main__":
    main()
