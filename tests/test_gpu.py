"""Correctness on the GPU (pytest -m gpu): every config of every eligible kernel against a
float64 reference, within 2x torch.mm's own error and a normwise 1e-2 bound; outputs are
poisoned with NaN first and inputs drawn fresh for every check."""
import zlib

import pytest
import torch

import zoo
from zoo import bench, configs, gemm, registry

pytestmark = pytest.mark.gpu

SHAPES = [  # (M, N, K): 1, 7, 127, 128, 129, 736, 1504, 2112, 4096 mixed; K often not a BK multiple
    (1, 1, 1), (7, 7, 7), (1, 129, 4096), (127, 128, 129), (128, 127, 736), (129, 1504, 127),
    (736, 7, 2112), (1504, 2112, 33), (2112, 736, 1504), (4096, 129, 7), (7, 4096, 128),
]
OUT = [torch.float16, torch.float32]


def eligible():
    """(kernel, config, input dtype, output dtype) for every config of every kernel this GPU
    runs, in every dtype pair the kernel computes."""
    if not torch.cuda.is_available():
        return []
    lim = gemm.device_limits(torch.cuda.current_device())
    return [(k, c, getattr(torch, i), getattr(torch, o)) for k in registry.eligible(lim.cc)
            for c in k.configs if not configs.problems(c, k, lim) for i, o in k.entry]


CASES = eligible() or [(None, None, None, None)]
CASE_IDS = [f"{k.name}-{c.name}-{i}-{o}".replace("torch.", "") if k else "none" for k, c, i, o in CASES]


def rand(*shape, gen, dtype=torch.float16):
    return torch.randn(*shape, device="cuda", dtype=dtype, generator=gen)


def check(a, b, out_dtype, **kw):
    out = torch.full((a.shape[0], b.shape[1]), float("nan"), device="cuda", dtype=out_dtype)
    result = zoo.mm(a, b, out=out, **kw)
    assert result is out
    res = bench.verify(a, b, out)
    assert res.ok, f"{kw} {tuple(a.shape)}x{tuple(b.shape)} -> {out_dtype}: {res.describe()}"
    return res


@pytest.mark.parametrize("spec, cfg, dtype, out_dtype", CASES, ids=CASE_IDS)
def test_every_config_every_shape(spec, cfg, dtype, out_dtype):
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"{spec.name}{cfg.name}{dtype}{out_dtype}".encode()))
    k_major = registry.layout(False, False) not in registry.layouts_of(spec, cfg)  # built for B^T's rows only
    with bench.tf32_matmul(spec.tf32):  # the TF32 kernel against torch.mm in TF32
        for m, n, k in SHAPES:
            b = rand(n, k, gen=gen, dtype=dtype).t() if k_major else rand(k, n, gen=gen, dtype=dtype)
            a = rand(m, k, gen=gen, dtype=dtype)
            if k_major and not gemm.column_major(b):  # a vector, or B^T's rows off 16 bytes: refused, not copied
                with pytest.raises(zoo.ZooError, match="K-major only"):
                    zoo.mm(a, b, out_dtype=out_dtype, kernel=spec.name, config=cfg.name)
                continue
            check(a, b, out_dtype, kernel=spec.name, config=cfg.name)


KERNELS = list({c[0].name: c[0] for c in CASES if c[0]}.values()) or [None]


@pytest.mark.parametrize("spec", KERNELS, ids=lambda k: k.name if k else "none")
def test_strided_and_offset_inputs_every_kernel(spec):
    """Strided, transposed and misaligned views: read in place or copied, never wrong."""
    gen = torch.Generator(device="cuda").manual_seed(11)
    for dtype in (getattr(torch, d) for d in spec.dtypes):
        base_a, base_b = rand(300, 520, gen=gen, dtype=dtype), rand(520, 400, gen=gen, dtype=dtype)
        views = [(base_a[:, 3:260], base_b[3:260, :]), (base_a[1:, 1:258], base_b[1:258, 1:]),
                 (rand(257, 300, gen=gen, dtype=dtype).t(), rand(129, 257, gen=gen, dtype=dtype).t()),
                 (base_a[::2, :136], base_b[:136, ::2])]
        for a, b in views:
            for od in (dtype, torch.float32):
                with bench.tf32_matmul(spec.tf32):
                    check(a, b, od, kernel=spec.name)


@pytest.mark.parametrize("out_dtype", OUT, ids=["fp16out", "fp32out"])
def test_auto_selected_4096_cube(out_dtype):
    gen = torch.Generator(device="cuda").manual_seed(4096)
    check(rand(4096, 4096, gen=gen), rand(4096, 4096, gen=gen), out_dtype)


def test_strided_transposed_and_offset_inputs():
    gen = torch.Generator(device="cuda").manual_seed(7)
    base_a, base_b = rand(300, 520, gen=gen), rand(520, 400, gen=gen)
    cases = {
        "column slices (row stride > K)": (base_a[:, 3:260], base_b[3:260, :]),
        "offset by one element (misaligned)": (base_a[1:, 1:258], base_b[1:258, 1:]),
        "transposed a and b": (rand(257, 300, gen=gen).t(), rand(129, 257, gen=gen).t()),
        "every other row": (base_a[::2, :129], base_b[:129, ::2]),
    }
    for name, (a, b) in cases.items():
        for od in OUT:
            res = check(a, b, od)
            assert res.error < 1e-2, name


def test_zero_size_dims():
    a, b = torch.randn(0, 5, device="cuda", dtype=torch.float16), torch.randn(5, 3, device="cuda", dtype=torch.float16)
    assert zoo.mm(a, b).shape == (0, 3)
    out = zoo.mm(torch.randn(4, 0, device="cuda", dtype=torch.float16),
                 torch.randn(0, 6, device="cuda", dtype=torch.float16), out_dtype=torch.float32)
    assert out.shape == (4, 6) and out.dtype == torch.float32 and not out.any()


def test_nan_input_is_not_hidden():
    a = torch.randn(64, 64, device="cuda", dtype=torch.float16)
    a[3, 5] = float("nan")
    b = torch.randn(64, 64, device="cuda", dtype=torch.float16)
    out = zoo.mm(a, b)
    assert torch.isnan(out[3]).all() and not torch.isnan(out[4]).any()
    assert not bench.verify(a, b, out).ok  # NaN never passes


def test_runs_on_torch_current_stream():
    """The inputs are written on a side stream after a long sleep: a launch on any other
    stream would read them before they exist."""
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(100_000_000)  # ~50 ms of GPU time on s
        a = torch.randn(512, 512, device="cuda", dtype=torch.float16)
        b = torch.randn(512, 512, device="cuda", dtype=torch.float16)
        out = zoo.mm(a, b, out_dtype=torch.float32)
    s.synchronize()
    assert bench.verify(a, b, out).ok


def test_wrong_device_pairs_and_out_are_errors():
    a = torch.randn(8, 8, device="cuda", dtype=torch.float16)
    with pytest.raises(zoo.ZooError, match="different devices"):
        zoo.mm(a, torch.randn(8, 8, dtype=torch.float16))
    with pytest.raises(zoo.ZooError, match=r"out must be a \(8, 8\) torch.float32"):
        zoo.mm(a, a, out_dtype=torch.float32, out=torch.empty(8, 8, device="cuda", dtype=torch.float16))


def test_an_input_on_another_device_never_meets_a_remembered_launch():
    """A call whose layout was seen before reuses its launch; one whose b is on another device
    (here the CPU) must still get the clear error, not a launch reading a host address. In a
    child process: a wrong launch would end the CUDA context."""
    import subprocess
    import sys
    script = """
import torch, zoo
a = torch.randn(64, 64, device="cuda", dtype=torch.float16)
A = torch.randn(3, 64, 64, device="cuda", dtype=torch.float16)
C = torch.empty(3, 64, 64, device="cuda", dtype=torch.float16)
calls = {"mm": lambda b: zoo.mm(a, b), "bmm out": lambda B: zoo.bmm(A, B, out=C),
         "bmm streams": lambda B: zoo.bmm(A, B, mode="streams")}
for name, call in calls.items():
    good = a if name == "mm" else A
    call(good)
    call(good)
    torch.cuda.synchronize()
    try:
        call(good.cpu())
        torch.cuda.synchronize()
        print(name, "ran")
    except zoo.ZooError as exc:
        print(name, "refused:", exc)
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and len(lines) == 3, proc.stdout + proc.stderr
    assert all("refused:" in line and "device" in line for line in lines), lines


def test_occupancy_model_matches_the_driver():
    """`zoo build --check` predicts blocks per SM offline; the driver must agree on this GPU."""
    from zoo import cuda, sass
    idx = torch.cuda.current_device()
    lim = gemm.device_limits(idx)
    for spec, cfg in {(c[0].name, c[1].name): c[:2] for c in CASES}.values():
        fn = gemm.compiled(spec, cfg, *next(iter(spec.entry)), idx,
                           b_col=registry.layout(False, False) not in registry.layouts_of(spec, cfg))
        attrs = cuda.function_attributes(fn)
        model = sass.occupancy(lim, cfg.threads, attrs["registers"], fn.smem_bytes + attrs["static_smem"])
        assert model.blocks_per_sm == cuda.max_active_blocks(fn, cfg.threads), (cfg.name, attrs, model)


@pytest.mark.parametrize("spec", KERNELS, ids=lambda k: k.name if k else "none")
def test_every_kernel_replays_from_a_cuda_graph(spec):
    """zoo.mm captured once and replayed on new data in the same buffers (how `zoo bench`
    times it, and how a model would run it): the launch must not depend on host state."""
    gen = torch.Generator(device="cuda").manual_seed(5)
    dtype = getattr(torch, spec.dtypes[0])
    a, b = rand(1000, 776, gen=gen, dtype=dtype), rand(776, 1504, gen=gen, dtype=dtype)
    out = torch.empty(1000, 1504, device="cuda", dtype=dtype)
    with bench.tf32_matmul(spec.tf32):
        zoo.mm(a, b, out=out, kernel=spec.name)  # compile and load outside the capture
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            zoo.mm(a, b, out=out, kernel=spec.name)
        for _ in range(2):
            a.copy_(rand(1000, 776, gen=gen, dtype=dtype))
            b.copy_(rand(776, 1504, gen=gen, dtype=dtype))
            out.fill_(float("nan"))
            graph.replay()
            torch.cuda.synchronize()
            assert bench.verify(a, b, out).ok


def test_sm90_cluster_configs_on_odd_tile_counts():
    """Clusters stack tiles in M (and N): with an odd number of M (or N) tiles a CTA of the last
    cluster has no rows (or columns), yet keeps multicasting its share of B (and A) to its peers."""
    lim = gemm.device_limits(torch.cuda.current_device())
    spec = registry.SM90_GEMM
    if not spec.runs_on(lim.cc):
        pytest.skip(f"{spec.name} runs on CC 9.0 only; this GPU is {lim.cc}")
    gen = torch.Generator(device="cuda").manual_seed(3)
    for cfg in (c for c in spec.configs if c.cluster_size > 1):
        odd_n = (2 * cfg.cluster_n + 1) * cfg.block_n - 40  # an odd number of N tiles
        for m in (1, 129, 3 * cfg.block_m, 3 * cfg.block_m + 5):
            for n in (1000, odd_n):
                check(rand(m, 512, gen=gen), rand(512, n, gen=gen), torch.float16, kernel=spec.name, config=cfg.name)


def test_sm90_split_k_for_grids_under_one_wave():
    """Few tiles and a deep K: the tiles are cut into K slices whose fp32 partials the last
    slice of each tile adds up (every dtype pair, the cluster configs, ragged edges; narrow
    tiles are never cut)."""
    lim = gemm.device_limits(torch.cuda.current_device())
    spec = registry.SM90_GEMM
    if not spec.runs_on(lim.cc):
        pytest.skip(f"{spec.name} runs on CC 9.0 only; this GPU is {lim.cc}")
    gen = torch.Generator(device="cuda").manual_seed(17)
    for cfg in (c for c in spec.configs if not c.narrow):
        for m, n, k in ((128, 512, 4096), (77, 300, 4400), (1, 8, 4096), (3 * cfg.block_m + 1, 1000, 3000)):
            resident = gemm.compiled(spec, cfg, "float16", "float16", torch.cuda.current_device()) \
                .resident_clusters(cfg.threads, cfg.cluster_size, lim.sm_count)
            assert registry.split_k(spec, cfg, m, n, k, resident, dram_gbps=lim.dram_gbps) > 1, (cfg.name, m, n, k)
            for dtype, out_dtype in spec.entry:
                check(rand(m, k, gen=gen, dtype=getattr(torch, dtype)), rand(k, n, gen=gen, dtype=getattr(torch, dtype)),
                      getattr(torch, out_dtype), kernel=spec.name, config=cfg.name)


def test_sm90_stream_k_spreads_the_last_wave_along_k():
    """Grids whose last wave would leave SMs idle: the tiles after the whole waves are cut into
    one run of K-tiles per CTA, and the parts of each tile add up through the workspace (2-3,
    3-4 and 11-12 parts a tile here, ragged edges, K off the tile size, every dtype pair, a batch, and
    launches back to back on a stream, which share its counters)."""
    lim = gemm.device_limits(torch.cuda.current_device())
    spec = registry.SM90_GEMM
    if not spec.runs_on(lim.cc):
        pytest.skip(f"{spec.name} runs on CC 9.0 only; this GPU is {lim.cc}")
    cfg = spec.config("128x256")
    gen = torch.Generator(device="cuda").manual_seed(23)
    for (m, n, k), pairs in (((2304, 2816, 2048), spec.entry), ((2000, 2600, 3000), spec.entry),
                             ((2304, 2048, 8192), [("float16", "float16")])):
        for dtype, out_dtype in pairs:
            a = rand(m, k, gen=gen, dtype=getattr(torch, dtype))
            b = rand(k, n, gen=gen, dtype=getattr(torch, dtype))
            plan = gemm.plan_call(a, b, getattr(torch, out_dtype), spec.name, cfg.name, None, None)
            assert plan.launch.stream_k > 0, (m, n, k)
            outs = [torch.full((m, n), float("nan"), device="cuda", dtype=getattr(torch, out_dtype)) for _ in range(2)]
            for out in outs:  # no synchronize in between: the second reuses the counters the first left zeroed
                zoo.mm(a, b, out=out, kernel=spec.name, config=cfg.name)
            for out in outs:
                res = bench.verify(a, b, out)
                assert res.ok, f"stream-K {m}x{n}x{k} {dtype}->{out_dtype}: {res.describe()}"
    a, b = rand(5, 1024, 4096, gen=gen), rand(5, 4096, 1024, gen=gen)  # 5 x 32 tiles: 28 after a wave
    resident = gemm.compiled(spec, cfg, "float16", "float16", torch.cuda.current_device()) \
        .resident_clusters(cfg.threads, cfg.cluster_size, lim.sm_count)
    assert registry.stream_k_tiles(spec, cfg, 1024, 1024, 4096, resident, batch=5) > 0
    check_batch(a, b, zoo.bmm(a, b, config=cfg.name))


def test_repeated_calls_reuse_one_plan_per_layout():
    """zoo.mm keeps the worked-out launch per layout (not per address): later calls with fresh
    buffers of that layout patch the addresses and stay right, split-K included (its
    per-stream counters left zeroed by the kernel); another out dtype or, for fp32 inputs,
    another TF32 choice is another plan."""
    gen = torch.Generator(device="cuda").manual_seed(61)
    gemm._calls.clear()
    for m, n, k in ((128, 4096, 4096), (300, 520, 96)):  # split-K on CC 9.0; one wave or more
        for i in range(4):
            a, b = rand(m, k, gen=gen), rand(k, n, gen=gen)  # new addresses every time
            if i % 2:
                out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
                assert zoo.mm(a, b, out=out) is out
            else:
                out = zoo.mm(a, b)
            res = bench.verify(a, b, out)
            assert res.ok, f"{m}x{n}x{k} call {i}: {res.describe()}"
    assert len(gemm._calls) == 4  # two layouts, with and without out
    a, b = rand(200, 300, gen=gen, dtype=torch.float32), rand(300, 100, gen=gen, dtype=torch.float32)
    out = torch.empty(200, 100, device="cuda", dtype=torch.float32)
    for tf32 in (False, True, False):
        out.fill_(float("nan"))
        zoo.mm(a, b, out=out, allow_tf32=tf32)
        err = bench.relative_error(out, bench.reference(a, b))
        assert err < (1e-2 if tf32 else 1e-5), (tf32, err)
    assert len(gemm._calls) == 6


MODES = ["streams", "batched", "grouped"]


def check_batch(a_list, b_list, outs):
    for i, (a, b, c) in enumerate(zip(a_list, b_list, outs)):
        res = bench.verify(a, b, c)
        assert res.ok, f"GEMM {i} {tuple(a.shape)}x{tuple(b.shape)}: {res.describe()}"


@pytest.mark.parametrize("spec", KERNELS, ids=lambda k: k.name if k else "none")
@pytest.mark.parametrize("mode", MODES)
def test_bmm_every_mode_odd_batches(spec, mode):
    """zoo.bmm on odd batch counts and ragged sizes, eager and replayed from a CUDA graph
    (the replay on fresh data in the same buffers)."""
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"{spec.name}{mode}".encode()))
    dtype = getattr(torch, spec.dtypes[0])
    if mode != "streams" and not spec.grouped:  # one GEMM a launch: said before anything runs
        a, b = rand(3, 8, 16, gen=gen, dtype=dtype), rand(3, 16, 8, gen=gen, dtype=dtype)
        args = (list(a.unbind(0)), list(b.unbind(0))) if mode == "grouped" else (a, b)
        with pytest.raises(zoo.ZooError, match="use mode='streams'"):
            zoo.bmm(*args, mode=mode, kernel=spec.name)
        return
    with bench.tf32_matmul(spec.tf32):  # zoo.bmm, as torch.bmm, follows torch's TF32 setting
        _bmm_odd_batches(spec, mode, gen, dtype)


def _bmm_odd_batches(spec, mode, gen, dtype):
    for batch, m, n, k in ((1, 64, 64, 64), (3, 129, 200, 77), (7, 768, 768, 1024)):
        for graph in (False, True):
            a, b = rand(batch, m, k, gen=gen, dtype=dtype), rand(batch, k, n, gen=gen, dtype=dtype)
            out = torch.full((batch, m, n), float("nan"), device="cuda", dtype=torch.float32)
            args = (list(a.unbind(0)), list(b.unbind(0))) if mode == "grouped" else (a, b)
            outs = list(out.unbind(0)) if mode == "grouped" else out
            for _ in range(2 if graph else 1):  # capture, then replay on new data
                result = zoo.bmm(*args, mode=mode, graph=graph, out=outs, out_dtype=torch.float32, kernel=spec.name)
                torch.cuda.synchronize()
                check_batch(a, b, out)
                a.copy_(rand(batch, m, k, gen=gen, dtype=dtype))
                b.copy_(rand(batch, k, n, gen=gen, dtype=dtype))
                out.fill_(float("nan"))
            assert result is outs


def test_streams_mode_keeps_stream_order_when_a_streams_gemms_overlap():
    """With fewer streams than GEMMs, a stream's next GEMM starts under the one before it
    (sm_90a: an independent programmatic dependent). Whatever follows on the caller's stream
    must still see every result: here one long GEMM (a 256 x 65536 K loop per CTA, few CTAs)
    first and small ones after it on the same stream, which finish long before it; its result
    is read on the caller's stream at once, eager and from a graph."""
    gen = torch.Generator(device="cuda").manual_seed(18)
    shapes = [(256, 256, 65536)] + [(64, 64, 64)] * 5
    a_list = [rand(m, k, gen=gen) for m, n, k in shapes]
    b_list = [rand(k, n, gen=gen) for m, n, k in shapes]
    expect = torch.stack([bench.reference(a, b).sum() for a, b in zip(a_list, b_list)])
    outs = [torch.empty(m, n, device="cuda", dtype=torch.float32) for m, n, _ in shapes]
    for graph in (False, True):
        for _ in range(3):  # eager: three calls; graph: the capture, then two replays
            for o in outs:
                o.fill_(float("nan"))
            zoo.bmm(a_list, b_list, mode="streams", streams=1, out=outs, graph=graph)
            sums = torch.stack([o.double().sum() for o in outs])  # on the caller's stream, no synchronize
            assert torch.allclose(sums, expect, rtol=1e-3, atol=1e-3 * expect.abs().max().item()), (graph, sums, expect)


def test_eager_streams_mode_forks_from_and_joins_the_callers_stream(monkeypatch):
    """An eager streams-mode call of a layout seen before fires its launches at the side
    streams' handles between a fork and a join made once (batched._FastBatch). On a stream of
    the caller's own, with fresh tensors each call: the inputs are written there just after a
    long op (the side streams must wait for them), and the result is read there at once (the
    caller's stream must wait for the side streams)."""
    from zoo import batched
    fast_calls = []
    run = batched._FastBatch.run
    monkeypatch.setattr(batched._FastBatch, "run", lambda self, *args: fast_calls.append(self.fork) or run(self, *args))
    gen = torch.Generator(device="cuda").manual_seed(27)
    batch, m, n, k = 6, 256, 256, 8192
    busy = rand(4096, 4096, gen=gen)
    caller = torch.cuda.Stream()
    with torch.cuda.stream(caller):
        for call in range(3):
            a_src, b_src = rand(batch, m, k, gen=gen), rand(batch, k, n, gen=gen)
            a, b = torch.empty_like(a_src), torch.empty_like(b_src)
            for _ in range(4):  # the caller's stream stays busy for a while before the copies
                busy = torch.mm(busy, busy) * 1e-3
            a.copy_(a_src)
            b.copy_(b_src)
            c = zoo.bmm(a, b, mode="streams")
            ref = torch.bmm(a_src.double(), b_src.double())  # on the caller's stream, no synchronize
            err = (c.double() - ref).abs().max().item()
            torch_err = (torch.bmm(a_src, b_src).double() - ref).abs().max().item()
            assert err <= 2 * torch_err + 1e-3, (call, err, torch_err)
    assert len(fast_calls) == 2 and all(fork for fork in fast_calls)  # calls 2 and 3 took the worked-out path
    torch.cuda.synchronize()


def test_streams_mode_with_split_k_in_a_users_graph():
    """The streaming kernel's K slices add up through a per-stream workspace, taken with the
    side stream current (from the capture's pool while it is captured). A streams-mode layout
    seen eagerly, then captured in the caller's own CUDA graph, must still give each launch a
    workspace of its own: every replay right. (A launch fired at a side stream's handle once
    took it through the caller's stream: every launch shared one.)"""
    gen = torch.Generator(device="cuda").manual_seed(28)
    batch, m, n, k = 4, 4, 4096, 8192
    a, b = rand(batch, m, k, gen=gen), rand(batch, k, n, gen=gen)
    for _ in range(2):
        zoo.bmm(a, b, mode="streams", kernel="sm75_gemv_stream")
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        c = zoo.bmm(a, b, mode="streams", kernel="sm75_gemv_stream")
    for replay in range(3):
        a.copy_(rand(batch, m, k, gen=gen))
        b.copy_(rand(batch, k, n, gen=gen))
        graph.replay()
        ref = torch.bmm(a.double(), b.double())
        err = (c.double() - ref).abs().max().item()
        torch_err = (torch.bmm(a, b).double() - ref).abs().max().item()
        assert err <= 2 * torch_err + 1e-3, (replay, err, torch_err)
    torch.cuda.synchronize()


def test_streams_mode_grids_share_the_gpu():
    """sm_90a's streams mode gives each GEMM's grid its share of the SMs (registry.
    shared_clusters), so that all of them are resident at once and each CTA walks several
    tiles: 10 x [768, 1024, 768] makes 10 x 24 tiles of 128x192 for 132 SMs on an H100. The
    results are right eager and from a graph."""
    from zoo import batched
    spec = registry.SM90_GEMM
    if not spec.runs_on(torch.cuda.get_device_capability()):
        pytest.skip(f"{spec.name} runs on CC {spec.eligible_ccs()}")
    gen = torch.Generator(device="cuda").manual_seed(25)
    a, b = rand(10, 768, 1024, gen=gen), rand(10, 1024, 768, gen=gen)
    out = torch.full((10, 768, 768), float("nan"), device="cuda", dtype=torch.float16)
    batched._fast.clear()
    assert zoo.bmm(a, b, mode="streams", out=out, config="128x192pp") is out
    check_batch(a, b, out)
    (fast,) = batched._fast.values()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    share = registry.shared_clusters(24, 240, sms)
    assert [launch.grid[0] for launch in fast.launches] == [share] * 10
    assert share < 24 and sum(launch.grid[0] for launch in fast.launches) <= sms
    out.fill_(float("nan"))
    zoo.bmm(a, b, mode="streams", out=out, config="128x192pp", graph=True)
    check_batch(a, b, out)


@pytest.mark.parametrize("spec", KERNELS, ids=lambda k: k.name if k else "none")
def test_repeated_eager_bmm_with_out_replays_one_launch(spec):
    """Eager one-launch zoo.bmm calls with `out` keep their launch per layout: later calls
    with the same buffers (new contents) replay it and stay right; another out dtype is
    another entry; streams-mode calls and calls whose inputs are copied first keep none."""
    from zoo import batched
    if not spec.grouped:
        pytest.skip(f"{spec.name} has no one-launch bmm (test_bmm_every_mode_odd_batches checks it says so)")
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"replay{spec.name}".encode()))
    dtype = getattr(torch, spec.dtypes[0])
    batched._replays.clear()
    a, b = rand(5, 130, 72, gen=gen, dtype=dtype), rand(5, 72, 200, gen=gen, dtype=dtype)
    a_list = [rand(m, k, gen=gen, dtype=dtype) for m, k in ((33, 40), (200, 136), (1, 8))]
    b_list = [rand(k, n, gen=gen, dtype=dtype) for k, n in ((40, 96), (136, 24), (8, 304))]  # 16-byte rows: no copies
    out = torch.empty(5, 130, 200, device="cuda", dtype=torch.float32)
    outs = [torch.empty(x.shape[0], y.shape[1], device="cuda", dtype=torch.float32) for x, y in zip(a_list, b_list)]
    with bench.tf32_matmul(spec.tf32):
        for args, result in (((a, b), out), ((a_list, b_list), outs)):
            for _ in range(3):
                for t in args[0] if isinstance(args[0], list) else [args[0]]:
                    t.copy_(rand(*t.shape, gen=gen, dtype=dtype))
                for t in result if isinstance(result, list) else [result]:
                    t.fill_(float("nan"))
                assert zoo.bmm(*args, out=result, out_dtype=torch.float32, kernel=spec.name) is result
                check_batch(*args, result)
        assert len(batched._replays) == 2
        if dtype != torch.float32:  # another out dtype: another launch
            half = torch.full((5, 130, 200), float("nan"), device="cuda", dtype=dtype)
            zoo.bmm(a, b, out=half, kernel=spec.name)
            check_batch(a, b, half)
            assert len(batched._replays) == 3
        before = len(batched._replays)
        zoo.bmm(a, b, out=out, out_dtype=torch.float32, mode="streams", kernel=spec.name)
        a_t = a.transpose(1, 2).contiguous().transpose(1, 2)  # column-major: copied first
        out.fill_(float("nan"))
        zoo.bmm(a_t, b, out=out, out_dtype=torch.float32, kernel=spec.name)
        check_batch(a_t, b, out)
        assert len(batched._replays) == before


@pytest.mark.parametrize("spec", KERNELS, ids=lambda k: k.name if k else "none")
def test_grouped_mixed_shapes_every_dtype(spec):
    """One launch for GEMMs of different shapes, including 1-row, unaligned (copied) and
    tile-crossing ones, in every dtype pair the kernel computes."""
    gen = torch.Generator(device="cuda").manual_seed(29)
    shapes = [(1, 8, 8), (129, 200, 77), (768, 768, 1024), (7, 4096, 128), (300, 5, 9), (1504, 33, 2112)]
    for dtype, out_dtype in ((getattr(torch, i), getattr(torch, o)) for i, o in spec.entry):
        a_list = [rand(m, k, gen=gen, dtype=dtype) for m, _, k in shapes]
        b_list = [rand(k, n, gen=gen, dtype=dtype) for _, n, k in shapes]
        for mode in ("grouped", "streams") if spec.grouped else ("streams",):
            with bench.tf32_matmul(spec.tf32):  # the call and its reference
                outs = zoo.bmm(a_list, b_list, mode=mode, out_dtype=out_dtype, kernel=spec.name)
                assert [tuple(c.shape) for c in outs] == [(m, n) for m, n, _ in shapes]
                assert all(c.dtype == out_dtype for c in outs)
                check_batch(a_list, b_list, outs)


def test_sm90_grouped_launches_every_config():
    """Every sm90 config (ping-pong ones too) on grouped launches whose CTAs get one, two or
    several units of different K depths: a ping-pong consumer skips the other's K-tiles in
    the ring, and the other may have none left. Batches of 1, 7 and 27 (over two units per SM)."""
    lim = gemm.device_limits(torch.cuda.current_device())
    spec = registry.SM90_GEMM
    if not spec.runs_on(lim.cc):
        pytest.skip(f"{spec.name} runs on CC 9.0 only; this GPU is {lim.cc}")
    gen = torch.Generator(device="cuda").manual_seed(41)
    mixed = [(129, 200, 77), (768, 768, 1024), (7, 4096, 128), (300, 5, 9), (1504, 33, 2112), (256, 384, 64)]
    for cfg in (c for c in spec.configs if not configs.problems(c, spec, lim)):
        a_list = [rand(m, k, gen=gen) for m, _, k in mixed]
        b_list = [rand(k, n, gen=gen) for _, n, k in mixed]
        check_batch(a_list, b_list, zoo.bmm(a_list, b_list, mode="grouped", config=cfg.name))
        for batch, m, n, k in ((1, 64, 64, 64), (7, 768, 768, 1024), (27, 512, 640, 192)):
            a, b = rand(batch, m, k, gen=gen), rand(batch, k, n, gen=gen)
            out = torch.full((batch, m, n), float("nan"), device="cuda", dtype=torch.float32)
            zoo.bmm(a, b, out=out, out_dtype=torch.float32, config=cfg.name)
            check_batch(a, b, out)


def test_sm90_batched_tensor_maps_take_strided_batches():
    """The sm90 batched mode reads the whole batch through 3-D tensor maps: in place when the
    layout allows (padded rows, a sliced batch), through one copy when not (interleaved
    matrices, unaligned rows); C through TMA or, when its rows or matrices are not 16-byte
    aligned, stored directly (matrix i at C + i * its batch stride); split-K counts the
    batch's tiles (2 x 128^2 with a deep K)."""
    lim = gemm.device_limits(torch.cuda.current_device())
    spec = registry.SM90_GEMM
    if not spec.runs_on(lim.cc):
        pytest.skip(f"{spec.name} runs on CC 9.0 only; this GPU is {lim.cc}")
    from zoo import batched
    gen = torch.Generator(device="cuda").manual_seed(43)
    batch, m, n, k = 5, 200, 136, 264
    padded_rows = rand(batch, m, k + 8, gen=gen)[:, :, :k]          # A in place
    odd_rows = rand(batch, m, k + 1, gen=gen)[:, :, :k]             # A copied: 530-byte rows
    a_interleaved = rand(m, batch, k, gen=gen).permute(1, 0, 2)     # A copied: matrices overlap
    every_other = rand(2 * batch, k, n, gen=gen)[::2]               # B in place
    b_interleaved = rand(k, batch, n, gen=gen).permute(1, 0, 2)     # B copied
    assert gemm.batch_plan(padded_rows)[2] is None and gemm.batch_plan(every_other)[2] is None
    for t in (odd_rows, a_interleaved, b_interleaved):
        assert gemm.batch_plan(t)[2] is not None
    outs = {"packed": torch.empty(batch, m, n, device="cuda"),
            "spaced": torch.empty(batch, m + 3, n + 8, device="cuda")[:, :m, :n],  # TMA
            "odd rows": torch.empty(batch, m, n + 1, device="cuda")[:, :, :n],     # direct stores
            "odd matrix stride": torch.empty(batch, m * n + 1, device="cuda")[:, :m * n].view(batch, m, n)}
    for a, b in ((padded_rows, every_other), (a_interleaved, b_interleaved), (odd_rows, every_other)):
        for name, out in outs.items():
            for cfg in ("128x128", "256x192", "128x192pp"):
                out.fill_(float("nan"))
                zoo.bmm(a, b, out=out, out_dtype=torch.float32, config=cfg)
                check_batch(a, b, out)
    plan = batched._plan(list(padded_rows.unbind(0)), list(every_other.unbind(0)), list(outs["packed"].unbind(0)),
                         torch.float32, None, None, [], (padded_rows, every_other, outs["packed"]))
    assert plan.whole and not plan.copies
    # Split-K over a batch: 2 GEMMs of one 128x128 tile each fill no wave without it.
    a, b = rand(2, 128, 8192, gen=gen), rand(2, 8192, 128, gen=gen)
    cfg = spec.config("128x128")
    resident = gemm.compiled(spec, cfg, "float16", "float16", torch.cuda.current_device()) \
        .resident_clusters(cfg.threads, cfg.cluster_size, lim.sm_count)
    assert registry.split_k(spec, cfg, 128, 128, 8192, resident, batch=2, dram_gbps=lim.dram_gbps) > 1
    for out_dtype in (torch.float16, torch.float32):
        check_batch(a, b, zoo.bmm(a, b, out_dtype=out_dtype, config="128x128"))


def test_bmm_default_mode_and_empty_problems():
    gen = torch.Generator(device="cuda").manual_seed(31)
    a, b = rand(5, 100, 60, gen=gen), rand(5, 60, 90, gen=gen)
    c = zoo.bmm(a, b)
    assert c.shape == (5, 100, 90) and c.dtype == torch.float16
    check_batch(a, b, c)
    outs = zoo.bmm([rand(4, 0, gen=gen), rand(0, 3, gen=gen)], [rand(0, 5, gen=gen), rand(3, 6, gen=gen)])
    assert outs[0].shape == (4, 5) and not outs[0].any() and outs[1].shape == (0, 6)


def test_pipeline_demo_returns_verified_results_and_a_consistent_timeline():
    from zoo import pipeline
    result, host_a, host_b, host_c = pipeline.run(3, 129, 200, 77, torch.float16, torch.float32, repeats=2)
    for a, b, c in zip(host_a, host_b, host_c):
        assert c.is_pinned() and bench.verify(a.cuda(), b.cuda(), c.cuda()).ok
    assert len(result.spans) == len(result.serial_spans) == 3 * len(pipeline.LANES)
    for lane, i, start, end in result.spans:
        assert 0 <= start <= end <= result.pipelined_us * 1.01, (lane, i, start, end)
    # Each GEMM starts after its copy-in ends and its copy-out after the GEMM (event chain).
    at = {(lane, i): (s, e) for lane, i, s, e in result.spans}
    for i in range(3):
        assert at[("copy-in", i)][1] <= at[("GEMM", i)][0] + 1e-3
        assert at[("GEMM", i)][1] <= at[("copy-out", i)][0] + 1e-3
    assert result.ideal_us <= result.serial_us


def test_bmm_refuses_outputs_shared_between_gemms_and_handles_empty_batches():
    gen = torch.Generator(device="cuda").manual_seed(37)
    a, b = rand(2, 64, 32, gen=gen), rand(2, 32, 48, gen=gen)
    shared = torch.empty(64, 48, device="cuda", dtype=torch.float16)
    with pytest.raises(zoo.ZooError, match=r"out\[0\] overlaps another GEMM"):
        zoo.bmm(list(a.unbind(0)), list(b.unbind(0)), out=[shared, shared])
    empty = zoo.bmm(rand(0, 5, 7, gen=gen), rand(0, 7, 3, gen=gen), out_dtype=torch.float32)
    assert empty.shape == (0, 5, 3) and empty.dtype == torch.float32 and empty.is_cuda


def test_bmm_graph_replay_rezeroes_k0_outputs():
    gen = torch.Generator(device="cuda").manual_seed(41)
    a_list = [rand(8, 0, gen=gen), rand(64, 32, gen=gen)]
    b_list = [rand(0, 16, gen=gen), rand(32, 48, gen=gen)]
    outs = [torch.empty(8, 16, device="cuda", dtype=torch.float16), torch.empty(64, 48, device="cuda", dtype=torch.float16)]
    for _ in range(3):  # eager, capture, then a replay after the outputs were spoiled
        zoo.bmm(a_list, b_list, out=outs, graph=True)
        torch.cuda.synchronize()
        assert not outs[0].any() and bench.verify(a_list[1], b_list[1], outs[1]).ok
        for o in outs:
            o.fill_(float("nan"))


@pytest.mark.parametrize("spec", [k for k in KERNELS if k and k.exports] or [None],
                         ids=lambda k: k.name if k else "none")
def test_ctypes_example_on_small_and_ragged_shapes(spec, tmp_path):
    """examples/ctypes_gemm.py: nvcc-built library, ctypes call, checked against float64."""
    import shutil
    if spec is None or shutil.which("nvcc") is None and not zoo.cuda.Path("/usr/local/cuda/bin/nvcc").is_file():
        pytest.skip("no exportable kernel on this GPU, or no nvcc")
    import importlib.util
    path = zoo.cuda.KERNELS_DIR.parent / "examples" / "ctypes_gemm.py"
    module_spec = importlib.util.spec_from_file_location("ctypes_gemm", path)
    example = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(example)
    for m, n, k in ((64, 64, 64), (129, 200, 72)):  # the sm80 launcher needs K, N multiples of 8
        for out in ("fp32", "fp16"):
            result = example.main(["--kernel", spec.name, "-m", str(m), "-n", str(n), "-k", str(k),
                                   "--out-dtype", out, "-o", str(tmp_path)])
            assert result["error"] < 1e-2 and result["pct_of_torch"] > 0


def test_fp32_inputs_follow_torchs_tf32_setting():
    """fp32 inputs: full precision (SIMT, ~1e-7 relative) unless TF32 is allowed, by argument
    or by torch's own flag; where a TF32 kernel exists (CC 9.0) the error then grows to TF32's
    ~1e-4, still within 2x torch.mm's own TF32 error."""
    gen = torch.Generator(device="cuda").manual_seed(32)
    a, b = rand(1000, 1500, gen=gen, dtype=torch.float32), rand(1500, 700, gen=gen, dtype=torch.float32)
    ref = bench.reference(a, b)
    with bench.tf32_matmul(False):
        exact = bench.relative_error(zoo.mm(a, b), ref)
        assert exact < 1e-5
        tf32 = bench.relative_error(zoo.mm(a, b, allow_tf32=True), ref)
    with bench.tf32_matmul(True):
        by_flag = bench.relative_error(zoo.mm(a, b), ref)
        torch_tf32 = bench.relative_error(torch.mm(a, b), ref)
        assert bench.relative_error(zoo.mm(a, b, allow_tf32=False), ref) < 1e-5
    lim = gemm.device_limits(torch.cuda.current_device())
    if lim.cc == (9, 0):
        # by flag or by argument, the same kernel (split-K may add its partials in any order)
        assert 1e-5 < tf32 <= 2 * torch_tf32 + 1e-5 and abs(by_flag - tf32) <= 0.05 * tf32
    else:
        assert tf32 < 1e-5 and by_flag < 1e-5  # no TF32 kernel here: the SIMT one computes it


@pytest.mark.parametrize("spec", KERNELS, ids=lambda k: k.name if k else "none")
def test_out_views_leave_their_neighbours_alone(spec):
    """out= a column slice or one row of a wider buffer: nothing outside it is written. (TMA
    stores whole 16-byte chunks, so a C row that ends inside one must go out another way.)"""
    gen = torch.Generator(device="cuda").manual_seed(41)
    dtype = getattr(torch, spec.dtypes[0])
    WIDE = 128  # the buffer's row: 16-byte aligned in every dtype, wider than any n below + 8
    with bench.tf32_matmul(spec.tf32):
        for out_dtype in (getattr(torch, o) for i, o in spec.entry if getattr(torch, i) == dtype):
            for m, n, k in ((1, 1, 8), (1, 5, 16), (7, 5, 64), (130, 3, 40), (129, 77, 300)):
                a, b = rand(m, k, gen=gen, dtype=dtype), rand(k, n, gen=gen, dtype=dtype)
                big = torch.full((m + 2, WIDE), 7.0, device="cuda", dtype=out_dtype)
                for out in (big[:m, :n], big[1:2, :n] if m == 1 else big[1:m + 1, 8:8 + n]):
                    before = big.clone()
                    zoo.mm(a, b, out=out, kernel=spec.name)
                    outside = torch.ones_like(big, dtype=torch.bool)
                    row, col = divmod(out.storage_offset(), WIDE)
                    outside[row:row + m, col:col + n] = False
                    assert torch.equal(big[outside], before[outside]), (m, n, k, out_dtype, out.storage_offset())
                    assert bench.verify(a, b, out).ok


def test_zoo_run_fp32_with_and_without_tf32():
    """`zoo run --dtype fp32 [--tf32]`: the kernel torch's rule picks, verified, as JSON; and a
    --tf32 that cannot apply is a clear error."""
    import json
    import subprocess
    import sys
    lim = gemm.device_limits(torch.cuda.current_device())
    for extra, expected in (([], "sm75_sgemm_simt"),
                            (["--tf32"], "sm90_gemm_tf32" if lim.cc == (9, 0) else "sm75_sgemm_simt")):
        proc = subprocess.run([sys.executable, "-m", "zoo", "run", "--dtype", "fp32", *extra, "-m", "300",
                               "-n", "200", "-k", "100", "--iters", "3", "--warmup", "1", "--json", "-"],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        data = json.loads(proc.stdout)
        assert data["kernel"] == expected and data["tf32"] == bool(extra)
        (row,) = [r for r in data["results"] if r["kernel"] == expected]
        assert row["verify"]["ok"]
    proc = subprocess.run([sys.executable, "-m", "zoo", "run", "--dtype", "fp16", "--tf32"], capture_output=True, text=True)
    assert proc.returncode == 1 and "--tf32 rounds fp32 inputs" in proc.stderr


def test_bmm_graph_follows_the_tf32_setting():
    """A graph captured for fp32 inputs under one TF32 setting is not replayed under the
    other: the setting picks the kernel (on CC 9.0, SIMT or TF32)."""
    gen = torch.Generator(device="cuda").manual_seed(43)
    a, b = rand(3, 200, 300, gen=gen, dtype=torch.float32), rand(3, 300, 100, gen=gen, dtype=torch.float32)
    ref = bench.reference(a[1], b[1])
    with bench.tf32_matmul(False):
        exact = bench.relative_error(zoo.bmm(a, b, graph=True)[1].clone(), ref)
    with bench.tf32_matmul(True):
        rounded = bench.relative_error(zoo.bmm(a, b, graph=True)[1].clone(), ref)
    with bench.tf32_matmul(False):
        again = bench.relative_error(zoo.bmm(a, b, graph=True)[1].clone(), ref)
    assert exact < 1e-5 and again < 1e-5
    if gemm.device_limits(torch.cuda.current_device()).cc == (9, 0):
        assert 1e-5 < rounded < 2e-3
