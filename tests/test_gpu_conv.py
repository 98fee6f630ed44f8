"""zoo.conv2d on the GPU (pytest -m gpu): every conv kernel this GPU runs, against a float64
reference within 2x cuDNN's own error, over odd sizes, strides, paddings, dilations, channel
counts that are not multiples of 8, bias, both input layouts and both output dtypes."""
from dataclasses import replace

import pytest
import torch

import zoo
from zoo import bench, conv, convnets, cuda, gemm, registry
from zoo.cuda import ZooError

pytestmark = pytest.mark.gpu


def conv_kernels():
    if not torch.cuda.is_available():
        return []
    cc = gemm.device_limits(torch.cuda.current_device()).cc
    return registry.eligible(cc, op="conv")


KERNELS = conv_kernels() or [None]
IDS = [k.name if k else "none" for k in KERNELS]

# (N, C, H, W, K, R, S, stride, padding, dilation)
CASES = [
    (2, 64, 9, 11, 128, 3, 3, 1, 1, 1),      # padded 3x3, M not a tile multiple
    (3, 24, 13, 7, 40, 3, 3, 2, 1, 1),       # stride 2, C and K not 64-multiples
    (1, 5, 10, 10, 7, 3, 3, 1, 1, 1),        # C and K not multiples of 8
    (2, 16, 12, 12, 64, 3, 3, 1, 2, 2),      # dilation 2
    (2, 72, 8, 9, 136, 1, 1, 1, 0, 1),       # 1x1, C = 72 (two K-tiles, the second mostly zero)
    (2, 32, 15, 15, 96, 1, 1, 2, 0, 1),      # 1x1 stride 2 (ResNet's downsample)
    (1, 8, 6, 20, 16, 2, 5, (1, 2), (0, 2), (1, 1)),  # non-square filter, per-axis stride/padding
    (4, 128, 7, 7, 256, 3, 3, 1, 1, 1),      # ResNet's last stage shape, small
]


def run_case(spec, case, dtype=torch.float16, out_dtype=None, channels_last=True, bias=False):
    n, c, h, w, k, r, s, stride, padding, dilation = case
    shape = conv.Conv(n, h, w, c, k, r, s, conv._pair("s", stride, 1), conv._pair("p", padding, 0),
                      conv._pair("d", dilation, 1))
    gen = torch.Generator(device="cuda").manual_seed(hash(case) % 2**31)
    x, wt = conv.inputs(shape, dtype, gen, channels_last)
    b = torch.randn(k, device="cuda", dtype=dtype, generator=gen) if bias else None
    y = zoo.conv2d(x, wt, b, stride, padding, dilation, out_dtype=out_dtype, kernel=spec.name)
    assert y.shape == (n, k, shape.p, shape.q)
    assert y.dtype == (out_dtype or dtype)
    check = conv.verify(x, wt, y, shape, b)
    assert check.ok, f"{spec.name} {shape.describe()}: {check.describe()}"


@pytest.mark.parametrize("spec", KERNELS, ids=IDS)
@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_conv_cases(spec, case):
    run_case(spec, case)


@pytest.mark.parametrize("spec", KERNELS, ids=IDS)
def test_every_conv_config(spec):
    """Each config of each conv kernel (those the automatic choice never takes too: the
    64-wide tiles that zoo tune and conv_narrow_choice pick), on a padded 3x3 and on channel
    counts off 8."""
    from zoo import configs
    lim = gemm.device_limits(torch.cuda.current_device())
    for cfg in (c for c in spec.configs if not configs.problems(c, spec, lim)):
        for case in (CASES[0], CASES[2]):
            n, c, h, w, k, r, s, stride, padding, dilation = case
            shape = conv.Conv(n, h, w, c, k, r, s, (stride,) * 2, (padding,) * 2, (dilation,) * 2)
            x, wt = conv.inputs(shape, torch.float16, torch.Generator(device="cuda").manual_seed(3))
            y = zoo.conv2d(x, wt, None, stride, padding, dilation, kernel=spec.name, config=cfg.name)
            assert conv.verify(x, wt, y, shape).ok, (cfg.name, shape.describe())


@pytest.mark.parametrize("spec", KERNELS, ids=IDS)
def test_conv_layouts_dtypes_bias(spec):
    case = CASES[1]
    run_case(spec, case, channels_last=False)             # NCHW input: converted
    run_case(spec, case, out_dtype=torch.float32, bias=True)
    if ("bfloat16", "bfloat16") in spec.entry:
        run_case(spec, case, dtype=torch.bfloat16)


# Small channel counts (conv.gathers_flat), through the automatic choice (a kernel that packs
# taps where this GPU runs one) and through the flat K gathered first.
# C = 1, 3, 4, 13; 7x7 stride 2, 3x3, 1x1; 1x1 and 7x7 outputs.
FLAT_CASES = [
    (2, 3, 224, 224, 64, 7, 7, 2, 3, 1),     # ResNet's stem
    (2, 1, 28, 28, 16, 3, 3, 1, 1, 1),
    (3, 4, 9, 9, 24, 1, 1, 1, 0, 1),
    (2, 13, 13, 13, 40, 7, 7, 2, 3, 1),      # 7x7 output
    (2, 3, 7, 7, 8, 7, 7, 1, 0, 1),          # 1x1 output
    (1, 13, 15, 15, 72, 3, 3, 2, 0, 2),      # dilation 2, stride 2
]


@pytest.mark.parametrize("case", FLAT_CASES, ids=[str(i) for i in range(len(FLAT_CASES))])
def test_small_channel_counts_pack_taps_or_gather_a_flat_k(case):
    """Each case in fp16, with fp32 out and a bias from an NCHW x, and in bf16 where the device
    has it: the automatic plan (packed taps where a kernel packs them, else the flat K) and the
    flat plan, each against float64 within 2x cuDNN's error; the im2col kernel's matrix is
    torch's gather (flat_columns) bit for bit."""
    n, c, h, w, k, r, s, stride, padding, dilation = case
    shape = conv.Conv(n, h, w, c, k, r, s, conv._pair("s", stride, 1), conv._pair("p", padding, 0),
                      conv._pair("d", dilation, 1))
    lim = gemm.device_limits(torch.cuda.current_device())
    bf16 = lim.cc >= (8, 0)
    packs = any(k.packs_taps for k in registry.eligible(lim.cc, op="conv"))
    runs = [(torch.float16, None, False, True), (torch.float16, torch.float32, True, False)] + \
        ([(torch.bfloat16, None, True, True)] if bf16 else [])
    for dtype, out_dtype, bias, channels_last in runs:
        gen = torch.Generator(device="cuda").manual_seed(hash(case) % 2**31)
        x, wt = conv.inputs(shape, dtype, gen, channels_last)
        b = torch.randn(k, device="cuda", dtype=dtype, generator=gen) if bias else None
        with torch.no_grad():
            y = zoo.conv2d(x, wt, b, stride, padding, dilation, out_dtype=out_dtype)
            flat = conv.flat_plan(x, shape, out_dtype or dtype)
            y_flat = flat.run(x, flat.weights(wt), b)
        plan = conv.plan_for(x, shape, y.dtype, None, None)
        if packs:  # every case wastes the TMA kernel's K 4x or more
            assert isinstance(plan, conv.ConvPlan) and plan.spec.packs_taps and plan.c_pad < plan.cfg.block_k
        else:
            assert isinstance(plan, conv.FlatConvPlan)
        assert torch.equal(conv.gather_columns(x, shape), conv.flat_columns(x, shape))
        for out in (y, y_flat):
            assert out.shape == (n, k, shape.p, shape.q) and out.dtype == (out_dtype or dtype)
            check = conv.verify(x, wt, out, shape, b)
            assert check.ok, f"{shape.describe()} {dtype} -> {out.dtype}: {check.describe()}"


def test_a_1x1_convolution_runs_as_one_zoo_mm():
    """A 1x1, stride-1, unpadded convolution of few output pixels is one zoo.mm on views
    (conv.GEMM_CONV_MAX_M): channels-last or NCHW x (reshape's copy), either weight layout,
    fp32 out with an fp32 bias, a bias of x's dtype, bf16; each twice (the second from the plans), cuDNN's answer,
    and the output (N, K, P, Q) channels-last. From a CUDA graph too."""
    shape = conv.Conv(2, 7, 9, 64, 40, 1, 1, (1, 1), (0, 0), (1, 1))
    gen = torch.Generator(device="cuda").manual_seed(21)
    dtypes = (torch.float16, torch.bfloat16) if gemm.device_limits(torch.cuda.current_device()).cc >= (8, 0) \
        else (torch.float16,)
    with torch.no_grad():
        for dtype in dtypes:
            for channels_last in (True, False):
                x, w = conv.inputs(shape, dtype, gen, channels_last)
                for wi in (w, w.contiguous(memory_format=torch.channels_last)):
                    for out_dtype, bias in ((None, None), (torch.float32, torch.randn(40, device="cuda", generator=gen)),
                                            (None, torch.randn(40, device="cuda", generator=gen).to(dtype))):
                        for _ in range(2):
                            y = zoo.conv2d(x, wi, bias, out_dtype=out_dtype)
                            assert isinstance(conv.plan_for(x, shape, y.dtype, None, None), conv.GemmConvPlan)
                            assert y.shape == (2, 40, 7, 9) and y.dtype == (out_dtype or dtype)
                            assert y.is_contiguous(memory_format=torch.channels_last)
                            check = conv.verify(x, wi, y, shape, bias)
                            assert check.ok, (dtype, channels_last, out_dtype, check.describe())
        if gemm.device_limits(torch.cuda.current_device()).cc >= (9, 0):
            # Both channels-last (the 1x1 weight is either way): zoo.mm's plan run by address, no
            # view a call (the sm_90a kernel reads w's rows as B column-major); an NCHW x through
            # the views. A bias the kernel does not add goes along K, the channels-last rows.
            directs = [c[1] for c in conv._calls.values() if c[0].shape == shape]
            assert any(isinstance(d, conv.GemmCall) for d in directs) and None in directs
            x, w = conv.inputs(shape, torch.float16, gen, True)
            bias = torch.randn(40, device="cuda", generator=gen).half()
            made = conv.plan_for(x, shape, torch.float16, None, None).direct(x, w, None)
            y = conv.GemmCall(made.call, False).run(x, w, bias, x.data_ptr(), w.data_ptr())
            assert conv.verify(x, w, y, shape, bias).ok
        x, w = conv.inputs(shape, torch.float16, gen)
        zoo.conv2d(x, w)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = zoo.conv2d(x, w)
        x.copy_(conv.inputs(shape, torch.float16, gen)[0])
        g.replay()
        torch.cuda.synchronize()
        assert conv.verify(x, w, y, shape).ok
    strided = replace(shape, stride=(2, 2))  # no longer a GEMM as it stands: the conv kernel
    xs, ws = conv.inputs(strided, torch.float16, gen)
    with torch.no_grad():
        zoo.conv2d(xs, ws, stride=2)
    assert isinstance(conv.plan_for(xs, strided, torch.float16, None, None), conv.ConvPlan)


def test_a_network_of_many_distinct_convolutions_plans_each_once(monkeypatch):
    """A forward through 80 convolutions of distinct shapes (more than DenseNet-121's 66), run
    twice: the second pass finds every plan (none evicted by the others) and plans nothing."""
    chain = [8 * (i + 1) for i in range(81)]
    gen = torch.Generator(device="cuda").manual_seed(8)
    ws = [torch.randn(k, c, 1, 1, device="cuda", dtype=torch.float16, generator=gen) / c ** 0.5
          for c, k in zip(chain, chain[1:])]
    x = torch.randn(1, 8, 5, 5, device="cuda", dtype=torch.float16, generator=gen).contiguous(
        memory_format=torch.channels_last)
    planned = []
    plan_conv = conv.plan_conv
    monkeypatch.setattr(conv, "plan_conv", lambda *a, **k: planned.append(a[1]) or plan_conv(*a, **k))

    def forward():
        y = x
        for w in ws:
            y = zoo.conv2d(y, w, stride=1, padding=1)  # padded: the conv kernel, not the 1x1 zoo.mm route
        return y

    with torch.no_grad():
        first = forward()
        made = len(planned)
        second = forward()
    assert made >= 80 and len(planned) == made, f"{len(planned) - made} plans made again"
    assert torch.equal(first, second)


def test_a_small_channel_conv_in_a_cuda_graph():
    """The automatic plan of a 3-channel input (packed taps: x padded to 4 channels, then the
    kernel; or the flat K's gather, then zoo.mm) is captured and replayed with new contents."""
    shape = conv.Conv(2, 32, 32, 3, 16, 7, 7, (2, 2), (3, 3), (1, 1))
    gen = torch.Generator(device="cuda").manual_seed(5)
    x, w = conv.inputs(shape, torch.float16, gen)
    with torch.no_grad():
        zoo.conv2d(x, w, stride=2, padding=3)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = zoo.conv2d(x, w, stride=2, padding=3)
    x.copy_(conv.inputs(shape, torch.float16, gen)[0])
    g.replay()
    torch.cuda.synchronize()
    assert conv.verify(x, w, y, shape).ok


def test_conv_the_issue_layer():
    """The layer of the issue through the automatic choice."""
    shape = convnets.SUITES["layer"][0][1]
    gen = torch.Generator(device="cuda").manual_seed(0)
    x, w = conv.inputs(shape, torch.float16, gen)
    y = zoo.conv2d(x, w, padding=1)
    assert y.is_contiguous(memory_format=torch.channels_last)
    assert conv.verify(x, w, y, shape).ok


def test_conv_refuses_what_it_cannot_do():
    x = torch.randn(1, 8, 8, 8, device="cuda", dtype=torch.float16)
    w = torch.randn(16, 8, 3, 3, device="cuda", dtype=torch.float16)
    with pytest.raises(ZooError, match="groups"):
        zoo.conv2d(x, w, groups=2)
    with pytest.raises(ZooError, match="channels"):
        zoo.conv2d(x, torch.randn(16, 4, 3, 3, device="cuda", dtype=torch.float16))
    with pytest.raises(ZooError, match="no backward"):
        zoo.conv2d(x, w.clone().requires_grad_())
    with pytest.raises(ZooError, match="float16"):
        zoo.conv2d(x.float(), w.float())
    with pytest.raises(ZooError, match="output would be"):
        zoo.conv2d(x, torch.randn(16, 8, 9, 9, device="cuda", dtype=torch.float16))


def test_conv_in_a_cuda_graph():
    """conv2d can be captured and replayed with new contents (its launch reads torch's stream)."""
    shape = conv.Conv(2, 10, 10, 16, 32, 3, 3, (1, 1), (1, 1), (1, 1))
    gen = torch.Generator(device="cuda").manual_seed(1)
    x, w = conv.inputs(shape, torch.float16, gen)
    zoo.conv2d(x, w, padding=1)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = zoo.conv2d(x, w, padding=1)
    x.copy_(conv.inputs(shape, torch.float16, gen)[0])
    g.replay()
    torch.cuda.synchronize()
    assert conv.verify(x, w, y, shape).ok


def test_a_networks_convolutions_are_each_verified_and_timed():
    """zoo conv --model's measurement (models.conv_layers) on torchvision's ResNet-18 at batch 2:
    every convolution of one forward, grouped by shape, each verified against float64 and
    timed against cuDNN; the counts add up to the network's Conv2d calls."""
    torchvision = pytest.importorskip("torchvision")
    from zoo import models
    rows = models.conv_layers("resnet18", torch.float16, 2, warmup=1, iters=3, progress=lambda _: None)
    calls = sum(isinstance(m, torch.nn.Conv2d) for m in torchvision.models.resnet18().modules())
    assert sum(r.layer.count for r in rows) == calls == 20
    assert rows[0].layer.shape.r == 7 and rows[0].layer.shape.channels == 3  # the stem comes first
    assert all(r.verified and r.zoo_ms > 0 and r.cudnn_ms > 0 for r in rows), [r for r in rows if not r.verified]


def test_a_kept_weight_layout_follows_the_weight():
    """With keep_layout, a weight the kernel reads as a copy (C = 3, padded to 8) is laid out
    once and kept with it: a change in place makes it again, and a CUDA graph lays it out inside the graph, so a
    replay after the change reads the weight as it is."""
    gen = torch.Generator(device="cuda").manual_seed(31)
    x = torch.randn(2, 3, 20, 20, device="cuda", dtype=torch.float16, generator=gen).to(memory_format=torch.channels_last)
    w = torch.randn(16, 3, 3, 3, device="cuda", dtype=torch.float16, generator=gen)

    def want():
        return torch.nn.functional.conv2d(x.double(), w.double(), padding=1)
    with torch.no_grad():
        assert bench.relative_error(zoo.conv2d(x, w, padding=1, keep_layout=True), want()) < 5e-3
        assert w in conv._layouts
        w.mul_(-0.5)
        assert bench.relative_error(zoo.conv2d(x, w, padding=1, keep_layout=True), want()) < 5e-3
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            y = zoo.conv2d(x, w, padding=1, keep_layout=True)
        w.mul_(3)
        graph.replay()
        torch.cuda.synchronize()
        assert bench.relative_error(y, want()) < 5e-3


def test_the_maps_follow_new_inputs_and_weights():
    """One layout, called with other inputs and weights at other addresses: the TMA kernel's
    x and weight maps are re-pointed by patching their address fields (no encode per call)
    and each result is right."""
    shape = conv.Conv(2, 10, 10, 64, 128, 3, 3, (1, 1), (1, 1), (1, 1))
    gen = torch.Generator(device="cuda").manual_seed(11)
    pairs = [conv.inputs(shape, torch.float16, gen, True) for _ in range(3)]
    pairs = [(x, w.contiguous(memory_format=torch.channels_last)) for x, w in pairs]  # both read in place
    for x, w in pairs:
        check = conv.verify(x, w, zoo.conv2d(x, w, None, 1, 1), shape, None)
        assert check.ok, check.describe()
    plan, direct = next(c for c in conv._calls.values() if c[0].shape == shape)  # the plan conv2d ran
    assert (direct is not None) == (plan.im2col is not None)  # channels-last inputs: the TMA kernel reads them as they are
    if plan.im2col is not None:  # a TMA kernel (sm_90a): patched wherever the driver's maps allow it
        offset = cuda.map_address_offset("im2col")
        assert (plan.map_fields is not None) == (offset is not None and offset == cuda.map_address_offset("weights"))
        if plan.map_fields is not None:
            assert plan.map_fields[0].value == pairs[-1][0].data_ptr()
            assert plan.map_fields[1].value == pairs[-1][1].data_ptr()


def _at_odd_address(t: torch.Tensor) -> torch.Tensor:
    """t's values in a tensor of t's strides whose base is 2 bytes past a 16-byte boundary."""
    storage = torch.empty(t.untyped_storage().nbytes() // t.element_size() + 1, device=t.device, dtype=t.dtype)
    out = storage[1:].as_strided(t.shape, t.stride())
    out.copy_(t)
    return out


def test_inputs_are_read_in_place_only_where_their_layout_allows():
    """conv2d reads a channels-last, 16-byte-aligned x and w in place (addresses only, no
    view a call) and lays out any other: each mix of layouts and addresses for one shape,
    twice (the second call from the per-layout cache), gives cuDNN's answer, as do a bias
    that needs converting and fp32 out; the output is (N, K, P, Q), channels-last."""
    shape = conv.Conv(2, 9, 9, 64, 64, 3, 3, (2, 2), (1, 1), (1, 1))
    gen = torch.Generator(device="cuda").manual_seed(12)
    x, w = conv.inputs(shape, torch.float16, gen, True)
    w_last = w.contiguous(memory_format=torch.channels_last)
    xs = [x, _at_odd_address(x), x.contiguous()]
    ws = [w_last, _at_odd_address(w_last), w]
    biases = [None, torch.randn(64, device="cuda", generator=gen),
              torch.randn(128, device="cuda", dtype=torch.float16, generator=gen)[::2]]
    with torch.no_grad():
        for xi in xs:
            for wi in ws:
                for bias in biases:
                    for out_dtype in (None, torch.float32):
                        for _ in range(2):
                            y = zoo.conv2d(xi, wi, bias, 2, 1, out_dtype=out_dtype)
                            assert y.shape == (2, 64, 5, 5) and y.is_contiguous(memory_format=torch.channels_last)
                            assert y.dtype == (out_dtype or torch.float16)
                            check = conv.verify(xi, wi, y, shape, bias)
                            assert check.ok, (xi.stride(), wi.stride(), bias is None, out_dtype, check.describe())
    in_place = {(c[0].shape, c[1] is not None) for c in conv._calls.values() if c[0].shape == shape}
    if gemm.device_limits(torch.cuda.current_device()).cc >= (9, 0):
        assert (shape, True) in in_place and (shape, False) in in_place


def test_a_layout_met_before_still_refuses_what_it_must():
    """conv2d skips its checks for a layout met before (a per-layout cache, as zoo.mm's): a
    call autograd would record is still refused, and another bias shape is checked afresh."""
    shape = conv.Conv(1, 8, 8, 16, 32, 3, 3, (1, 1), (1, 1), (1, 1))
    gen = torch.Generator(device="cuda").manual_seed(12)
    x, w = conv.inputs(shape, torch.float16, gen, True)
    assert conv.verify(x, w, zoo.conv2d(x, w, None, 1, 1), shape).ok
    with pytest.raises(ZooError, match="no backward"):
        zoo.conv2d(x, w.clone().requires_grad_(), None, 1, 1)
    with pytest.raises(ZooError, match="bias must be"):
        zoo.conv2d(x, w, torch.zeros(5, device="cuda", dtype=torch.float16), 1, 1)
    with pytest.raises(ZooError, match="stride must be an int"):  # equal to 1, but not an int
        zoo.conv2d(x, w, None, True, 1)
    assert conv.verify(x, w, zoo.conv2d(x, w, None, 1, 1), shape).ok
