"""Dispatch: which kernel and config each compute capability and problem gets."""
from dataclasses import replace

import pytest

from zoo import ZooError, arch, registry
from zoo import configs as cfgs
from zoo.registry import Problem

H100 = arch.offline("sm_90a")
T4 = arch.offline("sm_75")


def limits_for(cc):
    return replace(H100, cc=cc, arch=arch.device_arch(cc))


@pytest.mark.parametrize("cc, expected", [
    ((7, 5), "sm75_hgemm_wmma"),
    # mma.sync + cp.async on Ampere and Ada; TMA + wgmma on Hopper only (sm_90a code); Blackwell
    # runs mma.sync but not wgmma.
    ((8, 0), "sm80_gemm_mma"), ((8, 6), "sm80_gemm_mma"), ((8, 9), "sm80_gemm_mma"),
    ((9, 0), "sm90_gemm_tma_wgmma"), ((10, 0), "sm80_gemm_mma"), ((12, 0), "sm80_gemm_mma"),
])
def test_every_supported_cc_gets_its_kernel(cc, expected):
    spec, cfg = registry.select(limits_for(cc), Problem(4096, 4096, 4096))
    assert spec.runs_on(cc) and spec.name == expected
    assert cfg in spec.configs


def test_bf16_needs_ampere():
    spec, _ = registry.select(limits_for((8, 6)), Problem(512, 512, 512, "bfloat16", "float32"))
    assert spec.name == "sm80_gemm_mma"
    with pytest.raises(ZooError, match="no kernel for bfloat16 -> bfloat16 on CC 7.5"):
        registry.select(limits_for((7, 5)), Problem(512, 512, 512, "bfloat16", "bfloat16"))
    with pytest.raises(ZooError, match="sm75_hgemm_wmma computes float16 -> float16, float16 -> float32, not bfloat16"):
        registry.select(limits_for((9, 0)), Problem(64, 64, 64, "bfloat16", "bfloat16"), kernel_name="sm75_hgemm_wmma")


@pytest.mark.parametrize("cc", [(7, 0), (6, 1), (5, 2)])
def test_old_gpus_are_refused_clearly(cc):
    with pytest.raises(ZooError, match=rf"compute capability {cc[0]}\.{cc[1]} is below 7\.5"):
        registry.select(limits_for(cc), Problem(256, 256, 256))


def test_dram_bandwidth_from_the_memory_clock_and_bus_width():
    """What a device's limits take as DRAM bandwidth (split-K's model) matches the datasheets."""
    assert abs(arch.dram_gbps(2_619_000, 5120) - H100.dram_gbps) < 0.01 * H100.dram_gbps
    t4 = arch.offline("sm_75")
    assert abs(arch.dram_gbps(5_001_000, 256) - t4.dram_gbps) < 0.01 * t4.dram_gbps


def test_compile_arch_follows_the_device():
    spec = registry.SM75_HGEMM
    assert spec.compile_arch((9, 0)) == "sm_90"
    assert spec.compile_arch((7, 5)) == "sm_75"


def test_unknown_kernel_and_config_name_the_alternatives():
    with pytest.raises(ZooError, match="unknown kernel 'nope'.*sm75_hgemm_wmma"):
        registry.select(H100, Problem(64, 64, 64), kernel_name="nope")
    with pytest.raises(ZooError, match="no config 'huge'.*128x128"):
        registry.select(H100, Problem(64, 64, 64), config_name="huge")


def test_unsupported_dtype_pair_has_no_kernel():
    with pytest.raises(ZooError, match="no kernel for float16 -> bfloat16"):
        registry.select(H100, Problem(64, 64, 64, dtype="float16", out_dtype="bfloat16"))


def test_config_heuristic_large_tiles_for_large_problems_small_for_small():
    spec = registry.SM75_HGEMM  # the sm_75 kernel on an H100, as `--kernel sm75_hgemm_wmma` runs it
    big = registry.pick_config(spec, H100, Problem(4096, 4096, 4096))
    small = registry.pick_config(spec, H100, Problem(256, 256, 4096))
    assert big.block_m * big.block_n > small.block_m * small.block_n
    # 256x256 has 16 tiles of 64x64: the most tiles any config gives, fewer than the SMs.
    assert small.name == "64x64"
    # The first config of the file that fills every SM and keeps 8 warps resident.
    assert big.name == "128x128" and big.tiles(4096, 4096) >= H100.sm_count
    assert registry.resident_warps(spec, big, H100) >= registry.MIN_RESIDENT_WARPS


def test_config_heuristic_follows_occupancy_on_a_t4():
    spec = registry.SM75_HGEMM
    # On a T4 two 128x128 blocks do not fit 64 KiB of shared memory: 4 warps per SM only,
    # so the 8-warp 128x256 tile is taken.
    assert registry.resident_warps(spec, spec.config("128x128"), T4) == 4
    assert registry.pick_config(spec, T4, Problem(4096, 4096, 4096)).name == "128x256"


def test_config_heuristic_only_picks_configs_that_fit_the_arch():
    tiny = replace(T4, smem_per_block_optin=24 * 1024)
    cfg = registry.pick_config(registry.SM75_HGEMM, tiny, Problem(4096, 4096, 4096))
    assert registry.SM75_HGEMM.smem_bytes(cfg) <= 24 * 1024


def test_offline_archs_cover_every_kernel():
    assert registry.offline_archs() == ["sm_75", "sm_80", "sm_90a"]


def test_sm80_configs_by_problem_size():
    spec = registry.SM80_GEMM
    a100 = arch.offline("sm_80")
    for lim in (a100, H100):
        assert registry.pick_config(spec, lim, Problem(4096, 4096, 4096)).name == "256x128"
    assert registry.pick_config(spec, H100, Problem(256, 256, 4096)).name == "64x64"


def test_sm90_kernel_runs_on_hopper_only():
    spec = registry.SM90_GEMM
    assert spec.runs_on((9, 0)) and spec.compile_arch((9, 0)) == "sm_90a"
    for cc in ((8, 0), (8, 9), (10, 0), (12, 0)):
        assert not spec.runs_on(cc)
        with pytest.raises(ZooError, match=r"sm90_gemm_tma_wgmma runs on CC 9\.0 only"):
            registry.select(limits_for(cc), Problem(256, 256, 256), kernel_name=spec.name)


def test_wave_cost_prefers_the_listed_tile_unless_a_later_one_fills_the_gpu():
    spec = registry.SM90_GEMM
    # 4096^2: 512 tiles of 128x256 or 1024 of 128x128 cost the same per SM: the first listed wins.
    assert registry.pick_config(spec, H100, Problem(4096, 4096, 4096)).name == "128x256"
    # 1024 x 4096: 128 tiles of 128x256 on 132 SMs is one wave, as good as 256 tiles of 128x128.
    assert registry.pick_config(spec, H100, Problem(1024, 4096, 4096)).name == "128x256"
    # 256 x 4096: 32 tiles of 128x256 leave 100 SMs idle; 64 of 128x128 halve the time per SM,
    # 128 of 64x128 halve it again.
    small = Problem(256, 4096, 4096)
    assert registry.wave_cost(spec, spec.config("128x128"), H100, small) * 2 == \
        registry.wave_cost(spec, spec.config("128x256"), H100, small)
    assert registry.pick_config(spec, H100, small).name == "64x128pp"
    # A config that would save less than WAVE_SLACK keeps the listed (more efficient) one: the
    # sm_80 kernel's 64x64 tiles run ~40% slower per FLOP than 256x128 on an A100.
    assert registry.pick_config(registry.SM80_GEMM, arch.offline("sm_80"), Problem(4096, 4096, 4096)).name == "256x128"


def test_swap_ab_tiles_only_where_they_measured_faster():
    spec = registry.SM90_GEMM
    # Never by wave cost alone: 16-row tiles would win every grid under a wave on paper.
    for shape in ((64, 4096, 4096), (128, 4096, 4096), (128, 11008, 4096), (1024, 1024, 1024), (4096, 4096, 4096)):
        assert not registry.pick_config(spec, H100, Problem(*shape)).swap_ab, shape
    # M of at most SWAP_AB_MAX_M rows: the shortest swap tile that holds them.
    for m in (1, 8, registry.SWAP_AB_MAX_M):
        assert registry.pick_config(spec, H100, Problem(m, 4096, 4096)).name == "16x128s"
    assert not registry.pick_config(spec, H100, Problem(registry.SWAP_AB_MAX_M + 1, 4096, 4096)).swap_ab
    # Under half a wave with K too shallow to split, where no narrow tile fits (100 rows fill no
    # whole 64-row tile): the swap tile of least wave cost (first listed).
    for shape in ((100, 512, 512), (96, 256, 256)):
        assert registry.pick_config(spec, H100, Problem(*shape)).name == "32x64s", shape
    # A K deep enough to split the listed tile keeps it (split-K fills the SMs instead).
    assert not registry.pick_config(spec, H100, Problem(512, 512, 8192)).swap_ab
    # Grouped launches (zoo.bmm) keep the wave-cost choice.
    group = (Problem(16, 4096, 4096),) * 4
    assert not registry.pick_config(spec, H100, group[0], group).swap_ab


def test_narrow_tiles_for_skinny_and_small_grids_they_fill():
    spec = registry.SM90_GEMM
    narrow = spec.config("64x64pp")
    assert narrow.narrow
    # Never by wave cost alone: 64x64 tiles would win every grid over a wave on paper too
    # (128 x 11008: 344 of them against 86 of 128x128, measured 42.8 us against 35.1).
    for shape in ((4096, 4096, 4096), (1024, 1024, 1024), (256, 4096, 4096), (128, 11008, 4096)):
        assert not registry.pick_config(spec, H100, Problem(*shape)).narrow, shape
    # 128 rows of 4096-wide weights: 64 tiles of 64x128 leave half the SMs idle (and would split
    # K); 128 narrow tiles fill a wave unsplit.
    # 64 x 4096: 64 narrow tiles, 48% of the SMs, unsplit measured 99% of torch.mm against 84%.
    for shape in ((128, 4096, 4096), (128, 4096, 11008), (64, 8192, 4096), (64, 4096, 4096)):
        assert registry.pick_config(spec, H100, Problem(*shape)) == narrow, shape
        assert registry.split_k(spec, narrow, *shape, H100.sm_count) == 1
    # Part-filled narrow tiles (96 or 100 rows) measured no faster: the listed tile.
    for m in (96, 100):
        assert registry.pick_config(spec, H100, Problem(m, 4096, 4096)).name == "64x128pp"
    # Narrow tiles under a third of a wave (64 x 2048: 32 of them) keep the listed tile, which
    # splits K.
    assert registry.pick_config(spec, H100, Problem(64, 2048, 4096)).name == "64x128pp"
    # Small grids whose 64x128 tiles would run whole with over half the SMs idle, any row count
    # (H100, % of torch.mm: 512^3 97 against 88 for 32x64s, 640^3 101 against 72, 576^3 98
    # against 70, 256 x 1024 x 1024 91 against 85 for 64x128pp; NOTES.md, "Small grids take
    # narrow tiles").
    for shape in ((256, 256, 256), (512, 512, 512), (504, 504, 504), (640, 640, 640), (2048, 256, 256),
                  (256, 1024, 1024), (1024, 512, 1024), (64, 1024, 1024)):
        chosen = registry.pick_config(spec, H100, Problem(*shape))
        assert chosen == narrow, shape
        assert registry.split_k(spec, chosen, *shape, H100.sm_count) == 1
    # ... but not where the 64x128 tiles cover half the SMs (768^3: 72 of them; 1000^3 takes
    # their cluster twin) or would split a deep K (256 x 1024 x 4096: 4 slices).
    for shape in ((768, 768, 768), (1024, 1024, 1024), (256, 1024, 4096), (512, 512, 8192)):
        assert not registry.pick_config(spec, H100, Problem(*shape)).narrow, shape
    # More rows than NARROW_MAX_M, or few enough for the swap tiles: never narrow.
    above = Problem(registry.NARROW_MAX_M + 1, 2048, 4096)
    assert registry.pick_config(spec, H100, above).name == "64x128pp"
    assert registry.pick_config(spec, H100, Problem(16, 4096, 4096)).name == "16x128s"
    # Grouped launches (zoo.bmm) keep the wave-cost choice.
    group = (Problem(128, 4096, 4096),) * 2
    assert not registry.pick_config(spec, H100, group[0], group).narrow
    # The flag is data: a config file may mark any tile narrow, and it must be 0 or 1.
    with pytest.raises(ZooError, match="narrow"):
        cfgs.parse("bad", {**{k: v for k, v in vars(narrow).items() if k != "name"}, "narrow": 2})


def test_b_rows_off_32_byte_sectors_take_the_configs_cluster_twin():
    spec = registry.SM90_GEMM
    # 3000 fp16 columns: 6000-byte rows, 16 bytes off a sector; 384 tiles of 128x192 fill a wave.
    assert registry.b_rows_off_sectors(Problem(3000, 3000, 3000))
    assert registry.pick_config(spec, H100, Problem(3000, 3000, 3000)).name == "128x192ppc2"
    assert registry.pick_config(spec, H100, Problem(8192, 1000, 8192)).name == "128x256c2"
    # The same B in rows padded to 3008 elements, or 3008 columns: the tile itself.
    assert registry.pick_config(spec, H100, Problem(3000, 3000, 3000, ldb=3008)).name == "128x192pp"
    assert registry.pick_config(spec, H100, Problem(3000, 3008, 3000)).name == "128x192pp"
    # Under a wave too, where the tiles cover half the SMs (H100: 1536 x 1000 x 4096 72% -> 86%
    # of torch.mm, 1000^3 81% -> 90%), not below that (500 x 1000 x 1000: 69% -> 66%), nor with
    # one tile row (the pair's second CTA would have no rows).
    assert registry.pick_config(spec, H100, Problem(1536, 1000, 4096)).name == "128x128c2"
    assert registry.pick_config(spec, H100, Problem(1000, 1000, 1000)).name == "64x128ppc2"
    # (500 x 1000 x 1000 takes the narrow tile, no twin: 64x64pp 85.6% against 85.8% for 64x128pp.)
    assert registry.pick_config(spec, H100, Problem(500, 1000, 1000)).cluster_size == 1
    assert registry.b_rows_off_sectors(Problem(64, 9000, 4096))
    assert registry.pick_config(spec, H100, Problem(64, 9000, 4096)).cluster_size == 1
    # 12000-byte rows are on sectors, and so are B rows narrower than one 128-byte box row.
    assert not registry.b_rows_off_sectors(Problem(6000, 6000, 6000))
    assert not registry.b_rows_off_sectors(Problem(4096, 40, 4096))
    # A grouped launch keeps its listed choice; the sm80 kernel has no clusters.
    assert registry.pick_config(spec, H100, Problem(3000, 3000, 3000), (Problem(3000, 3000, 3000),) * 2).cluster_size == 1
    assert registry.pick_config(registry.SM80_GEMM, arch.offline("sm_80"), Problem(3000, 3000, 3000)).cluster_size == 1


def test_persistent_grid_is_capped_by_resident_clusters():
    spec, cfg = registry.SM90_GEMM, registry.SM90_GEMM.config("128x256c2")
    # 4096^2: 16 x 16 tiles, stacked in pairs along M: 128 stacks; 66 resident clusters of 2.
    assert spec.grid(cfg, 4096, 4096, 66) == (132, 1, 1)
    # An odd number of M tiles still gives whole clusters.
    assert spec.grid(cfg, 129, 256, 66) == (2, 1, 1)
    assert registry.SM75_HGEMM.grid(registry.SM75_HGEMM.config("64x64"), 129, 256, 66) == (12, 1, 1)


def test_two_dimensional_clusters_stack_tiles_in_m_and_n_and_cut_the_tma_boxes_into_shares():
    spec = registry.SM90_GEMM
    cfg = replace(spec.config("128x192pp"), cluster_m=2, cluster_n=2)
    # 768 x 768: 6 x 4 tiles in stacks of 2 x 2; an odd count in either dimension rounds up.
    assert registry.stacks(cfg, 768, 768) == 6
    assert registry.stacks(cfg, 769, 769) == 4 * 3  # 7 x 5 tiles
    # Ten of them: 60 units on 33 resident clusters of 4 CTAs.
    assert spec.grid(cfg, 768, 768, 33, batch=10) == (132, 1, 1)
    assert spec.grid(cfg, 128, 192, 33) == (4, 1, 1)
    # Each CTA multicasts 1/cluster_n of A's 128 rows and 1/cluster_m of B's 64 K rows.
    assert spec.tma_boxes(cfg, 2) == ((64, 64), (32, 64), (64, 64))
    assert spec.tma_boxes(replace(cfg, cluster_m=4, cluster_n=1), 4) == ((128, 64), (16, 64), (64, 32))
    assert cfg.describe().endswith("cluster 2x2, ping-pong consumers")
    assert spec.defines(cfg)["ZOO_CLUSTER_N"] == 2


def test_split_k_only_under_one_wave_and_never_an_empty_slice():
    spec = registry.SM90_GEMM
    small, big = spec.config("128x128"), spec.config("128x256")
    assert registry.split_k(spec, big, 4096, 4096, 4096, 132) == 1            # 512 tiles
    assert registry.split_k(spec, small, 128, 4096, 4096, 132) == 4           # 32 tiles, 64 K-tiles
    assert registry.split_k(spec, small, 128, 4096, 256, 132) == 1            # K too shallow to cut
    assert registry.split_k(spec, small, 128, 4096, 4096, 132, batch=2) == 2  # a batch of 2: 64 tiles
    assert registry.split_k(spec, small, 128, 4096, 4096, 132, batch=5) == 1  # 160 tiles fill the GPU
    assert spec.grid(small, 128, 4096, 132, batch=5) == (132, 1, 1)
    assert spec.grid(small, 128, 4096, 132, splits=2, batch=2) == (128, 1, 1)
    assert registry.split_k(registry.SM80_GEMM, registry.SM80_GEMM.config("64x64"), 64, 64, 8192, 132) == 1
    for k in range(64, 64 * 80, 64 * 3):  # slices of ceil(k_tiles / splits) K-tiles, none empty
        splits = registry.split_k(spec, small, 1, 128, k, 132)
        k_tiles = -(-k // 64)
        per = -(-k_tiles // splits)
        assert (splits - 1) * per < k_tiles and splits <= registry.MAX_SPLITS


def test_pingpong_tiles_for_grids_of_several_waves_at_no_more_wave_cost():
    spec, lim = registry.SM90_GEMM, arch.offline("sm_90a")

    def pick(m, n, k):
        return registry.pick_config(spec, lim, Problem(m, n, k)).name
    # 2752 tiles of 128x192 in 21 waves: less tile area per SM than 2048 of 128x256 in 16.
    assert pick(8192, 8192, 8192) == "128x192pp"
    assert pick(6144, 6144, 6144) == pick(1024, 11008, 4096) == "128x192pp"  # equal wave cost
    # 128x192 would take 6 waves where 128x256 takes 4: 12.5% more area per SM (within the slack).
    assert pick(4096, 4096, 4096) == pick(4096, 11008, 4096) == "128x256"
    # 128x128pp costs no more than 128x256 at 4096^3 but is half its area: not taken.
    big, narrow = spec.config("128x256"), spec.config("128x128pp")
    p = Problem(4096, 4096, 4096)
    assert registry.wave_cost(spec, narrow, lim, p) <= registry.wave_cost(spec, big, lim, p)
    assert pick(128, 11008, 4096) == "128x128"  # under one wave: split-K's, untouched
    # Over a short K (at most 32 K-tiles) the half-size ping-pong tile for one GEMM on 128x256,
    # at any number of waves and at one (measured, SHORT_K_TILES); a deep K amortizes the
    # epilogues.
    assert pick(8192, 1024, 1024) == pick(1024, 8192, 1024) == pick(8192, 1024, 2048) == "128x128pp"
    assert pick(2048, 2048, 2048) == pick(2048, 8192, 2048) == pick(16384, 4096, 2048) == "128x128pp"
    assert pick(8192, 1024, 4096) == pick(2048, 2048, 8192) == "128x256"
    assert pick(1024, 2048, 2048) == "128x128"  # its wave cost's choice (not the first config): kept
    # A grouped launch keeps the first bound (one to two waves): 8 x 128 tiles of 128x256 is 7.8.
    group = (Problem(2048, 2048, 2048),) * 8
    assert registry.pick_config(spec, lim, group[0], group).name == "128x256"
    # Rows off 32-byte sectors keep the cooperative tile's 2-CTA twin past two waves (measured
    # faster: 8192 x 1000 x 4096 99.2% of torch.mm against 88.5% on 128x128ppc2).
    assert pick(16384, 1000, 2048) == "128x256c2"
    # The convolution build was not measured with it: its choice stays the wave cost's.
    conv, p = registry.SM90_CONV, Problem(8192, 8192, 8192)
    cooperative, pingpong = conv.config("128x256"), conv.config("128x192pp")
    costs = {c: registry.wave_cost(conv, c, lim, p) for c in (cooperative, pingpong)}
    assert costs[pingpong] <= costs[cooperative]
    assert registry.pingpong_choice(conv, [cooperative, pingpong], costs, lim, p, cooperative) is cooperative


def test_stream_k_only_for_a_part_filled_last_wave_with_runs_deep_enough():
    spec = registry.SM90_GEMM
    big = spec.config("128x256")
    assert registry.stream_k_tiles(spec, big, 8192, 8192, 8192, 132) == 68       # 2048 tiles: 15 waves + 68
    assert registry.stream_k_tiles(spec, big, 4096, 4096, 4096, 132) == 0        # 3 waves + 116: measured slower
    assert registry.stream_k_tiles(spec, big, 4096, 4096, 4096, 128) == 0        # 4 whole waves
    assert registry.stream_k_tiles(spec, big, 1024, 4096, 4096, 132) == 0        # under one wave: split-K's
    assert registry.stream_k_tiles(spec, big, 2048, 4096, 4096, 132) == 0        # 124 of 132: little to gain
    assert registry.stream_k_tiles(spec, big, 2304, 2048, 256, 132) == 0         # 12 tiles x 4 K-tiles: runs too short
    assert registry.stream_k_tiles(spec, big, 2304, 2048, 8192, 132) == 12       # x 128 K-tiles: runs of 11-12
    assert registry.stream_k_tiles(spec, big, 1024, 1024, 4096, 132, batch=5) == 28  # a batch's tiles count together
    # Only configs built with it, never in clusters.
    assert registry.stream_k_tiles(spec, spec.config("128x192pp"), 4096, 4096, 4096, 132) == 0
    assert registry.stream_k_tiles(spec, spec.config("128x256c2"), 4096, 4096, 4096, 66) == 0
    # The kernel's run arithmetic is int32: tail x K-tiles x (CTAs + 1) must fit.
    assert registry.stream_k_tiles(spec, big, 128 * 202, 256, 2**24, 132) == 0   # 70 x 2^18 x 133 > 2^31
    assert registry.stream_k_tiles(spec, big, 128 * 202, 256, 2**16, 132) == 70


@pytest.mark.parametrize("cc, tf32, expected", [
    ((7, 5), False, "sm75_sgemm_simt"), ((7, 5), True, "sm75_sgemm_simt"),
    ((8, 0), True, "sm75_sgemm_simt"), ((12, 0), True, "sm75_sgemm_simt"),
    # TF32 tensor cores only where the problem allows rounding (torch's allow_tf32)
    ((9, 0), False, "sm75_sgemm_simt"), ((9, 0), True, "sm90_gemm_tf32"),
])
def test_fp32_goes_to_simt_unless_tf32_is_allowed(cc, tf32, expected):
    spec, cfg = registry.select(limits_for(cc), Problem(4096, 4096, 4096, "float32", "float32", tf32))
    assert spec.name == expected and cfg in spec.configs


def test_the_tf32_kernel_must_be_allowed_to_round():
    with pytest.raises(ZooError, match="sm90_gemm_tf32 rounds fp32 inputs to TF32; allow it"):
        registry.select(H100, Problem(64, 64, 64, "float32", "float32"), kernel_name="sm90_gemm_tf32")
    with pytest.raises(ZooError, match="no kernel for float32 -> float16"):
        registry.select(H100, Problem(64, 64, 64, "float32", "float16", True))
    # fp16 problems never reach the fp32 kernels
    assert registry.select(H100, Problem(64, 64, 64, tf32=True))[0].name == "sm90_gemm_tma_wgmma"


def test_split_k_only_fills_one_wave():
    """Split-K cuts only grids under one wave, to fill it: 86 tiles of 1 x 11008 on 132 SMs stay
    whole (a 3-way split measured slower once M fills the tile's rows), 32 tiles take 4 slices."""
    spec = registry.SM90_GEMM
    pp = spec.config("64x128pp")
    assert registry.split_k(spec, pp, 1, 11008, 4096, 132) == 1
    assert registry.split_k(spec, pp, 16, 4096, 4096, 132) == 4      # 32 tiles: 128 units
    assert registry.split_k(spec, spec.config("128x128"), 1024, 1024, 1024, 132) == 2  # 16 K-tiles: 2 x 8


def test_split_k_model_follows_the_h100_measurements():
    """The slice count of least modeled time (the split's fixed cost, one CTA's streaming rate,
    DRAM's) is the one measured fastest on an H100 (NOTES.md, "The split-K tail"; us, forced
    counts side by side): a short K whole, few tiles over a deep K cut until DRAM is busy."""
    spec = registry.SM90_GEMM
    swap, pp = spec.config("16x128s"), spec.config("64x128pp")
    cases = [(swap, (1, 4096, 1024), 1),    # whole 8.8, 2 slices 10.8
             (swap, (1, 4096, 2048), 1),    # 12.4, against 13.0-15.3
             (swap, (1, 4096, 8192), 2),    # 29.2, whole 30.7
             (pp, (32, 4096, 4096), 2),     # 20.0, 4 slices 20.8, 8 22.1
             (pp, (64, 2048, 4096), 4),     # 14.9, 2 slices 16.4, 8 16.8
             (pp, (500, 1000, 1000), 1),    # 10.6, 2 slices 12.8
             (pp, (64, 1024, 1024), 1)]     # 7.4, 2 slices 8.7
    for cfg, shape, splits in cases:
        assert registry.split_k(spec, cfg, *shape, H100.sm_count, dram_gbps=H100.dram_gbps) == splits, (cfg.name, shape)
    deep = registry.split_k(spec, swap, 16, 1024, 4096, H100.sm_count, dram_gbps=H100.dram_gbps)
    assert deep >= 4                        # 8 tiles: 4 slices 11.1, 8 10.8; 2 slices 13.9, whole 17.6
    # Without the fixed cost or a DRAM bound the model fills the SMs, as the rule before it did;
    # with DRAM's, it stops where DRAM is busy.
    free = replace(spec, split_k_cost_us=0.0)
    assert registry.split_k(free, swap, 1, 4096, 2048, H100.sm_count) == 4
    assert registry.split_k(free, swap, 1, 4096, 2048, H100.sm_count, dram_gbps=H100.dram_gbps) == 2


def test_side_by_side_grids_take_their_share_of_the_gpu():
    """A grid among several launched side by side gets the clusters that walk its units at the
    rate one persistent grid of them all would: 10 x 24 tiles on 132 SMs, two a CTA, 12 CTAs a
    grid (120 resident at once); a batch under one wave keeps a CTA per unit; a grid never
    gets more than the GPU holds, nor none."""
    assert registry.shared_clusters(24, 240, 132) == 12
    assert 10 * registry.shared_clusters(24, 240, 132) <= 132
    assert registry.shared_clusters(24, 120, 132) == 24
    assert registry.shared_clusters(7, 240 + 7, 132) == 4       # 2 units a CTA: 4 CTAs for 7
    assert registry.shared_clusters(500, 500, 132) == 125       # 4 units a CTA, as 132 CTAs would walk
    assert registry.shared_clusters(5000, 5000, 132) == 132
    assert registry.shared_clusters(1, 10_000, 132) == 1


def test_dependent_launch_only_for_waiting_kernels_on_problems_that_fit_l2():
    """Programmatic dependent launch where it measured faster (NOTES.md): a kernel that waits
    for the grid before it (spec.pdl), on a problem whose operands and result fit in L2."""
    h100 = arch.offline("sm_90a")
    fits = (128 * 4096 + 4096 * 4096 + 128 * 4096) * 2        # 128 x 4096 x 4096 fp16: 34 MB
    streams = (128 * 4096 + 4096 * 11008 + 128 * 11008) * 2   # 128 x 11008 x 4096: 94 MB
    assert registry.SM90_GEMM.pdl and not registry.SM80_GEMM.pdl
    assert registry.dependent_launch(registry.SM90_GEMM, h100, fits)
    assert not registry.dependent_launch(registry.SM90_GEMM, h100, streams)
    assert not registry.dependent_launch(registry.SM80_GEMM, h100, fits)
