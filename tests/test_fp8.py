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
