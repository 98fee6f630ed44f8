"""Probe (issue 40): Llama's prefill (4 x 512, fp16) on zoo layers, launched several ways, each
captured into its own CUDA graph: as the zoo chooses; without programmatic dependent launch;
128x128pp for the 2048-row projections (q/o alone, then all but k/v and the LM head). Graph
replays, all variants in turns (rotated start), medians."""
import functools, statistics, sys, torch
import zoo
from zoo import gemm, linear, models, registry
ref = models.llama_model(torch.float16)
mine, line = models.converted(ref)
print(line, flush=True)
prompt = torch.randint(0, 32000, (4, 512), device="cuda", generator=torch.Generator(device="cuda").manual_seed(1))
real_select, real_pdl = registry.select, registry.dependent_launch

def patched(pdl=True, pp_shapes=()):
    def select(limits, problem, **kw):
        if (problem.m, problem.n, problem.k) in pp_shapes and not kw.get("config_name"):
            kw["config_name"] = "128x128pp"
        return real_select(limits, problem, **kw)
    gemm._select = functools.lru_cache(maxsize=1024)(select)
    registry.dependent_launch = real_pdl if pdl else (lambda *a: False)
    gemm._calls.clear(); linear._plans.clear()

QO = ((2048, 2048, 2048),)
ALL = ((2048, 2048, 2048), (2048, 8192, 2048), (2048, 2048, 8192))
variants = {"torch": (ref, None), "zoo": (mine, dict()), "zoo no-pdl": (mine, dict(pdl=False)),
            "zoo q/o 128x128pp": (mine, dict(pp_shapes=QO)), "zoo q/o 128x128pp no-pdl": (mine, dict(pdl=False, pp_shapes=QO)),
            "zoo 2048-row 128x128pp": (mine, dict(pp_shapes=ALL))}
graphs = {}
with torch.inference_mode():
    want = ref(prompt).logits.float()
    for name, (model, patch) in variants.items():
        if patch is not None: patched(**patch)
        got = model(prompt).logits.float()
        print(f"{name}: max |logit - torch| {(got - want).abs().max().item():.3f}", flush=True)
        graphs[name] = models._graphed(lambda m=model: m(prompt).logits)
    patched()
    names = list(graphs)
    t = {k: [] for k in names}
    for r in range(int(sys.argv[1]) if len(sys.argv) > 1 else 24):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            torch.cuda.synchronize(); s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); graphs[name](); e.record(); torch.cuda.synchronize(); t[name].append(s.elapsed_time(e))
    base = statistics.median(t["torch"])
    for k, v in t.items():
        med = statistics.median(v)
        print(f"{k:28s} {med*1e3:8.0f} us  {base/med:.4f}x of torch  (spread {100*(max(v)-min(v))/med:.1f}%)")
