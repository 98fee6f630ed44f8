"""zoo.scaled_mm, the FP8 build of the sm_90a kernel (issue 43): its configs and their choice,
its SASS (CPU), its errors before any launch, and on a Hopper GPU its results for every recipe,
output dtype and accumulation against float64 of the dequantized inputs, with a bound taken
from torch._scaled_mm's own error on the same inputs."""
import math
import re
from dataclasses import replace

import pytest
import torch

import zoo
from zoo import arch, configs, cuda, fp8, registry, sass, scaled
from zoo.cuda import ZooError
from zoo.registry import Problem

FP8 = registry.SM90_FP8
H100 = arch.offline("sm_90a")
FLOOR = fp8.SCALED_FLOOR  # the output dtype's rounding plus wgmma's accumulation (zoo/fp8.py)
HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


def fp8_problem(m, n, k, promote=True, out="bfloat16", block=False):
    return Problem(m, n, k, "float8_e4m3fn", out, b_col=True, promote=promote, block=block)


@pytest.mark.parametrize("promote", [True, False])
def test_scaled_problems_get_fp8_configs_that_promote_as_asked(promote):
    for m, n, k in ((4096, 4096, 4096), (128, 4096, 4096), (1, 128, 128), (2048, 11008, 4096)):
        spec, cfg = registry.select(H100, fp8_problem(m, n, k, promote), op="scaled")
        assert spec is FP8 and bool(cfg.promote) == promote
    # zoo.mm never meets the FP8 kernel, nor the FP8 problem a 16-bit one
    assert registry.select(H100, Problem(4096, 4096, 4096))[0] is not FP8
    with pytest.raises(ZooError, match="no kernel"):
        registry.select(H100, fp8_problem(64, 64, 64))


def test_few_rows_take_the_swap_ab_tile_where_it_serves_the_recipe():
    """M <= 16, per tensor or per row (promoted): 16x128sp, which spends no MMA on rows past M.
    More rows, where 128-row tiles would leave over half the SMs idle or their rows half empty:
    the swap tile of least modeled time (NOTES.md, "Small-M FP8 tiles by modeled time"): the
    most tiles in one wave at K = 4096, but taller tiles in K slices at deep K, where each short
    tile streams too many bytes a row (128 x 2048 x 11008: 16x128sp whole ran 11% slower than
    32x128sp in two slices on an H200; the old rule, the most tiles, took 16x128sp). Grids of
    full 128-row tiles, fast accumulation (no swap-AB build) and the block recipe (a build of
    its own) keep the 128-row tiles. Its rules: no blockwise swap build."""
    for m in (1, 5, 16):
        assert registry.select(H100, fp8_problem(m, 4096, 4096), op="scaled")[1].name == "16x128sp"
    for (m, n, k), name in (((64, 4096, 4096), "16x128sp"), ((128, 4096, 4096), "32x128sp"),
                            ((32, 11008, 4096), "32x128sp"), ((64, 11008, 4096), "64x128sp"),
                            ((256, 4096, 4096), "64x128sp"), ((256, 384, 512), "16x128sp"),
                            ((512, 1024, 4096), "32x128sp"), ((128, 2048, 11008), "32x128sp"),
                            ((64, 4096, 11008), "16x128sp"), ((128, 4096, 8192), "32x128sp")):
        assert registry.select(H100, fp8_problem(m, n, k), op="scaled")[1].name == name, (m, n, k)
    # An H200's faster DRAM (the bound at 64 rows) leaves deeper K to the taller tiles' slices:
    # 128 x 4096 x 16384 on 64x128sp in two slices ran 5% faster than 32x128sp whole.
    h200 = replace(H100, dram_gbps=4814.0)  # as the lent H200 reported it
    for (m, n, k), name in (((128, 4096, 16384), "64x128sp"), ((128, 2048, 11008), "64x128sp"),
                            ((64, 4096, 8192), "16x128sp"), ((128, 4096, 4096), "32x128sp")):
        assert registry.select(h200, fp8_problem(m, n, k), op="scaled")[1].name == name, (m, n, k)
    for problem in (fp8_problem(128, 11008, 4096), fp8_problem(512, 4096, 4096), fp8_problem(64, 32000, 4096),
                    fp8_problem(1, 4096, 4096, promote=False), fp8_problem(1, 4096, 4096, block=True)):
        assert not registry.select(H100, problem, op="scaled")[1].swap_ab, problem
    swap_block = replace(FP8.config("16x128sp"), block_scales=1)
    assert any("no swap-AB tiles" in p for p in configs.problems(swap_block, FP8, H100))


def test_fp8_config_rules():
    good = FP8.config("128x128p")
    assert configs.problems(good, FP8, H100) == []
    wide = configs.TileConfig("w", 128, 256, 128, 64, 256, 4, 384, promote=1)   # 2 x 128 accumulators
    assert any("do not fit" in p for p in configs.problems(wide, FP8, H100))
    wider = FP8.config("128x192p")  # 2 x 96 accumulators: fits
    assert configs.problems(wider, FP8, H100) == []
    # Three promoted consumers of 64 x 128 (2 x 64 accumulators) fit beside a 32-register
    # producer; unpromoted, or four of them, the kernel's register split does not hold.
    assert configs.problems(FP8.config("192x128p"), FP8, H100) == []
    assert configs.problems(FP8.config("192x128pb"), FP8, H100) == []
    assert any("register split assumes 2" in p for p in
               configs.problems(replace(FP8.config("192x128p"), promote=0), FP8, H100))
    assert any("register split assumes 2" in p for p in
               configs.problems(replace(FP8.config("192x128p"), block_m=256, threads=640), FP8, H100))
    blockwise = FP8.config("128x128pb")  # the blockwise recipe's build serves that recipe alone, and only it
    assert configs.problems(blockwise, FP8, H100) == []
    for c in (good, wider):
        assert registry.serves(FP8, c, fp8_problem(4096, 4096, 4096)) and \
            not registry.serves(FP8, c, fp8_problem(4096, 4096, 4096, block=True))
    assert registry.serves(FP8, blockwise, fp8_problem(4096, 4096, 4096, block=True)) and \
        not registry.serves(FP8, blockwise, fp8_problem(4096, 4096, 4096))
    assert "name a config with block_scales: 1" in registry.fp8_refusal(good, fp8_problem(64, 64, 128, block=True))
    assert "name a config with block_scales: 0" in registry.fp8_refusal(blockwise, fp8_problem(64, 64, 128))
    wide_block = FP8.config("128x192pb")  # slices of 192 columns: two blocks of B's scales
    assert configs.problems(replace(wider, block_scales=1, stages=4), FP8, H100) == []
    assert any("may span more than two" in p for p in configs.problems(replace(wider, warp_n=160, block_n=160, block_scales=1), FP8, H100))
    assert any("block_scales needs promote: 1" in p for p in
               configs.problems(replace(FP8.config("128x128"), block_scales=1), FP8, H100))
    tall, tall_block = FP8.config("192x128p"), FP8.config("192x128pb")  # three consumers in turns
    # promoted_choice: the least wave cost over each tile's measured speed per unit of area.
    # 4096^3 is 5.3 waves of 128x192 or 192x128 tiles, 7.8 of 128x128; 16384 x 4096 is 20.9
    # waves of 192x128 against 21.3 of 128x192; over equal waves (8192^3) 192x128 is the
    # blockwise recipe's best and per tensor 128x192's; either takes 4096 x 11008 (7% more area
    # than 128x128), the blockwise one 2048 x 11008 too (9%).
    for m, n, k, per_tensor, block in ((4096, 4096, 4096, good, blockwise), (8192, 8192, 8192, wider, tall_block),
                                       (1024, 11008, 4096, wider, tall_block), (16384, 4096, 4096, tall, tall_block),
                                       (16384, 4096, 11008, tall, tall_block), (6144, 6144, 6144, wider, tall_block),
                                       (4096, 11008, 4096, wider, tall_block), (2048, 8192, 8192, good, blockwise),
                                       (2048, 11008, 4096, good, tall_block),
                                       (1024, 4096, 4096, good, blockwise), (128, 11008, 4096, good, blockwise),
                                       (256, 11008, 4096, wider, wide_block)):
        assert registry.select(H100, fp8_problem(m, n, k), op="scaled")[1] == per_tensor, (m, n, k)
        assert registry.select(H100, fp8_problem(m, n, k, block=True), op="scaled")[1] == block, (m, n, k)
    assert registry.select(H100, fp8_problem(256, 11008, 4096), op="scaled", config_name="128x192p")[1] == wider
    short = configs.TileConfig("s", 128, 128, 64, 64, 128, 6, 384)
    assert any("block_k 64 must be 128" in p for p in configs.problems(short, FP8, H100))
    assert any("does not promote" in p for p in
               configs.problems(configs.TileConfig("p", 128, 128, 64, 64, 128, 6, 384, promote=1),
                                registry.SM90_GEMM, H100))


def test_a_promoted_tile_listed_last_loses_its_ties(tmp_path):
    """Among promoted tiles of equal wave cost over speed the first listed wins (configs are
    listed best first), not the narrower: a 128x64 tile added at the end, its speed unmeasured,
    ties 128x128p at 4096^3 and 1024 x 4096 x 4096, where it ran at 81% and 84% of
    torch._scaled_mm against 128x128p's 98-100 (H200; NOTES.md, "The producer tail, measured")."""
    listed = tmp_path / "sm90_scaled_fp8.yaml"  # the configs file with one more entry at its end
    listed.write_text(FP8.config_file.read_text().rstrip("\n") + "\n  128x64p:\n    {block_m: 128, block_n: 64, "
                      "block_k: 128, warp_m: 64, warp_n: 64, stages: 8, threads: 384, group_m: 8, promote: 1}\n")
    spec = replace(FP8, config_file=listed)
    narrow = spec.configs[-1]
    assert narrow.name == "128x64p" and configs.problems(narrow, spec, H100) == []
    for m, n, k in ((4096, 4096, 4096), (1024, 4096, 4096)):
        problem = fp8_problem(m, n, k)
        assert registry.wave_cost(spec, narrow, H100, problem) == registry.wave_cost(spec, FP8.config("128x128p"), H100, problem)
        assert registry.pick_config(spec, H100, problem).name == "128x128p", (m, n, k)


@pytest.mark.parametrize("name, mma", [("128x128p", "QGMMA.64x128x32.F32.E4M3.E4M3"),
                                       ("128x128pb", "QGMMA.64x128x32.F32.E4M3.E4M3"),
                                       ("128x192p", "QGMMA.64x192x32.F32.E4M3.E4M3"),
                                       ("128x192pb", "QGMMA.64x192x32.F32.E4M3.E4M3"),
                                       ("192x128p", "QGMMA.64x128x32.F32.E4M3.E4M3"),
                                       ("192x128pb", "QGMMA.64x128x32.F32.E4M3.E4M3"),
                                       ("128x256", "QGMMA.64x256x32.F32.E4M3.E4M3"),
                                       ("16x128sp", "QGMMA.64x16x32.F32.E4M3.E4M3"),
                                       ("32x128sp", "QGMMA.64x32x32.F32.E4M3.E4M3"),
                                       ("64x128sp", "QGMMA.64x64x32.F32.E4M3.E4M3")])
def test_fp8_sass_is_e4m3_wgmma_without_local_memory(name, mma):
    cfg = FP8.config(name)
    cubin = cuda.compile_cubin(FP8.source, "sm_90a", FP8.defines(cfg, b_col=True))
    text = sass.function_sass(cubin.image, FP8.entry[("float8_e4m3fn", "bfloat16")])
    ops = sass.opcode_counts(text)
    early = early_issue(cfg)  # a second issue site: the next unit's first K-tile
    assert text.count(mma + " ") == 4 * (2 if early else 1), "four k32 wgmmas per 128-byte K-tile"
    # issued back to back: ptxas waits for each wgmma before the next where it cannot prove
    # the registers safe (a WARPGROUP.DEPBAR per wgmma; NOTES.md, "FP8 on Hopper"); the early
    # issue's waits close the epilogue's three ends and the grid's
    assert ops.get("WARPGROUP.DEPBAR.LE", 0) <= (5 if early else 2)
    # the blockwise build stages its scales in shared memory by cp.async, counted on the
    # K-tile's full barrier (stage_block_scales), rather than each consumer loading them
    assert ("LDGSTS.E" in ops and "ARRIVES.LDGSTSBAR.64.ARVCNT" in ops) == bool(cfg.block_scales)
    assert not any(op.startswith(("HGMMA", "HMMA", "LDL", "STL")) for op in ops)
    # promotion: each K-tile's sums added into fp32 registers times the K-tile's scales in the
    # blockwise builds (FFMA; 128x192pb's two column-block splits also as FMUL + FADD); plainly
    # in the others' (FADD: no scale read or multiply between a consumer's MMAs and its next
    # issue), which have no FFMA at all
    assert (ops.get("FFMA", 0) >= 64) == bool(cfg.block_scales)
    # the three-consumer blockwise build reads a thread's two rows of scales in one LDS.64
    # (paired_row); the others read them one by one (NOTES.md, "Blockwise scales read as they
    # are needed")
    assert ("LDS.64" in ops) == bool(cfg.block_scales and cfg.warps == 3)  # three consumer slices
    # the next K-tile's scales are loaded before the wait for this K-tile's MMAs, but their
    # product is taken after the add: taken at once, it waited there for the loads
    for wait in re.finditer(r"WARPGROUP\.DEPBAR\.LE gsb0, 0x0", text):
        since_issue = text[max(text.rfind("QGMMA", 0, wait.start()), text.rfind("DEPBAR", 0, wait.start())):wait.start()]
        if early and re.search(r"\b(STSM|STG|ATOMG)", since_issue):
            continue  # a wait closing an epilogue, not a K-tile's
        assert not ("LDS" in since_issue and "FMUL" in since_issue)
    # the promoted consumers issue in turns (a bar.sync and a bar.arrive of two consumers'
    # 256 threads at each issue site), but for the swap tiles, which issue without (TURNS)
    turns = re.findall(r"BAR\.(?:SYNC\.DEFER_BLOCKING|ARV) R\d+, 0x100\b", text)
    assert len(turns) == (2 * (2 if early else 1) if cfg.promote and not cfg.swap_ab else 0)
    # bf16 C is staged by stmatrix, unless a swap-AB tile's transposed stores write it
    assert ("STSM.16.M88.4" in ops) == (not cfg.swap_ab)
    # the two-consumer blockwise 64 x 128 slice (two bf16 boxes) is staged whole and its stores
    # committed once (SHORT_EPILOGUE); the others commit a box at a time, but for the swap-AB
    # tiles' transposed stores, one commit a slice
    short = bool(cfg.block_scales and cfg.warps == 2 and cfg.warp_n == 128)
    assert (ops.get("UTMACMDFLUSH", 0) == 1) == (short or bool(cfg.swap_ab))
    # every build but the blockwise loads the per-tensor scale product ahead of its first MMAs;
    # the two-consumer 64 x 128 slices, not swapped (HOLD_SCALES), their per-row scales too, and
    # no scale after them; the others read per-row scales in the epilogue (NOTES.md, "Scales
    # held through the K loop")
    first = text.find("QGMMA")
    ahead, after = (re.findall(r"LDG\.E(?:\.64)?\.CONSTANT", part) for part in (text[:first], text[first:]))
    hold = hold_scales(cfg)
    held = 2 + 16 + 32  # two rows, and a slice's 32 columns in pairs or one by one (strided)
    assert len(ahead) == (0 if cfg.block_scales else 2 + held * hold)
    assert (not after) == (hold or bool(cfg.block_scales))


def hold_scales(cfg) -> bool:
    """The kernel's HOLD_SCALES: two consumers of 64 x 128 slices, tiles not swapped, not the
    blockwise build (its scales are staged per K-tile)."""
    return cfg.warps == 2 and cfg.warp_n <= 128 and not cfg.swap_ab and not cfg.block_scales


def early_issue(cfg) -> bool:
    """The kernel's EARLY_ISSUE: two promoted consumers of 64 x 128 slices, tiles not swapped,
    not the blockwise build (slower with it)."""
    return bool(cfg.promote) and hold_scales(cfg)


@pytest.mark.parametrize("name", [c.name for c in FP8.configs if early_issue(c)])
def test_two_consumer_promoted_tiles_store_under_their_next_mmas(name):
    """The two-consumer 128x128 tiles issue their next unit's first K-tile before the epilogue
    (EARLY_ISSUE): on the TMA-store path, the C stores lie between that issue and the wait for
    it, and ptxas injects no wait of its own (which would put the stores back behind the MMAs)."""
    cfg = FP8.config(name)
    cubin = cuda.compile_cubin(FP8.source, "sm_90a", FP8.defines(cfg, b_col=True))
    for out in ("bfloat16", "float16", "float32"):
        text = sass.function_sass(cubin.image, FP8.entry[("float8_e4m3fn", out)])
        issues = [m.start() for m in re.finditer(r"QGMMA\S* R\d+, gdesc\[UR\d+\], RZ, !UPT", text)]
        assert len(issues) == 2, out  # the loop's and the early one
        first = re.compile(r"\bSTS(?:M\.16\.M88\.4|\.64) \[R").search(text, issues[1])  # C staged for TMA
        staged = first.start() if first else -1
        store = text.find("UTMASTG", staged)
        assert 0 < staged < store, out
        # between the issue and the staging, a wait only where a path leaves (split-K's
        # "another unit finishes it": the wait, then a branch to the loop's end)
        for wait in re.finditer(r"WARPGROUP\.DEPBAR[^\n]*\n(?:[^\n]*\n)?\s*/\*\w+\*/\s*(\S+)", text[issues[1]:staged]):
            assert wait.group(1) == "BRA", (out, wait.group(0))
        assert "WARPGROUP.DEPBAR" not in text[staged:store] and "WARPGROUP.DEPBAR" in text[store:], out


def promotion_adds(text: str) -> list[tuple[int, int]]:
    """(accumulator, sum) registers of the promotion's adds: in the instructions after each wait
    for all of a K-tile's wgmmas, the adds of a sum register (wgmma's, element i at base + i)
    into a register outside the sums (at least half a K-tile's, or the search missed the
    promotion)."""
    mma = re.search(r"QGMMA\.64x(\d+)x32\S* R(\d+),", text)
    base, count = int(mma.group(2)), int(mma.group(1)) // 2
    lines = text.splitlines()
    adds = []
    for at in (i for i, line in enumerate(lines) if "WARPGROUP.DEPBAR.LE gsb0, 0x0" in line):
        for line in lines[at:at + 4 * count + 64]:
            add = re.search(r"\b(?:FADD|FFMA) R(\d+), R(\d+)(?:\.reuse)?, ", line)
            if add and base <= int(add.group(2)) < base + count and not base <= int(add.group(1)) < base + count:
                adds.append((int(add.group(1)), int(add.group(2))))
    assert len(adds) >= count // 2
    return adds


@pytest.mark.parametrize("name", [c.name for c in FP8.configs if c.block_scales and c.warps == 3])
def test_three_consumer_blockwise_promotion_reads_two_register_banks(name):
    """Kept in element order, accumulator i lay in a register of i's parity, as its sum does
    (split-K's vector stores align them), so the blockwise FFMA (sum x scale + accumulator) read
    three registers of one bank on every other add. The three-consumer blockwise build keeps its
    accumulators crossed (slot(i) = i ^ 1): every add reads a sum and an accumulator of
    different parity (1.5-2.3% faster on an H200; 128x128pb, both faster and slower crossed,
    keeps element order: NOTES.md, "Register banks in the promotion, measured")."""
    cfg = FP8.config(name)
    cubin = cuda.compile_cubin(FP8.source, "sm_90a", FP8.defines(cfg, b_col=True))
    for out in ("bfloat16", "float16", "float32"):
        adds = promotion_adds(sass.function_sass(cubin.image, FP8.entry[("float8_e4m3fn", out)]))
        assert all(acc % 2 != part % 2 for acc, part in adds), (out, adds[:4])


def test_scaled_mm_refuses_before_launching():
    qa, sa = fp8.quantize(torch.randn(64, 256), "tensor")
    qb, sb = fp8.quantize(torch.randn(256, 128), "tensor", operand="b")
    with pytest.raises(ZooError, match="one CUDA device"):
        zoo.scaled_mm(qa, qb, sa, sb)
    with pytest.raises(ZooError, match="does not write FP8"):
        zoo.scaled_mm(qa, qb, sa, sb, out_dtype=torch.float8_e4m3fn)
    with pytest.raises(ZooError, match="scale_result"):
        zoo.scaled_mm(qa, qb, sa, sb, scale_result=sa)
    with pytest.raises(ZooError, match="column-major"):
        zoo.scaled_mm(qa, qb.contiguous(), sa, sb)
    q5, s5 = fp8.quantize(torch.randn(64, 256), "tensor", dtype=torch.float8_e5m2)
    with pytest.raises(ZooError, match="e5m2 operands are not built"):
        zoo.scaled_mm(q5, qb, s5, sb)


def test_scaled_mm_fake_gives_the_shape_for_tracing():
    qa, sa = fp8.quantize(torch.randn(64, 256), "row")
    qb, sb = fp8.quantize(torch.randn(256, 128), "row", operand="b")
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode() as mode:
        args = [mode.from_tensor(t) for t in (qa, qb, sa, sb)]
        y = torch.ops.zoo.scaled_mm(*args, None, torch.float16)
    assert y.shape == (64, 128) and y.dtype == torch.float16


# ----------------------------------------------------------------------------- on a Hopper GPU

gpu = pytest.mark.skipif(not HOPPER, reason="needs a CC 9.0 (Hopper) GPU: FP8 tensor cores; "
                                            "the other tests here run anywhere")


def operands(m, n, k, recipe, seed=0, positive=False):
    g = torch.Generator(device="cuda").manual_seed(seed)
    if positive:  # sums that only grow: where an accumulator's lost bits show
        a, w = torch.rand(m, k, device="cuda", generator=g), torch.rand(n, k, device="cuda", generator=g)
    else:
        a = torch.randn(m, k, device="cuda", generator=g) * torch.logspace(-1, 1, m, device="cuda").unsqueeze(1)
        w = torch.randn(n, k, device="cuda", generator=g)
    qa, sa = fp8.quantize(a, recipe, operand="a")
    qb, sb = fp8.quantize(w.t(), recipe, operand="b")
    return qa, qb, sa, sb


def error(y, qa, qb, sa, sb, recipe):
    ref = fp8.dequantize(qa, sa, recipe, "a").double() @ fp8.dequantize(qb, sb, recipe, "b").double()
    return ((y.double() - ref).norm() / ref.norm()).item()


def bound(theirs, out_dtype):
    """2x torch's error where it is finite and under the output dtype's rounding, else that rounding."""
    return 2 * theirs if math.isfinite(theirs) and theirs < FLOOR[out_dtype] else FLOOR[out_dtype]


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("recipe", fp8.RECIPES)
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("fast", [False, True])
def test_scaled_mm_matches_float64_as_closely_as_torch(recipe, out_dtype, fast):
    shapes = [(256, 512, 384), (77, 384, 256), (1, 128, 128), (1000, 2048, 1024), (300, 16 * 37, 512)]
    for m, n, k in shapes:
        if recipe == "block" and n % 128:  # torch's block recipe takes whole 128-column blocks of b
            continue
        qa, qb, sa, sb = operands(m, n, k, recipe)
        y = zoo.scaled_mm(qa, qb, sa, sb, out_dtype=out_dtype, use_fast_accum=fast)
        assert y.shape == (m, n) and y.dtype == out_dtype
        try:
            theirs = error(torch._scaled_mm(qa, qb, sa, sb, out_dtype=out_dtype, use_fast_accum=fast),
                           qa, qb, sa, sb, recipe)
        except RuntimeError:  # torch's blockwise: no fast accumulation, no float32 out (cuBLASLt)
            theirs = math.nan
        # torch's blockwise kernel returns 50% errors on some of these shapes, or refuses them
        # (torch 2.11, H100): its error bounds ours only where it is sane.
        assert error(y, qa, qb, sa, sb, recipe) <= bound(theirs, out_dtype), (m, n, k, theirs)


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("m, n, k, splits", [(4096, 4096, 1024, 1), (200, 384, 8192, 8), (77, 592, 2048, 2),
                                             (1000, 640, 4096, 3)])
@pytest.mark.parametrize("config", [None, "128x192pb", "192x128pb"])
def test_block_scales_staged_per_k_tile_are_each_tiles_own(m, n, k, splits, config):
    """The block recipe's scales staged with each K-tile (stage_block_scales), where torch's
    blockwise cannot check them: a CTA's several tiles (4096^2: 1024 tiles), K slices (split-K;
    the count asserted from the plan) and N past the last whole 128-column block (592, which
    torch refuses). Every block's scale far from its neighbours' (0.05-20): a scale taken from
    another K-tile, row or column block is off by O(1), not by rounding. Also on 128x192pb,
    whose consumers' 192 columns start at 0 or 64 inside a block and take two blocks' scales."""
    g = torch.Generator(device="cuda").manual_seed(5)
    kb, nb = k // 128, -(-n // 128)
    spread = lambda *shape: torch.exp(torch.empty(*shape, device="cuda").uniform_(-3, 3, generator=g))  # noqa: E731
    a = torch.randn(m, k, device="cuda", generator=g) * spread(m, kb).repeat_interleave(128, dim=1)
    w = torch.randn(nb * 128, k, device="cuda", generator=g) * \
        spread(nb, kb).repeat_interleave(128, dim=0).repeat_interleave(128, dim=1)
    qa, sa = fp8.quantize(a, "block", operand="a")
    qb_whole, sb = fp8.quantize(w.t(), "block", operand="b")  # whole blocks, then N's first n columns
    qb = qb_whole[:, :n]
    plan = scaled.plan(qa, qb, sa, sb, None, torch.float32, False, config=config)
    assert plan.launch.choice[1] == (config or "128x128pb")
    if config is None:
        assert (plan.launch.split_k is not None) == (splits > 1)
    y = zoo.scaled_mm(qa, qb, sa, sb, out_dtype=torch.float32, config=config)
    ref = fp8.dequantize(qa, sa, "block", "a").double() @ fp8.dequantize(qb_whole, sb, "block", "b").double()[:, :n]
    assert ((y.double() - ref).norm() / ref.norm()).item() <= FLOOR[torch.float32]


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("recipe", ["tensor", "row"])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("config", [c.name for c in FP8.configs if early_issue(c)])
def test_tiles_issued_early_match_float64_as_closely_as_torch(recipe, out_dtype, config):
    """The early issue (EARLY_ISSUE) runs where a CTA has a next unit: 256 to 288 tiles for 132
    SMs, a K of one K-tile (the issued K-tile is the whole next unit), of one and a part, and
    of four; K slices of one tile (split-K: the next unit is the tile's next slice). Within
    torch's bound."""
    for m, n, k in ((2048, 2048, 1024), (2048, 2048, 128), (2048, 2048, 144), (4096, 1152, 512),
                    (1000, 2048, 1024), (128, 256, 16384)):
        qa, qb, sa, sb = operands(m, n, k, recipe)
        y = zoo.scaled_mm(qa, qb, sa, sb, out_dtype=out_dtype, config=config)
        theirs = error(torch._scaled_mm(qa, qb, sa, sb, out_dtype=out_dtype), qa, qb, sa, sb, recipe)
        assert error(y, qa, qb, sa, sb, recipe) <= bound(theirs, out_dtype), (m, n, k, theirs)


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("recipe", ["tensor", "row"])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("config", ["128x192p", "192x128p"])
def test_the_larger_promoted_tiles_match_float64_as_closely_as_torch(recipe, out_dtype, config):
    """128x192p (2 consumers of 64 x 192) and 192x128p (3 of 64 x 128 in turns), promoted: per
    tensor and per row, odd shapes and a long K, within torch's bound; the block recipe is
    refused on them (128x192pb and 192x128pb are that recipe's builds)."""
    for m, n, k in ((256, 576, 384), (77, 384, 256), (300, 16 * 37, 512), (1000, 2048, 1024), (128, 256, 16384)):
        qa, qb, sa, sb = operands(m, n, k, recipe)
        y = zoo.scaled_mm(qa, qb, sa, sb, out_dtype=out_dtype, config=config)
        try:
            theirs = error(torch._scaled_mm(qa, qb, sa, sb, out_dtype=out_dtype), qa, qb, sa, sb, recipe)
        except RuntimeError:  # a layout torch's kernels refuse
            theirs = math.nan
        assert error(y, qa, qb, sa, sb, recipe) <= bound(theirs, out_dtype), (m, n, k, theirs)
    qa, qb, sa, sb = operands(256, 512, 384, "block")
    with pytest.raises(ZooError, match="is not the blockwise recipe's build"):
        zoo.scaled_mm(qa, qb, sa, sb, config=config)


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("recipe", ["tensor", "row"])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("config", ["16x128sp", "32x128sp", "64x128sp"])
def test_the_swap_ab_tile_matches_float64_as_closely_as_torch(recipe, out_dtype, config):
    """The swap tiles (C^T tiles of 16, 32 or 64 rows, promoted): one row to several row tiles,
    N past the last whole 128-column tile, a long K cut into slices (16 x 256 x 16384: split-K),
    a bias; within torch's bound, and the zoo's own choice for the few-row shapes."""
    for m, n, k in ((1, 4096, 4096), (5, 592, 512), (16, 256, 16384), (40, 384, 256), (77, 592, 2048),
                    (130, 384, 1024)):
        qa, qb, sa, sb = operands(m, n, k, recipe)
        y = zoo.scaled_mm(qa, qb, sa, sb, out_dtype=out_dtype, config=config)
        if m <= 16 and config == "16x128sp":
            plan = scaled.plan(qa, qb, sa, sb, None, out_dtype, False)
            assert plan.launch.choice[1] == "16x128sp"
            if k >= 4096:  # 2 or 32 tiles for 132 SMs over a deep K: cut in K
                assert plan.launch.split_k is not None, (m, n, k)
        theirs = error(torch._scaled_mm(qa, qb, sa, sb, out_dtype=out_dtype), qa, qb, sa, sb, recipe)
        assert error(y, qa, qb, sa, sb, recipe) <= bound(theirs, out_dtype), (m, n, k, theirs)
    if out_dtype == torch.bfloat16:  # a bias as test_scaled_mm_bias_graph_compile_and_long_k gives torch
        bias = torch.randn(592, device="cuda", dtype=out_dtype)
        qa, qb, sa, sb = operands(77, 592, 512, recipe)
        want = torch._scaled_mm(qa, qb, sa, sb, bias=bias, out_dtype=out_dtype).float()
        got = zoo.scaled_mm(qa, qb, sa, sb, bias=bias, out_dtype=out_dtype, config=config).float()
        assert ((got - want).norm() / want.norm()).item() < 1e-2


@pytest.mark.gpu
@gpu
def test_scaled_mm_bias_graph_compile_and_long_k():
    qa, qb, sa, sb = operands(256, 512, 384, "row")
    bias = torch.randn(512, device="cuda", dtype=torch.bfloat16)
    want = torch._scaled_mm(qa, qb, sa, sb, bias=bias, out_dtype=torch.bfloat16).float()
    got = zoo.scaled_mm(qa, qb, sa, sb, bias=bias, out_dtype=torch.bfloat16).float()
    assert ((got - want).norm() / want.norm()).item() < 1e-2
    # captured in a user's CUDA graph, replayed on new inputs
    out = zoo.scaled_mm(qa, qb, sa, sb)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = zoo.scaled_mm(qa, qb, sa, sb)
    qa.copy_(operands(256, 512, 384, "row", seed=7)[0])
    graph.replay()
    torch.testing.assert_close(out, zoo.scaled_mm(qa, qb, sa, sb))
    # torch.compile, whole graph
    f = torch.compile(lambda a, b, x, y: zoo.scaled_mm(a, b, x, y).relu(), fullgraph=True)
    torch.testing.assert_close(f(qa, qb, sa, sb), zoo.scaled_mm(qa, qb, sa, sb).relu())
    # promotion over a long K: no worse than 2x torch's (default) error
    qa, qb, sa, sb = operands(128, 256, 65536, "tensor", seed=3, positive=True)
    mine = error(zoo.scaled_mm(qa, qb, sa, sb, out_dtype=torch.float32), qa, qb, sa, sb, "tensor")
    theirs = error(torch._scaled_mm(qa, qb, sa, sb, out_dtype=torch.float32), qa, qb, sa, sb, "tensor")
    assert mine <= 2 * theirs


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("recipe", ["row", "block"])
def test_compiled_float8_linears_call_the_launch_path(recipe):
    """Compiled, zoo Float8Linears' code calls scaled_mm's launch path as an extern kernel
    (extern_kernels.zoo_scaled_mm), never the op's dispatcher fallback, and gives the eager
    layers' output (to FP8's rounding of inductor's fused quantization)."""
    from torch._inductor.utils import run_and_get_code
    torch._dynamo.reset()
    torch.manual_seed(4)
    model = torch.nn.Sequential(torch.nn.Linear(256, 384), torch.nn.GELU(), torch.nn.Linear(384, 128, bias=False))
    model = model.cuda().to(torch.bfloat16)
    zoo.nn.convert(model, fp8=recipe)
    x = torch.randn(2, 40, 256, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        got, (code, *_) = run_and_get_code(torch.compile(model), x)
        want = model(x)
    # (the op's name stays in comments; a fallback would call it)
    assert code.count("extern_kernels.zoo_scaled_mm(") == 2 and "torch.ops.zoo.scaled_mm.default(" not in code
    assert got.dtype == torch.bfloat16 and ((got - want).float().norm() / want.float().norm()).item() < 2e-2
    torch._dynamo.reset()


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("config", ["128x128p", "128x192p", "16x128sp", "32x128sp"])
def test_row_scales_in_any_layout_give_the_same_product(config):
    """The epilogue reads contiguous 8-byte-aligned column scales in pairs and one product for
    per-tensor scales: column scales with a stride of 2, 4 bytes off an 8-byte boundary, or
    expanded from one value (strides 0) must give the same C, bit for bit, as their
    contiguous copies; N = 592 ends inside a tile's last column pair block."""
    qa, qb, sa, sb = operands(300, 592, 512, "row")
    want = zoo.scaled_mm(qa, qb, sa, sb, out_dtype=torch.float32, config=config)
    n = sb.shape[1]
    strided = torch.zeros(1, 2 * n, device="cuda")[:, ::2]
    off_pair = torch.zeros(n + 1, device="cuda")[1:].view(1, n)
    for view in (strided, off_pair):
        view.copy_(sb)
    assert sb.is_contiguous() and sb.data_ptr() % 8 == 0 and off_pair.data_ptr() % 8 == 4
    for view in (strided, off_pair):
        assert torch.equal(zoo.scaled_mm(qa, qb, sa, view, out_dtype=torch.float32, config=config), want)
    one_a, one_b = sa[:1, :].expand(sa.shape[0], 1), sb[:, :1].expand(1, n)
    expanded = zoo.scaled_mm(qa, qb, one_a, one_b, out_dtype=torch.float32, config=config)
    assert torch.equal(expanded, zoo.scaled_mm(qa, qb, one_a.contiguous(), one_b.contiguous(),
                                               out_dtype=torch.float32, config=config))
    assert torch.equal(expanded, zoo.scaled_mm(qa, qb, sa[0, 0], sb[0, 0], out_dtype=torch.float32, config=config))


@pytest.mark.gpu
@gpu
def test_scaled_mm_refuses_what_it_cannot_run():
    qa, qb, sa, sb = operands(64, 256, 256, "tensor")
    with pytest.raises(ZooError, match="no backward"):
        zoo.scaled_mm(qa, qb, sa.clone().requires_grad_(), sb)
    with pytest.raises(ZooError, match="follow no recipe"):
        zoo.scaled_mm(qa, qb, torch.ones(64, 2, device="cuda"), sb)
    with pytest.raises(ZooError, match="promote"):  # a fast-accumulation config asked to promote
        zoo.scaled_mm(qa, qb, sa, sb, config="128x256")
    with pytest.raises(ZooError):  # an FP8 operand off 16-byte alignment: TMA cannot read it
        zoo.scaled_mm(torch.empty(64 * 256 + 1, device="cuda", dtype=torch.float8_e4m3fn)[1:].view(64, 256),
                      qb, sa, sb)


@pytest.mark.gpu
@gpu
def test_bench_fp8_tables_each_shape_and_says_which_it_cannot_run(tmp_path):
    """zoo bench --dtype fp8: zoo.scaled_mm and torch._scaled_mm side by side, verified; a shape
    FP8 cannot take (K, N off 16) is a row that says why, not the end of the run."""
    import json
    from zoo import cli
    out = tmp_path / "fp8.json"
    assert cli.main(["bench", "--dtype", "fp8", "--recipe", "row", "--shapes", "256x384x512,100x100x100",
                     "--iters", "5", "--warmup", "2", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["results"]
    assert rows[0]["verified"] and rows[0]["config"] == "16x128sp" and rows[0]["torch_tflops"] > 0
    assert "multiples of 16" in rows[1]["refused"]
