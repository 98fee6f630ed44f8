"""`zoo export`: a kernel's own .cu built by nvcc into a shared library with extern "C" host
launchers, for ctypes (examples/ctypes_gemm.py). The same source the zoo compiles with NVRTC:
its host part is compiled only outside NVRTC (#ifndef __CUDACC_RTC__)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from dataclasses import replace

from . import arch as arches
from . import configs as cfgs
from . import registry
from .arch import ArchLimits
from . import cuda
from .cuda import KERNELS_DIR, ZooError
from .registry import KernelSpec

NVCC_HELP = ("nvcc not found: install the CUDA toolkit (https://developer.nvidia.com/cuda-downloads), "
             "or `pip install nvidia-cuda-nvcc` and put its bin/ on PATH, or set CUDA_HOME")


def nvcc_path() -> str:
    found = shutil.which("nvcc")
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if not found and root and (Path(root) / "bin" / "nvcc").is_file():
            found = str(Path(root) / "bin" / "nvcc")
    if not found:
        raise ZooError(NVCC_HELP)
    return found


def arch_flags(arch: str) -> list[str]:
    """nvcc's target flags: sm_90a needs the -gencode form (HOPPER.md)."""
    number = arch.removeprefix("sm_")
    return [f"-gencode=arch=compute_{number},code=sm_{number}"]


def target_limits(spec: KernelSpec, target: str | None = None,
                  device: ArchLimits | None = None) -> ArchLimits | None:
    """The limits to build `spec` for: `target` (e.g. "sm_75"), else the GPU's own arch when
    `device` describes one, else the kernel's first offline target. The arch table answers
    for the targets it knows, the device for others; None when neither can."""
    target = target or (spec.compile_arch(device.cc) if device else spec.offline_archs[0])
    known = ("sm_90a" if target == "sm_90" else target) in arches.OFFLINE_ARCHS
    limits = arches.offline(target) if known else device
    return replace(limits, arch=target) if limits else None


def default_config(spec: KernelSpec, limits: ArchLimits) -> cfgs.TileConfig:
    """The config --auto-arch would run at 4096^3 on that arch."""
    return registry.pick_config(spec, limits, registry.Problem(4096, 4096, 4096))


def build_shared_library(spec: KernelSpec, cfg: cfgs.TileConfig, limits: ArchLimits, out_dir: Path) -> Path:
    """nvcc -shared of the kernel's .cu for `limits.arch` with the config's tile as -D
    defines; returns the library's path. The launchers it exports are spec.exports."""
    if not spec.exports:
        raise ZooError(f"{spec.name} has no standalone host launcher yet (its launch needs TMA "
                       "descriptors built on the host): call it through zoo.mm")
    cfgs.validate(cfg, spec, limits)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    command = [nvcc_path(), "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC", *arch_flags(limits.arch),
               f"-I{KERNELS_DIR}", *(f"-D{k}={v}" for k, v in sorted(spec.defines(cfg).items())),
               str(spec.source)]
    # Named by what it is built from (every zoo source it includes, the command, the nvcc
    # version): an existing library with the same inputs, whole (its recorded hash), is reused.
    version = subprocess.run([command[0], "--version"], capture_output=True, text=True).stdout
    digest = hashlib.sha256(repr(command).encode() + version.encode())
    for path, text in sorted(cuda._included_sources(Path(spec.source).resolve()).items()):
        digest.update(path.name.encode() + hashlib.sha256(text).digest())
    library = out_dir / f"lib{spec.name}_{cfg.name}_{limits.arch}_{digest.hexdigest()[:12]}.so"
    record = library.with_suffix(".so.sha256")
    if library.is_file() and record.is_file() and \
            record.read_text().strip() == hashlib.sha256(library.read_bytes()).hexdigest():
        return library
    # Built under a temporary name and renamed: a library of this name is never half-written.
    partial = out_dir / f".{library.name}.{os.getpid()}.tmp"
    proc = subprocess.run(command + ["-o", str(partial)], capture_output=True, text=True)
    if proc.returncode != 0:
        partial.unlink(missing_ok=True)
        raise ZooError(f"nvcc failed for {spec.name} / {cfg.name} ({limits.arch}):\n{proc.stderr.strip()}\n"
                       f"command: {' '.join(command)}")
    record.write_text(hashlib.sha256(partial.read_bytes()).hexdigest() + "\n")
    os.replace(partial, library)
    return library
