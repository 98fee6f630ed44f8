"""The ldmatrix + mma.sync Turing kernel (kernels/sm75/hgemm_mma.cu), offline: its shared-memory
address math replayed in Python (every fragment a lane receives is the A or B element the
m16n8k8 layout asks for, and every 8-lane phase of STS.128 and ldmatrix hits 32 distinct
banks), its sm_75 main loop, its configs on a T4, and where it stands in the selection order.
The compile/signature/budget matrix over all configs and archs is tests/test_build.py's."""
from dataclasses import replace

import pytest

from zoo import ZooCudaError, arch, configs, cuda, registry, sass, tuner
from zoo.registry import Problem
from zoo.specs.sm75_mma import swizzle

SPEC = registry.SM75_HMMA
T4 = arch.offline("sm_75")


# ---- The kernel's shared-memory layout, replayed (names as in hgemm_mma.cu; buffer 0).

def _layout(c):
    a_rc, b_rc = c.block_k // 8, c.block_n // 8
    return dict(a_rc=a_rc, b_rc=b_rc, a_rows_per_pass=c.threads // a_rc, b_rows_per_pass=c.threads // b_rc,
                a_per=c.block_m * c.block_k // 8 // c.threads, b_per=c.block_k * c.block_n // 8 // c.threads,
                b_base=2 * c.block_m * c.block_k * 2)  # two A buffers precede B


def _store_k_tile(c):
    """Byte address of each 16-byte chunk -> the 8 (matrix, row, col) elements the thread's
    global loads put there (load_tile + store_tile), and the STS.128 addresses per thread."""
    L = _layout(c)
    smem, sts = {}, {}
    for tid in range(c.threads):
        a_row, a_col = tid // L["a_rc"], (tid % L["a_rc"]) * 8
        b_row, b_col = tid // L["b_rc"], (tid % L["b_rc"]) * 8
        a_st = 2 * swizzle(a_row, a_col, L["a_rc"])
        b_st = L["b_base"] + 2 * swizzle(b_row, b_col, L["b_rc"])
        sts[tid] = []
        for i in range(L["a_per"]):
            addr, row = a_st + i * L["a_rows_per_pass"] * c.block_k * 2, a_row + i * L["a_rows_per_pass"]
            assert addr not in smem
            smem[addr] = [("A", row, a_col + e) for e in range(8)]
            sts[tid].append(addr)
        for i in range(L["b_per"]):
            addr, row = b_st + i * L["b_rows_per_pass"] * c.block_n * 2, b_row + i * L["b_rows_per_pass"]
            assert addr not in smem
            smem[addr] = [("B", row, b_col + e) for e in range(8)]
            sts[tid].append(addr)
    return smem, sts


def _distinct_bank_groups(addresses):
    """8 addresses of 16 bytes (one phase) conflict-free: 8 distinct 4-bank groups."""
    return len({(a // 16) % 8 for a in addresses}) == 8


def _ldmatrix(smem, addrs, trans):
    """ldmatrix.x4: lanes 8q..8q+7 address the rows of matrix q; register q of lane l holds
    (row l/4, cols 2(l%4), +1) of matrix q, or with .trans (rows 2(l%4), +1 of col l/4)."""
    regs = []
    for q in range(4):
        rows = [smem[a] for a in addrs[8 * q:8 * q + 8]]
        regs.append([(rows[2 * (l % 4)][l // 4], rows[2 * (l % 4) + 1][l // 4]) if trans else
                     (rows[l // 4][2 * (l % 4)], rows[l // 4][2 * (l % 4) + 1]) for l in range(32)])
    return regs


def _a_elems(row, k):
    return (("A", row, k), ("A", row, k + 1))


def _check_phases_and_ldmatrix(smem, addrs, trans):
    for q in range(4):
        assert _distinct_bank_groups(addrs[8 * q:8 * q + 8])
    return _ldmatrix(smem, addrs, trans)


@pytest.mark.parametrize("cfg", SPEC.configs, ids=lambda c: c.name)
def test_fragments_are_the_mma_operands_and_every_phase_is_conflict_free(cfg):
    """Both builds' fragment loads: sm_75's k8 steps (one .x4 = A of two m16 tiles, one
    .x4.trans = B of four n8 tiles) and sm_80+'s k16 steps (one .x4 = one m16 tile's a0-a3, one
    .x4.trans = b0, b1 of two n8 tiles), each lane receiving the elements the m16n8k8 or
    m16n8k16 layout asks for."""
    smem, sts = _store_k_tile(cfg)
    # Every element of both tiles is stored exactly once, inside the buffers.
    assert len(smem) == (cfg.block_m * cfg.block_k + cfg.block_k * cfg.block_n) // 8
    assert max(smem) + 16 <= SPEC.smem_bytes(cfg) and min(smem) >= 0
    # STS.128: each quarter-warp (8 consecutive threads) writes 8 distinct bank groups.
    for w in range(cfg.threads // 32):
        for i in range(len(sts[0])):
            for quarter in range(4):
                assert _distinct_bank_groups([sts[32 * w + 8 * quarter + l][i] for l in range(8)])
    L = _layout(cfg)
    warps_n = cfg.block_n // cfg.warp_n
    tiles_m, tiles_n = cfg.warp_m // 16, cfg.warp_n // 8
    for warp in range(cfg.warps):
        warp_m, warp_n = warp // warps_n, warp % warps_n
        r0, c0 = warp_m * cfg.warp_m, warp_n * cfg.warp_n
        # sm_75, k8 steps.
        a_ld = [2 * swizzle(r0 + lane, 0, L["a_rc"]) for lane in range(32)]
        b_ld = [[2 * swizzle(lane % 8, c0 + (4 * j + lane // 8) * 8, L["b_rc"]) for lane in range(32)]
                for j in range(tiles_n // 4)]
        for ks in range(cfg.block_k // 8):
            for p in range(tiles_m // 2):
                r = _check_phases_and_ldmatrix(smem, [(a ^ (ks * 16)) + p * 32 * cfg.block_k * 2 for a in a_ld], False)
                for half in range(2):  # tiles 2p, 2p+1: a0 = r[2 half], a1 = r[2 half + 1]
                    i = 2 * p + half
                    for lane in range(32):
                        g, t = lane // 4, lane % 4
                        assert r[2 * half][lane] == _a_elems(r0 + 16 * i + g, 8 * ks + 2 * t)
                        assert r[2 * half + 1][lane] == _a_elems(r0 + 16 * i + g + 8, 8 * ks + 2 * t)
            for j in range(tiles_n // 4):
                r = _check_phases_and_ldmatrix(smem, [L["b_base"] + ks * 8 * cfg.block_n * 2 + b for b in b_ld[j]], True)
                for q in range(4):  # n8 tile 4j + q: b = B[2t, 2t+1][g]
                    for lane in range(32):
                        g, t = lane // 4, lane % 4
                        n = c0 + 8 * (4 * j + q) + g
                        assert r[q][lane] == (("B", 8 * ks + 2 * t, n), ("B", 8 * ks + 2 * t + 1, n))
        # sm_80+, k16 steps.
        a_ld = [2 * swizzle(r0 + lane % 16, (lane // 16) * 8, L["a_rc"]) for lane in range(32)]
        b_ld = [[2 * swizzle(lane % 16, c0 + (2 * j + lane // 16) * 8, L["b_rc"]) for lane in range(32)]
                for j in range(tiles_n // 2)]
        for ks in range(cfg.block_k // 16):
            for i in range(tiles_m):
                r = _check_phases_and_ldmatrix(smem, [(a ^ (ks * 32)) + i * 16 * cfg.block_k * 2 for a in a_ld], False)
                for lane in range(32):  # a0..a3: rows g, g+8 at k 2t, then at k 2t+8
                    g, t = lane // 4, lane % 4
                    row, k = r0 + 16 * i + g, 16 * ks + 2 * t
                    assert [r[q][lane] for q in range(4)] == [_a_elems(row, k), _a_elems(row + 8, k),
                                                              _a_elems(row, k + 8), _a_elems(row + 8, k + 8)]
            for j in range(tiles_n // 2):
                r = _check_phases_and_ldmatrix(smem, [L["b_base"] + ks * 16 * cfg.block_n * 2 + b for b in b_ld[j]], True)
                for q in range(4):  # n8 tile 2j + q // 2, b0 (q even) or b1: B[2t (+8), 2t+1 (+8)][g]
                    for lane in range(32):
                        g, t = lane // 4, lane % 4
                        n, k = c0 + 8 * (2 * j + q // 2) + g, 16 * ks + 8 * (q % 2) + 2 * t
                        assert r[q][lane] == (("B", k, n), ("B", k + 1, n))


def test_the_swizzle_is_a_permutation_of_chunks_within_each_row():
    for row_chunks in (4, 8, 16, 32):
        for row in range(16):
            offs = sorted(swizzle(row, 8 * c, row_chunks) for c in range(row_chunks))
            assert offs == [row * row_chunks * 8 + 8 * c for c in range(row_chunks)]


# ---- Configs, budget and SASS.

def test_configs_fit_a_t4_with_8_warps_in_the_measured_order():
    # Measured on an H100 (configs/sm75_hgemm_mma.yaml): 3 stages first, the 64x64 small tile last.
    assert [c.name for c in SPEC.configs] == ["128x256s3", "128x128", "128x256", "256x128", "64x64"]
    for c in SPEC.configs:
        assert configs.problems(c, SPEC, T4) == []
        assert registry.resident_warps(SPEC, c, T4) >= registry.MIN_RESIDENT_WARPS
    # No padding: 2 x (BM x BK + BK x BN) halves; 128x128 leaves room for two blocks on a T4.
    assert SPEC.smem_bytes(SPEC.config("256x128")) == 2 * (256 * 32 + 32 * 128) * 2 == 48 * 1024
    assert registry.resident_blocks(SPEC, SPEC.config("128x128"), T4) == 2
    # Small problems get the small tile.
    assert registry.pick_config(SPEC, T4, Problem(256, 256, 4096)).name == "64x64"


def test_rules_reject_warp_tiles_ldmatrix_x4_cannot_feed():
    bad = replace(SPEC.config("64x64"), name="bad", block_m=32, block_n=64, warp_m=16, warp_n=32, threads=128)
    found = configs.problems(bad, SPEC, T4)
    assert any("warp_m 16 must be a multiple of 32" in p for p in found), found


def test_a_wrong_host_smem_formula_fails_to_compile(cache_dir):
    defines = dict(SPEC.defines(SPEC.config("64x64")), ZOO_SMEM_BYTES=1234)
    with pytest.raises(ZooCudaError, match="host smem formula"):
        cuda.compile_cubin(SPEC.source, "sm_75", defines, kernel=SPEC.name, config="64x64")


def _sm75_sass(cfg_name, out="float32"):
    cubin = cuda.compile_cubin(SPEC.source, "sm_75", SPEC.defines(SPEC.config(cfg_name)))
    return sass.function_sass(cubin.image, SPEC.entry[("float16", out)])


def test_sm75_main_loop_is_ldsm_hmma_ldg_sts_and_little_else():
    """The interior K-loop of 128x256 (the first backward branch after the prologue): per warp
    and 32-deep K-tile, 128 HMMA.1688 fed by 8 LDSM.x4 (A) + 8 LDSM.x4.trans (B), 6 LDG.128 and
    6 STS.128 of the next tile, one barrier, and a few integer instructions."""
    text = _sm75_sass("128x256")
    ops = sass.opcode_counts(text)
    assert not any(op.startswith(("LDGSTS", "LDL", "STL", "HMMA.16816")) for op in ops)
    import re
    ins = [(int(a, 16), body) for a, body in re.findall(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", text)]
    loops = [(int(m.group(1), 16), a) for a, body in ins
             if (m := re.search(r"BRA\s+(?:\S+,\s*)?0x([0-9a-f]+)", body)) and int(m.group(1), 16) < a]
    start, end = loops[0]
    loop = sass.opcode_counts("\n".join(f"/*{a:04x}*/ {b} ;" for a, b in ins if start <= a <= end))
    assert loop["HMMA.1688.F32"] == 128
    assert loop["LDSM.16.M88.4"] == 8 and loop["LDSM.16.MT88.4"] == 8
    assert loop["LDG.E.128.CONSTANT.SYS"] == 6 and loop["STS.128"] == 6
    assert loop["BAR.SYNC.DEFER_BLOCKING"] == 1
    assert sum(loop.values()) <= 200, loop  # 128 HMMA + 29 memory/barrier + < 45 others


# ---- Selection: the measured order on CC 7.5, and zoo tune's candidates.

def test_cc75_takes_the_first_sm75_fp16_kernel_in_kernels_order_and_tune_sees_both(monkeypatch):
    fp16 = [k.name for k in registry.eligible((7, 5), Problem(4096, 4096, 4096))]
    assert fp16[:2] == [k.name for k in registry.KERNELS if k.name in ("sm75_hgemm_wmma", "sm75_hgemm_mma")]
    assert registry.select(T4, Problem(4096, 4096, 4096, out_dtype="float32"))[0].name == fp16[0]
    assert registry.select(T4, Problem(64, 64, 64), kernel_name="sm75_hgemm_mma")[0] is SPEC
    from zoo import gemm
    monkeypatch.setattr(gemm, "device_limits", lambda index: T4)
    names = {spec.name for spec, _, _ in tuner.candidates(0, Problem(4096, 4096, 4096))}
    assert {"sm75_hgemm_wmma", "sm75_hgemm_mma"} <= names


def test_explain_compares_the_two_turing_kernels_from_their_sass():
    """`zoo explain sm75_hgemm_mma --compare sm75_hgemm_wmma`: the T4 (sm_75) side by side, the
    loop mixes read from the SASS: the same 64 B of shared memory per MMA, half the LDSMs."""
    import json
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "zoo", "explain", "sm75_hgemm_mma", "--out-dtype", "fp32",
                           "--compare", "sm75_hgemm_wmma", "--json", "-"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["arch"] == "sm_75" and data["chosen"] == SPEC.configs[0].name
    mma, wmma = data["compare"]
    assert (mma["kernel"], wmma["kernel"]) == ("sm75_hgemm_mma", "sm75_hgemm_wmma")
    assert mma["warps_per_sm"] == wmma["warps_per_sm"] == 8
    assert mma["loop"]["mma"] == wmma["loop"]["mma"] == 128
    assert mma["loop"]["smem_read_per_mma"] == 64 and mma["loop"]["ldsm"] == 16
    assert wmma["loop"]["ldsm"] >= mma["loop"]["ldsm"] and mma["loop"]["total"] < wmma["loop"]["total"]
