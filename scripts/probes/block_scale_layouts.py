"""torch._scaled_mm's blockwise recipe at K / 128 not a multiple of 4 (K = 11008: 86 blocks):
B's (K/128, N/128) scales as zoo.fp8.quantize makes them (stride (1, 86)), the same values in
storage whose leading dimension is padded to 88 (a (86, N/128) view, stride (1, 88)), and the
padded (88, N/128) tensor itself; each answer's error against float64 of the dequantized
inputs, torch's and the zoo's."""
import torch
import zoo
from zoo import bench, fp8

for m, n, k in ((128, 4096, 11008), (1024, 4096, 11008), (4096, 4096, 11008), (256, 512, 4224), (256, 512, 4096)):
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(m, k, device="cuda", generator=gen)
    b = torch.randn(k, n, device="cuda", generator=gen)
    qa, sa = fp8.quantize(a, "block")
    qb, sb = fp8.quantize(b, "block", operand="b")
    ref = fp8.dequantize(qa, sa, "block").double() @ fp8.dequantize(qb, sb, "block", operand="b").double()
    L = k // 128
    L4 = -(-L // 4) * 4
    padded = torch.zeros(sb.shape[1], L4, device="cuda")  # (N/128, L4) row-major: stride (1, L4) once transposed
    padded[:, :L] = sb.t()
    variants = {"quantize's (stride (1, L))": sb, "padded storage, (L, N/128) view": padded.t()[:L],
                "padded (L4, N/128)": padded.t()}
    for name, s in variants.items():
        for who, fn in (("torch", torch._scaled_mm), ("zoo", zoo.scaled_mm)):
            try:
                out = fn(qa, qb, sa, s, out_dtype=torch.bfloat16)
                err = f"{bench.relative_error(out, ref):.1e}"
            except Exception as exc:
                err = f"{type(exc).__name__}: {str(exc)[:100]}"
            print(f"{m}x{n}x{k} {name} shape {tuple(s.shape)} stride {s.stride()}: {who} {err}", flush=True)
