"""The code review's defects (issue 17), on the GPU: each test failed on the code before its fix."""
import gc
import threading

import pytest
import torch

import zoo
from zoo import batched, bench, cuda, gemm

pytestmark = pytest.mark.gpu
H = torch.float16


def rand(*shape, gen, dtype=H):
    return torch.randn(*shape, device="cuda", dtype=dtype, generator=gen)


def test_a_write_into_out_is_seen_by_autograd():
    """Item 1: out that autograd saved for backward and zoo.mm then overwrote makes backward
    raise (the version counter moved), as after torch.mm(out=); an out that requires grad is
    refused as torch.mm refuses it."""
    gen = torch.Generator(device="cuda").manual_seed(1)
    x = rand(64, 64, gen=gen).requires_grad_()
    w = rand(64, 64, gen=gen)           # saved by the product below
    loss = (x * w).sum()
    version = w._version
    zoo.mm(rand(64, 32, gen=gen), rand(32, 64, gen=gen), out=w)
    assert w._version > version
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    y = x * 1
    with pytest.raises(zoo.ZooError, match="does not support automatic differentiation"):
        zoo.mm(w, w, out=y)
    with torch.no_grad():
        zoo.mm(w, w, out=y)  # allowed there, as torch.mm
    a, b = rand(3, 16, 16, gen=gen), rand(3, 16, 16, gen=gen)
    out = torch.empty(3, 16, 16, device="cuda", dtype=H)
    for _ in range(2):  # the first call and the replayed one both tell autograd
        before = out._version
        zoo.bmm(a, b, out=out)
        assert out._version > before


def test_graph_calls_with_fresh_tensors_hold_no_memory():
    """Item 2: bmm(graph=True) with new tensors each call neither keeps them nor captures."""
    gen = torch.Generator(device="cuda").manual_seed(2)
    shape = (10, 768, 1024), (10, 1024, 768)
    a, b = rand(*shape[0], gen=gen), rand(*shape[1], gen=gen)
    assert bench.verify(a[3], b[3], zoo.bmm(a, b, graph=True)[3]).ok  # compile; cuBLAS's workspace
    del a, b
    gc.collect()
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    for _ in range(20):
        a, b = rand(*shape[0], gen=gen), rand(*shape[1], gen=gen)
        c = zoo.bmm(a, b, graph=True)
        assert bench.verify(a[3], b[3], c[3]).ok
        del a, b, c
    gc.collect()
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() - base < 2**20
    assert not batched._graphs, "fresh buffers every call: nothing to replay, nothing captured"


def test_graph_with_kept_buffers_replays_new_contents_and_goes_with_them():
    gen = torch.Generator(device="cuda").manual_seed(3)
    a, b = rand(4, 200, 96, gen=gen), rand(4, 96, 120, gen=gen)
    outs = [zoo.bmm(a, b, graph=True) for _ in range(2)]  # eager, then capture
    assert len(batched._graphs) == 1
    for _ in range(2):
        a.copy_(rand(4, 200, 96, gen=gen))
        c = zoo.bmm(a, b, graph=True)
        assert c is outs[1] and all(bench.verify(a[i], b[i], c[i]).ok for i in range(4))
    del a, outs, c
    gc.collect()
    assert not batched._graphs, "the graph went with its input"


def test_views_that_share_no_element_are_valid_outputs():
    """Item 3: interleaved but disjoint views as out."""
    gen = torch.Generator(device="cuda").manual_seed(4)
    buf = rand(256, 64, gen=gen)
    w = rand(32, 32, gen=gen)
    x = buf[:, 32:]
    expect = bench.reference(x, w)
    zoo.mm(x, w, out=buf[:, :32])
    assert bench.relative_error(buf[:, :32], expect) < 1e-2
    with pytest.raises(zoo.ZooError, match="out must not overlap"):
        zoo.mm(buf[:, 31:63], w, out=buf[:, :32])
    a, b = rand(3, 100, 40, gen=gen), rand(3, 40, 50, gen=gen)
    out = torch.empty(100, 3, 50, device="cuda", dtype=H).transpose(0, 1)
    for mode in ("batched", "streams", "grouped"):
        out.fill_(float("nan"))
        if mode == "grouped":
            zoo.bmm(list(a), list(b), out=list(out), mode=mode)
        else:
            assert zoo.bmm(a, b, out=out, mode=mode) is out
        assert all(bench.verify(a[i], b[i], out[i]).ok for i in range(3)), mode


def test_bmm_takes_out_dtype_from_out():
    """Item 4: fp16 inputs, fp32 out: bmm computes in fp32 as mm does."""
    gen = torch.Generator(device="cuda").manual_seed(5)
    a, b = rand(3, 64, 200, gen=gen), rand(3, 200, 72, gen=gen)
    out = torch.full((3, 64, 72), float("nan"), device="cuda", dtype=torch.float32)
    assert zoo.bmm(a, b, out=out) is out
    assert all(bench.verify(a[i], b[i], out[i]).ok for i in range(3))
    outs = [torch.empty(64, 72, device="cuda", dtype=torch.float32) for _ in range(3)]
    zoo.bmm(list(a), list(b), out=outs)
    assert all(bench.verify(a[i], b[i], outs[i]).ok for i in range(3))


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs (the multi-GPU issue): "
                    "a graph of inputs on cuda:1 captured while cuda:0 is current")
def test_graph_captures_on_the_inputs_device():
    """Item 5: a graph for inputs on cuda:1, made while torch's current device is 0 (after a
    capture there), replays new contents."""
    gen0 = torch.Generator(device="cuda:0").manual_seed(6)
    a0 = torch.randn(2, 64, 64, device="cuda:0", dtype=H, generator=gen0)
    for _ in range(3):
        zoo.bmm(a0, a0, graph=True)
    gen1 = torch.Generator(device="cuda:1").manual_seed(6)
    a = torch.randn(2, 128, 64, device="cuda:1", dtype=H, generator=gen1)
    b = torch.randn(2, 64, 96, device="cuda:1", dtype=H, generator=gen1)
    torch.cuda.set_device(0)
    for _ in range(4):
        a.copy_(torch.randn(2, 128, 64, device="cuda:1", dtype=H, generator=gen1))
        c = zoo.bmm(a, b, graph=True)
        torch.cuda.synchronize(1)
        assert c.device == a.device and all(bench.verify(a[i], b[i], c[i]).ok for i in range(2))


def test_threads_capturing_at_once(monkeypatch):
    """Item 6: several threads capture their own graphs at the same time (and replay them).
    By design one capture runs at a time, in thread_local mode: every capture is counted and
    held open 20 ms, so overlapping captures (the old code had no lock) would be seen."""
    import time
    errors, state, count_lock = [], {"open": 0, "most": 0, "modes": set(), "captures": 0}, threading.Lock()
    real = torch.cuda.graph

    class counted(real):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            state["modes"].add(kwargs.get("capture_error_mode", "global"))

        def __enter__(self):
            with count_lock:
                state["open"] += 1
                state["captures"] += 1
                state["most"] = max(state["most"], state["open"])
            time.sleep(0.02)
            return super().__enter__()

        def __exit__(self, *exc):
            try:
                return super().__exit__(*exc)
            finally:
                with count_lock:
                    state["open"] -= 1
    monkeypatch.setattr(torch.cuda, "graph", counted)

    def work(seed):
        try:
            gen = torch.Generator(device="cuda").manual_seed(seed)
            a, b = rand(3, 96 + seed, 64, gen=gen), rand(3, 64, 80, gen=gen)
            stream = torch.cuda.Stream()
            with torch.cuda.stream(stream):
                for _ in range(4):
                    a.copy_(rand(3, 96 + seed, 64, gen=gen))
                    c = zoo.bmm(a, b, graph=True)
                    stream.synchronize()
                    assert all(bench.verify(a[i], b[i], c[i]).ok for i in range(3)), seed
        except Exception as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
    threads = [threading.Thread(target=work, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert state["captures"] == 6 and state["most"] == 1 and state["modes"] == {"thread_local"}, state


def test_a_callers_own_context_is_left_current():
    """Item 9: zoo.mm no longer replaces the context a caller made current."""
    from cuda.bindings import driver
    gen = torch.Generator(device="cuda").manual_seed(7)
    a, b = rand(64, 64, gen=gen), rand(64, 64, gen=gen)
    zoo.mm(a, b)
    torch.cuda.synchronize()
    dev = driver.cuDeviceGet(torch.cuda.current_device())[1]
    params = driver.CUctxCreateParams() if hasattr(driver, "CUctxCreateParams") else None
    made = driver.cuCtxCreate(params, 0, dev) if params is not None else driver.cuCtxCreate(0, dev)
    assert made[0] == driver.CUresult.CUDA_SUCCESS, made
    mine = made[1]
    try:
        assert cuda.current_context() == int(mine)
        c = zoo.mm(a, b)
        assert cuda.current_context() == int(mine)
        torch.cuda.synchronize()
        assert bench.verify(a, b, c).ok
    finally:
        driver.cuCtxDestroy(mine)


def test_split_k_counters_are_left_zeroed_for_the_next_launch():
    """The per-stream split-K workspace is reused: back-to-back launches on one stream, and on
    two streams at once, stay right."""
    if gemm.device_limits(torch.cuda.current_device()).cc != (9, 0):
        pytest.skip("split-K is the sm_90a kernel's")
    gen = torch.Generator(device="cuda").manual_seed(8)
    pairs = [(rand(64, 4096, gen=gen), rand(4096, 1024, gen=gen)) for _ in range(6)]
    side = torch.cuda.Stream()
    outs = []
    for i, (a, b) in enumerate(pairs):
        with torch.cuda.stream(side if i % 2 else torch.cuda.current_stream()):
            outs.append(zoo.mm(a, b))
    torch.cuda.synchronize()
    for (a, b), c in zip(pairs, outs):
        assert bench.verify(a, b, c).ok
    assert gemm._workspaces, "64 x 4096 x 1024 is expected to split K"
    assert all(not any(kept.counters.read()) for kept in gemm._workspaces.values())


@pytest.mark.parametrize("m, k", [(512, 512), (128, 4096)])
def test_dependent_launches_wait_for_the_grid_before_them(m, k):
    """Launches that go as programmatic dependents (registry.dependent_launch) start while the
    grid before them runs: each must still read that grid's output (read after write) and not
    overwrite what that grid still reads (write after read). GEMMs launched back to back, no
    synchronize in between: a chain, each fed the one before into NaN-poisoned outputs, then
    one whose output is the input of the GEMM just before it."""
    if gemm.device_limits(torch.cuda.current_device()).cc != (9, 0):
        pytest.skip("the sm_90a kernel is the one launched as a dependent")
    gen = torch.Generator(device="cuda").manual_seed(9)
    w = [rand(k, k, gen=gen) / k ** 0.5 for _ in range(5)]
    kept = rand(m, k, gen=gen)
    x = kept.clone()
    chain = [rand(m, k, gen=gen)] + [torch.full((m, k), float("nan"), device="cuda", dtype=H) for _ in range(3)]
    last = torch.full((m, k), float("nan"), device="cuda", dtype=H)
    zoo.mm(x, w[0], out=last)  # plans the layout: what follows is launches only
    plan = next(p for key, p in gemm._calls.items() if key[0] == (m, k) and key[-1] is not None)
    assert plan.launch.pdl, "this shape's footprint fits L2: it goes as a dependent launch"
    torch.cuda.synchronize()
    for i in range(3):
        zoo.mm(chain[i], w[i], out=chain[i + 1])        # reads what the launch before wrote
    zoo.mm(x, w[3], out=last)                           # reads x ...
    zoo.mm(chain[3], w[4], out=x)                       # ... which the next launch overwrites
    torch.cuda.synchronize()
    for i in range(3):
        assert bench.verify(chain[i], w[i], chain[i + 1]).ok, f"chain GEMM {i}"
    assert bench.verify(kept, w[3], last).ok, "a dependent launch overwrote an input of the grid before it"
    assert bench.verify(chain[3], w[4], x).ok
