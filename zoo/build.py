"""Offline build and check: compile a kernel config for an arch and judge its cubin.

Used by `zoo build --check`, the CI matrix and the CPU tests alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import configs as cfgs
from . import cuda, sass
from .arch import ArchLimits
from .registry import KernelSpec
from .specs.base import column_layouts, layout, layouts_of


@dataclass(frozen=True)
class EntryReport:
    function: str
    dtypes: str          # "fp16->fp32"
    resources: sass.Resources
    signature: sass.SignatureResult
    occupancy: sass.Occupancy
    problems: tuple[str, ...]     # budget or signature failures, empty when all is well

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class BuildReport:
    kernel: str
    config: cfgs.TileConfig
    arch: str
    smem_bytes: int
    entries: tuple[EntryReport, ...]


def build_and_check(spec: KernelSpec, cfg: cfgs.TileConfig, limits: ArchLimits) -> BuildReport:
    cfgs.validate(cfg, spec, limits)
    smem = spec.smem_bytes(cfg)
    entries = []
    # Every entry point: one GEMM, and (GEMM kernels) the grouped launch (zoo.bmm) over a table
    # of them; a kernel that also reads operands column-major (layouts) is built each such way
    # the config allows, for its one-GEMM entries (the dtypes column says which: layout_label),
    # and each A-column-major one again with row sums where the config has them (KernelSpec.row_sums).
    suffixes = ("", "_grouped") if spec.op == "gemm" and spec.grouped else ("",)
    row_major = [(False, False, False, suffixes)] if layout(False, False) in layouts_of(spec, cfg) else []
    columns = column_layouts(spec, cfg)
    builds = row_major + [(a_col, b_col, False, ("",)) for a_col, b_col in columns] + \
        [(a_col, b_col, True, ("",)) for a_col, b_col in columns if a_col and spec.row_sums(cfg)]
    for a_col, b_col, row_sums, names in builds:
        cubin = cuda.compile_cubin(spec.source, limits.arch, spec.defines(cfg, a_col, b_col, row_sums),
                                   kernel=spec.name, config=cfg.name)
        functions = [(pair, name + suffix) for pair, name in spec.entry.items() for suffix in names]
        for (in_dtype, out_dtype), function in functions:
            dtypes = f"{in_dtype}->{out_dtype}".replace("bfloat", "bf").replace("float", "fp") + \
                layout_label(a_col, b_col) + (" grouped" if function.endswith("_grouped") else "") + \
                (" +row sums" if row_sums else "")
            entries.append(_check_entry(spec, cfg, limits, spec.build_smem_bytes(cfg, row_sums), cubin, function,
                                        dtypes))
    return BuildReport(spec.name, cfg, limits.arch, smem, tuple(entries))


def layout_label(a_col: bool, b_col: bool) -> str:
    """What a build's dtypes column adds for its operand layout: " A^T" (A read column-major,
    as A^T row-major), " B^T", " A^T B^T"; nothing for row x row."""
    return "".join(label for col, label in ((a_col, " A^T"), (b_col, " B^T")) if col)


def _check_entry(spec: KernelSpec, cfg: cfgs.TileConfig, limits: ArchLimits, smem: int, cubin: cuda.Cubin,
                 function: str, dtypes: str) -> EntryReport:
    res = sass.resources(cubin.image, function)
    sig = sass.check_signature(sass.function_sass(cubin.image, function), spec.sass_required, spec.forbidden_sass(cfg))
    occ = sass.occupancy(limits, cfg.threads, res.registers, smem + res.static_smem)
    problems = [f"missing {m}" for m in sig.missing] + [f"has {f}" for f in sig.forbidden]
    if res.local_bytes or res.stack:
        problems.append(f"uses local memory ({res.local_bytes} B local, {res.stack} B stack)")
    if res.registers > limits.max_regs_per_thread:
        problems.append(f"{res.registers} registers > {limits.max_regs_per_thread}")
    if occ.blocks_per_sm < 1:
        problems.append(f"no block fits an SM ({occ.limiter})")
    return EntryReport(function, dtypes, res, sig, occ, tuple(problems))
