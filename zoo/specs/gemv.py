"""The streaming kernel for skinny GEMMs (kernels/sm75/gemv_stream.cu): shared memory, rules,
SASS. It is no tile kernel: a block covers block_n columns of block_m rows of C over a slice
of K (at most block_k rows of B), and the blocks of a column block add their slices through
the split-K workspace (registry.stream_splits says how many). Configs of block_n 256 read B
either way; narrower ones (whole columns a warp) read B K-major only, a Linear's W in place."""

from __future__ import annotations

from .. import configs as cfgs
from ..cuda import KERNELS_DIR
from .base import KernelSpec

GEMV_LANE_COLS = 8       # a lane's columns: one 16-byte chunk of a B row (K-major: of a B^T row)
GEMV_BLOCK_COLS = 256    # BN in the kernel for a row-major B: 32 lanes x 8 columns
GEMV_MAX_ROWS = 8        # ROWS x 8 accumulators a lane


def _gemv_warps(c: cfgs.TileConfig) -> int:
    return c.threads // 32


def k_major_only(c: cfgs.TileConfig) -> bool:
    """A narrow block (block_n < 256: whole columns of C a warp), built to read B K-major only:
    a decoding GEMM's W^T, streamed as N / block_n blocks that fill the GPU by themselves."""
    return c.block_n < GEMV_BLOCK_COLS


def _gemv_layouts(c: cfgs.TileConfig) -> tuple[str, ...]:
    return ("row x col",) if k_major_only(c) else ("row x row", "row x col")


def _gemv_smem(c: cfgs.TileConfig) -> int:
    """Same formula as SMEM_BYTES in kernels/sm75/gemv_stream.cu: the block's slice of A as
    fp32, or (reused) one row of the warps' sums, whichever is larger; none for a narrow block
    (its K-major build reads A from global memory)."""
    return 0 if k_major_only(c) else max(c.block_k * c.block_m, _gemv_warps(c) * c.block_n) * 4


def _gemv_thread_layout(c: cfgs.TileConfig) -> tuple[int, str]:
    warps = max(_gemv_warps(c), 1)
    if k_major_only(c):
        return c.threads, f"{warps} warps, each {c.block_n // warps} columns of a K-major B (up to 32 lanes a column)"
    return c.threads, (f"{warps} warps along K, each all {c.block_n} columns "
                       f"(K-major B: each {c.block_n // warps} columns, up to 32 lanes a column)")


def _gemv_rules(c: cfgs.TileConfig) -> list[str]:
    out = []
    if c.warp_n != c.block_n or c.block_n > GEMV_BLOCK_COLS or \
            (k_major_only(c) and c.threads % 32 == 0 and c.block_n % _gemv_warps(c)):
        out.append(f"block_n must be {GEMV_BLOCK_COLS} (32 lanes x {GEMV_LANE_COLS} columns of a row-major B) or, "
                   f"for a K-major B only, a whole number of columns per warp, and warp_n the same; "
                   f"got {c.block_n} and {c.warp_n}")
    if not 1 <= c.block_m <= GEMV_MAX_ROWS or c.warp_m != c.block_m:
        out.append(f"block_m {c.block_m} must be 1-{GEMV_MAX_ROWS} rows and warp_m the same")
    if c.threads % 32:
        out.append(f"threads {c.threads} must be whole warps")
    elif c.block_k % _gemv_warps(c) or c.block_k % GEMV_LANE_COLS:
        out.append(f"block_k {c.block_k} must be a multiple of the {_gemv_warps(c)} warps (whole rounds) "
                   f"and of {GEMV_LANE_COLS} (whole 16-byte chunks of a K-major B)")
    if c.cluster_size != 1 or c.pingpong or c.swap_ab or c.narrow or c.stream_k:
        out.append("no clusters, ping-pong, swap-AB, narrow or stream-K flags: it is no tile kernel")
    return out


SM75_GEMV = KernelSpec(
    name="sm75_gemv_stream",
    source=KERNELS_DIR / "sm75" / "gemv_stream.cu",
    config_file=cfgs.CONFIGS_DIR / "sm75_gemv_stream.yaml",
    min_cc=(7, 5), exact_cc=None, arch_specific=False,
    offline_archs=("sm_75", "sm_80", "sm_90a"), layouts=("row x row", "row x col"),
    entry={("float16", "float16"): "zoo_gemv_f16_f16out",
           ("float16", "float32"): "zoo_gemv_f16_f32out",
           ("bfloat16", "bfloat16"): "zoo_gemv_bf16_bf16out",
           ("bfloat16", "float32"): "zoo_gemv_bf16_f32out"},
    aligned_rows=True, mma_shape=(1, GEMV_LANE_COLS, 1), stages=(2, 4, 8, 16),
    smem_bytes=_gemv_smem, rules=_gemv_rules, config_layouts=_gemv_layouts,
    sass_required=((r"\bFFMA\b", "FFMA"), (r"\bLDG\.E\.128\b", "LDG.128 (16-byte B chunks)"),
                   (r"\bATOMG?\.E\.ADD\b|\bATOM\.E\.ADD\b|\bRED\.E\.ADD\b", "the split count (atomicAdd)")),
    sass_forbidden=((r"\b(HMMA|HGMMA)\.", "tensor-core MMA (a skinny GEMM streams B on the CUDA cores)"),
                    (r"\b(LDL|STL)\b", "LDL/STL (local memory)")),
    description="skinny M (1-8 rows): B streamed over every SM in 16-byte loads, FFMA, split K reduced in order",
    # Waits for the grid before it on sm_90 (griddepcontrol.wait, compiled there only): a
    # decoding GEMM's launch overlaps the op before it (registry.dependent_launch).
    pdl=True,
    thread_layout=_gemv_thread_layout,
    max_m=GEMV_MAX_ROWS,
    grouped=False,
    pipeline="rounds of {stages} 16-byte loads of B per lane, the next round loaded into registers while "
             "the FFMAs run on this one (the first before A's slice is staged); K-major B: {stages} columns x "
             "16 / {stages} chunks of each in flight per lane, A read from L1, the lanes' sums added by shuffles",
)
