"""Probe (issue 40): where a zoo Linear's training step spends host time, against torch's.
An 8-layer Linear(1024, 1024) bf16 chain at batch 16 (the GPU waits on the host), forward +
backward per step, variants of the autograd node side by side, alternating rounds."""
import statistics
import sys
import time

import torch

import zoo
from zoo import gemm, nn as znn

torch.manual_seed(0)
B, W, L = 16, 1024, 8
dt = torch.bfloat16


class TorchMM(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x2, w, bias):
        ctx.save_for_backward(x2, w)
        return gemm.linear(x2, w, bias)

    @staticmethod
    def backward(ctx, grad):
        x2, w = ctx.saved_tensors
        return torch.mm(grad, w), torch.mm(grad.t(), x2), grad.sum(0)


class Noop(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x2, w, bias):
        ctx.save_for_backward(x2, w)
        ctx.gw, ctx.gb = torch.zeros_like(w), torch.zeros_like(bias)
        return gemm.linear(x2, w, bias)

    @staticmethod
    def backward(ctx, grad):
        x2, w = ctx.saved_tensors
        return grad, ctx.gw, ctx.gb


_pairs = {}


class Lean(torch.autograd.Function):
    """one key, two plans, no views: the backward's lean path, prototyped"""
    @staticmethod
    def forward(ctx, x2, w, bias):
        ctx.save_for_backward(x2, w)
        return gemm.linear(x2, w, bias)

    @staticmethod
    def backward(ctx, grad):
        x2, w = ctx.saved_tensors
        key = (grad.shape, grad.stride(), x2.shape, x2.stride(), w.shape, w.stride(), grad.dtype)
        plans = _pairs.get(key)
        if plans is None:
            plans = _pairs[key] = (gemm.plan_call(grad, w, None, None, None, None, None),
                                   gemm.plan_call(grad.t(), x2, None, None, None, None, None))
        g = grad.data_ptr()
        return (plans[0].run(grad, w, None, g, w.data_ptr()), plans[1].run(grad, x2, None, g, x2.data_ptr()),
                grad.sum(0))


class LeanNoSum(Lean):
    @staticmethod
    def backward(ctx, grad):
        dx, dw, _ = Lean.backward(ctx, grad)
        return dx, dw, ctx.gb

    @staticmethod
    def forward(ctx, x2, w, bias):
        ctx.gb = torch.zeros_like(bias)
        return Lean.forward(ctx, x2, w, bias)


def with_function(fn):
    apply = super(torch.autograd.Function, fn).apply

    class L(torch.nn.Linear):
        def forward(self, x):
            return apply(x, self.weight, self.bias)
    return L


def chain(cls, bias=True):
    torch.manual_seed(1)
    mods = []
    for _ in range(L):
        lin = torch.nn.Linear(W, W, bias=bias)
        lin.__class__ = cls
        mods += [lin, torch.nn.ReLU()]
    return torch.nn.Sequential(*mods[:-1]).to("cuda", dt)


x = torch.randn(B, W, device="cuda", dtype=dt, requires_grad=True)
variants = {
    "torch": chain(torch.nn.Linear),
    "zoo": chain(znn.Linear),
    "zoo, backward on torch.mm": chain(with_function(TorchMM)),
    "zoo, backward a no-op": chain(with_function(Noop)),
    "zoo, lean backward (one key)": chain(with_function(Lean)),
    "zoo, lean backward, no bias sum": chain(with_function(LeanNoSum)),
    "torch, no bias": chain(torch.nn.Linear, bias=False),
    "zoo, no bias": chain(znn.Linear, bias=False),
}

def step(m):
    m(x).float().square().mean().backward()


def fwd(m):
    m(x)


for mode, fn in (("forward + backward", step), ("forward, grad on", fwd)):
    for m in variants.values():
        for _ in range(30):
            fn(m)
    torch.cuda.synchronize()
    samples = {k: [] for k in variants}
    for r in range(11):
        for k, m in variants.items():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(100):
                fn(m)
            torch.cuda.synchronize()
            samples[k].append((time.perf_counter() - t0) / 100 * 1e6)
    base = statistics.median(samples["torch"])
    print(f"\n{mode}, {L} x Linear({W}, {W}) bf16, batch {B}: us a step, median of 11 alternating rounds of 100")
    for k, s in samples.items():
        med = statistics.median(s)
        print(f"  {k:36s} {med:8.1f} us   {med / base:5.2f}x torch   per layer over torch {(med - base) / L:6.1f} us")
# correctness of the lean path
for name in ("zoo, lean backward (one key)",):
    m, t = variants[name], variants["torch"]
    for mm in (m, t):
        mm.zero_grad()
        mm(x).float().square().mean().backward()
    err = (m[0].weight.grad.float() - t[0].weight.grad.float()).norm() / t[0].weight.grad.float().norm()
    print(f"{name}: first weight grad rel. error against torch {err:.1e}")
