"""zoo.mm's input checks, which need no GPU: each names what was wrong."""
import pytest
import torch

import zoo
from zoo import overlap

H = torch.float16


@pytest.mark.parametrize("a, b, kwargs, message", [
    ([[1.0]], torch.ones(1, 1, dtype=H), {}, "a must be a torch.Tensor, got list"),
    (torch.ones(2, 3, 4, dtype=H), torch.ones(4, 2, dtype=H), {}, "a must be 2-D, got 3-D"),
    (torch.ones(2, 3, dtype=H), torch.ones(3, dtype=H), {}, "b must be 2-D, got 1-D"),
    (torch.ones(2, 3, dtype=H), torch.ones(4, 5, dtype=H), {}, r"a's K=3 must equal b's K=4"),
    (torch.ones(2, 3, dtype=H), torch.ones(3, 5), {}, "must share a dtype"),
    (torch.ones(2, 3, dtype=torch.float64), torch.ones(3, 5, dtype=torch.float64), {}, "float64 is not supported: the zoo.s kernels take torch.float16, torch.bfloat16 or torch.float32"),
    (torch.ones(2, 3, dtype=H), torch.ones(3, 5, dtype=H), {}, "must be CUDA tensors, got device cpu"),
])
def test_bad_inputs_raise_clear_errors(a, b, kwargs, message):
    with pytest.raises(zoo.ZooError, match=message):
        zoo.mm(a, b, **kwargs)


def test_bad_out_dtype():
    a, b = torch.ones(2, 3, dtype=H), torch.ones(3, 5, dtype=H)
    with pytest.raises(zoo.ZooError, match=r"out_dtype must be torch.float16 \(the input dtype\) or torch.float32"):
        zoo.gemm.check_inputs(a, b, torch.bfloat16)


def test_errors_are_exceptions_not_asserts():
    # ZooError survives `python -O`; it is also what the CLI turns into exit status 1.
    assert issubclass(zoo.ZooError, Exception) and not issubclass(zoo.ZooError, AssertionError)


# _row_major decides what the kernels read in place and what they get as a copy.
def test_row_major_reads_plain_and_sliced_rows_in_place():
    base = torch.randn(64, 40, dtype=H)
    t, ld = zoo.gemm._row_major(base, aligned=True)
    assert t is base and ld == 40
    sliced = base[:, :33]  # row stride 40: readable, aligned
    t, ld = zoo.gemm._row_major(sliced, aligned=True)
    assert t is sliced and ld == 40


@pytest.mark.parametrize("make", [
    lambda: torch.randn(1, 1, dtype=H).expand(300, 1),     # stride-0 rows: all rows alias
    lambda: torch.randn(1, 7, dtype=H).expand(5, 7),
    lambda: torch.randn(40, 64, dtype=H).t(),              # column-major
])
def test_row_major_copies_what_cannot_be_read_in_place(make):
    t = make()
    for aligned in (False, True):
        copy, ld = zoo.gemm._row_major(t, aligned)
        assert copy is not t and copy.stride(1) == 1 and ld == copy.stride(0) >= t.shape[1]
        assert torch.equal(copy[:, :t.shape[1]], t)
        if aligned:
            assert ld % 8 == 0 and copy.data_ptr() % 16 == 0
            assert not copy[:, t.shape[1]:].any()  # padding is zero


def test_row_major_aligned_kernels_get_aligned_rows():
    odd = torch.randn(9, 7, dtype=H)             # row stride 7: rows not 16-byte aligned
    offset = torch.randn(9, 17, dtype=H)[:, 1:]  # row stride 17 and a 2-byte offset start
    for t in (odd, offset):
        assert zoo.gemm._row_major(t, aligned=False)[0] is t  # the sm75 kernel reads these
        copy, ld = zoo.gemm._row_major(t, aligned=True)
        assert ld % 8 == 0 and copy.data_ptr() % 16 == 0 and torch.equal(copy[:, :t.shape[1]], t)


def test_out_checks_need_no_gpu():
    a, b = torch.ones(4, 4, dtype=H), torch.ones(4, 4, dtype=H)
    with pytest.raises(zoo.ZooError, match="out must be a torch.Tensor, got list"):
        zoo.mm(a, b, out=[1])
    with pytest.raises(zoo.ZooError, match="out must not overlap a or b"):
        zoo.gemm._apart_from_out(a, b, a)
    assert not overlap.share_elements(torch.ones(4, 4, dtype=H), a)
    buf = torch.ones(8, 64, dtype=H)
    assert zoo.gemm._apart_from_out(buf[:, 32:], b, buf[:, :32]) is None  # interleaved, apart
    odd = buf.as_strided((4, 4), (2, 3))  # no unit stride: read through a copy
    x, y = zoo.gemm._apart_from_out(odd, b, buf[:, :32])
    assert x is not odd and torch.equal(x, odd) and y is b


def test_out_that_autograd_tracks_is_refused_as_torch_mm_does():
    """Review item 1: the kernel writes out behind autograd's back; torch.mm(out=y) raises
    when y (or a, b) requires grad in grad mode, and so must zoo.mm, before any launch."""
    x = torch.ones(4, 4, requires_grad=True)
    y = x * 1
    a = torch.ones(4, 4)
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic differentiation"):
        torch.mm(a, a, out=y)
    with pytest.raises(zoo.ZooError, match="does not support automatic differentiation"):
        zoo.mm(a, a, out=y)
    with pytest.raises(zoo.ZooError, match="does not support automatic differentiation"):
        zoo.mm(x, a, out=torch.empty(4, 4))
    with torch.no_grad():  # allowed there, as torch.mm; then the CPU device is what is wrong
        with pytest.raises(zoo.ZooError, match="inputs must be CUDA tensors"):
            zoo.mm(a, a, out=y)


def _bytes_of(t: torch.Tensor) -> set[int]:
    size = t.element_size()
    offsets = torch.zeros((), dtype=torch.int64)
    for n, st in zip(t.shape, t.stride()):
        offsets = offsets.unsqueeze(-1) + torch.arange(n) * st
    return {(t.storage_offset() + int(o)) * size + i for o in offsets.flatten() for i in range(size)}


def test_views_that_share_no_element_are_told_apart():
    """Review item 3: interleaved views (columns of one buffer, the matrices of a transposed
    batch) share no element though their byte spans cross; checked against the bytes."""
    buf = torch.empty(8, 64, dtype=H)
    assert overlap.share_elements(buf[:, 32:], buf[:, :32]) is False
    assert overlap.share_elements(buf[:, 31:], buf[:, :32]) is True
    batch = torch.empty(5, 3, 4, dtype=H).transpose(0, 1)  # (3, 5, 4), matrices interleaved
    assert overlap.first_overlap(list(batch.unbind(0)), []) is None
    assert overlap.first_overlap(list(batch.unbind(0)), [batch[1][:, 2:]]) == 1
    gen = torch.Generator().manual_seed(3)
    flat = torch.empty(4096, dtype=H)
    draws = {True: 0, False: 0, None: 0}
    for _ in range(2000):
        def view():
            r, c = (int(v) for v in torch.randint(1, 7, (2,), generator=gen))
            spare, off = (int(v) for v in torch.randint(0, 9, (2,), generator=gen))
            if int(torch.randint(0, 2, (1,), generator=gen)):
                return flat.as_strided((r, c), (c + spare, 1), off)
            return flat.as_strided((r, c), (1, r + spare), off)  # column-major
        x, y = view(), view()
        got = overlap.share_elements(x, y)
        draws[got] += 1
        assert got is None or got == bool(_bytes_of(x) & _bytes_of(y)), (x.stride(), y.stride())
    assert draws[True] and draws[False]


def test_bmm_overlap_sweep_agrees_with_the_pairwise_check():
    """zoo.bmm's one-pass overlap check finds the same clashes as checking every pair: outputs
    against outputs and inputs, inputs free to share memory (random layouts in one buffer)."""
    gen = torch.Generator().manual_seed(5)
    buf = torch.empty(2500, dtype=H)
    outcomes = set()
    for _ in range(300):
        def view():
            start = int(torch.randint(0, 2000, (1,), generator=gen))
            rows, cols = (int(x) for x in torch.randint(0, 20, (2,), generator=gen))
            return buf[start:start + rows * (cols + 1)].view(rows, cols + 1)[:, :cols]
        outs = [view() for _ in range(int(torch.randint(1, 5, (1,), generator=gen)))]
        ins = [view() for _ in range(int(torch.randint(0, 5, (1,), generator=gen)))]
        pairwise = [i for i, o in enumerate(outs) if o.numel() and (
            any(_bytes_of(o) & _bytes_of(t) for t in ins) or
            any(_bytes_of(o) & _bytes_of(p) for j, p in enumerate(outs) if j != i))]
        found = overlap.first_overlap(outs, ins)
        assert (found is None) == (not pairwise) and (found is None or found in pairwise)
        outcomes.add(found is None)
    assert outcomes == {True, False}  # both disjoint and clashing layouts were drawn
    shared = torch.empty(8, 8, dtype=H)
    assert overlap.first_overlap([shared, shared], []) == 0
    assert overlap.first_overlap([buf[:64], buf[64:128]], [buf[:32], buf[:32]]) == 0
    assert overlap.first_overlap([buf[:64], buf[64:128]], [buf[200:300], buf[250:260]]) is None


def test_sizes_past_int32_are_refused():
    big = torch.empty(2**31, 0, dtype=H)  # no memory, just a shape
    with pytest.raises(zoo.ZooError, match="dimensions above"):
        zoo.gemm.check_inputs(big, torch.empty(0, 1, dtype=H), None)


@pytest.mark.parametrize("api", ["legacy", "fp32_precision"])
def test_tf32_setting_is_read_and_set_through_either_torch_api(api):
    """torch >= 2.9 sets TF32 through fp32_precision, after which reading the legacy
    allow_tf32 raises: zoo reads (and its timing context sets) whichever the caller uses."""
    matmul = torch.backends.cuda.matmul
    if api == "fp32_precision" and not hasattr(matmul, "fp32_precision"):
        pytest.skip(f"torch {torch.__version__} has no fp32_precision")
    before = matmul.fp32_precision if api == "fp32_precision" else matmul.allow_tf32
    try:
        if api == "fp32_precision":
            matmul.fp32_precision = "tf32"
        else:
            matmul.allow_tf32 = True
        assert zoo.bench.torch_allows_tf32()
        assert zoo.gemm.tf32_allowed(torch.float32, None) and not zoo.gemm.tf32_allowed(torch.float32, False)
        assert not zoo.gemm.tf32_allowed(torch.float16, True)  # only fp32 inputs are rounded
        with zoo.bench.tf32_matmul(False):
            assert not zoo.bench.torch_allows_tf32() and not zoo.gemm.tf32_allowed(torch.float32, None)
        assert zoo.bench.torch_allows_tf32()  # restored
    finally:
        if api == "fp32_precision":
            matmul.fp32_precision = before
        else:
            matmul.allow_tf32 = before


def test_custom_ops_trace_on_meta_tensors():
    """The fake implementations torch.compile traces with: shapes and dtypes, and the same
    clear errors as zoo.mm's checks."""
    a = torch.empty(5, 7, device="meta", dtype=H)
    b = torch.empty(7, 3, device="meta", dtype=H)
    assert torch.ops.zoo.mm(a, b).shape == (5, 3)
    assert torch.ops.zoo.mm(a, b, torch.float32).dtype == torch.float32
    assert torch.ops.zoo.bmm(a.expand(2, 5, 7), b.expand(2, 7, 3)).shape == (2, 5, 3)
    with pytest.raises(zoo.ZooError, match="inner dimensions differ"):
        torch.ops.zoo.mm(a, a)
    with pytest.raises(zoo.ZooError, match="out_dtype must be"):
        torch.ops.zoo.mm(a, b, torch.bfloat16)


def test_inductor_calls_the_launch_path_not_the_op(monkeypatch):
    """Under torch.compile, inductor's code calls the launch path itself, writing into its own
    buffer (extern_kernels.zoo_mm, as extern_kernels.mm for torch.mm), not the custom op's
    dispatcher fallback. On the CPU the launch path is stood in for by a float64 product."""
    from torch._inductor.utils import run_and_get_code
    calls = []

    def launch(a, b, *, out, kernel=None, config=None, allow_tf32=None):
        calls.append((tuple(a.shape), b.stride(), out.dtype, config))
        return out.copy_(a.double() @ b.double())

    monkeypatch.setattr(zoo.gemm, "mm", launch)
    torch._dynamo.reset()
    f = torch.compile(lambda x, w: torch.ops.zoo.mm(x, w.t(), torch.float32, None, "128x128"), fullgraph=True)
    x, w = torch.randn(8, 16, dtype=torch.bfloat16), torch.randn(12, 16, dtype=torch.bfloat16)
    got, (code, *_) = run_and_get_code(f, x, w)
    assert "extern_kernels.zoo_mm(" in code and "torch.ops.zoo.mm.default(" not in code
    assert calls == [((8, 16), (1, 16), torch.float32, "128x128")]  # w^T read in place, the config passed
    assert got.dtype == torch.float32 and torch.equal(got, (x.double() @ w.double().t()).float())
    torch._dynamo.reset()


def test_zoo_linear_compiles_whole_through_the_op(monkeypatch):
    """zoo.nn.Linear under torch.compile(fullgraph=True): one graph, its product by the zoo's
    launch path (inductor's extern call; on the CPU a float64 product stands in), x W^T + b."""
    calls = []

    def launch(a, b, *, out, kernel=None, config=None, allow_tf32=None):
        calls.append((tuple(a.shape), b.stride()))
        return out.copy_(a.double() @ b.double())

    monkeypatch.setattr(zoo.gemm, "mm", launch)
    torch._dynamo.reset()
    layer = zoo.nn.Linear(16, 12, dtype=torch.float32)
    x = torch.randn(2, 8, 16)
    with torch.no_grad():
        got = torch.compile(layer, fullgraph=True)(x)
    assert calls == [((16, 16), (1, 16))]  # the rows of x as one matrix, W^T read in place
    want = x.double() @ layer.weight.double().t() + layer.bias.double()
    assert got.shape == (2, 8, 12) and torch.allclose(got.double(), want, atol=1e-5)
    torch._dynamo.reset()


def test_inputs_that_require_grad_go_through_the_autograd_op():
    """No silently missing gradient: an input that requires grad takes the custom op, whose
    autograd formula records the call (on the CPU the op then refuses the device)."""
    a = torch.ones(4, 4, dtype=H, requires_grad=True)
    with pytest.raises(zoo.ZooError, match="inputs must be CUDA tensors"):
        zoo.mm(a, torch.ones(4, 4, dtype=H))
    with pytest.raises(zoo.ZooError, match="under torch.compile or autograd, zoo.bmm takes two 3-D tensors"):
        zoo.bmm([a], [a])


def test_zoo_linear_is_a_torch_linear_with_torchs_state_dict():
    """zoo.nn.Linear keeps torch's layout: a torch state dict loads unchanged, from_torch shares
    the parameters (the same tensors) and isinstance checks (tensor parallel's) accept it."""
    lin = torch.nn.Linear(6, 4)
    mine = zoo.nn.Linear.from_torch(lin)
    assert isinstance(mine, torch.nn.Linear) and mine.weight is lin.weight and mine.bias is lin.bias
    fresh = zoo.nn.Linear(6, 4)
    fresh.load_state_dict(lin.state_dict())
    assert fresh.weight.shape == (4, 6) and torch.equal(fresh.weight, lin.weight)
    mine.register_parameter("extra", torch.nn.Parameter(torch.ones(1)))
    assert "extra" not in lin._parameters


def test_zoo_linear_refuses_inputs_it_cannot_multiply():
    """linear.linear (a Linear's call without autograd) checks x's last dimension against the
    weight before any view, and a CPU input is refused as zoo.mm refuses it, layout met or not."""
    layer = zoo.nn.Linear(4, 3).half()
    with torch.no_grad():
        for x in (torch.randn(2, 5), torch.randn(3, 8), torch.tensor(1.0)):
            with pytest.raises(zoo.ZooError, match="last dimension must match"):
                layer(x.half())
        for _ in range(2):
            with pytest.raises(zoo.ZooError, match="CUDA"):
                layer(torch.randn(2, 3, 4).half())


def test_convert_swaps_what_the_zoo_runs_and_says_why_it_left_the_rest():
    """On the CPU every layer is left, each with its reason; the model is unchanged."""
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU())
    report = zoo.nn.convert(model)
    assert [(s.name, s.kind, s.swapped) for s in report] == [("0", "Linear", False), ("1", "Conv2d", False)]
    assert all("not a CUDA device" in s.reason for s in report)
    assert type(model[0]) is torch.nn.Linear and type(model[1]) is torch.nn.Conv2d


def test_which_operands_a_kernel_reads_column_major_in_place():
    """gemm.read_in_place: the sm_90a kernel reads W^T and dY^T in place (their column stride a
    16-byte multiple), but not A on a swap-AB tile, and never a layout its spec does not list."""
    from zoo import gemm
    from zoo.specs.sm90_wgmma import SM90_GEMM, SM90_TF32
    w = torch.empty(48, 64, dtype=H)           # (N, K): w.t() is B column-major
    dy = torch.empty(32, 48, dtype=H)          # (batch, N): dy.t() is A column-major
    x = torch.empty(32, 64, dtype=H)
    tiles, swap = SM90_GEMM.config("128x128"), SM90_GEMM.config("16x128s")
    assert gemm.column_major(w.t()) and not gemm.column_major(w) and not gemm.column_major(torch.empty(5, 1, dtype=H))
    assert not gemm.column_major(torch.empty(48, 60, dtype=H).t())  # 120-byte columns: TMA needs 16-byte multiples
    assert gemm.read_in_place(SM90_GEMM, tiles, x, w.t()) == (False, True)
    assert gemm.read_in_place(SM90_GEMM, tiles, dy.t(), x) == (True, False)
    assert gemm.read_in_place(SM90_GEMM, tiles, dy.t(), torch.empty(64, 32, dtype=H).t()) == (True, True)
    assert gemm.read_in_place(SM90_GEMM, swap, dy.t(), w.t()[:32]) == (False, True)
    assert gemm.read_in_place(SM90_TF32, SM90_TF32.configs[0], dy.t().float(), w.t().float()) == (False, False)


def test_dtensor_calls_reach_the_sharding_rules_without_importing_them_up_front():
    """`import zoo` does not import torch.distributed.tensor (~0.7 s); the first zoo.mm on
    DTensors registers the rules, so the call reaches the op's CPU refusal through DTensor's
    sharding propagation, not "no sharding strategy registered" (a one-process gloo group)."""
    import subprocess
    import sys
    code = """
import os, sys, torch, zoo
assert "torch.distributed.tensor" not in sys.modules
import torch.distributed as dist
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29555")
dist.init_process_group("gloo", rank=0, world_size=1)
from torch.distributed.tensor import Replicate, Shard, distribute_tensor
from torch.distributed.device_mesh import init_device_mesh
mesh = init_device_mesh("cpu", (1,))
x = distribute_tensor(torch.ones(4, 8, dtype=torch.float16), mesh, [Replicate()])
w = distribute_tensor(torch.ones(8, 6, dtype=torch.float16), mesh, [Shard(1)])
try:
    zoo.mm(x, w)
except zoo.ZooError as exc:
    print("refused:", exc)
dist.destroy_process_group()
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "refused: inputs must be CUDA tensors" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("bias, message", [
    (torch.ones(4, dtype=H), r"bias must be a \(5,\) float16, bfloat16 or float32 tensor on cpu, got \(4,\)"),
    (torch.ones(1, 5, dtype=H), r"got \(1, 5\)"),
    (torch.ones(5, dtype=torch.int32), "torch.int32"),
    ([0.0] * 5, "got list"),
])
def test_a_bias_of_the_wrong_shape_or_dtype_is_refused(bias, message):
    with pytest.raises(zoo.ZooError, match=message):
        zoo.gemm._check_bias(bias, torch.ones(3, 2, dtype=H), 5)


def test_a_bias_is_checked_on_the_autograd_path_too():
    """Where autograd records the product (the op has no bias), the bias is checked as the
    launch path checks it: a broadcasting (M, N) or 0-d bias is refused, not silently added."""
    y = torch.zeros(3, 5, dtype=H)
    for bad in (torch.zeros(3, 5, dtype=H), torch.tensor(1.0, dtype=H), torch.zeros(1, dtype=H)):
        with pytest.raises(zoo.ZooError, match=r"bias must be a \(5,\)"):
            zoo.gemm._plus(y, bad)
    assert torch.equal(zoo.gemm._plus(y, torch.ones(5, dtype=H)), torch.ones(3, 5, dtype=H))


def test_out_with_a_bias_that_requires_grad_is_refused_as_torch_addmm_does():
    a, b, out = torch.ones(2, 3, dtype=H), torch.ones(3, 4, dtype=H), torch.empty(2, 4, dtype=H)
    bias = torch.zeros(4, dtype=H, requires_grad=True)
    with pytest.raises(zoo.ZooError, match="does not support automatic differentiation"):
        zoo.mm(a, b, out=out, bias=bias)
