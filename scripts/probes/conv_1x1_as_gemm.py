# ResNet-50's 1x1 stride-1 convs as plain GEMMs: a channels-last x is (N*H*W, C) row-major and a
# channels-last w (K, C, 1, 1) is B^T: zoo.mm reads both in place. cuDNN vs zoo.conv2d (automatic,
# untuned) vs zoo.mm on those views; CUDA-graph replays side by side.
import torch, zoo
from zoo import bench, conv, gemm
torch.backends.cudnn.benchmark = True
lim = gemm.device_limits(0)
cl = torch.channels_last
layers = [(64, 64, 56), (256, 64, 56), (64, 256, 56), (256, 128, 56), (512, 128, 28), (128, 512, 28), (512, 256, 28),
          (1024, 256, 14), (256, 1024, 14), (1024, 512, 14), (2048, 512, 7), (512, 2048, 7)]
with torch.no_grad():
    for c, k, hw in layers:
        shape = conv.Conv(32, hw, hw, c, k, 1, 1, (1, 1), (0, 0), (1, 1))
        gen = torch.Generator(device="cuda").manual_seed(0)
        x, w = conv.inputs(shape, torch.float16, gen)
        w = w.to(memory_format=cl)
        a, b = x.permute(0, 2, 3, 1).reshape(-1, c), w.view(k, c).t()
        y = zoo.mm(a, b); ok = conv.verify(x, w, y.view(32, hw, hw, k).permute(0, 3, 1, 2), shape).ok
        fns = {"cudnn": lambda i: torch.nn.functional.conv2d(x, w),
               "conv2d": lambda i: zoo.conv2d(x, w),
               "zoo.mm": lambda i: zoo.mm(a, b)}
        t = bench.time_side_by_side(fns, 1, 5, 30, lead_cycles=bench.lead_cycles(lim))
        ref = t["cudnn"].median_ms
        print(f"1x1 {c}->{k} @{hw}: cudnn {ref*1e3:6.1f} us | conv2d {t['conv2d'].median_ms*1e3:6.1f} ({ref/t['conv2d'].median_ms:.2f}x)"
              f" | zoo.mm {t['zoo.mm'].median_ms*1e3:6.1f} ({ref/t['zoo.mm'].median_ms:.2f}x) verified {ok}", flush=True)
