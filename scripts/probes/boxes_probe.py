"""Call 2 probe: FP8 configs loaded in more, smaller TMA boxes (a_boxes, b_boxes) against the
same configs as kept, each shape's variants interleaved call by call with torch._scaled_mm
(bench.time_side_by_side, CUDA-graph replays, inputs out of L2), every variant verified once
against float64 of the dequantized inputs. Prints % of torch per variant and round."""
import json, sys, time
import torch
from zoo import bench, fp8, gemm, scaled

GROUPS = [  # (recipe, configs, shapes)
    ("tensor", ["32x128sp", "32x128spB2", "32x128spB4"], ["128x4096x4096", "128x4096x11008", "256x4096x4096"]),
    ("tensor", ["16x128sp", "16x128spB2"], ["16x4096x4096", "64x4096x4096"]),
    ("tensor", ["64x128sp", "64x128spB2"], ["64x11008x4096"]),
    ("tensor", ["128x128p", "128x128pB2", "128x128pA2B2"], ["4096x4096x4096", "1024x4096x4096", "128x11008x4096", "2048x2048x2048"]),
    ("row", ["128x128p", "128x128pB2", "128x128pA2B2"], ["4096x4096x4096", "1024x4096x4096"]),
    ("tensor", ["128x192p", "128x192pB2"], ["4096x11008x4096", "2048x11008x4096"]),
    ("tensor", ["192x128p", "192x128pB2", "192x128pA2B2"], ["8192x4096x4096"]),
    ("block", ["128x128pb", "128x128pbB2", "128x128pbA2B2"], ["4096x4096x4096", "1024x4096x4096"]),
    ("block", ["192x128pb", "192x128pbB2"], ["2048x11008x4096"]),
]
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
out = []
limits = gemm.device_limits(0)
for recipe, configs, shapes in GROUPS:
    for shape in shapes:
        m, n, k = map(int, shape.split("x"))
        t0 = time.time()
        gen = torch.Generator(device="cuda").manual_seed(0)
        sets = bench.rotation_sets(m * k + k * n, limits.l2_bytes)
        inputs = []
        for _ in range(sets):
            a = torch.randn(m, k, device="cuda", generator=gen) * torch.logspace(-1, 1, m, device="cuda").unsqueeze(1)
            w = torch.randn(n, k, device="cuda", generator=gen)
            inputs.append((*fp8.quantize(a, recipe, operand="a"), *fp8.quantize(w.t(), recipe, operand="b")))
        qa, sa, qb, sb = inputs[0]
        ref = fp8.dequantize(qa, sa, recipe, "a").double() @ fp8.dequantize(qb, sb, recipe, "b").double()
        fns = {"torch": lambda i: torch._scaled_mm(inputs[i][0], inputs[i][2], inputs[i][1], inputs[i][3],
                                                   out_dtype=torch.bfloat16)}
        errors = {"torch": bench.relative_error(fns["torch"](0), ref)}
        for c in configs:
            fns[c] = (lambda c: lambda i: scaled.scaled_mm(inputs[i][0], inputs[i][2], inputs[i][1], inputs[i][3],
                                                           out_dtype=torch.bfloat16, config=c))(c)
            errors[c] = bench.relative_error(fns[c](0), ref)
        del ref
        for r in range(ROUNDS):
            names = list(fns) if r % 2 == 0 else ["torch"] + configs[::-1]
            t = bench.time_side_by_side({nm: fns[nm] for nm in names}, sets, 10, 50, graph=True,
                                        lead_cycles=bench.lead_cycles(limits))
            pct = {c: round(100 * t["torch"].median_ms / t[c].median_ms, 2) for c in configs}
            row = {"recipe": recipe, "shape": shape, "round": r, "pct": pct,
                   "torch_us": round(1000 * t["torch"].median_ms, 2),
                   "ok": {c: errors[c] <= max(2 * errors["torch"], 4e-3) for c in configs}}
            out.append(row)
            print(recipe, shape, r, pct, row["ok"], f"{time.time() - t0:.0f}s", flush=True)
json.dump(out, open(sys.argv[2] if len(sys.argv) > 2 else "boxes.json", "w"), indent=1)
print("\nmedians over rounds (% of torch):")
for recipe, configs, shapes in GROUPS:
    for shape in shapes:
        rows = [r for r in out if r["recipe"] == recipe and r["shape"] == shape]
        med = {c: sorted(r["pct"][c] for r in rows)[len(rows) // 2] for c in configs}
        print(f"{recipe:6s} {shape:16s} " + "  ".join(f"{c} {v:.1f}" for c, v in med.items())
              + ("" if all(all(r["ok"].values()) for r in rows) else "  NOT VERIFIED"))
