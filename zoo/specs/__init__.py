"""Kernel specs: one module per kernel family (its source, configs file, shared-memory formula,
rules, TMA boxes and SASS signature). A new kernel adds one .cu, one YAML file and one module
here, listed in KERNELS."""

from .base import ELEMENT_BYTES, KernelSpec, stacks
from .simt import SM75_SGEMM
from .sm75_wmma import SM75_HGEMM
from .sm80_mma import SM80_GEMM
from .sm90_wgmma import SM90_CONV, SM90_GEMM, SM90_TF32

# Newest arch first within a CC is decided by registry.eligible; this order is the listing's.
KERNELS: tuple[KernelSpec, ...] = (SM75_HGEMM, SM80_GEMM, SM90_GEMM, SM75_SGEMM, SM90_TF32, SM90_CONV)

__all__ = ["ELEMENT_BYTES", "KERNELS", "KernelSpec", "stacks",
           "SM75_HGEMM", "SM75_SGEMM", "SM80_GEMM", "SM90_CONV", "SM90_GEMM", "SM90_TF32"]
