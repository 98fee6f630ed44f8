"""Kernel specs: one module per kernel family (its source, configs file, shared-memory formula,
rules, TMA boxes and SASS signature). A new kernel adds one .cu, one YAML file and one module
here, listed in KERNELS."""

from .base import ELEMENT_BYTES, KernelSpec, stacks
from .gemv import SM75_GEMV
from .simt import SM75_SGEMM
from .sm75_mma import SM75_HMMA
from .sm75_wmma import SM75_CONV, SM75_HGEMM
from .sm80_mma import SM80_CONV, SM80_GEMM
from .sm90_wgmma import SM90_CONV, SM90_FP8, SM90_GEMM, SM90_TF32

# registry.eligible puts the newest arch first; among kernels of one arch (same min CC) it keeps
# this order, which is the automatic choice's order: on a CC 7.5 GPU (T4) the first fp16 kernel
# here is the one `--auto-arch` runs unless `zoo tune` measured another for the shape. hgemm_wmma
# stays first: hgemm_mma's sm_90 build (k16 steps) ran 1.10x faster on an H100, but the T4's
# build (k8 steps) has run nowhere (docs/turing.md); swap SM75_HGEMM and SM75_HMMA here once a
# T4 measures it faster. SM75_GEMV (max_m) is never the ordinary choice: registry.skinny_choice
# takes it for GEMMs of a few rows.
KERNELS: tuple[KernelSpec, ...] = (SM75_HGEMM, SM75_HMMA, SM80_GEMM, SM90_GEMM, SM75_SGEMM, SM90_TF32,
                                   SM90_CONV, SM80_CONV, SM75_CONV, SM75_GEMV, SM90_FP8)

__all__ = ["ELEMENT_BYTES", "KERNELS", "KernelSpec", "stacks",
           "SM75_CONV", "SM75_GEMV", "SM75_HGEMM", "SM75_HMMA", "SM75_SGEMM", "SM80_CONV", "SM80_GEMM", "SM90_CONV", "SM90_FP8",
           "SM90_GEMM", "SM90_TF32"]
