"""zoo: a multi-architecture GEMM kernel zoo with dispatch (NVRTC + CUDA Driver API)."""

from .cuda import ZooCudaError, ZooError
from .configs import ConfigError, TileConfig
from .batched import bmm
from .gemm import mm
from .registry import KERNELS, Problem, select

__all__ = ["mm", "bmm", "select", "KERNELS", "Problem", "TileConfig", "ZooError", "ZooCudaError", "ConfigError"]
__version__ = "0.1.0"
