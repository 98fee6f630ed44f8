"""The legacy tensor-core (HMMA) ceiling of this GPU per SM cycle. usage: python3 scripts/legacy_peak.py

Clocks move with power (an H100 at its 700 W cap runs torch.mm at ~1.4 GHz sustained and an
HMMA-only loop at ~1.8 GHz), so ceilings in TFLOP/s taken at different clocks do not compare.
Cycles do: one block per SM runs scripts/legacy_peak.cu (MMAs on registers, no memory
traffic) between clock64() reads. A kernel's own cycles come from ncu (sm__cycles_elapsed.max),
e.g. 2 x 4096^3 / (cycles x SMs) FLOP per SM-cycle for a 4096^3 GEMM (NOTES.md)."""
import statistics
from pathlib import Path

import torch

from zoo import arch, cuda, gemm

SOURCE = Path(__file__).with_name("legacy_peak.cu")
MMA_FLOP = {"mma_sync_peak": 2 * 16 * 8 * 16, "wmma_peak": 2 * 16 * 16 * 16}
MMAS_PER_ITER = {"mma_sync_peak": 16, "wmma_peak": 8}


def main() -> None:
    dev = torch.cuda.current_device()
    lim = gemm.device_limits(dev)
    cubin = cuda.compile_cubin(SOURCE, arch.device_arch(lim.cc), {})
    stream = torch.cuda.current_stream().cuda_stream
    sms, iters = lim.sm_count, 4096
    print(f"{lim.part}, {sms} SMs")
    peak = {}
    for name in ("mma_sync_peak", "wmma_peak"):
        if name == "mma_sync_peak" and lim.cc < (8, 0):
            continue
        fn = cuda.load_function(dev, cubin, name, 0)
        for warps in (4, 8, 16):
            threads = 32 * warps
            out = torch.empty(sms * threads, device="cuda")
            cycles = torch.zeros(sms, dtype=torch.int64, device="cuda")
            packed = cuda.PackedArgs([(out.data_ptr(), cuda.POINTER), (cycles.data_ptr(), cuda.POINTER),
                                      (iters, cuda.INT32)])
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            for _ in range(3):
                fn.launch((sms, 1, 1), threads, packed, stream, dev)
            start.record()
            for _ in range(20):
                fn.launch((sms, 1, 1), threads, packed, stream, dev)
            stop.record()
            torch.cuda.synchronize()
            ms = start.elapsed_time(stop) / 20
            flop = warps * iters * MMAS_PER_ITER[name] * MMA_FLOP[name]  # per SM
            per_cycle = flop / statistics.median(cycles.tolist())
            peak[name] = max(peak.get(name, 0), per_cycle)
            print(f"  {name:14s} {warps:2d} warps/SM: {per_cycle:6.0f} FLOP per SM-cycle, "
                  f"{flop * sms / ms / 1e9:6.1f} TFLOP/s at {statistics.median(cycles.tolist()) / ms / 1e3:4.0f} MHz")
    best = max(peak.values())
    print(f"HMMA ceiling: {best:.0f} FLOP per SM-cycle = {best * sms * 1e-6:.3f} TFLOP/s per MHz of SM clock. "
          "Compare kernels per cycle: 2*M*N*K / (ncu sm__cycles_elapsed.max x SMs).")


if __name__ == "__main__":
    main()
