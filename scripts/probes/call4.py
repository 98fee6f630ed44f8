"""Call 4: the compiled FP8 prefill again, each model warmed 3 calls, then 7 alternating rounds
of 5 calls (mine, theirs, bf16 in turn), with dynamo's recompile and graph-break counters."""
import time, torch
from torch._dynamo.utils import counters
from zoo import models
ref = models.llama_model(torch.bfloat16)
theirs, mine, line = models.fp8_pair(ref, "row")
print(line, flush=True)
prompt = torch.randint(0, ref.config.vocab_size, (4, 512), device="cuda", generator=torch.Generator(device="cuda").manual_seed(1))
runs = {"zoo fp8": torch.compile(mine), "torch fp8": torch.compile(theirs), "torch bf16": torch.compile(ref)}
with torch.inference_mode():
    for name, f in runs.items():
        t = time.time()
        for _ in range(3):
            f(prompt).logits
        torch.cuda.synchronize()
        print(f"{name}: compiled and warmed in {time.time() - t:.0f} s; counters {dict(counters['stats'])} "
              f"graph breaks {sum(counters['graph_break'].values())}", flush=True)
    times = {n: [] for n in runs}
    for r in range(7):
        order = list(runs) if r % 2 == 0 else list(runs)[::-1]
        for name in order:
            torch.cuda.synchronize(); t = time.perf_counter()
            for _ in range(5):
                runs[name](prompt).logits
            torch.cuda.synchronize(); times[name].append(1000 * (time.perf_counter() - t) / 5)
    for name, v in times.items():
        v = sorted(v)
        print(f"{name}: median {v[3]:.3f} ms (min {v[0]:.3f}, max {v[-1]:.3f})")
    print("stats after:", dict(counters["stats"]))
