"""Offline checks of a compiled cubin: SASS signature, resources, occupancy.

cuobjdump (pip wheel nvidia-cuda-cuobjdump, or a CUDA toolkit) disassembles the cubin; the
occupancy follows the CUDA occupancy rules from the arch's limits (zoo/arch.py).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .arch import ArchLimits
from .cuda import ZooError


def cuobjdump_path() -> str:
    try:
        from cuda import pathfinder
        found = pathfinder.find_nvidia_binary_utility("cuobjdump")
        if found:
            return str(found)
    except Exception:  # noqa: BLE001 - pathfinder is optional
        pass
    found = shutil.which("cuobjdump") or (Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin" / "cuobjdump")
    if Path(found).is_file():
        return str(found)
    raise ZooError("cuobjdump not found; install it with `pip install nvidia-cuda-cuobjdump "
                   "nvidia-cuda-nvdisasm` or put a CUDA toolkit's bin/ on PATH")


@functools.lru_cache(maxsize=4)
def _cuobjdump(flag: str, image: bytes) -> str:
    """cuobjdump's output for a cubin, kept for the last few: a build's checks read each of its
    entry points' resources and SASS from the same cubin (a dozen for the sm_90a kernel)."""
    tool = cuobjdump_path()
    env = dict(os.environ)
    # cuobjdump -sass runs nvdisasm, shipped beside it by the wheels and the toolkit.
    env["PATH"] = str(Path(tool).parent) + os.pathsep + env.get("PATH", "")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(image)
        f.flush()
        proc = subprocess.run([tool, flag, f.name], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise ZooError(f"cuobjdump {flag} failed: {proc.stderr.strip()}")
    return proc.stdout


@dataclass(frozen=True)
class Resources:
    registers: int
    static_smem: int
    local_bytes: int   # local memory (stack + spills) per thread
    stack: int


def resources(image: bytes, function: str) -> Resources:
    text = _cuobjdump("-res-usage", image)
    m = re.search(rf"Function {re.escape(function)}:\s*\n\s*REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)", text)
    if not m:
        raise ZooError(f"no resource usage for {function} in the cubin")
    reg, stack, shared, local = map(int, m.groups())
    return Resources(reg, shared, local, stack)


def function_sass(image: bytes, function: str) -> str:
    """The SASS of one function of the cubin."""
    text = _cuobjdump("-sass", image)
    parts = re.split(r"\n\s*Function : ", text)
    for part in parts[1:]:
        if part.split("\n", 1)[0].strip() == function:
            return part
    raise ZooError(f"function {function} not found in the SASS")


def opcode_counts(sass: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for op in re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", sass):
        counts[op] = counts.get(op, 0) + 1
    return counts


@dataclass(frozen=True)
class SignatureResult:
    ok: bool
    found: list[str]       # required features present
    missing: list[str]     # required features absent
    forbidden: list[str]   # forbidden features present


def check_signature(sass: str, required, forbidden) -> SignatureResult:
    found = [what for pat, what in required if re.search(pat, sass)]
    missing = [what for pat, what in required if not re.search(pat, sass)]
    bad = [what for pat, what in forbidden if re.search(pat, sass)]
    return SignatureResult(not missing and not bad, found, missing, bad)


@dataclass(frozen=True)
class Occupancy:
    blocks_per_sm: int
    warps_per_sm: int
    limiter: str            # the resource that caps blocks per SM
    by_resource: dict[str, int]

    def waves(self, tiles: int, sm_count: int) -> float:
        slots = self.blocks_per_sm * sm_count
        return tiles / slots if slots else float("inf")


def occupancy(limits: ArchLimits, threads: int, registers: int, smem_bytes: int) -> Occupancy:
    """Resident blocks per SM under each limit (CUDA occupancy rules: registers allocated per
    warp in units of reg_alloc_unit, shared memory plus the per-block reservation)."""
    warps = -(-threads // 32)
    regs_per_warp = -(-registers * 32 // limits.reg_alloc_unit) * limits.reg_alloc_unit
    smem = -(-smem_bytes // limits.smem_alloc_unit) * limits.smem_alloc_unit + limits.smem_reserved_per_block
    by = {
        "threads": limits.max_threads_per_sm // (warps * 32),
        "blocks": limits.max_blocks_per_sm,
        "registers": (limits.regs_per_sm // (regs_per_warp * warps)) if registers else limits.max_blocks_per_sm,
        "shared memory": limits.smem_per_sm // smem if smem else limits.max_blocks_per_sm,
    }
    if registers > limits.max_regs_per_thread or smem_bytes > limits.smem_per_block_optin:
        by["registers" if registers > limits.max_regs_per_thread else "shared memory"] = 0
    limiter = min(by, key=lambda k: by[k])
    blocks = by[limiter]
    return Occupancy(blocks, blocks * warps, limiter, by)
