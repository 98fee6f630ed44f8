"""zoo: a multi-architecture GEMM kernel zoo with dispatch (NVRTC + CUDA Driver API)."""

from ._version import __version__

from .cuda import ZooCudaError, ZooError
from .configs import ConfigError, TileConfig
from .ops import bmm, conv2d, mm  # also registers the custom ops zoo::mm, zoo::mm_out, zoo::bmm, zoo::conv2d
from . import fp8, nn
from .scaled import scaled_mm
from .registry import KERNELS, Problem, select

__all__ = ["mm", "bmm", "conv2d", "scaled_mm", "nn", "fp8", "select", "KERNELS", "Problem", "TileConfig", "ZooError", "ZooCudaError", "ConfigError"]
