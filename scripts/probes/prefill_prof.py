import os, time, torch, zoo
from torch.profiler import profile, ProfilerActivity
from zoo import models
out = os.environ["OUT"]
torch.manual_seed(0)
ref = models.llama_model(torch.float16, 16)
mine, swaps = models.converted(ref)
prompt = torch.randint(0, ref.config.vocab_size, (4, 512), device="cuda")

def timeit(fn, n=5):
    fn(); torch.cuda.synchronize(); t0 = time.perf_counter()
    for _ in range(n): fn()
    t1 = time.perf_counter(); torch.cuda.synchronize(); t2 = time.perf_counter()
    return (t2 - t0) / n * 1e3, (t1 - t0) / n * 1e3

with torch.inference_mode():
    c_mine, c_ref = torch.compile(mine), torch.compile(ref)
    for _ in range(3): c_mine(prompt); c_ref(prompt)
    for r in range(4):
        for tag, fn in (("zoo", lambda: c_mine(prompt).logits), ("torch", lambda: c_ref(prompt).logits),
                        ("zoo-eager", lambda: mine(prompt).logits), ("torch-eager", lambda: ref(prompt).logits)):
            wall, host = timeit(fn)
            print(f"round {r} {tag:12s} wall {wall:7.2f} ms  host(enqueue) {host:7.2f} ms", flush=True)
    print("dynamo counters", dict(torch._dynamo.utils.counters["stats"]), dict(torch._dynamo.utils.counters["graph_break"]))
    for tag, fn in (("zoo", lambda: c_mine(prompt).logits), ("torch", lambda: c_ref(prompt).logits),
                    ("zoo-eager", lambda: mine(prompt).logits)):
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
            for _ in range(3): fn()
            torch.cuda.synchronize()
        with open(f"{out}/prefill-prof-{tag}.txt", "w") as f:
            f.write(p.key_averages().table(sort_by="self_device_time_total", row_limit=30))
            f.write("\n\n")
            f.write(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=30))
        p.export_chrome_trace(f"{out}/prefill-trace-{tag}.json")
