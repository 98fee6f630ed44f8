"""The pointer kernels' implicit-GEMM A loads (sm75 / sm80 built with ZOO_CONV), without a GPU.

The address arithmetic of kernels/common/zoo_common.cuh (ConvRow, ConvTap) and the two kernels'
chunk-to-thread maps are written out once more here, step for step as the kernels do them, and
checked: the A it gathers is torch's unfold (im2col) of x, every chunk it reads lies inside x, and
each A tile's chunks are copied once each, to the GEMM's shared-memory layout, bank-conflict free.
The entries are then looked for in the compiled cubins, with the parameter block zoo/conv.py packs.
"""
import ctypes
import re

import pytest
import torch

from zoo import conv, cuda, registry, sass

CHUNK = 8  # 16-byte chunks of fp16 / bf16


# ---- zoo_common.cuh, line for line (ints wrap as the kernel's would not: none may overflow here)

def conv_row(g, m, M, col):
    """zoo::conv_row: (x element offset, h0, w0) of A row m, the thread's first channel col."""
    pq = g.P * g.Q
    n = m // pq
    pix = m - n * pq
    p = pix // g.Q
    q = pix - p * g.Q
    h0, w0 = p * g.stride_h - g.pad_h, q * g.stride_w - g.pad_w
    at = (n * g.H * g.W + (h0 * g.W + w0)) * g.C + col
    return at, (h0 if m < M else -(1 << 30)), w0


class Tap:
    """zoo::ConvTap: starts at K-tile 0, next() steps one K-tile."""

    def __init__(self):
        self.c0 = self.s = self.dh = self.dw = self.off = 0

    def next(self, g, bk):
        self.c0 += bk
        tap_end = self.c0 >= g.c_pad
        row_end = tap_end and self.s + 1 == g.S
        self.c0 = 0 if tap_end else self.c0
        self.s = 0 if row_end else self.s + int(tap_end)
        self.dw = 0 if row_end else self.dw + (g.dil_w if tap_end else 0)
        self.dh += g.dil_h if row_end else 0
        self.off = (self.dh * g.W + self.dw) * g.C + self.c0

    def inside(self, row, g):
        _, h0, w0 = row
        return 0 <= h0 + self.dh < g.H and 0 <= w0 + self.dw < g.W  # the kernel's unsigned compares


def implicit_a(xflat, g, M, bm, bk):
    """A [tiles * bm, K] as the kernels gather it, chunk by chunk (zero where a chunk is not
    copied); every chunk it reads is asserted to lie inside x."""
    k_tiles = g.c_pad * (g.r_times_s) // bk
    rows = -(-M // bm) * bm
    a = torch.zeros((rows, k_tiles * bk), dtype=xflat.dtype)
    for m in range(rows):
        tap = Tap()
        for kt in range(k_tiles):
            # The tile's tap by division (what the stepping replaces) agrees with the stepping.
            t, cb = divmod(kt, g.c_pad // bk)
            assert (tap.c0, tap.s, tap.dh, tap.dw) == (cb * bk, t % g.S, t // g.S * g.dil_h, t % g.S * g.dil_w)
            for col in range(0, bk, CHUNK):
                row = conv_row(g, m, M, col)
                if tap.inside(row, g) and tap.c0 + col < g.C:
                    at = row[0] + tap.off
                    assert 0 <= at and at + CHUNK <= xflat.numel(), (m, kt, col)
                    a[m, kt * bk + col:kt * bk + col + CHUNK] = xflat[at:at + CHUNK]
            tap.next(g, bk)
    return a[:M]


class Geo:
    """A conv.ConvGeometry's fields, plus R * S (the K-tiles' count)."""

    def __init__(self, shape: conv.Conv, bk: int):
        g = shape.geometry(bk)
        for name, _ in conv.ConvGeometry._fields_:
            setattr(self, name, getattr(g, name))
        self.r_times_s = shape.r * shape.s


# (images, C, H, W, K out, R, S, stride, padding, dilation)
GEOMETRIES = [
    (2, 8, 9, 7, 16, 3, 3, (2, 2), (1, 1), (1, 1)),      # stride 2, padding 1, C = 8 (c_pad 32)
    (1, 24, 8, 8, 8, 3, 3, (1, 1), (0, 0), (1, 1)),      # padding 0, C = 24 (c_pad 32)
    (3, 16, 11, 10, 8, 3, 3, (1, 1), (2, 2), (2, 2)),    # dilation 2
    (2, 40, 6, 5, 8, 1, 3, (1, 2), (0, 1), (1, 1)),      # c_pad 64 > C = 40, S != R
    (1, 5, 7, 9, 8, 2, 2, (1, 1), (1, 0), (2, 1)),       # C = 5: the host pads it to 8
]


@pytest.mark.parametrize("geom", GEOMETRIES, ids=lambda g: "x".join(map(str, g[:7])))
@pytest.mark.parametrize("bm, bk", [(64, 32), (128, 32), (128, 64)])
def test_the_kernels_address_rule_gathers_im2col(geom, bm, bk):
    n, c, h, w, k, r, s, stride, padding, dilation = geom
    shape = conv.Conv(n, h, w, c, k, r, s, stride, padding, dilation)
    g = Geo(shape, bk)
    M = shape.gemm_m
    assert M % bm, "M is not a multiple of the tile (rows past M must be zero)"
    torch.manual_seed(0)
    x = torch.randn(n, c, h, w, dtype=torch.float64)
    wt = torch.randn(k, c, r, s, dtype=torch.float64)
    a = implicit_a(conv.nhwc(x).reshape(-1), g, M, bm, bk)  # NHWC, channels padded to 8
    y = a @ conv.weight_matrix(wt, g.c_pad)
    cols = torch.nn.functional.unfold(x, (r, s), dilation=dilation, padding=padding, stride=stride)
    ref = cols.transpose(1, 2).reshape(M, c * r * s) @ wt.reshape(k, c * r * s).t()  # (c, r, s) order
    torch.testing.assert_close(y, ref, rtol=1e-12, atol=1e-12)


# ---- Packed taps (the sm80 kernel's load_packed_a, c_pad < BK): quad g of a K-tile row is
# channels (g % (c_pad / 4)) * 4.. of tap g / (c_pad / 4), one 8-byte copy each.

def packed_a(xflat, g, M, bm, bk, k):
    """A [tiles * bm, k] as load_packed_a gathers it, quad by quad; every quad it reads is
    asserted to lie inside x."""
    shift = (g.c_pad // 4).bit_length() - 1  # __ffs(c_pad / 4) - 1
    assert 1 << shift == g.c_pad // 4
    rows = -(-M // bm) * bm
    a = torch.zeros((rows, k), dtype=xflat.dtype)
    for m in range(rows):
        at, h0, w0 = conv_row(g, m, M, 0)
        for quad0 in range(0, k // 4, bk // 4):
            for chunk in range(bk // CHUNK):  # a thread's chunk tp + 2j holds quads 2 * chunk + h
                for h in range(2):
                    q = quad0 + 2 * chunk + h
                    t = q >> shift
                    c = (q - (t << shift)) * 4
                    r, s = t // g.S, t - t // g.S * g.S
                    dh, dw = r * g.dil_h, s * g.dil_w
                    if t < g.taps and c < g.C and 0 <= h0 + dh < g.H and 0 <= w0 + dw < g.W:
                        src = at + (dh * g.W + dw) * g.C + c
                        assert 0 <= src and src + 4 <= xflat.numel(), (m, q)
                        a[m, 4 * q:4 * q + 4] = xflat[src:src + 4]
    return a[:M]


PACKED_GEOMETRIES = [
    (2, 3, 15, 13, 8, 7, 7, (2, 2), (3, 3), (1, 1)),     # the stem's shape: C = 3 as 4, 49 taps
    (1, 1, 9, 9, 8, 3, 3, (1, 1), (1, 1), (1, 1)),       # C = 1
    (2, 4, 8, 7, 16, 3, 2, (1, 2), (0, 1), (2, 1)),      # C = 4 read in place of 4, dilation, S != R
    (1, 5, 7, 9, 8, 2, 2, (1, 1), (1, 0), (2, 1)),       # C = 5: 8 channels, two quads a tap
    (1, 13, 6, 6, 8, 3, 3, (2, 1), (1, 1), (1, 1)),      # C = 13: 16 channels, four quads a tap
]


@pytest.mark.parametrize("geom", PACKED_GEOMETRIES, ids=lambda g: "x".join(map(str, g[:7])))
@pytest.mark.parametrize("bm, bk", [(64, 32), (128, 64)])
def test_packed_taps_gather_im2col(geom, bm, bk):
    n, c, h, w, k, r, s, stride, padding, dilation = geom
    shape = conv.Conv(n, h, w, c, k, r, s, stride, padding, dilation)
    g = shape.geometry(bk, packs=True)
    assert g.c_pad < bk and g.c_pad >= c and g.taps == r * s
    k_rows = shape.padded_k(bk, packs=True)
    assert k_rows % bk == 0 and k_rows < r * s * bk
    torch.manual_seed(0)
    x = torch.randn(n, c, h, w, dtype=torch.float64)
    wt = torch.randn(k, c, r, s, dtype=torch.float64)
    xs = conv.nhwc(x, shape.x_channels(bk, packs=True))
    assert xs.shape[-1] == g.C and torch.equal(xs[..., c:], torch.zeros_like(xs[..., c:]))
    a = packed_a(xs.reshape(-1), g, shape.gemm_m, bm, bk, k_rows)
    y = a @ conv.weight_matrix(wt, g.c_pad, rows=k_rows)
    cols = torch.nn.functional.unfold(x, (r, s), dilation=dilation, padding=padding, stride=stride)
    ref = cols.transpose(1, 2).reshape(shape.gemm_m, c * r * s) @ wt.reshape(k, c * r * s).t()
    torch.testing.assert_close(y, ref, rtol=1e-12, atol=1e-12)


def test_only_the_cp_async_kernel_packs_taps():
    """The TMA kernel reads one tap a K-tile (c_pad a multiple of it); the sm_80 conv kernel
    packs taps where C is small, and the stem then runs on it, not on the flat K."""
    assert registry.SM80_CONV.packs_taps and not registry.SM75_CONV.packs_taps
    assert not any(spec.packs_taps for spec in registry.KERNELS if spec.tma_boxes)
    stem = conv.Conv(32, 224, 224, 3, 64, 7, 7, (2, 2), (3, 3), (1, 1))
    assert (stem.c_pad(64), stem.padded_k(64)) == (64, 3136)
    assert (stem.c_pad(32, True), stem.padded_k(32, True), stem.x_channels(32, True)) == (4, 224, 4)
    wide = conv.Conv(1, 8, 8, 32, 8, 3, 3, (1, 1), (1, 1), (1, 1))
    assert wide.c_pad(32, True) == 32 and wide.padded_k(32, True) == 288  # C = BK: one tap a K-tile


# ---- The chunk-to-thread maps (one A tile of a K-tile): each (row, chunk) once, at the GEMM's
# shared-memory address, and each 8-thread phase of 16-byte writes on 8 distinct 16-byte bank groups.

def sm80_swizzle(row_chunks, row, chunk):
    phys = chunk ^ (row % 8) if row_chunks >= 8 else chunk ^ ((row // 2) % 4)
    return 2 * (row * row_chunks * CHUNK + phys * CHUNK)  # bytes


def sm80_conv_map(bm, bk, threads):
    """{thread: [(instruction, row, chunk, smem byte offset)]} as load_conv_a copies them."""
    row_chunks = bk // CHUNK
    a_chunks = bm * bk // CHUNK
    j_n, rows_n, pass_rows = row_chunks // 2, a_chunks // threads // (row_chunks // 2), threads // 2
    out = {}
    for t in range(threads):
        k, tp = t // 2, t % 2
        row = (k & ~7) | (((k & 1) | (k & 2) << 1 | (k & 4) >> 1) if row_chunks == 4
                          else ((k & 3) << 1 | (k & 4) >> 2))
        st = sm80_swizzle(row_chunks, row, tp)
        out[t] = [(i * j_n + j, row + i * pass_rows, tp + 2 * j, (st ^ (32 * j)) + i * pass_rows * bk * 2)
                  for i in range(rows_n) for j in range(j_n)]
    return out


def sm75_conv_map(bm, bk, load_threads):
    a_ld, per_row = bk + 8, bk // CHUNK
    per_thread = bm * bk // CHUNK // load_threads
    j_n = per_row if per_thread >= per_row else 1
    rows_per_pass = load_threads // per_row
    step = load_threads if j_n > 1 else rows_per_pass
    out = {}
    for lt in range(load_threads):
        if j_n > 1:
            row0, col0 = lt, 0
        else:  # a_chunk_coords(lt)
            if per_row == 4:
                lane = lt % 32
                row0, col0 = (lt // 32) * 8 + lane // 8 + 4 * ((lane % 8) // 4), (lane % 4) * CHUNK
            else:
                row0, col0 = lt // per_row, (lt % per_row) * CHUNK
        out[lt] = [(i, row0 + (i // j_n) * step, col0 // CHUNK + i % j_n,
                    2 * ((row0 * a_ld + col0) + (i // j_n) * step * a_ld + (i % j_n) * CHUNK))
                   for i in range(per_thread)]
    return out


def check_map(mapping, bm, row_chunks, address):
    seen = {}
    for copies in mapping.values():
        for _, row, chunk, offset in copies:
            assert (row, chunk) not in seen and 0 <= row < bm and 0 <= chunk < row_chunks
            assert offset == address(row, chunk), (row, chunk)
            seen[(row, chunk)] = offset
    assert len(seen) == bm * row_chunks
    threads = sorted(mapping)
    for first in range(0, len(threads), 8):  # a phase: 8 threads' 16-byte writes
        for instr in range(len(mapping[threads[0]])):
            groups = {mapping[t][instr][3] // 16 % 8 for t in threads[first:first + 8]}
            assert len(groups) == 8, f"bank conflict: threads {first}.., copy {instr}"


@pytest.mark.parametrize("cfg", registry.SM80_CONV.configs, ids=lambda c: c.name)
@pytest.mark.parametrize("bk", [32, 64])
def test_sm80_conv_copies_cover_the_tile_swizzled_without_conflicts(cfg, bk):
    if (cfg.block_m * bk // CHUNK // cfg.threads) * 2 < bk // CHUNK:
        pytest.skip("fewer than half a row's chunks per thread (the kernel's static_assert)")
    mapping = sm80_conv_map(cfg.block_m, bk, cfg.threads)
    check_map(mapping, cfg.block_m, bk // CHUNK, lambda r, c: sm80_swizzle(bk // CHUNK, r, c))
    # One copy instruction reads whole 32-byte sectors: a row's two threads take adjacent chunks.
    for t in range(0, cfg.threads, 2):
        for (_, r0, c0, _), (_, r1, c1, _) in zip(mapping[t], mapping[t + 1]):
            assert r0 == r1 and c1 == c0 + 1 and c0 % 2 == 0


@pytest.mark.parametrize("cfg", registry.SM75_CONV.configs, ids=lambda c: c.name)
def test_sm75_conv_loads_cover_the_tile_without_store_conflicts(cfg):
    load_threads = cfg.threads // (cfg.stages - 1)
    bk = cfg.block_k
    mapping = sm75_conv_map(cfg.block_m, bk, load_threads)
    check_map(mapping, cfg.block_m, bk // CHUNK, lambda r, c: 2 * (r * (bk + 8) + c * CHUNK))
    per_row = bk // CHUNK
    if len(mapping[0]) >= per_row:  # whole rows: at most two per thread (the register budget)
        assert len({row for _, row, _, _ in mapping[0]}) <= 2


# ---- The cubins: the entries exist, with the parameter block zoo/conv.py packs.

@pytest.mark.parametrize("spec, target", [(registry.SM75_CONV, "sm_75"), (registry.SM80_CONV, "sm_80")],
                         ids=["sm75", "sm80"])
def test_conv_entries_are_in_the_cubin(spec, target):
    assert spec.op == "conv" and spec.extra_defines == {"ZOO_CONV": 1} and not spec.exports
    cfg = spec.configs[-1]
    cubin = cuda.compile_cubin(spec.source, target, spec.defines(cfg), kernel=spec.name, config=cfg.name)
    text = sass._cuobjdump("-sass", cubin.image)
    functions = set(re.findall(r"Function : (\S+)", text))
    assert functions == set(spec.entry.values()), "only the conv entries (no GEMM or grouped ones)"
    for name in spec.entry.values():
        ops = sass.opcode_counts(sass.function_sass(cubin.image, name))
        assert not any(op.startswith(("LDL", "STL")) for op in ops)
    # X, B, C (3 pointers), M, N, K, ldb, ldc, then the 14-int geometry by value: 100 bytes.
    geometry = ctypes.sizeof(conv.ConvGeometry)
    assert geometry == 14 * 4
    elf = sass._cuobjdump("-elf", cubin.image)
    assert elf.count(f"Offset  : {3 * 8 + 5 * 4:#x}\tSize    : {geometry:#x}") == len(spec.entry)
    assert re.findall(r"EIATTR_CBANK_PARAM_SIZE\s+Format:\s+\S+\s+Value:\s+(\S+)", elf) == ["0x64"] * len(spec.entry)
