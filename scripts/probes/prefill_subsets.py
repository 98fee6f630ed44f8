"""Probe (issue 40): which of Llama's Linear groups makes the zoo's prefill slower. Each
variant is the converted model with one group put back on torch.nn.Linear; CUDA-graph
replays, all variants in turns (rotated start), medians."""
import copy, statistics, sys, torch
from zoo import models
torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = True
ref = models.llama_model(torch.float16)
groups = {"q/o": ("q_proj", "o_proj"), "k/v": ("k_proj", "v_proj"), "gate/up": ("gate_proj", "up_proj"),
          "down": ("down_proj",), "lm_head": ("lm_head",)}
variants = {"torch": ref}
allzoo, line = models.converted(ref)
print(line, flush=True)
variants["zoo"] = allzoo
for g, names in groups.items():
    m = copy.deepcopy(allzoo)
    for n, mod in m.named_modules():
        if n.split(".")[-1] in names:
            mod.__class__ = torch.nn.Linear
    variants["zoo but " + g] = m
prompt = torch.randint(0, 32000, (4, 512), device="cuda", generator=torch.Generator(device="cuda").manual_seed(1))
with torch.inference_mode():
    out = {k: m(prompt).logits for k, m in variants.items()}
    for k, o in out.items():
        print(f"{k}: max |logit - torch| {(o.float() - out['torch'].float()).abs().max().item():.3f}", flush=True)
    del out
    graphs = {k: models._graphed((lambda m: lambda: m(prompt).logits)(m)) for k, m in variants.items()}
    names = list(graphs)
    t = {k: [] for k in names}
    for r in range(int(sys.argv[1]) if len(sys.argv) > 1 else 20):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            torch.cuda.synchronize(); s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); graphs[name](); e.record(); torch.cuda.synchronize(); t[name].append(s.elapsed_time(e))
    med = {k: statistics.median(v) for k, v in t.items()}
    base, allz = med["torch"], med["zoo"]
    print(f"torch {base*1e3:.0f} us; zoo {allz*1e3:.0f} us ({base/allz:.4f}x)")
    for g in groups:
        v = med["zoo but " + g]
        print(f"  zoo but {g:8s} {v*1e3:.0f} us: the group on the zoo costs {(allz - v)*1e3:+.0f} us against cuBLAS")
