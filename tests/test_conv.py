"""zoo.conv2d without a GPU: the shape math against torch's, the checks, the weight and input
layouts the kernels read, the im2col map's bounding box (the TMA walk emulated), the CLI."""
import itertools

import pytest
import torch

from zoo import arch, conv, convnets, registry
from zoo.cli import main
from zoo.cuda import ZooError

GEOMETRIES = [  # (N, C, H, W, K, R, S, stride, padding, dilation)
    (2, 64, 9, 11, 128, 3, 3, (1, 1), (1, 1), (1, 1)),
    (3, 24, 13, 7, 40, 3, 3, (2, 2), (1, 1), (1, 1)),
    (2, 16, 12, 12, 64, 3, 3, (1, 1), (2, 2), (2, 2)),
    (2, 32, 15, 15, 96, 1, 1, (2, 2), (0, 0), (1, 1)),
    (1, 8, 6, 20, 16, 2, 5, (1, 2), (0, 2), (1, 1)),
    (1, 4, 5, 5, 4, 5, 5, (3, 3), (2, 2), (1, 1)),
]


def shape_of(g):
    n, c, h, w, k, r, s, stride, padding, dilation = g
    return conv.Conv(n, h, w, c, k, r, s, stride, padding, dilation)


@pytest.mark.parametrize("g", GEOMETRIES)
def test_output_size_is_torchs(g):
    shape = shape_of(g)
    x = torch.empty(shape.images, shape.channels, shape.height, shape.width, device="meta")
    w = torch.empty(shape.out_channels, shape.channels, shape.r, shape.s, device="meta")
    y = torch.nn.functional.conv2d(x, w, None, shape.stride, shape.padding, shape.dilation)
    assert tuple(y.shape) == (shape.images, shape.out_channels, shape.p, shape.q)
    assert shape.gemm_m == shape.images * shape.p * shape.q and shape.gemm_k == shape.r * shape.s * shape.channels


@pytest.mark.parametrize("g", GEOMETRIES)
@pytest.mark.parametrize("block_k", [32, 64])
def test_implicit_gemm_is_the_convolution(g, block_k):
    """The GEMM of the kernels' contract (nhwc x, weight_matrix B, A's rows and columns as
    ConvGeometry defines them) reproduces F.conv2d, on the CPU in float64."""
    shape = shape_of(g)
    torch.manual_seed(0)
    x = torch.randn(shape.images, shape.channels, shape.height, shape.width, dtype=torch.float64)
    w = torch.randn(shape.out_channels, shape.channels, shape.r, shape.s, dtype=torch.float64)
    geo = shape.geometry(block_k)
    xs = conv.nhwc(x)  # (N, H, W, C8), zero-padded channels
    b = conv.weight_matrix(w, geo.c_pad)
    assert geo.c_pad % block_k == 0 and b.shape == (shape.r * shape.s * geo.c_pad, shape.out_channels)
    a = torch.zeros(shape.gemm_m, shape.r * shape.s * geo.c_pad, dtype=torch.float64)
    for m in range(shape.gemm_m):
        n, p, q = m // (geo.P * geo.Q), m // geo.Q % geo.P, m % geo.Q
        for kt in range(a.shape[1] // block_k):  # per K-tile: one tap, as the kernels assume
            tap, c0 = kt * block_k // geo.c_pad, kt * block_k % geo.c_pad
            r, s = tap // geo.S, tap % geo.S
            h = p * geo.stride_h - geo.pad_h + r * geo.dil_h
            ww = q * geo.stride_w - geo.pad_w + s * geo.dil_w
            if 0 <= h < geo.H and 0 <= ww < geo.W:
                cs = slice(c0, min(c0 + block_k, geo.C))
                a[m, kt * block_k:kt * block_k + cs.stop - cs.start] = xs[n, h, ww, cs]
    y = (a @ b).view(shape.images, shape.p, shape.q, shape.out_channels).permute(0, 3, 1, 2)
    ref = torch.nn.functional.conv2d(x, w, None, shape.stride, shape.padding, shape.dilation)
    torch.testing.assert_close(y, ref)


FLAT_GEOMETRIES = [  # small channel counts: C = 1, 3, 4, 13; 7x7 stride 2, 3x3, 1x1; 1x1 and 7x7 outputs
    (2, 3, 23, 19, 8, 7, 7, (2, 2), (3, 3), (1, 1)),     # a stem, odd sizes
    (1, 1, 9, 9, 5, 3, 3, (1, 1), (1, 1), (1, 1)),
    (2, 4, 10, 12, 6, 1, 1, (1, 1), (0, 0), (1, 1)),
    (1, 13, 13, 13, 7, 7, 7, (2, 2), (3, 3), (1, 1)),    # 7x7 output
    (2, 3, 7, 7, 9, 7, 7, (1, 1), (0, 0), (1, 1)),       # 1x1 output
    (3, 3, 8, 8, 16, 5, 3, (2, 1), (2, 1), (1, 2)),      # per-axis stride, padding, dilation
]


@pytest.mark.parametrize("g", FLAT_GEOMETRIES)
def test_a_flat_k_gather_is_the_convolution(g):
    """flat_columns (x's im2col matrix, K padded once) times flat_weights reproduces F.conv2d,
    on the CPU in float64, NCHW and channels-last x alike; the padding columns and rows are zero."""
    shape = shape_of(g)
    torch.manual_seed(1)
    x = torch.randn(shape.images, shape.channels, shape.height, shape.width, dtype=torch.float64)
    w = torch.randn(shape.out_channels, shape.channels, shape.r, shape.s, dtype=torch.float64)
    ref = torch.nn.functional.conv2d(x, w, None, shape.stride, shape.padding, shape.dilation)
    b = conv.flat_weights(w)
    assert b.shape == (conv.flat_k(shape), shape.out_channels) and conv.flat_k(shape) % conv.CHANNEL_ALIGN == 0
    assert not b[shape.gemm_k:].any() and b.stride(0) % conv.CHANNEL_ALIGN == 0
    for xi in (x, x.contiguous(memory_format=torch.channels_last)):
        cols = conv.flat_columns(xi, shape)
        assert cols.shape == (shape.gemm_m, conv.flat_k(shape)) and not cols[:, shape.gemm_k:].any()
        y = (cols @ b).view(shape.images, shape.p, shape.q, shape.out_channels).permute(0, 3, 1, 2)
        torch.testing.assert_close(y, ref)


def test_the_flat_plan_runs_whole_images_a_chunk_at_a_time(monkeypatch):
    """FlatConvPlan.run holds at most FLAT_K_CHUNK_BYTES of im2col matrix: with a small cap the
    images go three by three (the last chunk shorter), each chunk's rows written into its part
    of y, the bias on every row; the result is F.conv2d's (the GEMM on the CPU, in float64)."""
    shape = shape_of((7, 3, 11, 9, 5, 3, 3, (2, 2), (1, 1), (1, 1)))
    torch.manual_seed(2)
    x = torch.randn(shape.images, shape.channels, shape.height, shape.width, dtype=torch.float64)
    w = torch.randn(shape.out_channels, shape.channels, shape.r, shape.s, dtype=torch.float64)
    bias = torch.randn(shape.out_channels, dtype=torch.float64)
    calls = []

    def mm(a, b, out, bias):
        calls.append(a.shape[0])
        return out.copy_(a @ b + bias)
    monkeypatch.setattr(conv.gemm, "mm", mm)
    per_image = shape.p * shape.q * conv.flat_k(shape) * x.element_size()
    monkeypatch.setattr(conv, "FLAT_K_CHUNK_BYTES", 3 * per_image + 1)
    y = conv.FlatConvPlan(shape, None, None, torch.float64).run(x, conv.flat_weights(w), bias)
    assert calls == [3 * shape.p * shape.q] * 2 + [shape.p * shape.q]
    torch.testing.assert_close(y, torch.nn.functional.conv2d(x, w, bias, shape.stride, shape.padding))


def test_small_channel_counts_gather_a_flat_k():
    """Where padding each tap's channels to a K-tile multiplies the MMA work by FLAT_K_WASTE or
    more, conv2d gathers a flat K; ResNet's stem goes from 3136 columns of K to 152."""
    stem = shape_of((32, 3, 224, 224, 64, 7, 7, (2, 2), (3, 3), (1, 1)))
    assert conv.flat_k(stem) == 152 and stem.r * stem.s * stem.c_pad(64) == 3136
    assert conv.gathers_flat(stem, 64)
    assert conv.gathers_flat(shape_of((1, 16, 8, 8, 8, 3, 3, (1, 1), (1, 1), (1, 1))), 64)      # 576 / 144
    assert not conv.gathers_flat(shape_of((1, 32, 8, 8, 8, 3, 3, (1, 1), (1, 1), (1, 1))), 64)  # 576 / 288
    assert not conv.gathers_flat(shape_of((1, 64, 8, 8, 8, 3, 3, (1, 1), (1, 1), (1, 1))), 64)
    assert conv.gathers_flat(shape_of((1, 4, 8, 8, 8, 1, 1, (1, 1), (0, 0), (1, 1))), 64)       # 64 / 8


@pytest.mark.parametrize("g", GEOMETRIES)
def test_im2col_box_walks_every_output_pixel(g):
    """TMA's im2col walk (as the PTX ISA and cuTensorMapEncodeIm2col describe it: pixels of the
    box [lower + offset, size + upper + offset) per axis, `stride` apart, W fastest, then H,
    then images), started at a tile's first output pixel, visits for each following row m
    exactly the input pixel that output pixel m sees through the tap."""
    shape = shape_of(g)
    (lo_h, lo_w), (up_h, up_w) = shape.im2col_corners()
    sh, sw = shape.stride
    hs = list(range(lo_h, shape.height + up_h, sh))
    ws = list(range(lo_w, shape.width + up_w, sw))
    assert (len(hs), len(ws)) == (shape.p, shape.q)
    walk = [(n, h, w) for n, h, w in itertools.product(range(shape.images), hs, ws)]
    for r, s in itertools.product(range(shape.r), range(shape.s)):
        off_h, off_w = r * shape.dilation[0], s * shape.dilation[1]
        for m, (n, h, w) in enumerate(walk):
            p, q = m // shape.q % shape.p, m % shape.q
            assert (h + off_h, w + off_w) == (p * sh - shape.padding[0] + off_h, q * sw - shape.padding[1] + off_w)


def test_im2col_limits_send_big_paddings_elsewhere():
    assert conv._im2col_fits(shape_of(GEOMETRIES[0]))
    assert not conv._im2col_fits(conv.Conv(1, 400, 400, 8, 8, 3, 3, (1, 1), (200, 200), (1, 1)))
    assert not conv._im2col_fits(conv.Conv(1, 40, 40, 8, 8, 1, 1, (9, 9), (0, 0), (1, 1)))


def test_nhwc_pads_channels_and_keeps_a_channels_last_view():
    x = torch.randn(2, 5, 3, 4)
    xs = conv.nhwc(x)
    assert xs.shape == (2, 3, 4, 8) and torch.equal(xs[..., :5], x.permute(0, 2, 3, 1)) and not xs[..., 5:].any()
    cl = torch.randn(2, 16, 3, 4).contiguous(memory_format=torch.channels_last)
    assert conv.nhwc(cl).data_ptr() == cl.data_ptr()


def test_weight_matrix_rows_and_padding():
    w = torch.randn(5, 3, 2, 2)
    b = conv.weight_matrix(w, 8)
    assert b.shape == (2 * 2 * 8, 5) and b.stride(0) == 8  # rows padded to 8 columns
    for r, s, c in itertools.product(range(2), range(2), range(8)):
        row = b[(r * 2 + s) * 8 + c]
        assert torch.equal(row, w[:, c, r, s]) if c < 3 else not row.any()


@pytest.mark.parametrize("k, c, r", [(64, 64, 1), (128, 64, 3), (16, 8, 1)])
def test_weight_matrix_is_row_major_without_padding(k, c, r):
    """The unpadded path (c_pad == C, K a multiple of 8): a row-major (R*S*C, K) matrix. A 1x1
    filter's permute + reshape is a transposed view, which the kernels read as garbage (the
    ResNet-50 suite's 1x1 layers failed verification on the H100 before this)."""
    w = torch.randn(k, c, r, r)
    b = conv.weight_matrix(w, c)
    assert b.stride() == (k, 1)
    assert torch.equal(b, w.permute(2, 3, 1, 0).reshape(r * r * c, k))


def test_krsc_views_channels_last_weights_and_pads_the_others():
    w = torch.randn(16, 8, 3, 3)
    cl = w.contiguous(memory_format=torch.channels_last)
    assert conv.krsc(cl).data_ptr() == cl.data_ptr() and torch.equal(conv.krsc(cl), w.permute(0, 2, 3, 1))
    packed = conv.krsc(w)  # NCHW-contiguous: one copy
    assert packed.is_contiguous() and torch.equal(packed, w.permute(0, 2, 3, 1))
    odd = conv.krsc(torch.randn(4, 5, 1, 2))
    assert odd.shape == (4, 1, 2, 8) and not odd[..., 5:].any()


@pytest.mark.parametrize("kwargs, match", [
    ({"groups": 2}, "groups"),
    ({"stride": 0}, "stride"),
    ({"padding": -1}, "padding"),
    ({"dilation": (1, 2, 3)}, "dilation"),
    ({"stride": 1.5}, "stride"),
])
def test_bad_arguments_raise(kwargs, match):
    x = torch.randn(1, 8, 8, 8, dtype=torch.float16)
    w = torch.randn(16, 8, 3, 3, dtype=torch.float16)
    args = dict(bias=None, stride=1, padding=0, dilation=1, groups=1, out_dtype=None)
    args.update(kwargs)
    with pytest.raises(ZooError, match=match):
        conv.check_conv(x, w, **args)


def test_symbolic_ints_pass_as_ints():
    """torch.compile traces the op's int[2] arguments as SymInts where they change between
    calls (automatic dynamic shapes): they are ints to the checks, not bad arguments."""
    from torch._dynamo.source import ConstantSource
    from torch.fx.experimental.symbolic_shapes import ShapeEnv
    env = ShapeEnv()
    pad = env.create_symintnode(env.create_symbol(3, ConstantSource("pad")), hint=3)  # 0 and 1 specialize
    assert isinstance(pad, torch.SymInt) and conv._pair("padding", [pad, pad], 0) == (pad, pad)
    assert conv._pair("stride", pad, 1) == (pad, pad)
    with pytest.raises(ZooError, match="padding must be an int or a pair"):
        conv._pair("padding", [True, 1], 0)


def test_bad_tensors_raise():
    x = torch.randn(1, 8, 8, 8, dtype=torch.float16)
    w = torch.randn(16, 8, 3, 3, dtype=torch.float16)
    kw = dict(bias=None, stride=1, padding=0, dilation=1, groups=1, out_dtype=None)
    with pytest.raises(ZooError, match="4-D"):
        conv.check_conv(x[0], w, **kw)
    with pytest.raises(ZooError, match="channels"):
        conv.check_conv(x, w[:, :4], **kw)
    with pytest.raises(ZooError, match="float16"):
        conv.check_conv(x.float(), w.float(), **kw)
    with pytest.raises(ZooError, match="CUDA"):
        conv.check_conv(x, w, **kw)  # CPU tensors
    with pytest.raises(ZooError, match="output would be"):
        conv.check_conv(x, torch.randn(16, 8, 9, 9, dtype=torch.float16), **kw)


def test_conv_kernels_are_registered_apart_from_gemm():
    names = {k.name for k in registry.KERNELS if k.op == "conv"}
    assert "sm90_conv_tma_wgmma" in names
    assert all(k.op == "gemm" for k in registry.eligible((9, 0)))
    assert registry.eligible((9, 0), op="conv")[0].name == "sm90_conv_tma_wgmma"
    with pytest.raises(ZooError, match="conv kernel"):
        registry.select(arch.offline("sm_90a"), registry.Problem(64, 64, 64), kernel_name="sm90_conv_tma_wgmma")


def test_parse_and_explain():
    shape = convnets.parse("32,64,56,56,128,3,3")  # stride 1, padding R // 2, dilation 1 by default
    assert (shape.p, shape.q, shape.gemm_m, shape.gemm_k) == (56, 56, 100352, 576)
    assert "M = N*P*Q = 32*56*56 = 100352" in "\n".join(conv.explain(shape))
    with pytest.raises(ZooError, match="N,C,H,W"):
        convnets.parse("32,64,56")


def test_cli_explain_conv(capsys):
    assert main(["explain", "--conv", "32,64,56,56,128,3,3,1,1"]) == 0
    out = capsys.readouterr().out
    assert "100352" in out and "x[0, -1, -1, 0..]" in out


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path")
def test_cli_conv_without_gpu(capsys):
    assert main(["conv", "--suite", "layer"]) == 2
    assert "no CUDA GPU" in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path")
def test_cli_conv_model_without_gpu(capsys):
    assert main(["conv", "--model", "resnet50"]) == 2
    assert "no CUDA GPU" in capsys.readouterr().err


class _Net(torch.nn.Module):
    """A stem, a layer run three times, a depthwise layer and a 'same'-padded one."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 16, 7, 2, 3, bias=False)
        self.block = torch.nn.Conv2d(16, 16, 3, 1, 1)
        self.twin = torch.nn.Conv2d(16, 16, 3, 1, 1)  # the block's shape: counted with it
        self.depthwise = torch.nn.Conv2d(16, 16, 3, 1, 1, groups=16)
        self.same = torch.nn.Conv2d(16, 8, 3, padding="same")

    def forward(self, x):
        x = self.block(self.twin(self.block(self.stem(x))))
        return self.same(self.depthwise(x))


def test_network_layers_counts_each_shape_and_says_what_the_zoo_cannot_run():
    model = _Net().half()
    layers = convnets.network_layers(model, (2, 3, 32, 32))
    assert [(layer.name, layer.count) for layer in layers] == [("stem", 1), ("block", 3), ("depthwise", 1), ("same", 1)]
    stem, block, depthwise, same = layers
    assert stem.shape == conv.Conv(2, 32, 32, 3, 16, 7, 7, (2, 2), (3, 3), (1, 1)) and not stem.refusal
    assert block.shape == conv.Conv(2, 16, 16, 16, 16, 3, 3, (1, 1), (1, 1), (1, 1))
    assert depthwise.shape is None and depthwise.refusal == "groups=16"
    assert same.shape is None and "'same'" in same.refusal
    assert all(p.device.type == "cpu" for p in model.parameters())  # traced on a copy, on the meta device
    with torch.device("meta"):
        on_meta = _Net()
    assert [layer.count for layer in convnets.network_layers(on_meta, (1, 3, 20, 20))] == [1, 3, 1, 1]


def test_a_weights_layout_is_made_once_and_goes_with_the_weight():
    """conv.laid_out: the copy a kernel needs (here the non-TMA kernels' (R*S*c_pad, K) matrix)
    is made on the first call and reused while the weight is unchanged; an in-place change makes
    it again; the weight freed frees it; a view of the weight (read in place) is never kept."""
    import gc
    spec = registry.kernel("sm80_conv_mma")
    shape = conv.Conv(2, 9, 9, 5, 16, 3, 3, (1, 1), (1, 1), (1, 1))
    plan = conv.ConvPlan(shape, spec, spec.configs[0], None, torch.float16, None)
    w = torch.randn(16, 5, 3, 3, dtype=torch.float16)
    first = conv.laid_out(plan, w)
    assert conv.laid_out(plan, w) is first
    assert plan.c_pad == 8 and torch.equal(first, conv.weight_matrix(w, 8, rows=plan.padded_k))  # packed taps
    with torch.no_grad():
        w.mul_(2)  # an optimizer step, say
    second = conv.laid_out(plan, w)
    assert second is not first and torch.equal(second, conv.weight_matrix(w, 8, rows=plan.padded_k))
    kept = len(conv._layouts)
    del w, first, second
    gc.collect()
    assert len(conv._layouts) == kept - 1
    # A channels-last weight with C a multiple of 8 is the TMA kernel's layout already: a view, not kept.
    tma = conv.ConvPlan(shape, spec, spec.configs[0], None, torch.float16, ("float16",))
    w8 = torch.randn(16, 8, 3, 3, dtype=torch.float16).to(memory_format=torch.channels_last)
    view = conv.laid_out(tma, w8)
    assert view.data_ptr() == w8.data_ptr() and len(conv._layouts) == kept - 1


def test_the_im2col_patch_is_what_one_output_row_reads():
    """gather_columns stages, per output row, the input rows and columns its filters touch:
    (R-1)*dil_h + 1 rows and (Q-1)*stride_w + (S-1)*dil_w + 1 columns from -pad_w."""
    stem = conv.Conv(32, 224, 224, 3, 64, 7, 7, (2, 2), (3, 3), (1, 1))
    assert conv.patch_shape(stem) == (7, 229) and stem.q == 112
    assert 7 * 229 * 3 * 2 <= conv.IM2COL_PATCH_BYTES  # the stem's patch takes the kernel
    dilated = conv.Conv(1, 12, 12, 4, 8, 3, 3, (1, 1), (0, 0), (2, 2))
    assert dilated.q == 8 and conv.patch_shape(dilated) == (5, 12)


def test_convolutions_of_64_channels_or_fewer_take_the_64_wide_tile():
    """sm_90a: a convolution of at most CONV_NARROW_MAX_N output channels runs on the 64-wide
    conv tile (measured faster on ResNet-50's 64-channel layers, NOTES.md); wider ones keep
    the automatic 128/256-wide choice."""
    lim = arch.offline("sm_90a")
    for n, k in ((64, 64), (64, 576), (32, 1152)):
        cfg = registry.select(lim, registry.Problem(100352, n, k), op="conv")[1]
        assert cfg.name == "128x64pp" and cfg.narrow, (n, k)
    for n in (65, 128, 256):
        assert registry.select(lim, registry.Problem(100352, n, 576), op="conv")[1].block_n > 64


def test_the_plans_key_tells_arguments_apart_by_their_repr():
    """conv2d keys its plans by the arguments' repr, kept by identity for immutable ones: True,
    1.0 and 1 never share a key, a list (mutable) is read afresh each call, and a kept
    repr holds its objects (no other object can take their ids)."""
    one, two = (1, 1), (2, 2)
    assert conv._arguments(one, one, one, 1) == conv._arguments(one, one, one, 1) == repr((one, one, one, 1))
    assert conv._arguments(True, one, one, 1) != conv._arguments(1, one, one, 1)
    assert conv._arguments(one, 1.0, one, 1) != conv._arguments(one, 1, one, 1)
    padding = [1, 1]
    first = conv._arguments(two, padding, one, 1)
    padding[0] = 3
    assert conv._arguments(two, padding, one, 1) != first == repr((two, [1, 1], one, 1))
    kept = next(v for v in conv._argument_reprs.values() if v[1] == repr((one, one, one, 1)))
    assert kept[0][0] is one


def test_the_automatic_choice_routes_by_shape_and_arch():
    """conv.automatic, per arch: a 1x1 stride-1 unpadded layer of few output pixels (C a multiple
    of 8) is one zoo.mm; a 56x56 one, a strided or padded one, stays on the conv kernel; the
    stem packs taps on the cp.async kernel where it runs (sm_80, sm_90a), else takes the flat K."""
    from zoo import arch, tune
    def layer(c, k, hw, rs=1, stride=1, pad=0):
        return conv.Conv(32, hw, hw, c, k, rs, rs, (stride, stride), (pad, pad), (1, 1))
    stem = layer(3, 64, 224, 7, 2, 3)
    for name in ("sm_80", "sm_90a"):
        lim = arch.offline(name)
        assert conv.automatic(lim, layer(2048, 512, 7), "float16", "float16") == tune.GEMM
        assert conv.automatic(lim, layer(512, 128, 28), "float16", "float16") == tune.GEMM
        for other in (layer(64, 64, 56), layer(1024, 2048, 14, stride=2), layer(512, 512, 7, 3, pad=1),
                      layer(4, 24, 9)):
            chosen = conv.automatic(lim, other, "float16", "float16")
            assert not isinstance(chosen, str) and chosen[0].op == "conv", other
        spec, cfg = conv.automatic(lim, stem, "float16", "float16")
        assert spec.packs_taps and (cfg.block_m, cfg.block_n) == (128, 64)
    assert conv.automatic(arch.offline("sm_75"), stem, "float16", "float16") == tune.FLAT
    assert not conv.runs_as_gemm(layer(4, 24, 9)) and conv.runs_as_gemm(layer(8, 24, 9))
    with pytest.raises(conv.ZooError, match="not a GEMM as it stands"):
        conv.route_plan(tune.GEMM, torch.empty(1, 8, 4, 4), layer(8, 8, 4, 3, pad=1), torch.float16)
