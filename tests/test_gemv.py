"""The streaming kernel for skinny GEMMs (kernels/sm75/gemv_stream.cu): where the registry sends
a problem, how a launch's K is sliced (CPU), and its results on the GPU: row groups, column and
K tails, many slices, both dtypes, counters left at zero, the same sum every call, graphs."""
import pytest
import torch

import zoo
from zoo import arch, bench, configs, gemm, registry
from zoo.registry import Problem

GEMV = registry.SM75_GEMV


@pytest.mark.parametrize("target", ["sm_75", "sm_80"])
def test_skinny_gemms_go_to_the_streaming_kernel_without_swap_ab_tiles(target):
    lim = arch.offline(target)
    for m in range(1, registry.SKINNY_MAX_M + 1):
        for dtype, out in (("float16", "float16"), ("float16", "float32")):
            spec, cfg = registry.select(lim, Problem(m, 4096, 4096, dtype, out))
            assert spec is GEMV and cfg.block_m == min(c.block_m for c in GEMV.configs if c.block_m >= m)
    tile = registry.select(lim, Problem(registry.SKINNY_MAX_M + 1, 4096, 4096))[0]
    assert tile is not GEMV and not tile.max_m


def test_what_the_streaming_kernel_is_not_chosen_for():
    for m in (1, 8):  # Hopper's swap-AB tiles measured as fast (NOTES.md)
        spec, cfg = registry.select(arch.offline("sm_90a"), Problem(m, 4096, 4096))
        assert spec is registry.SM90_GEMM and cfg.swap_ab
    lim = arch.offline("sm_80")
    assert registry.select(lim, Problem(1, 4095, 4096))[0] is registry.SM80_GEMM       # N off 8-column chunks
    assert registry.select(lim, Problem(1, 4096, 4096, ldb=4100))[0] is registry.SM80_GEMM  # B rows off 16 bytes
    assert registry.select(lim, Problem(1, 4096, 4096, ldb=4104))[0] is GEMV
    assert registry.select(lim, Problem(1, 4096, 4096, "float32", "float32"))[0] is registry.SM75_SGEMM
    group = (Problem(1, 4096, 4096), Problem(1, 4096, 4096))
    assert registry.select(lim, group[0], group=group)[0] is registry.SM80_GEMM    # grouped launches
    assert registry.select(lim, Problem(1, 4096, 4096), op="conv")[0].op == "conv"
    assert registry.select(lim, Problem(1, 4096, 4096), config_name="64x64")[0] is registry.SM80_GEMM
    # bf16 needs CC 8.0 for the tile kernels; the streaming kernel does not take it past that rule.
    with pytest.raises(zoo.ZooError, match="no kernel"):
        registry.select(arch.offline("sm_75"), Problem(1, 4096, 4096, "bfloat16", "bfloat16"))


def test_the_streaming_kernel_waits_but_does_not_chain():
    """It waits for the grid before it on sm_90 (pdl), but takes no `independent` argument:
    the streams mode gives it a stream per GEMM, not two chains of GEMMs started under one
    another (which only the sm90 kernel can run)."""
    from zoo import batched
    assert GEMV.pdl and not GEMV.chains and registry.SM90_GEMM.chains
    assert batched.stream_count(None, 10, GEMV.chains) == 10
    assert batched.stream_count(None, 10, registry.SM90_GEMM.chains) == batched.CHAINED_STREAMS


def test_hopper_decodes_one_row_against_a_small_weight_on_narrow_blocks():
    """sm_90: the narrow K-major blocks for one row of x @ W^T against a weight of at most
    DECODE_MAX_B_BYTES (measured faster than the swap-AB tiles there, NOTES.md); more rows, a
    larger weight or a row-major B keep the swap-AB tiles."""
    lim = arch.offline("sm_90a")
    for n, k in ((2048, 2048), (512, 2048), (4096, 1024)):
        spec, cfg = registry.select(lim, Problem(1, n, k, "bfloat16", "bfloat16", b_col=True))
        assert spec is GEMV and cfg.name == "1x8", (n, k)
    assert 8192 * 2048 * 2 > registry.DECODE_MAX_B_BYTES
    for problem in (Problem(1, 8192, 2048, b_col=True), Problem(2, 2048, 2048, b_col=True), Problem(1, 2048, 2048)):
        spec, cfg = registry.select(lim, problem)
        assert spec is registry.SM90_GEMM and cfg.swap_ab, problem


def test_a_narrow_block_is_built_for_a_k_major_b_only():
    """The 1x8 config: valid on every arch, no shared memory, built (and chosen) only for a
    K-major B; named for a row-major B it is a ZooError, not a failed compile."""
    narrow = GEMV.config("1x8")
    for target in GEMV.offline_archs:
        assert not configs.problems(narrow, GEMV, arch.offline(target))
    assert GEMV.smem_bytes(narrow) == 0 and registry.layouts_of(GEMV, narrow) == ("row x col",)
    assert not registry.serves(GEMV, narrow, Problem(1, 64, 64)) and registry.serves(GEMV, narrow, Problem(1, 64, 64, b_col=True))
    assert registry.select(arch.offline("sm_80"), Problem(1, 2048, 2048))[1].name == "1x256"  # row-major B
    x, w = torch.zeros(1, 1024, dtype=torch.float16), torch.zeros(2048, 1024, dtype=torch.float16)
    assert gemm.read_in_place(GEMV, narrow, x, w.t()) == (False, True)
    with pytest.raises(zoo.ZooError, match="K-major only"):
        gemm.read_in_place(GEMV, narrow, x, w.t().contiguous())
    bad = configs.TileConfig(name="1x16", block_m=1, block_n=16, block_k=4096, warp_m=1, warp_n=16, stages=2, threads=96)
    assert any("whole number of columns per warp" in p for p in configs.problems(bad, GEMV, arch.offline("sm_80")))


@pytest.mark.parametrize("target", ["sm_75", "sm_80"])
def test_a_linear_weight_read_in_place_sends_few_rows_to_the_streaming_kernel(target):
    """x @ W^T with W (N, K) row-major, as torch.nn.Linear computes it: where no swap-AB tiles
    serve skinny M, the streaming kernel's K-major build reads W in place for 1-8 rows, whatever
    N (no 8-column rule: it reads along K), one row on a narrow block; more rows take tiles."""
    lim = arch.offline(target)
    for m in (1, 3, registry.SKINNY_MAX_M):
        assert registry.select(lim, Problem(m, 2048, 2048, b_col=True))[0] is GEMV
        assert registry.select(lim, Problem(m, 4095, 4104, b_col=True))[0] is GEMV  # no 8-column rule
    assert registry.select(lim, Problem(1, 2048, 2048, b_col=True))[1].name == "1x8"
    assert registry.select(lim, Problem(2, 2048, 2048, b_col=True))[1].name == "2x256"
    assert registry.select(lim, Problem(registry.SKINNY_MAX_M + 1, 2048, 2048, b_col=True))[0] is not GEMV
    w = torch.zeros(2048, 1024, dtype=torch.float16)  # W of Linear(1024, 2048)
    x = torch.zeros(1, 1024, dtype=torch.float16)
    for cfg in GEMV.configs:
        assert gemm.read_in_place(GEMV, cfg, x, w.t()) == (False, True)


def test_the_streaming_kernel_is_a_candidate_for_few_rows_only():
    names = lambda m: [k.name for k in registry.eligible((8, 0), Problem(m, 4096, 4096))]  # noqa: E731
    assert GEMV.name in names(GEMV.max_m) and GEMV.name not in names(GEMV.max_m + 1)
    assert GEMV in registry.eligible((8, 0))  # every kernel that runs, with no problem given


def test_named_streaming_kernel_takes_the_config_that_holds_m():
    lim = arch.offline("sm_80")
    for m, rows in ((1, 1), (2, 2), (3, 4), (5, 8), (8, 8), (9, 8), (4096, 8)):
        assert registry.select(lim, Problem(m, 512, 512), kernel_name=GEMV.name)[1].block_m == rows


@pytest.mark.parametrize("cfg", GEMV.configs, ids=lambda c: c.name)
def test_stream_splits_cover_k_in_whole_rounds(cfg):
    warps = cfg.threads // 32
    for m, n, k, resident in ((1, 4096, 4096, 528), (1, 11008, 4096, 528), (8, 4096, 11008, 264),
                              (1, 8, 1, 528), (1, 256, 100_000, 160), (3, 40, 7, 80), (1, 4096, 64, 528)):
        splits, per = registry.stream_splits(cfg, m, n, k, resident)
        assert per % warps == 0 and per <= cfg.block_k
        assert (splits - 1) * per < k <= splits * per, "no empty slice, none missing"
        blocks = -(-n // cfg.block_n) * -(-m // cfg.block_m)
        if splits > -(-k // cfg.block_k):  # more slices than the deepest allow: only to fill the GPU,
            assert splits * blocks <= resident       # in one wave, no slice shallower than the floor asks
            assert splits <= -(-k // registry.STREAM_MIN_SLICE)


def test_stream_splits_without_room_to_fill_and_past_the_grid():
    cfg = GEMV.config("1x256")
    assert registry.stream_splits(cfg, 1, 4096, 4096, 0) == (8, 512)      # sharing the GPU: block_k's count
    assert registry.stream_splits(cfg, 1, 4096, 65, 10_000) == (2, 40)     # at most ceil(K / 64) slices
    deepest = registry.MAX_GRID_Y * cfg.block_k
    assert registry.stream_splits(cfg, 1, 8, deepest, 0)[0] == registry.MAX_GRID_Y
    with pytest.raises(zoo.ZooError, match="the grid holds 65535"):
        registry.stream_splits(cfg, 1, 8, deepest + 1, 0)


def test_streaming_configs_are_checked_by_the_one_validator():
    lim = arch.offline("sm_75")
    bad = configs.parse("x", {"block_m": 9, "block_n": 512, "block_k": 500, "warp_m": 9, "warp_n": 512,
                              "stages": 8, "threads": 256})
    found = " ".join(configs.problems(bad, GEMV, lim))
    assert "block_n must be 256" in found and "block_m 9" in found
    bad = configs.parse("y", {"block_m": 1, "block_n": 256, "block_k": 500, "warp_m": 1, "warp_n": 256,
                              "stages": 8, "threads": 256})
    assert any("multiple of the 8 warps" in p for p in configs.problems(bad, GEMV, lim))


# ---------------------------------------------------------------------------------- on the GPU

def rand(*shape, gen, dtype=torch.float16):
    return torch.randn(*shape, device="cuda", dtype=dtype, generator=gen)


def check(a, b, out_dtype, **kw):
    out = torch.full((a.shape[0], b.shape[1]), float("nan"), device="cuda", dtype=out_dtype)
    assert zoo.mm(a, b, out=out, **kw) is out
    res = bench.verify(a, b, out)
    assert res.ok, f"{kw} {tuple(a.shape)}x{tuple(b.shape)} -> {out_dtype}: {res.describe()}"
    return out


def _needs_gpu():
    lim = gemm.device_limits(torch.cuda.current_device())
    if not GEMV.runs_on(lim.cc):
        pytest.skip(f"{GEMV.name} runs on CC {GEMV.eligible_ccs()}")
    return lim


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_streaming_kernel_rows_tails_and_slices(dtype):
    """M of 1-9 and 17 (row groups), N off the 8-column chunks and off a block, K of 1 to many
    slices, every output dtype; each against float64 with NaN-poisoned outputs."""
    lim = _needs_gpu()
    if dtype == "bfloat16" and lim.cc < (8, 0):
        pytest.skip("bf16 needs CC 8.0")
    gen = torch.Generator(device="cuda").manual_seed(31)
    t = getattr(torch, dtype)
    for m in (1, 2, 3, 4, 5, 8, 9, 17):
        for n, k in ((8, 1), (264, 7), (4096, 4096), (1000, 513), (4095, 300), (13, 20000)):
            for out_dtype in (t, torch.float32):
                check(rand(m, k, gen=gen, dtype=t), rand(k, n, gen=gen, dtype=t), out_dtype, kernel=GEMV.name)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_k_major_streaming_reads_a_linear_weight_in_place(dtype):
    """x @ W^T with W read in place (no copy of B): M of 1-9, N and K off blocks and chunks,
    K in one slice or many (the registry's count and others by hand), every output dtype;
    each against float64 with NaN-poisoned outputs."""
    lim = _needs_gpu()
    if dtype == "bfloat16" and lim.cc < (8, 0):
        pytest.skip("bf16 needs CC 8.0")
    gen = torch.Generator(device="cuda").manual_seed(47)
    t = getattr(torch, dtype)
    dev = torch.cuda.current_device()
    for m in (1, 2, 3, 5, 8, 9):
        for n, k in ((8, 8), (264, 16), (2048, 2048), (1000, 520), (4095, 304), (13, 20000), (7, 2056)):
            a, w = rand(m, k, gen=gen, dtype=t), rand(n, k, gen=gen, dtype=t)
            for out_dtype in (t, torch.float32):
                plan = gemm.plan_call(a, w.t(), out_dtype, GEMV.name, None, None, None)
                assert not plan.copy_b, "W is read in place"
                check(a, w.t(), out_dtype, kernel=GEMV.name)
            cfg = registry.select(lim, Problem(m, n, k, dtype, dtype, b_col=True), kernel_name=GEMV.name)[1]
            if m == 3:  # W a view of wider rows, K off whole chunks: the last chunk of each slice is partial
                wide = rand(n, k + 8, gen=gen, dtype=t)[:, :k - 3]
                check(a[:, :k - 3], wide.t(), t, kernel=GEMV.name)
                assert not gemm.plan_call(a[:, :k - 3], wide.t(), None, GEMV.name, None, None, None).copy_b
            for splits in (1, 3, 7):
                out = torch.full((m, n), float("nan"), device="cuda", dtype=t)
                gemm.plan_launch(GEMV, cfg, dev, a, w.t(), out, k, k, k, splits=splits, b_col=True).fire()
                res = bench.verify(a, w.t(), out)
                assert res.ok, f"{m}x{n}x{k} in {splits} slices: {res.describe()}"


@pytest.mark.gpu
def test_narrow_blocks_wait_for_the_launch_that_writes_their_input():
    """Two decoding GEMMs in a row on the 1x8 config, the second reading the first's output:
    on sm_90 the second goes as a programmatic dependent of the first, which lets it start at
    once, so it must wait before reading (griddepcontrol.wait). Eager and from a CUDA graph
    replayed with new contents, each against float64 of the chain; then an A whose row is not
    16-byte aligned (a launch planned by hand), read element by element."""
    lim = _needs_gpu()
    gen = torch.Generator(device="cuda").manual_seed(53)
    w1, w2 = rand(2048, 1024, gen=gen), rand(512, 2048, gen=gen)  # 4 and 2 MB: decode-sized on sm_90
    h = rand(1, 1024, gen=gen)
    x, y = torch.empty(1, 2048, device="cuda", dtype=torch.float16), torch.empty(1, 512, device="cuda", dtype=torch.float16)

    def chain():
        zoo.mm(h, w1.t(), out=x)
        zoo.mm(x, w2.t(), out=y)
    chain()
    plan = next(p for p in gemm._calls.values() if p.launch and p.launch.choice[:2] == (GEMV.name, "1x8"))
    assert plan.launch.pdl == (lim.cc >= (9, 0))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        chain()
    for step in range(4):
        if step:
            h.copy_(rand(1, 1024, gen=gen))
            y.fill_(float("nan"))
            graph.replay()
        torch.cuda.synchronize()
        want_x = (h.double() @ w1.double().t()).half()  # x as the first GEMM rounds it
        assert bench.verify(h, w1.t(), x).ok and torch.allclose(x, want_x, rtol=1e-2, atol=1e-2)
        assert bench.verify(x, w2.t(), y).ok, f"step {step}: the second GEMM read a stale x"
    odd = rand(1, 1025, gen=gen)[:, 1:]  # its row starts 2 bytes off 16
    out = torch.full((1, 2048), float("nan"), device="cuda", dtype=torch.float16)
    gemm.plan_launch(GEMV, GEMV.config("1x8"), torch.cuda.current_device(), odd, w1.t(), out, 1024, 1025, 1024,
                     b_col=True).fire()
    assert bench.verify(odd, w1.t(), out).ok


@pytest.mark.gpu
def test_split_k_leaves_the_counters_at_zero_and_gives_the_same_bits():
    """1 x 4096 x 4096 in many K slices; calls back to back on a stream share its counters
    (each launch leaves them zero) and give the same bits each time, whichever block of a
    column comes last (it adds the slices in split order)."""
    _needs_gpu()
    gen = torch.Generator(device="cuda").manual_seed(37)
    a, b = rand(1, 4096, gen=gen), rand(4096, 4096, gen=gen)
    plan = gemm.plan_call(a, b, None, GEMV.name, None, None, None)
    assert plan.launch.grid[1] > 1
    outs = [torch.full((1, 4096), float("nan"), device="cuda", dtype=torch.float16) for _ in range(5)]
    for out in outs:
        zoo.mm(a, b, out=out, kernel=GEMV.name)
    torch.cuda.synchronize()
    assert bench.verify(a, b, outs[0]).ok
    assert all(torch.equal(outs[0], o) for o in outs[1:])
    stream = gemm.current_stream(torch.cuda.current_device())
    kept = gemm._workspaces[(torch.cuda.current_device(), stream)]
    assert not any(kept.counters.read())


@pytest.mark.gpu
def test_streaming_kernel_from_a_graph_and_on_two_streams():
    _needs_gpu()
    gen = torch.Generator(device="cuda").manual_seed(41)
    a, b = rand(2, 8192, gen=gen), rand(8192, 2048, gen=gen)
    out = torch.empty(2, 2048, device="cuda", dtype=torch.float16)
    zoo.mm(a, b, out=out, kernel=GEMV.name)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        zoo.mm(a, b, out=out, kernel=GEMV.name)
    for _ in range(2):
        a.copy_(rand(2, 8192, gen=gen))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert bench.verify(a, b, out).ok
    streams = [torch.cuda.Stream() for _ in range(2)]
    outs = [torch.full((2, 2048), float("nan"), device="cuda", dtype=torch.float16) for _ in streams]
    torch.cuda.synchronize()
    for s, o in zip(streams, outs):  # each stream its own workspace: no count meets another's
        with torch.cuda.stream(s):
            for _ in range(3):
                zoo.mm(a, b, out=o, kernel=GEMV.name)
    torch.cuda.synchronize()
    for o in outs:
        assert bench.verify(a, b, o).ok


@pytest.mark.gpu
def test_streaming_kernel_refuses_what_it_cannot_launch():
    """Past the grid's row groups, and a one-launch bmm: a ZooError before anything runs; the
    streams mode (a launch per GEMM, sharing the GPU: no extra K slices) runs it."""
    _needs_gpu()
    gen = torch.Generator(device="cuda").manual_seed(43)
    a, b = rand(65536, 1, gen=gen), rand(1, 8, gen=gen)
    with pytest.raises(zoo.ZooError, match="at most 65535 rows"):
        zoo.mm(a, b, kernel=GEMV.name, config="1x256")
    a3, b3 = rand(3, 1, 4096, gen=gen), rand(3, 4096, 64, gen=gen)
    with pytest.raises(zoo.ZooError, match="use mode='streams'"):
        zoo.bmm(a3, b3, kernel=GEMV.name)
    out = zoo.bmm(a3, b3, kernel=GEMV.name, mode="streams")
    torch.cuda.synchronize()
    for i in range(3):
        assert bench.verify(a3[i], b3[i], out[i]).ok
