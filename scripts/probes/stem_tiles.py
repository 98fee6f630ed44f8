# The stem on packed taps: 64x64 vs 128x64 (with and without x's 4-channel copy), the copy alone, cuDNN.
import sys, torch, zoo
from zoo import bench, conv, gemm, registry
torch.backends.cudnn.benchmark = True
lim = gemm.device_limits(0)
spec = registry.kernel("sm80_conv_mma")
shape = conv.Conv(32, 224, 224, 3, 64, 7, 7, (2, 2), (3, 3), (1, 1))
gen = torch.Generator(device="cuda").manual_seed(0)
x, w = conv.inputs(shape, torch.float16, gen)
w = w.to(memory_format=torch.channels_last)
ncu = len(sys.argv) > 1
with torch.no_grad():
    fns = {"cudnn": lambda i: torch.nn.functional.conv2d(x, w, None, 2, 3)}
    xs = conv.nhwc(x, 4)
    fns["nhwc(x, 4) alone"] = lambda i: conv.nhwc(x, 4)
    for name in ("64x64", "128x64", "128x128"):
        p = conv.plan_conv(x, shape, torch.float16, spec.name, name); pw = p.weights(w)
        chk = conv.verify(x, w, p.run(x, pw), shape)
        print(name, "verified", chk.ok, chk.describe(), flush=True)
        fns[f"packed {name}"] = (lambda p, pw: lambda i: p.run(x, pw))(p, pw)
        fns[f"packed {name}, x padded before"] = (lambda p, pw: lambda i: p.run(x, pw, None, xs.data_ptr(), pw.data_ptr()))(p, pw)
        if ncu:
            p.run(x, pw, None, xs.data_ptr(), pw.data_ptr())
    if ncu:
        torch.cuda.synchronize(); sys.exit()
    auto = conv.plan_for(x, shape, torch.float16, None, None)
    print("automatic:", auto.spec.name, auto.cfg.name, flush=True)
    fns["zoo.conv2d (auto)"] = lambda i: zoo.conv2d(x, w, None, 2, 3, keep_layout=True)
    print("auto verified", conv.verify(x, w, fns["zoo.conv2d (auto)"](0), shape).ok)
    t = bench.time_side_by_side(fns, 1, 5, 40, lead_cycles=bench.lead_cycles(lim))
    ref = t["cudnn"].median_ms
    for k, v in t.items():
        print(f"  {k:34s} {v.median_ms * 1e3:8.1f} us  ({ref / v.median_ms:.2f}x of cuDNN)", flush=True)
