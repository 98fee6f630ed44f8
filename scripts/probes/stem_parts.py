"""ResNet-50's stem (32x3x224x224, 7x7 s2 p3, fp16 channels-last): cuDNN, zoo.conv2d, and the
flat path's parts (the im2col kernel, torch's gather, the GEMM on the gathered matrix), CUDA
events over 20 eager calls, twice."""
import torch, zoo
from zoo import conv
torch.manual_seed(0)
sh = conv.Conv(32, 224, 224, 3, 64, 7, 7, (2, 2), (3, 3), (1, 1))
x = torch.randn(32, 3, 224, 224, device="cuda", dtype=torch.float16).to(memory_format=torch.channels_last)
w = torch.randn(64, 3, 7, 7, device="cuda", dtype=torch.float16) / 12
b = conv.flat_weights(w)
cols = conv.flat_columns(x, sh)
assert torch.equal(conv.gather_columns(x, sh), cols)
def t(f, n=20):
    for _ in range(3): f()
    s, e = torch.cuda.Event(True), torch.cuda.Event(True)
    torch.cuda.synchronize(); s.record()
    for _ in range(n): f()
    e.record(); torch.cuda.synchronize(); return s.elapsed_time(e) / n * 1e3
torch.backends.cudnn.benchmark = True
print(torch.cuda.get_device_name(), "us per call")
with torch.no_grad():
    for _ in range(2):
        print(f"cuDNN {t(lambda: torch.nn.functional.conv2d(x, w, None, 2, 3)):.1f} | zoo.conv2d {t(lambda: zoo.conv2d(x, w, stride=2, padding=3)):.1f} | "
              f"im2col kernel {t(lambda: conv.gather_columns(x, sh)):.1f} | torch gather {t(lambda: conv.flat_columns(x, sh)):.1f} | "
              f"zoo.mm(cols, W) {t(lambda: zoo.mm(cols, b)):.1f}", flush=True)
