"""Where a conv2d call's device time goes (H100): laying out the weights (plan.weights), the
kernel alone on laid-out weights, the whole call, and cuDNN, for given layers; CUDA-graph
replays, median of 30.   python3 scripts/conv_probe.py"""
import sys

import torch

import zoo
from zoo import bench, conv

SHAPES = sys.argv[1:] or ["32,512,14,14,512,3,3,2,1", "32,512,7,7,512,3,3,1,1", "32,1024,14,14,512,1,1,1,0",
                          "32,64,56,56,64,3,3,1,1", "32,64,56,56,128,3,3,1,1", "32,1024,14,14,256,1,1,1,0"]
torch.backends.cudnn.benchmark = True
for text in SHAPES:
    shape = conv.parse(text)
    gen = torch.Generator(device="cuda").manual_seed(0)
    x, w = conv.inputs(shape, torch.float16, gen)
    w_cl = w.contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        y = zoo.conv2d(x, w, stride=shape.stride, padding=shape.padding)
        plan = conv.plan_for(x, shape, torch.float16, None, None)
        b = plan.weights(w)
        fns = {"plan.weights(w)": lambda i: plan.weights(w),
               "plan.weights(w channels-last)": lambda i: plan.weights(w_cl),
               "kernel on packed weights": lambda i: plan.run(x, b),
               "zoo.conv2d": lambda i: zoo.conv2d(x, w, stride=shape.stride, padding=shape.padding),
               "zoo.conv2d (w channels-last)": lambda i: zoo.conv2d(x, w_cl, stride=shape.stride, padding=shape.padding),
               "cuDNN": lambda i: conv.torch_conv(x, w, shape),
               "cuDNN (w channels-last)": lambda i: conv.torch_conv(x, w_cl, shape)}
        t = bench.time_side_by_side(fns, 1, 5, 30)
    print(f"{shape.describe()}  [{plan.spec.name} / {plan.cfg.name}]")
    for name, timing in t.items():
        print(f"  {name:34s} {timing.median_ms * 1e3:8.1f} us")
