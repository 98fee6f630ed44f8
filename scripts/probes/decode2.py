"""Decode-shaped x @ W^T: F.linear against zoo.mm (the registry's choice), CUDA-graph replays of
20 calls over 8 weight sets rotated out of L2; device us per call; each output verified."""
import statistics
import torch, zoo
from zoo import bench, gemm
torch.manual_seed(0)
H = torch.bfloat16
def graph_time(fn, reps=20):
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3): fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps): fn()
    ts = []
    for _ in range(21):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record(); g.replay(); e1.record(); torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1) * 1e3 / reps)
    return statistics.median(ts)
def main():
  print(f"{torch.cuda.get_device_name()}; bf16 x @ W^T, us per call from CUDA-graph replays (20 calls, 8 weight sets)")
  print(f"{'M':>3} {'N':>6} {'K':>6} {'torch':>8} {'zoo':>8}  zoo speed-up  zoo's choice")
  for m in (1, 4, 16):
      for n, k in ((2048, 2048), (512, 2048), (8192, 2048), (2048, 8192), (4096, 4096), (1024, 4096)):
          ws = [torch.randn(n, k, device="cuda", dtype=H) for _ in range(8)]
          x = torch.randn(m, k, device="cuda", dtype=H)
          i = [0]
          def t():
              i[0] = (i[0] + 1) % 8; return torch.nn.functional.linear(x, ws[i[0]])
          def z():
              i[0] = (i[0] + 1) % 8; return zoo.mm(x, ws[i[0]].t())
          assert bench.verify(x, ws[0].t(), zoo.mm(x, ws[0].t())).ok
          tt, tz = graph_time(t), graph_time(z)
          tt2 = graph_time(t)
          ch = gemm.plan_call(x, ws[0].t(), None, None, None, None, None).launch.choice
          print(f"{m:>3} {n:>6} {k:>6} {min(tt, tt2):8.2f} {tz:8.2f}  {min(tt, tt2) / tz:6.2f}x  {ch[0]} {ch[1]}", flush=True)

if __name__ == "__main__":
  main()
