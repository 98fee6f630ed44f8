"""Tile configs: YAML in configs/, loaded into frozen dataclasses, checked by one validator.

`validate(config, kernel, limits)` is the single check the CLI, the registry, the tests and
any tuner call: shape rules, the kernel's own rules, and its shared memory, threads and
registers against the arch's limits.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from .cuda import ZooError

if TYPE_CHECKING:  # pragma: no cover
    from .arch import ArchLimits
    from .specs.base import KernelSpec

# An installed wheel's zoo/tiles, or a checkout's configs/ (the package's own folder first).
CONFIGS_DIR = next((d for d in (Path(__file__).resolve().parent / "tiles",
                                Path(__file__).resolve().parent.parent / "configs") if d.is_dir()),
                   Path(__file__).resolve().parent.parent / "configs")


class ConfigError(ZooError):
    """A config that does not fit its kernel or the arch; the message lists every reason."""


@dataclass(frozen=True)
class TileConfig:
    name: str
    block_m: int
    block_n: int
    block_k: int
    warp_m: int
    warp_n: int
    stages: int
    threads: int
    group_m: int = 8  # tile rows walked together in the grouped (L2-friendly) block order
    cluster_m: int = 1  # thread-block cluster: CTAs along M (a column of tiles sharing B by TMA multicast)
    cluster_n: int = 1  # and along N (a row of tiles sharing A)
    pingpong: int = 0  # 1: two consumer warpgroups own whole tiles and take them in turn (sm90)
    swap_ab: int = 0  # 1: the MMA computes C^T = B^T A^T, its M along C's columns (sm90, skinny M)
    narrow: int = 0  # 1: out of the wave-cost choice; registry.narrow_choice takes it for skinny M
    stream_k: int = 0  # 1: built with stream-K, for grids whose last wave leaves SMs idle (sm90, no clusters)
    promote: int = 0  # 1: FP8 partial sums promoted into fp32 accumulators every K-tile (sm90 FP8 build)
    block_scales: int = 0  # 1: the blockwise FP8 recipe's build (promoted; its scales staged per K-tile)

    @property
    def warps(self) -> int:
        return (self.block_m // self.warp_m) * (self.block_n // self.warp_n)

    @property
    def cluster_size(self) -> int:
        return self.cluster_m * self.cluster_n

    def tiles(self, m: int, n: int) -> int:
        return -(-m // self.block_m) * -(-n // self.block_n)

    def describe(self) -> str:
        return (f"{self.block_m}x{self.block_n}x{self.block_k}, warp {self.warp_m}x{self.warp_n}, "
                f"{self.threads} thr, {self.stages} stages"
                + (f", cluster {self.cluster_m}x{self.cluster_n}" if self.cluster_size > 1 else "")
                + (", ping-pong consumers" if self.pingpong else "")
                + (", swap-AB (C^T tiles)" if self.swap_ab else "")
                + (", narrow (skinny M only)" if self.narrow else "")
                + (", stream-K tail" if self.stream_k else "")
                + (", fp32 promotion" if self.promote else "")
                + (", blockwise scales" if self.block_scales else ""))


_INT_FIELDS = tuple(f.name for f in fields(TileConfig) if f.name != "name")
_FLAGS = ("pingpong", "swap_ab", "narrow", "stream_k", "promote", "block_scales")  # 0 or 1
_REQUIRED = tuple(f.name for f in fields(TileConfig) if f.name not in ("name", "group_m", "cluster_m", "cluster_n") + _FLAGS)


def parse(name: str, raw: object, origin: str = "config") -> TileConfig:
    """Build a TileConfig from a YAML mapping, with a clear error for a malformed entry."""
    where = f"{origin}: config {name!r}"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping of fields, got {type(raw).__name__}")
    unknown = sorted(set(raw) - set(_INT_FIELDS))
    missing = [k for k in _REQUIRED if k not in raw]
    if unknown or missing:
        parts = ([f"unknown field(s) {', '.join(unknown)}"] if unknown else []) + \
                ([f"missing field(s) {', '.join(missing)}"] if missing else [])
        raise ConfigError(f"{where}: {'; '.join(parts)} (fields: {', '.join(_INT_FIELDS)})")
    bad = [k for k, v in raw.items() if k not in _FLAGS and (not isinstance(v, int) or isinstance(v, bool) or v <= 0)]
    if bad:
        raise ConfigError(f"{where}: {', '.join(f'{k}={raw[k]!r}' for k in bad)} must be positive integers")
    bad = [k for k in _FLAGS if k in raw and raw[k] not in (0, 1)]
    if bad:
        raise ConfigError(f"{where}: {', '.join(f'{k}={raw[k]!r}' for k in bad)} must be 0 or 1")
    return TileConfig(name=str(name), **raw)


def load(path: Path) -> tuple[TileConfig, ...]:
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("configs"), dict) or not data["configs"]:
        raise ConfigError(f"{path}: expected a top-level 'configs:' mapping of name -> fields")
    return tuple(parse(n, raw, str(path)) for n, raw in data["configs"].items())


def problems(config: TileConfig, kernel: "KernelSpec", limits: "ArchLimits") -> list[str]:
    """Every reason `config` cannot run `kernel` on `limits`' arch (empty when it can)."""
    c, out = config, []
    mma_m, mma_n, mma_k = kernel.mma_shape
    if c.swap_ab:  # the MMA's M runs along C's columns, its N along C's rows
        mma_m, mma_n = mma_n, mma_m
    if c.block_m % c.warp_m or c.block_n % c.warp_n:
        out.append(f"block {c.block_m}x{c.block_n} is not a whole number of {c.warp_m}x{c.warp_n} warp tiles")
    if c.warp_m % mma_m or c.warp_n % mma_n:
        out.append(f"warp tile {c.warp_m}x{c.warp_n} is not a multiple of the {mma_m}x{mma_n} MMA shape")
    if c.block_k % mma_k:
        out.append(f"block_k {c.block_k} is not a multiple of the MMA k ({mma_k})")
    if not out:
        threads, layout = kernel.thread_layout(c)
        if c.threads != threads:
            out.append(f"threads {c.threads} != {layout} of the block/warp tiling")
    if c.threads > 1024:
        out.append(f"threads {c.threads} > 1024 per block")
    if c.stages not in kernel.stages:
        out.append(f"stages {c.stages} not supported by {kernel.name} (supports {list(kernel.stages)})")
    for field, size in (("cluster_m", c.cluster_m), ("cluster_n", c.cluster_n)):
        if size not in kernel.cluster_sizes:
            out.append(f"{field} {size} not supported by {kernel.name} (supports {list(kernel.cluster_sizes)})")
    if c.pingpong and not kernel.pingpong:
        out.append(f"{kernel.name} has no ping-pong consumers (pingpong must be 0)")
    if c.swap_ab and not kernel.swap_ab:
        out.append(f"{kernel.name} has no swap-AB variant (swap_ab must be 0)")
    if c.stream_k and not kernel.stream_k:
        out.append(f"{kernel.name} has no stream-K scheduler (stream_k must be 0)")
    if c.promote and not kernel.promote:
        out.append(f"{kernel.name} does not promote FP8 partial sums (promote must be 0)")
    if c.block_scales and not c.promote:
        out.append("block_scales needs promote: 1 (the blockwise scales are applied as each K-tile is promoted)")
    if out:  # the kernel's own rules and its smem formula assume the tiling above holds
        return out
    out += kernel.rules(c)
    if c.stream_k and c.cluster_size > 1:
        out.append(f"stream-K runs without clusters (cluster {c.cluster_m}x{c.cluster_n})")
    smem = kernel.smem_bytes(c)
    if smem > limits.smem_per_block_optin:
        out.append(f"needs {smem} B of shared memory per block; {limits.part} ({limits.arch}) "
                   f"allows {limits.smem_per_block_optin} B")
    if c.threads * 32 > limits.regs_per_block:  # even 32 registers per thread would not fit
        out.append(f"{c.threads} threads cannot fit {limits.arch}'s {limits.regs_per_block} registers per block")
    return out


def validate(config: TileConfig, kernel: "KernelSpec", limits: "ArchLimits") -> TileConfig:
    found = problems(config, kernel, limits)
    if found:
        raise ConfigError(f"config {config.name!r} of {kernel.name} is invalid on {limits.arch}: "
                          + "; ".join(found))
    return config
