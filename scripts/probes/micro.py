"""Session 19, call 3: host cost per scaled GEMM call by path (torch._scaled_mm, zoo.scaled_mm
eager, the op through the dispatcher as inductor's fallback calls it, the staged extern
function), with and without the garbage collector; out_dtype under compile for zoo.mm and
zoo.conv2d; then the compiled FP8 Llama with the staged lowering against torch's, GC counted."""
import gc, os, sys, time, torch
sys.path.insert(0, os.path.dirname(__file__))
import torch._inductor.config as icfg
icfg.fx_graph_cache = False
import zoo
from zoo import fp8, models, scaled
import inductor_staged

def host_us(fns, calls=400, rounds=6):
    out = {k: [] for k in fns}
    for r in range(rounds):
        for k in (list(fns) if r % 2 == 0 else list(fns)[::-1]):
            f = fns[k]; torch.cuda.synchronize(); t = time.perf_counter()
            for _ in range(calls):
                f()
            out[k].append(1e6 * (time.perf_counter() - t) / calls)
            torch.cuda.synchronize()
    return {k: round(sorted(v)[len(v) // 2], 1) for k, v in out.items()}

g = torch.Generator(device="cuda").manual_seed(0)
for m, n, k in ((128, 512, 512), (2048, 512, 2048)):
    a, sa = fp8.quantize(torch.randn(m, k, device="cuda", generator=g, dtype=torch.bfloat16), "row")
    b, sb = fp8.quantize(torch.randn(k, n, device="cuda", generator=g, dtype=torch.bfloat16), "row", operand="b")
    op = torch.ops.zoo.scaled_mm.default
    fns = {"torch._scaled_mm": lambda: torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16),
           "zoo.scaled_mm": lambda: scaled.scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16),
           "torch.ops.zoo.scaled_mm": lambda: op(a, b, sa, sb, None, torch.bfloat16, False, None, None),
           "staged extern fn": lambda: inductor_staged.scaled_mm_made(a, b, sa, sb, out_dtype="bfloat16")}
    with torch.inference_mode():
        print(f"{m}x{n}x{k} host us/call, gc on: {host_us(fns)}", flush=True)
        gc.disable()
        print(f"{m}x{n}x{k} host us/call, gc off: {host_us(fns)}", flush=True)
        gc.enable()
    with torch.no_grad():
        print(f"{m}x{n}x{k} host us/call, no_grad: {host_us(fns)}", flush=True)

# out_dtype under compile (the lowerings get it as the op's argument)
for name, fn, args in (
        ("mm", lambda x, y: zoo.mm(x, y, out_dtype=torch.float32),
         (torch.randn(64, 64, device="cuda", dtype=torch.float16), torch.randn(64, 64, device="cuda", dtype=torch.float16))),
        ("conv2d", lambda x, w: zoo.conv2d(x, w, padding=1, out_dtype=torch.float32),
         (torch.randn(2, 16, 8, 8, device="cuda", dtype=torch.float16).to(memory_format=torch.channels_last),
          torch.randn(32, 16, 3, 3, device="cuda", dtype=torch.float16)))):
    try:
        with torch.no_grad():
            got = torch.compile(fn)(*args)
            want = fn(*args)
        print(f"compiled {name} out_dtype=float32: {got.dtype}, max diff to eager {float((got - want).abs().max()):.2e}", flush=True)
    except Exception as exc:
        print(f"compiled {name} out_dtype=float32 FAILED: {type(exc).__name__}: {str(exc)[:300]}", flush=True)

ref = models.llama_model(torch.bfloat16)
theirs, mine, line = models.fp8_pair(ref, "row")
del ref
prompt = torch.randint(0, 32000, (4, 512), device="cuda", generator=torch.Generator(device="cuda").manual_seed(1))
collected = [0]
gc.callbacks.append(lambda phase, info: collected.__setitem__(0, collected[0] + (phase == "start")))

def alone(name, f, n=7, calls=5):
    walls = []; collected[0] = 0
    for _ in range(n):
        torch.cuda.synchronize(); t = time.perf_counter()
        for _ in range(calls):
            f(prompt)
        torch.cuda.synchronize(); walls.append(1000 * (time.perf_counter() - t) / calls)
    print(f"  {name}: wall {sorted(walls)[n // 2]:.2f} ms (min {min(walls):.2f}), gc runs per call {collected[0] / n / calls:.2f}", flush=True)

def compare(label, runs):
    print(label, flush=True)
    for _ in range(2):
        for k, f in runs.items():
            alone(k, f)
    gc.disable()
    for k, f in runs.items():
        alone(k + ", gc off", f)
    gc.enable()

with torch.inference_mode():
    runs = {"zoo fp8 fallback": torch.compile(mine), "torch fp8": torch.compile(theirs)}
    for k, f in runs.items():
        t = time.time(); f(prompt); f(prompt); torch.cuda.synchronize(); print(f"{k} compiled in {time.time() - t:.0f} s", flush=True)
    compare("fallback:", runs)
    inductor_staged._register()
    torch._dynamo.reset()
    runs = {"zoo fp8 lowered": torch.compile(mine), "torch fp8": torch.compile(theirs)}
    for k, f in runs.items():
        t = time.time(); f(prompt); f(prompt); torch.cuda.synchronize(); print(f"{k} compiled in {time.time() - t:.0f} s", flush=True)
    want = runs["torch fp8"](prompt).logits.float(); got = runs["zoo fp8 lowered"](prompt).logits.float()
    print(f"lowered vs torch fp8 logits rel err {float((got - want).norm() / want.norm()):.2e}", flush=True)
    compare("lowered:", runs)
