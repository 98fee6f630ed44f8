"""Hardware facts per architecture: a table for offline checks, the device when one is present.

Offline figures are the public specifications of the reference part of each arch (T4, A100,
H100 SXM); `from_device` reads the same fields off the GPU through zoo.cuda.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class ArchLimits:
    arch: str                    # compile target: sm_75, sm_80, sm_90a, or the device's own
    cc: tuple[int, int]
    part: str                    # the reference part, or the device's name
    sm_count: int
    smem_per_sm: int             # bytes, usable by blocks (after the carveout)
    smem_per_block_optin: int    # bytes, dynamic shared memory one block may opt in to
    smem_reserved_per_block: int  # bytes the system reserves per resident block
    regs_per_sm: int
    regs_per_block: int
    max_regs_per_thread: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    l2_bytes: int
    reg_alloc_unit: int = 256    # registers are allocated per warp in units of 256
    smem_alloc_unit: int = 128   # bytes; shared memory granularity per block
    sm_clock_mhz: int = 0
    mem_clock_mhz: int = 0
    mem_bus_bits: int = 0
    source: str = "table"        # "table" (offline) or "device"
    # Datasheet rates of the reference part (dense FLOP/s: fp16 and tf32 tensor cores, fp32
    # CUDA cores; DRAM bandwidth): the roofline `zoo explain` draws. Not measured here; 0 when
    # unknown or absent (a T4 has no TF32). A device's DRAM bandwidth comes from its memory
    # clock and bus width (dram_gbps below); its FLOP rates are not read.
    peak_fp16_tflops: float = 0.0
    dram_gbps: float = 0.0
    peak_fp32_tflops: float = 0.0
    peak_tf32_tflops: float = 0.0
    peak_fp8_tflops: float = 0.0     # FP8 tensor cores (Hopper): twice the fp16 rate

    def peak_tflops(self, math: str = "fp16") -> float:
        """The datasheet rate of `math`: "fp16", "tf32" or "fp8" (tensor) or "fp32" (FFMA)."""
        return {"fp16": self.peak_fp16_tflops, "tf32": self.peak_tf32_tflops,
                "fp32": self.peak_fp32_tflops, "fp8": self.peak_fp8_tflops}[math]

    def ridge(self, math: str = "fp16") -> float:
        """FLOP per DRAM byte above which the math units, not memory, bound a kernel."""
        return 1e3 * self.peak_tflops(math) / self.dram_gbps if self.dram_gbps else 0.0

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // 32


KIB = 1024

# Public specifications (CUDA C Programming Guide, "Compute Capabilities"; vendor datasheets).
TABLE: dict[str, ArchLimits] = {
    "sm_75": ArchLimits("sm_75", (7, 5), "Tesla T4", sm_count=40, smem_per_sm=64 * KIB,
                        smem_per_block_optin=64 * KIB, smem_reserved_per_block=0,
                        regs_per_sm=65536, regs_per_block=65536, max_regs_per_thread=255,
                        max_threads_per_sm=1024, max_blocks_per_sm=16, l2_bytes=4 * 1024 * KIB,
                        sm_clock_mhz=1590, peak_fp16_tflops=65.0, dram_gbps=320.0,
                        peak_fp32_tflops=8.1),
    "sm_80": ArchLimits("sm_80", (8, 0), "A100 SXM4", sm_count=108, smem_per_sm=164 * KIB,
                        smem_per_block_optin=163 * KIB, smem_reserved_per_block=1 * KIB,
                        regs_per_sm=65536, regs_per_block=65536, max_regs_per_thread=255,
                        max_threads_per_sm=2048, max_blocks_per_sm=32, l2_bytes=40 * 1024 * KIB,
                        sm_clock_mhz=1410, peak_fp16_tflops=312.0, dram_gbps=1555.0,
                        peak_fp32_tflops=19.5, peak_tf32_tflops=156.0),
    "sm_90a": ArchLimits("sm_90a", (9, 0), "H100 SXM5", sm_count=132, smem_per_sm=228 * KIB,
                         smem_per_block_optin=227 * KIB, smem_reserved_per_block=1 * KIB,
                         regs_per_sm=65536, regs_per_block=65536, max_regs_per_thread=255,
                         max_threads_per_sm=2048, max_blocks_per_sm=32, l2_bytes=50 * 1024 * KIB,
                         sm_clock_mhz=1980, peak_fp16_tflops=989.0, dram_gbps=3350.0,
                         peak_fp32_tflops=67.0, peak_tf32_tflops=494.7, peak_fp8_tflops=1979.0),
}
OFFLINE_ARCHS = tuple(TABLE)


def offline(arch: str) -> ArchLimits:
    """The table entry for an offline build target (sm_90 is read as sm_90a's part)."""
    key = "sm_90a" if arch == "sm_90" else arch
    if key not in TABLE:
        raise KeyError(f"unknown arch {arch!r}; known: {', '.join(OFFLINE_ARCHS)}")
    return replace(TABLE[key], arch=arch)


def device_arch(cc: tuple[int, int], arch_specific: bool = False) -> str:
    """The compile target for a device: sm_XY, or sm_XYa for arch-specific code (wgmma)."""
    return f"sm_{cc[0]}{cc[1]}{'a' if arch_specific else ''}"


def from_device(device_index: int = 0) -> ArchLimits:
    from . import cuda
    a = cuda.device_attributes(device_index)
    cc = (a["cc_major"], a["cc_minor"])
    return ArchLimits(
        arch=device_arch(cc), cc=cc, part=a["name"], sm_count=a["sm_count"],
        smem_per_sm=a["smem_per_sm"], smem_per_block_optin=a["smem_per_block_optin"],
        smem_reserved_per_block=a["smem_reserved_per_block"], regs_per_sm=a["regs_per_sm"],
        regs_per_block=a["regs_per_block"], max_regs_per_thread=255,
        max_threads_per_sm=a["max_threads_per_sm"], max_blocks_per_sm=a["max_blocks_per_sm"],
        l2_bytes=a["l2_bytes"], sm_clock_mhz=a["sm_clock_khz"] // 1000,
        mem_clock_mhz=a["mem_clock_khz"] // 1000, mem_bus_bits=a["mem_bus_bits"], source="device",
        dram_gbps=dram_gbps(a["mem_clock_khz"], a["mem_bus_bits"]))


def dram_gbps(mem_clock_khz: int, bus_bits: int) -> float:
    """Peak DRAM bandwidth from the driver's memory clock and bus width: two transfers a clock
    (H100 SXM5: 2619 MHz x 5120 bits -> 3352 GB/s; T4: 5001 MHz x 256 bits -> 320 GB/s)."""
    return 2 * mem_clock_khz * 1e3 * bus_bits / 8 / 1e9
