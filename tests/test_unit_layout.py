"""The sm90 scheduler's unit decoding: the multipliers the host works out (Divisor) divide
exactly, and the layout it packs (unit_layout) decodes every unit to the tile, matrix and K
slice the plain divisions gave (Scheduler::tile_work before the multipliers)."""

import random

import pytest

from zoo import registry
from zoo.specs.sm90_wgmma import Divisor, unit_layout


def test_divisor_divides_exactly_over_the_kernel_range():
    rng = random.Random(0)
    divisors = list(range(1, 257)) + [rng.randrange(1, 2 ** 31) for _ in range(500)] + [2 ** 30, 2 ** 31 - 1]
    for d in divisors:
        div = Divisor.of(d)
        assert 0 < div.mul < 2 ** 32
        numerators = list(range(0, 3 * d + 2)) if d < 64 else []
        numerators += [rng.randrange(0, 2 ** 31) for _ in range(200)] + [2 ** 31 - 1, d - 1, d, d + 1]
        for n in numerators:
            if 0 <= n < 2 ** 31:
                assert div.div(n) == n // d, (d, n)


@pytest.mark.parametrize("d", [0, -3, 2 ** 31])
def test_divisor_refuses_what_the_kernel_cannot_take(d):
    with pytest.raises(ValueError):
        Divisor.of(d)


def _plain_decode(cfg, m, n, k, splits, unit):
    """Scheduler::tile_work as it was: signed divisions and zoo::grouped_tile."""
    stacks_m, stacks_n = -(-m // (cfg.block_m * cfg.cluster_m)), -(-n // (cfg.block_n * cfg.cluster_n))
    k_tiles = -(-k // cfg.block_k)
    k_per_split = -(-k_tiles // splits)
    per_matrix = stacks_m * stacks_n * splits
    matrix, in_matrix = divmod(unit, per_matrix)
    split, pid = in_matrix % splits, in_matrix // splits
    group_m = max(1, cfg.group_m // cfg.cluster_m)
    per_group = group_m * stacks_n
    first_m = pid // per_group * group_m
    rows = min(stacks_m - first_m, group_m)
    stack_m, stack_n = first_m + pid % per_group % rows, pid % per_group // rows
    begin = split * k_per_split
    return matrix, stack_m, stack_n, split, begin, min(k_tiles, begin + k_per_split)


def _fast_decode(cfg, m, n, k, splits, unit):
    """Scheduler::decode<true> with the packed layout, step by step."""
    lay = unit_layout(cfg, m, n, k, splits)
    stacks_m = -(-m // (cfg.block_m * cfg.cluster_m))
    group_m = max(1, cfg.group_m // cfg.cluster_m)
    matrix = lay.per_matrix.div(unit)
    in_matrix = unit - matrix * lay.per_matrix.d
    stack = lay.splits.div(in_matrix)
    split = in_matrix - stack * lay.splits.d
    group = lay.per_group.div(stack)
    in_group = stack - group * lay.per_group.d
    first_m = group * group_m
    if first_m + group_m <= stacks_m:
        stack_m, stack_n = first_m + in_group % group_m, in_group // group_m
    else:
        stack_n = lay.last_rows.div(in_group)
        stack_m = first_m + in_group - stack_n * lay.last_rows.d
    begin = split * lay.k_per_split
    return matrix, stack_m, stack_n, split, begin, min(-(-k // cfg.block_k), begin + lay.k_per_split)


@pytest.mark.parametrize("config", ["128x256", "128x192ppc2", "128x192ppc2x2", "32x64s", "64x64pp"])
@pytest.mark.parametrize("m,n,k,splits,batch", [
    (512, 512, 512, 1, 1), (3000, 3000, 3000, 1, 1), (16, 11008, 4096, 4, 1), (1000, 1000, 1000, 3, 1),
    (768, 768, 1024, 1, 10), (8192, 8192, 8192, 1, 1), (1, 64, 64, 1, 3), (4096, 4096, 4096, 1, 1),
])
def test_unit_layout_decodes_every_unit_as_plain_divisions_did(config, m, n, k, splits, batch):
    cfg = registry.SM90_GEMM.config(config)
    units = -(-m // (cfg.block_m * cfg.cluster_m)) * -(-n // (cfg.block_n * cfg.cluster_n)) * splits * batch
    assert unit_layout(cfg, m, n, k, splits).per_matrix.d * batch == units  # the kernel's unit count
    step = max(1, units // 4000)  # the big grids: a sample of units, both ends included
    for unit in sorted(set(range(0, units, step)) | {units - 1}):
        assert _fast_decode(cfg, m, n, k, splits, unit) == _plain_decode(cfg, m, n, k, splits, unit), unit


def test_unit_layout_packs_as_the_kernel_reads_it():
    # zoo_sm90::UnitLayout: four 12-byte Divisors, then k_per_split (static_assert in the kernel).
    from ctypes import sizeof
    lay = unit_layout(registry.SM90_GEMM.config("128x256"), 4096, 4096, 4096, 1)
    assert sizeof(lay) == 52
    assert (lay.per_matrix.d, lay.splits.d, lay.per_group.d, lay.last_rows.d, lay.k_per_split) == (512, 1, 128, 8, 64)


@pytest.mark.parametrize("config", ["32x64s", "64x128pp", "128x192pp"])
def test_one_gemm_entry_decodes_units_without_an_integer_division(config):
    """The multipliers replace every division of the unit decoding (I2F.RP starts the
    compiler's integer division); the grouped entry still divides plainly. Configs without
    stream-K, whose tail arithmetic divides by the grid size."""
    from zoo import cuda, sass
    spec = registry.SM90_GEMM
    cubin = cuda.compile_cubin(spec.source, "sm_90a", spec.defines(spec.config(config)))
    one = sass.function_sass(cubin.image, spec.entry[("float16", "float16")])
    grouped = sass.function_sass(cubin.image, spec.entry[("float16", "float16")] + "_grouped")
    assert "I2F.U32.RP" not in one and "I2F.RP" not in one
    assert "I2F.U32.RP" in grouped  # the check can see a division where there is one
