"""Probe (issue 40): Llama's prefill (4 x 512, fp16) on zoo layers under the old and the new
ping-pong rule (registry.pick_config swapped), each in its own CUDA graph, against torch's;
replays in turns (rotated start), medians."""
import functools, importlib.util, statistics, sys, torch
from zoo import gemm, linear, models, registry
spec = importlib.util.spec_from_file_location("zoo.registry_old", ".devrun/v/registry_old.py")
old = importlib.util.module_from_spec(spec); spec.loader.exec_module(old)
new_pick = registry.pick_config
ref = models.llama_model(torch.float16)
mine, line = models.converted(ref)
prompt = torch.randint(0, 32000, (4, 512), device="cuda", generator=torch.Generator(device="cuda").manual_seed(1))
graphs = {}
with torch.inference_mode():
    want = ref(prompt).logits.float()
    graphs["torch"] = models._graphed(lambda: ref(prompt).logits)
    for name, pick in (("zoo old rule", old.pick_config), ("zoo new rule", new_pick)):
        registry.pick_config = pick
        gemm._select.cache_clear(); gemm._calls.clear(); linear._plans.clear()
        print(name, "max |logit - torch|", (mine(prompt).logits.float() - want).abs().max().item(), flush=True)
        graphs[name] = models._graphed(lambda: mine(prompt).logits)
    names = list(graphs); t = {k: [] for k in names}
    for r in range(int(sys.argv[1])):
        for name in names[r % 3:] + names[:r % 3]:
            torch.cuda.synchronize(); s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); graphs[name](); e.record(); torch.cuda.synchronize(); t[name].append(s.elapsed_time(e))
    base = statistics.median(t["torch"])
    for k, v in t.items():
        print(f"{k:14s} {statistics.median(v)*1e3:8.0f} us  {base/statistics.median(v):.4f}x of torch")
