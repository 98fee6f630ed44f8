"""FP8 operands and scales (zoo/fp8.py), on the CPU: quantize's recipes and layouts, torch's
own _scaled_mm taking them (per-tensor and per-row run on the CPU), and check_scaled's errors."""
import pytest
import torch

from zoo import fp8
from zoo.cuda import ZooError


def operands(m=64, k=256, n=128, seed=0):
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=gen) * torch.logspace(-2, 2, m).unsqueeze(1)  # rows of unlike sizes
    w = torch.randn(n, k, generator=gen)
    return a, w


@pytest.mark.parametrize("recipe", fp8.RECIPES)
def test_quantize_round_trips_each_recipe_in_torchs_layouts(recipe):
    """q * scale is x to FP8's precision, each block's largest magnitude maps to 448, and the
    operands come out as torch._scaled_mm takes them: a row-major, b = W.t() column-major, the
    scales float32 in the recipe's shape (the block recipe's outer-dim-major)."""
    a, w = operands()
    qa, sa = fp8.quantize(a, recipe, operand="a")
    qb, sb = fp8.quantize(w.t(), recipe, operand="b")
    assert qa.dtype == qb.dtype == torch.float8_e4m3fn and sa.dtype == sb.dtype == torch.float32
    assert qa.stride() == (256, 1) and qb.shape == (256, 128) and qb.stride() == (1, 256)
    shapes = {"tensor": ((), ()), "row": ((64, 1), (1, 128)), "block": ((64, 2), (2, 1))}[recipe]
    assert (tuple(sa.shape), tuple(sb.shape)) == shapes
    if recipe == "block":
        assert sa.stride() == (1, 64) and sb.stride()[0] == 1
    for q, s, x, op in ((qa, sa, a, "a"), (qb, sb, w.t(), "b")):
        back = fp8.dequantize(q, s, recipe, op)
        assert (back - x).norm() / x.norm() < 0.04
        assert q.float().abs().max() == fp8.FP8_MAX[torch.float8_e4m3fn]
    if recipe == "row":  # every row of a reaches 448, however small it was
        assert torch.all(qa.float().abs().amax(dim=1) == 448)
    assert fp8.check_scaled(qa, qb, sa, sb, torch.bfloat16) == recipe


@pytest.mark.parametrize("recipe", ["tensor", "row"])
def test_torchs_scaled_mm_computes_the_dequantized_product(recipe):
    """torch._scaled_mm (its CPU kernels run these two recipes) takes quantize's outputs as they
    are and returns dequantize(a) @ dequantize(b) to fp32's rounding: the semantics and layouts
    agree. Compared normwise: a CPU with AMX and AVX512-FP16 (this CI's, 2026-11-28) sums in
    another order, 2e-7 apart normwise but 4e-4 at elements whose sums cancel (assert_close
    failed there); a wrong scale or layout is off by O(1)."""
    a, w = operands(seed=1)
    qa, sa = fp8.quantize(a, recipe, operand="a")
    qb, sb = fp8.quantize(w.t(), recipe, operand="b")
    try:
        y = torch._scaled_mm(qa, qb, sa, sb, out_dtype=torch.float32)
    except RuntimeError as exc:  # torch 2.11's CPU kernel: "only supports per-tensor scaling"
        if "per-tensor" not in str(exc):
            raise
        pytest.skip(f"torch {torch.__version__}'s CPU _scaled_mm takes per-tensor scales only")
    ref = fp8.dequantize(qa, sa, recipe, "a") @ fp8.dequantize(qb, sb, recipe, "b")
    err = ((y - ref).norm() / ref.norm()).item()
    assert err < 1e-5, err


def test_e5m2_and_zero_blocks():
    """e5m2 maps the largest magnitude to 57344; an all-zero block keeps a finite scale and
    quantizes to zeros."""
    a, _ = operands()
    a[:, :128] = 0
    q, s = fp8.quantize(a, "block", dtype=torch.float8_e5m2)
    assert q.dtype == torch.float8_e5m2 and torch.isfinite(s).all() and not q[:, :128].float().any()
    assert q.float().abs().max() == 57344.0


def test_quantize_refuses_what_it_cannot_make():
    a, w = operands()
    with pytest.raises(ZooError, match="recipe must be one of"):
        fp8.quantize(a, "channel")
    with pytest.raises(ZooError, match="operand must be"):
        fp8.quantize(a, "tensor", operand="c")
    with pytest.raises(ZooError, match="float8_e4m3fn or torch.float8_e5m2"):
        fp8.quantize(a, "tensor", dtype=torch.float16)
    with pytest.raises(ZooError, match="K a multiple of 128"):
        fp8.quantize(a[:, :200], "block")
    with pytest.raises(ZooError, match="N a multiple of 128"):
        fp8.quantize(w[:100].t(), "block", operand="b")
    with pytest.raises(ZooError, match="2-D float16"):
        fp8.quantize(a.to(torch.float8_e4m3fn), "tensor")


def test_check_scaled_names_what_is_wrong():
    a, w = operands()
    qa, sa = fp8.quantize(a, "row", operand="a")
    qb, sb = fp8.quantize(w.t(), "row", operand="b")
    cases = [
        ((qa, qb.contiguous(), sa, sb, torch.bfloat16), "column-major"),
        ((qa.t().contiguous().t(), qb, sa, sb, torch.bfloat16), "row-major"),
        ((qa.to(torch.float8_e5m2), qb.to(torch.float8_e5m2), sa, sb, torch.bfloat16), "one of them float8_e5m2"),
        ((qa, qb, sa.double(), sb, torch.bfloat16), "float32"),
        ((qa, qb, sa, sb, torch.int8), "out_dtype"),
        ((qa, qb, sa[:10], sb, torch.bfloat16), "follow no recipe"),
        ((qa[:, :200], qb[:200], sa, sb, torch.bfloat16), "multiples of 16"),
        ((qa, qb[:128], sa, sb, torch.bfloat16), "same K"),
        ((qa.to(torch.float8_e5m2), qb, sa, sb, torch.bfloat16), "row recipe takes float8_e4m3fn"),
    ]
    for args, match in cases:
        with pytest.raises(ZooError, match=match):
            fp8.check_scaled(*args)
    with pytest.raises(ZooError, match="bias must be"):
        fp8.check_scaled(qa, qb, sa, sb, torch.bfloat16, bias=torch.zeros(5))
    qa, sa = fp8.quantize(a, "block", operand="a")
    qb, sb = fp8.quantize(w.t(), "block", operand="b")
    with pytest.raises(ZooError, match="outer-dim-major"):
        fp8.check_scaled(qa, qb, sa.contiguous(), sb, torch.bfloat16)
    assert fp8.check_scaled(qa, qb, sa, sb, torch.bfloat16, bias=torch.zeros(128, dtype=torch.bfloat16)) == "block"


# ----------------------------------------------------------------------------- zoo.nn.Float8Linear

def linear_layer(k=256, n=128, dtype=torch.bfloat16, seed=2):
    torch.manual_seed(seed)
    return torch.nn.Linear(k, n).to(dtype)


@pytest.mark.parametrize("recipe", fp8.RECIPES)
def test_float8_linear_holds_the_weight_as_scaled_mm_takes_it(recipe):
    """from_linear quantizes W once: an e4m3 (out, in) parameter whose .t() is b, scales in W's
    orientation whose .t() is torch's scale_b (check_scaled takes them with any input's), the
    dequantized weight within FP8's precision of W, the bias the layer's own storage."""
    from zoo.nn import Float8Linear
    layer = linear_layer()
    f = Float8Linear.from_linear(layer, recipe)
    assert f.weight.dtype == torch.float8_e4m3fn and f.weight.shape == (128, 256) and not f.weight.requires_grad
    assert f.weight.is_contiguous() and f.weight_scale.dtype == torch.float32
    back = fp8.dequantize(f.weight.t(), f.weight_scale.t(), recipe, "b").t()
    assert (back - layer.weight.float()).norm() / layer.weight.float().norm() < 0.04
    assert f.bias.data_ptr() == layer.bias.data_ptr()
    qx, sx = fp8.quantize(torch.randn(8, 256), recipe)
    assert fp8.check_scaled(qx, f.weight.t(), sx, f.weight_scale.t(), torch.bfloat16) == recipe


def test_float8_linear_on_torchs_backend_computes_the_dequantized_product():
    """The layer's forward (per tensor: torch's CPU _scaled_mm runs it) is its quantized input
    times its quantized weight, plus the bias, in the input's dtype and leading shape."""
    from zoo.nn import Float8Linear
    layer = linear_layer()
    f = Float8Linear.from_linear(layer, "tensor", backend="torch")
    x = torch.randn(2, 3, 256, dtype=torch.bfloat16)
    try:
        with torch.no_grad():
            y = f(x)
    except RuntimeError as exc:
        pytest.skip(f"torch {torch.__version__}'s CPU _scaled_mm: {exc}")
    qx, sx = fp8.quantize(x.reshape(6, 256), "tensor")
    ref = fp8.dequantize(qx, sx, "tensor") @ fp8.dequantize(f.weight.t(), f.weight_scale, "tensor", "b") \
        + layer.bias.float()
    assert y.shape == (2, 3, 128) and y.dtype == torch.bfloat16
    assert (y.reshape(6, 128).float() - ref).norm() / ref.norm() < 4e-3


@pytest.mark.parametrize("recipe", fp8.RECIPES)
def test_a_torch_state_dict_loads_into_a_float8_linear_quantized(recipe):
    """A bf16 Linear's state dict loaded into a Float8Linear gives from_linear's weight and
    scales (not the bf16 values copied into FP8 unscaled); its own state dict round-trips."""
    from zoo.nn import Float8Linear
    layer, other = linear_layer(seed=3), linear_layer(seed=4)
    f = Float8Linear.from_linear(other, recipe)
    f.load_state_dict(layer.state_dict())
    want = Float8Linear.from_linear(layer, recipe)
    assert torch.equal(f.weight.view(torch.uint8), want.weight.view(torch.uint8))
    assert torch.equal(f.weight_scale, want.weight_scale) and torch.equal(f.bias, layer.bias)
    g = Float8Linear.from_linear(other, recipe)
    g.load_state_dict(f.state_dict())
    assert torch.equal(g.weight.view(torch.uint8), want.weight.view(torch.uint8))
    assert torch.equal(g.weight_scale, want.weight_scale)


def test_float8_linear_refuses_what_it_cannot_run():
    from zoo import nn as zoo_nn
    f = zoo_nn.Float8Linear.from_linear(linear_layer(), "row", backend="torch")
    with pytest.raises(ZooError, match="last dimension 256"):
        f(torch.randn(4, 200, dtype=torch.bfloat16))
    with pytest.raises(ZooError, match="bfloat16 or float16 input"):
        f(torch.randn(4, 256))
    with pytest.raises(ZooError, match="is for inference"):
        f(torch.randn(4, 256, dtype=torch.bfloat16, requires_grad=True))
    f.half()  # casting after conversion turns the e4m3 values into fp16 ones, unscaled
    with pytest.raises(ZooError, match="cast after zoo.nn.convert"):
        f(torch.randn(4, 256, dtype=torch.float16))
    with pytest.raises(ZooError, match="multiples of 128"):
        zoo_nn.Float8Linear(256, 200, recipe="block")
    with pytest.raises(ZooError, match="recipe must be"):
        zoo_nn.Float8Linear(256, 256, recipe="channel")
    with pytest.raises(ZooError, match="backend must be"):
        zoo_nn.Float8Linear(256, 256, backend="cublas")
    with pytest.raises(ZooError, match="fp8 must be None or one of"):
        zoo_nn.convert(torch.nn.Linear(16, 16), fp8="rows")
    # off a CUDA device convert leaves the Linears, saying why; skip= names what to leave
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.Linear(256, 256))
    swaps = zoo_nn.convert(model, fp8="row", skip=("1",))
    assert [(s.name, s.swapped) for s in swaps] == [("0", False), ("1", False)]
    assert "not a CUDA device" in swaps[0].reason and swaps[1].reason == "skipped as asked"
    assert all(type(m) is torch.nn.Linear for m in model)
    lone = torch.nn.Linear(256, 256)  # the model itself: convert cannot replace it in a parent
    assert "from_linear" in zoo_nn.convert(lone, fp8="row")[0].reason and type(lone) is torch.nn.Linear


def test_inductor_calls_scaled_mms_launch_path_not_the_op(monkeypatch):
    """Under torch.compile, inductor's code calls scaled_mm's launch path itself
    (extern_kernels.zoo_scaled_mm, as extern_kernels._scaled_mm for torch's), not the custom
    op's dispatcher fallback: b still column-major, the out dtype by name even where it is a
    tensor's dtype (which inductor may write as a number). On the CPU a float32 product of the
    dequantized operands stands in for the launch."""
    from torch._inductor.utils import run_and_get_code
    from zoo import scaled
    calls = []

    def launch(a, b, scale_a, scale_b, bias=None, *, out_dtype, use_fast_accum=False, kernel=None, config=None):
        calls.append((a.stride(), b.stride(), tuple(scale_b.shape), out_dtype, use_fast_accum))
        product = fp8.dequantize(a, scale_a, "row") @ fp8.dequantize(b, scale_b, "row", "b")
        return (product + bias.float()).to(out_dtype)

    monkeypatch.setattr(scaled, "scaled_mm", launch)
    torch._dynamo.reset()
    a, w = operands()
    qa, sa = fp8.quantize(a, "row")
    qw, sw = fp8.quantize(w, "row")  # W (N, K) row-major: b = qw.t()
    bias = torch.randn(128, dtype=torch.bfloat16)
    f = torch.compile(lambda x, y, sx, sy, c: torch.ops.zoo.scaled_mm(x, y.t(), sx, sy.t(), c, c.dtype), fullgraph=True)
    got, (code, *_) = run_and_get_code(f, qa, qw, sa, sw, bias)
    assert "extern_kernels.zoo_scaled_mm(" in code and "torch.ops.zoo.scaled_mm.default(" not in code
    assert calls == [((256, 1), (1, 256), (1, 128), torch.bfloat16, False)]
    want = launch(qa, qw.t(), sa, sw.t(), bias, out_dtype=torch.bfloat16)
    assert got.dtype == torch.bfloat16 and torch.equal(got, want)
    torch._dynamo.reset()
