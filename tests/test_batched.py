"""zoo.bmm and the pipeline demo without a GPU: argument checks, the problem tables the
grouped entry points read, the Chrome trace and the text timeline."""
import json
import struct

import pytest
import torch

import zoo
from zoo import ZooError, batched, cuda, gemm, pipeline, registry


@pytest.mark.parametrize("a, b, message", [
    (torch.zeros(4, 4), torch.zeros(4, 4), "bmm takes 3-D tensors"),
    (torch.zeros(2, 4, 4), torch.zeros(3, 4, 4), "batch sizes differ: a has 2, b has 3"),
    ([torch.zeros(4, 4)], [torch.zeros(4, 4)] * 2, "1 a matrices but 2 b matrices"),
    (torch.zeros(2, 4, 4), [torch.zeros(4, 4)] * 2, "two 3-D tensors, or two lists"),
])
def test_bad_batches_are_refused_clearly(a, b, message):
    with pytest.raises(zoo.ZooError, match=message):
        zoo.bmm(a, b)


def test_batch_plan_reads_a_whole_batch_in_place_or_copies_it_once():
    """One 3-D TMA map reads the batch in place when its rows and matrices are 16-byte
    aligned and the matrices do not overlap; otherwise the batch is copied into one padded
    buffer (and the caller copies into the returned view)."""
    base = torch.zeros(5, 40, 72, dtype=torch.float16)
    for t in (base[:, :, :64], torch.zeros(10, 40, 64, dtype=torch.float16)[::2], base[:1]):
        assert gemm.batch_plan(t)[2] is None
        assert gemm.batch_plan(t)[0] is t
    odd_rows = torch.zeros(5, 40, 65, dtype=torch.float16)[:, :, :64]      # 130-byte rows
    interleaved = torch.zeros(40, 5, 64, dtype=torch.float16).permute(1, 0, 2)
    odd_step = torch.zeros(5, 40 * 64 + 1, dtype=torch.float16)[:, :40 * 64].view(5, 40, 64)
    for t in (odd_rows, interleaved, odd_step):
        buffer, ld, view = gemm.batch_plan(t)
        assert view is not None and view.shape == t.shape and buffer.shape == (5, 40, ld) and ld % 8 == 0
    assert "must not overlap" in cuda.tma_layout_problem(0, 2, 40, 64, 320, 5, 64)
    assert "16-byte-aligned" in cuda.tma_layout_problem(0, 2, 40, 64, 64, 5, 40 * 64 + 1)
    assert cuda.tma_layout_problem(0, 2, 40, 64, 64, 5, 40 * 64) is None
    assert cuda.tma_layout_problem(0, 2, 1, 3, 1, 1, 0) is None           # one row of one matrix


def test_tma_l2_promotion_follows_the_rows_alignment():
    # 4096 fp16 columns: 8192-byte rows on 128-byte boundaries; 3000 columns: 6000-byte rows.
    assert cuda.l2_promotion_bytes(4096 * 2) == 256
    assert cuda.l2_promotion_bytes(3000 * 2) == 128
    assert cuda.l2_promotion_bytes(1000 * 4) == 128
    driver, _ = cuda._bindings()  # both sizes name a promotion the driver API knows
    for size in (128, 256):
        getattr(driver.CUtensorMapL2promotion, f"CU_TENSOR_MAP_L2_PROMOTION_L2_{size}B")


def test_modes_are_checked():
    a = torch.zeros(2, 4, 4, dtype=torch.float16)
    with pytest.raises(zoo.ZooError, match="mode must be one of streams, batched, grouped"):
        zoo.bmm(a, a, mode="fast")
    with pytest.raises(zoo.ZooError, match="mode 'batched' takes 3-D tensors"):
        zoo.bmm([a[0]], [a[0]], mode="batched")
    with pytest.raises(zoo.ZooError, match="streams must be >= 1"):
        zoo.bmm(a, a, mode="streams", streams=0)
    with pytest.raises(zoo.ZooError, match="inputs must be CUDA tensors"):
        zoo.bmm(a, a)


def test_pointer_table_matches_the_kernels_struct():
    """zoo::PointerProblem (kernels/common/zoo_common.cuh): 3 pointers, 7 ints, 64 bytes;
    each entry's first block is the prefix sum of the tiles before it."""
    spec = registry.SM80_GEMM
    cfg = spec.config("64x64")
    shapes = [(100, 130, 70), (64, 64, 8), (1, 200, 16)]
    problems = []
    for m, n, k in shapes:
        a, b, c = torch.empty(m, k, dtype=torch.float16), torch.empty(k, n, dtype=torch.float16), torch.empty(m, n)
        problems.append((a, b, c, k, k, n))
    table = gemm.group_table(spec, cfg, problems)
    assert len(table) == 64 * len(shapes)
    begin = 0
    for i, ((m, n, k), (a, b, c, *_)) in enumerate(zip(shapes, problems)):
        fields = struct.unpack_from("<3Q7i", table, 64 * i)
        assert fields == (a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, k, n, n, begin)
        begin += cfg.tiles(m, n)
    assert gemm.group_units(spec, cfg, shapes) == [cfg.tiles(m, n) for m, n, _ in shapes]


def test_persistent_kernels_count_units_in_cluster_stacks():
    spec = registry.SM90_GEMM
    assert gemm.group_units(spec, spec.config("128x256c2"), [(768, 768, 1024), (129, 256, 64)]) == [9, 1]
    assert gemm.TMA_ENTRY_TAIL.size + 3 * 128 <= gemm.TMA_ENTRY_BYTES == 448


def test_grouped_config_counts_the_tiles_of_every_problem():
    from zoo import arch
    h100 = arch.offline("sm_90a")
    one = registry.Problem(768, 768, 1024)
    group = (one,) * 10
    spec = registry.SM90_GEMM
    # 10 x 18 tiles of 128x256 = 2 waves of 132: 4 tile-units of 128x128 per SM; 10 x 24 of
    # 128x192 = 2 waves of 1.5 units, 10 x 36 of 128x128 = 3 waves of 1: both 3 per SM, so
    # the first listed of those two, 128x192pp.
    assert registry.pick_config(spec, h100, one, group).name == "128x192pp"
    # The tile count is the group's: one GEMM alone (36 tiles of 128x128) is under one wave,
    # and 72 of 64x128 halve the busiest SM's work.
    assert registry.pick_config(spec, h100, one).name == "64x128pp"
    assert registry.pick_config(spec, h100, registry.Problem(4096, 4096, 4096), (registry.Problem(4096, 4096, 4096),) * 4).name == "128x256"


SPANS = [(lane, i, 10.0 * i + 3 * j, 10.0 * i + 3 * j + 5) for i in range(3) for j, lane in enumerate(pipeline.LANES)]


def test_chrome_trace_is_loadable_json_with_one_slice_per_step():
    result = pipeline.PipelineResult(3, 40.0, 90.0, {lane: [5.0] * 3 for lane in pipeline.LANES}, SPANS, SPANS)
    trace = json.loads(pipeline.chrome_trace(result, "test"))
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(slices) == 2 * len(SPANS)
    first = next(e for e in slices if e["name"] == "GEMM 1" and e["pid"] == 0)
    assert first["ts"] == 13.0 and first["dur"] == 5.0 and first["tid"] == pipeline.LANES.index("GEMM")
    assert result.ideal_us == 15.0 and result.efficiency == pytest.approx(15.0 / 40.0)


def test_timeline_draws_each_step_in_its_lane():
    rows = pipeline.timeline(SPANS, width=40)
    assert [r.split("|")[0].strip() for r in rows[:3]] == list(pipeline.LANES)
    copy_in = rows[0].split("|")[1]
    assert copy_in.index("0") < copy_in.index("1") < copy_in.index("2")
    assert "2" in rows[2] and rows[-1].strip().endswith("us")


def test_graph_cache_is_bounded():
    assert batched._GRAPHS_KEPT >= 4 and batched._TABLES_KEPT >= batched._GRAPHS_KEPT


def test_non_tensor_arguments_are_errors_not_tracebacks():
    with pytest.raises(zoo.ZooError, match="must hold torch.Tensors"):
        zoo.bmm([1], [2], graph=True)
    a = torch.zeros(2, 4, 4, dtype=torch.float16)
    with pytest.raises(zoo.ZooError, match="out must be a"):
        zoo.bmm(a, a, out=[1, 2])


def test_bmm_takes_the_output_dtype_from_out():
    """Review item 4: out's dtype is the call's output dtype, as in zoo.mm. On the CPU the dtype
    check comes before the device check: a bf16 out of fp16 inputs is refused for its dtype
    (the old code took fp16 and failed only for the device), an fp32 out passes it."""
    a, b = torch.ones(2, 4, 4, dtype=torch.float16), torch.ones(2, 4, 4, dtype=torch.float16)
    with pytest.raises(ZooError, match="out_dtype must be torch.float16 .* or torch.float32, got torch.bfloat16"):
        zoo.bmm(a, b, out=torch.empty(2, 4, 4, dtype=torch.bfloat16))
    with pytest.raises(ZooError, match="got torch.bfloat16"):
        zoo.bmm(list(a), list(b), out=[torch.empty(4, 4, dtype=torch.bfloat16)] * 2)
    with pytest.raises(ZooError, match="inputs must be CUDA tensors"):
        zoo.bmm(a, b, out=torch.empty(2, 4, 4, dtype=torch.float32))
    with pytest.raises(ZooError, match="inputs must be CUDA tensors"):
        zoo.bmm(list(a), list(b), out=[torch.empty(4, 4, dtype=torch.float32)] * 2)


def test_streams_mode_chains_gemms_on_two_streams_by_default():
    """The streams mode's default stream count: CHAINED_STREAMS chains for kernels whose
    launches chain on a stream (sm_90a), fewer when there are fewer GEMMs; one per GEMM for
    the others, at most MAX_STREAMS; an explicit count is kept, within MAX_STREAMS."""
    assert batched.CHAINED_STREAMS == 2
    assert [batched.stream_count(None, n, True) for n in (1, 2, 3, 10, 64, 1000)] == [1, 2, 2, 2, 2, 2]
    assert [batched.stream_count(None, n, False) for n in (1, 3, 10, 1000)] == [1, 3, 10, 32]
    assert [batched.stream_count(s, 10, c) for s in (1, 3, 10, 40) for c in (True, False)] == \
        [1, 1, 3, 3, 10, 10, 32, 32]
