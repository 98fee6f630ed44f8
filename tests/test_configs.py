"""The one config validator: shipped configs pass, bad ones fail with every reason named."""
from dataclasses import replace

import pytest

from zoo import ConfigError, arch, configs, registry

SPEC = registry.SM75_HGEMM
GOOD = SPEC.config("128x128")


@pytest.mark.parametrize("spec", registry.KERNELS, ids=lambda k: k.name)
def test_every_shipped_config_fits_some_arch_it_targets(spec):
    for cfg in spec.configs:
        fits = [a for a in spec.offline_archs if not configs.problems(cfg, spec, arch.offline(a))]
        assert fits, f"{spec.name} / {cfg.name} fits none of {spec.offline_archs}"


@pytest.mark.parametrize("target", arch.OFFLINE_ARCHS)
def test_the_sm75_defaults_fit_every_arch(target):
    lim = arch.offline(target)
    assert configs.problems(GOOD, SPEC, lim) == []
    assert configs.problems(SPEC.config("64x64"), SPEC, lim) == []


@pytest.mark.parametrize("change, message", [
    (dict(warp_m=48), "not a whole number of 48x64 warp tiles"),
    (dict(warp_n=40, block_n=80), "not a multiple of the 16x16 MMA shape"),
    (dict(block_k=24), "block_k 24 is not a multiple of the MMA k"),
    (dict(threads=256), "threads 256 != 32 x 4 warps"),
    (dict(stages=4), "stages 4 not supported"),
    (dict(block_k=48), "block_k 48 must be 32 or 64"),
    (dict(block_n=96, warp_n=48), "multiple of 64"),
])
def test_bad_configs_are_rejected_with_the_reason(change, message):
    bad = replace(GOOD, **change)
    with pytest.raises(ConfigError, match=message):
        configs.validate(bad, SPEC, arch.offline("sm_90a"))


def test_shared_memory_budget_is_per_arch():
    big = replace(GOOD, name="big", block_n=256, block_k=64, threads=256)
    assert SPEC.smem_bytes(big) > 64 * 1024
    with pytest.raises(ConfigError, match=r"needs 104448 B of shared memory per block; Tesla T4 \(sm_75\) allows 65536 B"):
        configs.validate(big, SPEC, arch.offline("sm_75"))
    assert configs.validate(big, SPEC, arch.offline("sm_90a")) is big


def write(tmp_path, text):
    p = tmp_path / "c.yaml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("text, message", [
    ("configs: {a: {block_m: 64}}", "missing field"),
    ("configs: {a: {block_m: 64, block_n: 64, block_k: 32, warp_m: 32, warp_n: 32, stages: 2, threads: 128, tile: 3}}", "unknown field"),
    ("configs: {a: {block_m: -64, block_n: 64, block_k: 32, warp_m: 32, warp_n: 32, stages: 2, threads: 128}}", "must be positive integers"),
    ("configs: {a: {block_m: '64', block_n: 64, block_k: 32, warp_m: 32, warp_n: 32, stages: 2, threads: 128}}", "must be positive integers"),
    ("kernels: []", "top-level 'configs:'"),
    ("configs: [1, 2", "cannot read"),
])
def test_malformed_yaml_is_a_clear_error(tmp_path, text, message):
    with pytest.raises(ConfigError, match=message):
        configs.load(write(tmp_path, text))


def test_yaml_round_trip(tmp_path):
    p = write(tmp_path, "configs:\n  t: {block_m: 64, block_n: 64, block_k: 32, warp_m: 32, warp_n: 32, stages: 2, threads: 128}\n")
    (cfg,) = configs.load(p)
    assert cfg == configs.TileConfig("t", 64, 64, 32, 32, 32, 2, 128, 8)
    assert configs.validate(cfg, SPEC, arch.offline("sm_75")) is cfg


def test_sm80_rules_match_the_kernels_static_asserts():
    sm80 = registry.SM80_GEMM
    good = sm80.config("256x128")
    assert configs.problems(good, sm80, arch.offline("sm_80")) == []
    with pytest.raises(ConfigError, match="stages 2 not supported"):
        configs.validate(replace(good, stages=2), sm80, arch.offline("sm_90a"))
    # 4 warps copying a 256-wide B tile (32 chunks a row) cover 4 rows per pass: the swizzle
    # repeats every 8 rows, so the kernel's constant per-pass offset would be wrong.
    with pytest.raises(ConfigError, match="copy 4 B rows per pass; it must be a multiple of the 8-row"):
        configs.validate(replace(good, name="odd", block_m=64, block_n=256, threads=128), sm80,
                         arch.offline("sm_90a"))


@pytest.mark.parametrize("change, message", [
    (dict(block_k=32), "block_k 32 must be 64: one 128-byte swizzled row"),
    (dict(warp_m=192, block_m=384), "warp_m 192 must be 64 or 128"),
    (dict(warp_m=128, block_m=256), "256 fp32 accumulators do not fit the consumers' 232 registers"),
    (dict(warp_n=96, block_n=96), "warp_n 96 must be 64, 128, 192 or 256"),
    (dict(block_m=64, threads=256), "1 consumer warpgroups; the kernel's register split assumes 2"),
    (dict(threads=256), r"threads 256 != 128 x \(1 producer \+ 2 consumer warpgroups\)"),
    (dict(stages=5), r"needs 279648 B of shared memory per block; H100 SXM5 \(sm_90a\) allows 232448 B"),
    (dict(cluster_m=8), "cluster_m 8 not supported"),
    (dict(cluster_n=3), "cluster_n 3 not supported"),
    (dict(cluster_m=4, cluster_n=4), "cluster 4x4 has more than 8 CTAs"),
])
def test_sm90_rules(change, message):
    spec = registry.SM90_GEMM
    with pytest.raises(ConfigError, match=message):
        configs.validate(replace(spec.config("128x256"), **change), spec, arch.offline("sm_90a"))


@pytest.mark.parametrize("change, message", [
    (dict(warp_m=64), r"a ping-pong consumer owns the whole tile: warp tile 64x128 must be the block tile 128x128"),
    (dict(block_m=256, warp_m=256), "with block_m 64 or 128"),
    (dict(warp_n=256, block_n=256), r"256 fp32 accumulators do not fit the consumers' 232 registers"),
])
def test_sm90_pingpong_rules(change, message):
    spec = registry.SM90_GEMM
    with pytest.raises(ConfigError, match=message):
        configs.validate(replace(spec.config("128x128pp"), **change), spec, arch.offline("sm_90a"))


def test_pingpong_is_a_flag_of_the_kernels_that_have_it(tmp_path):
    with pytest.raises(ConfigError, match="sm75_hgemm_wmma has no ping-pong consumers"):
        configs.validate(replace(GOOD, pingpong=1), SPEC, arch.offline("sm_90a"))
    p = write(tmp_path, "configs:\n  t: {block_m: 64, block_n: 64, block_k: 32, warp_m: 32, warp_n: 32, stages: 2, threads: 128, pingpong: 2}\n")
    with pytest.raises(ConfigError, match="pingpong=2 must be 0 or 1"):
        configs.load(p)
    p = write(tmp_path, "configs:\n  t: {block_m: 64, block_n: 64, block_k: 32, warp_m: 32, warp_n: 32, stages: 2, threads: 128, pingpong: 0}\n")
    assert configs.load(p)[0].pingpong == 0
    # Two consumer warpgroups whose slice is the whole tile: 384 threads, C staging for both.
    pp = registry.SM90_GEMM.config("128x128pp")
    assert registry.SM90_GEMM.thread_layout(pp)[0] == 384
    assert registry.SM90_GEMM.smem_bytes(pp) == registry.SM90_GEMM.smem_bytes(registry.SM90_GEMM.config("128x128"))
    assert registry.SM90_GEMM.defines(pp)["ZOO_PINGPONG"] == 1
    assert "ZOO_PINGPONG" not in registry.SM90_GEMM.defines(registry.SM90_GEMM.config("128x128"))


def test_cluster_needs_a_kernel_that_supports_it():
    with pytest.raises(ConfigError, match=r"cluster_m 2 not supported by sm75_hgemm_wmma \(supports \[1\]\)"):
        configs.validate(replace(GOOD, cluster_m=2), SPEC, arch.offline("sm_90a"))


def test_sm90_clusters_cut_k_rows_so_any_number_of_b_boxes_splits():
    # Three 128-byte B boxes over two CTAs: each CTA multicasts 32 of every box's 64 K rows.
    spec = registry.SM90_GEMM
    odd = replace(spec.config("128x256c2"), name="odd", block_n=192, warp_n=192)
    assert configs.problems(odd, spec, arch.offline("sm_90a")) == []
    assert configs.problems(replace(odd, cluster_m=4, cluster_n=2), spec, arch.offline("sm_90a")) == []


@pytest.mark.parametrize("change, message", [
    (dict(warp_n=128, block_n=256), r"a swap-AB consumer's slice is 8, 16, 32 or 64 rows x 64 columns of C"),
    (dict(warp_m=24, block_m=24), r"8, 16, 32 or 64 rows"),
    (dict(pingpong=1), r"\(cooperative consumers\): warp tile 16x64, pingpong 1"),
    (dict(block_m=32, warp_m=32, block_n=64, threads=256), "1 consumer warpgroups; the kernel's register split assumes 2"),
    (dict(cluster_n=4), "block_m 16 / cluster_n 4 is not whole 8-row swizzle atoms"),
])
def test_sm90_swap_ab_rules(change, message):
    spec = registry.SM90_GEMM
    with pytest.raises(ConfigError, match=message):
        configs.validate(replace(spec.config("16x128s"), **change), spec, arch.offline("sm_90a"))


def test_swap_ab_is_a_flag_of_the_kernels_that_have_it(tmp_path):
    # The MMA's M runs along C's columns: the warp tile is checked against the swapped shape.
    sm90 = registry.SM90_GEMM
    swapped = sm90.config("16x128s")
    assert swapped.swap_ab == 1 and "swap-AB" in swapped.describe()
    assert configs.validate(swapped, sm90, arch.offline("sm_90a")) is swapped
    assert sm90.defines(swapped)["ZOO_SWAP_AB"] == 1
    assert "ZOO_SWAP_AB" not in sm90.defines(sm90.config("128x128"))
    for other in (registry.SM90_TF32, registry.SM90_CONV):
        with pytest.raises(ConfigError, match=f"{other.name} has no swap-AB variant"):
            configs.validate(replace(swapped, block_k=other.configs[0].block_k), other, arch.offline("sm_90a"))
    with pytest.raises(ConfigError, match="sm75_hgemm_wmma has no swap-AB variant"):
        configs.validate(replace(GOOD, swap_ab=1), SPEC, arch.offline("sm_90a"))
    p = write(tmp_path, "configs:\n  t: {block_m: 64, block_n: 64, block_k: 32, warp_m: 32, warp_n: 32, stages: 2, threads: 128, swap_ab: 2}\n")
    with pytest.raises(ConfigError, match="swap_ab=2 must be 0 or 1"):
        configs.load(p)
    # C's TMA box is a consumer's rows when fewer than 64: a box must not reach the next tile.
    assert sm90.tma_boxes(swapped, 2) == ((16, 64), (64, 64), (16, 64))
    assert sm90.tma_boxes(sm90.config("64x64s"), 4) == ((64, 64), (64, 64), (32, 32))
    assert sm90.tma_boxes(sm90.config("128x128"), 2)[2] == (64, 64)


def test_stream_k_is_a_flag_of_the_kernels_that_have_it():
    sm90 = registry.SM90_GEMM
    big = sm90.config("128x256")
    assert big.stream_k == 1 and "stream-K" in big.describe()
    assert sm90.defines(big)["ZOO_STREAM_K"] == 1
    assert "ZOO_STREAM_K" not in sm90.defines(sm90.config("128x192pp"))
    with pytest.raises(ConfigError, match="stream-K runs without clusters"):
        configs.validate(replace(big, cluster_m=2), sm90, arch.offline("sm_90a"))
    for other in (registry.SM90_TF32, registry.SM90_CONV):
        with pytest.raises(ConfigError, match=f"{other.name} has no stream-K scheduler"):
            configs.validate(replace(other.configs[0], stream_k=1), other, arch.offline("sm_90a"))
