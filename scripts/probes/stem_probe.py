"""The stem's parts on the flat-K path against cuDNN (results/h200-2026-11-27/issue41/stem-parts.txt)."""
import torch, zoo
from zoo import conv
torch.manual_seed(0)
sh = conv.Conv(32, 224, 224, 3, 64, 7, 7, (2, 2), (3, 3), (1, 1))
x = torch.randn(32, 3, 224, 224, device="cuda", dtype=torch.float16).to(memory_format=torch.channels_last)
w = torch.randn(64, 3, 7, 7, device="cuda", dtype=torch.float16) / 12
b = conv.flat_weights(w)
cols = conv.flat_columns(x, sh)
def t(f, n=20):
    for _ in range(3): f()
    s, e = torch.cuda.Event(True), torch.cuda.Event(True)
    torch.cuda.synchronize(); s.record()
    for _ in range(n): f()
    e.record(); torch.cuda.synchronize(); return s.elapsed_time(e) / n * 1e3
torch.backends.cudnn.benchmark = True
with torch.no_grad():
    for _ in range(2):
        print(f"cudnn {t(lambda: torch.nn.functional.conv2d(x, w, None, 2, 3)):.1f} us | zoo.conv2d {t(lambda: zoo.conv2d(x, w, stride=2, padding=3)):.1f} | "
              f"flat_columns {t(lambda: conv.flat_columns(x, sh)):.1f} | gemm.mm(cols, b) {t(lambda: zoo.mm(cols, b)):.1f} | "
              f"padded copy {t(lambda: torch.zeros(32, 230, 230, 3, device='cuda', dtype=torch.float16)[:, 3:227, 3:227].copy_(x.permute(0, 2, 3, 1))):.1f} | "
              f"F.unfold {t(lambda: torch.nn.functional.unfold(x, 7, padding=3, stride=2)):.1f} us", flush=True)
