# The stem and other small-C convs: cuDNN vs the flat K (im2col + zoo.mm) vs packed taps on the
# sm80 conv kernel (each config) vs conv2d's automatic choice; CUDA-graph replays side by side.
import torch, zoo
from zoo import bench, conv, gemm, registry
torch.backends.cudnn.benchmark = True
lim = gemm.device_limits(0)
spec = registry.kernel("sm80_conv_mma")
cl = torch.channels_last
shapes = [("resnet stem b32", conv.Conv(32, 224, 224, 3, 64, 7, 7, (2, 2), (3, 3), (1, 1))),
          ("C=1 3x3 b64 64x64", conv.Conv(64, 64, 64, 1, 32, 3, 3, (1, 1), (1, 1), (1, 1))),
          ("C=13 7x7 s2 b8", conv.Conv(8, 112, 112, 13, 64, 7, 7, (2, 2), (3, 3), (1, 1)))]
with torch.no_grad():
    for label, shape in shapes:
        gen = torch.Generator(device="cuda").manual_seed(0)
        x, w = conv.inputs(shape, torch.float16, gen)
        w = w.to(memory_format=cl)
        auto = conv.plan_for(x, shape, torch.float16, None, None)
        print(f"{label}: automatic {type(auto).__name__} {auto.spec.name} {auto.cfg.name}", flush=True)
        fns = {"cudnn": lambda i: torch.nn.functional.conv2d(x, w, None, shape.stride, shape.padding)}
        flat = conv.flat_plan(x, shape, torch.float16); fw = flat.weights(w)
        fns["flat K"] = lambda i: flat.run(x, fw)
        for cfg in spec.configs:
            p = conv.plan_conv(x, shape, torch.float16, spec.name, cfg.name); pw = p.weights(w)
            y = p.run(x, pw); chk = conv.verify(x, w, y, shape)
            print(f"  packed {cfg.name}: c_pad {p.c_pad} K {p.padded_k} verified {chk.ok} {chk.describe()}", flush=True)
            fns[f"packed {cfg.name}"] = (lambda p, pw: lambda i: p.run(x, pw))(p, pw)
        fns["zoo.conv2d (auto)"] = lambda i: zoo.conv2d(x, w, None, shape.stride, shape.padding, keep_layout=True)
        print("  auto verified", conv.verify(x, w, fns["zoo.conv2d (auto)"](0), shape).ok)
        t = bench.time_side_by_side(fns, 1, 5, 30, lead_cycles=bench.lead_cycles(lim))
        ref = t["cudnn"].median_ms
        for k, v in t.items():
            print(f"  {k:22s} {v.median_ms * 1e3:8.1f} us  ({ref / v.median_ms:.2f}x of cuDNN)", flush=True)
