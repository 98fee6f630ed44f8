"""Host cost of an eager streams-mode zoo.bmm (10 x [768, 1024, 768]) against torch.bmm's,
taking turns, per call: run with PYTHONPATH at the code to time (an A/B of two trees in
alternating processes; probes/streams_host_ab.sh)."""
import statistics
import sys
import time

import torch

import zoo


def run_us(fn, calls):
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return 1e6 * (time.perf_counter() - start) / calls


a = torch.randn(10, 768, 1024, device="cuda", dtype=torch.float16)
b = torch.randn(10, 1024, 768, device="cuda", dtype=torch.float16)
zoo_fn, torch_fn = (lambda: zoo.bmm(a, b, mode="streams")), (lambda: torch.bmm(a, b))
for fn in (zoo_fn, torch_fn) * 20:
    fn()
torch.cuda.synchronize()
pairs = [(run_us(zoo_fn, 100), run_us(torch_fn, 100)) for _ in range(9)]
z, t = statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)
print(f"{sys.argv[1] if len(sys.argv) > 1 else 'this'}: zoo streams {z:.1f} us, torch.bmm {t:.1f} us, "
      f"zoo/torch {statistics.median(p[0] / p[1] for p in pairs):.2f}")
