"""torch.compile's inductor calls the zoo's launch path for zoo::mm, zoo::conv2d and
zoo::scaled_mm, as it calls cuBLAS for aten::mm.

Inductor runs a custom op it has no lowering for as a fallback kernel: each call goes through
the dispatcher into the op's Python, and through its Python autograd kernel even with grad
off: 25.5 us of host time a GEMM against compiled torch.mm's 13.5 on a lent H200 host
(NOTES.md, "Inductor calls the launch path"). The lowerings here make the ops extern kernels,
as inductor makes aten::mm: its generated code calls `extern_kernels.zoo_mm(a, b, out=buf)`
(an out= variant: the buffer from inductor's own planning) and
`buf = extern_kernels.zoo_conv2d(x, w, ...)` and `extern_kernels.zoo_scaled_mm(a, b, ...)`,
straight into the eager paths' plan caches (gemm.mm, conv.conv2d, scaled.scaled_mm). The
conv's x is asked for channels-last, the layout its kernels read; scaled_mm's operands and
scales keep the strides they were traced with (b column-major, the block scales
outer-dim-major), which the FP8 kernel's checks require.

Inductor's lowering and extern-kernel API is internal: `install()` runs on the first trace
of a zoo op (the fake implementations call it, so importing the zoo does not import
inductor), and where that API is missing or refuses a node the op stays a fallback kernel.
"""

from __future__ import annotations

import warnings

import torch

from . import conv, gemm, scaled

_installed: list = []  # [True] once install() ran (whether or not the lowerings took)
_warned: set = set()   # the ops whose lowering failed, said once


def mm_into(a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor, kernel_name: str | None = None,
            config_name: str | None = None, allow_tf32: bool | None = None) -> torch.Tensor:
    """zoo::mm written into inductor's buffer (its dtype is the op's out_dtype)."""
    return gemm.mm(a, b, out=out, kernel=kernel_name, config=config_name, allow_tf32=allow_tf32)


def conv2d_made(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None = None, *, stride, padding, dilation,
                groups: int = 1, out_dtype: torch.dtype | None = None, kernel_name: str | None = None,
                config_name: str | None = None) -> torch.Tensor:
    """zoo::conv2d, its channels-last output made by the call (weights laid out per call, as
    the op does: nothing kept in a CUDA graph's pool)."""
    return conv.conv2d(x, w, bias, _interned(stride), _interned(padding), _interned(dilation), groups,
                       out_dtype=out_dtype, kernel=kernel_name, config=config_name, keep_layout=False)


def scaled_mm_made(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
                   bias: torch.Tensor | None = None, *, out_dtype: str, use_fast_accum: bool = False,
                   kernel_name: str | None = None, config_name: str | None = None) -> torch.Tensor:
    """zoo::scaled_mm, its output made by the call (as torch._scaled_mm's)."""
    return scaled.scaled_mm(a, b, scale_a, scale_b, bias, out_dtype=getattr(torch, out_dtype),
                            use_fast_accum=use_fast_accum, kernel=kernel_name, config=config_name)


def _interned(values) -> tuple:
    """The op's int[2] (ints: the fake implementation checked them when traced) as one tuple
    object per value, so conv2d's plan key finds their repr by identity (conv._arguments)."""
    t = tuple(values)
    if len(_INTERNED) > 256:
        _INTERNED.clear()
    return _INTERNED.setdefault(t, t)


_INTERNED: dict = {}


def install() -> None:
    """Register the lowerings, once. It runs inside a trace's fake-tensor mode (from the fake
    implementations): inductor is imported outside it."""
    if _installed:
        return
    _installed.append(True)
    try:
        from torch._subclasses.fake_tensor import unset_fake_temporarily
        with unset_fake_temporarily():
            _register()
    except Exception as exc:  # an inductor whose API differs: the ops stay its fallback kernels
        _warn("the zoo's inductor lowerings", exc)


def _warn(what: str, exc: Exception) -> None:
    warnings.warn(f"zoo: {what} failed ({type(exc).__name__}: {exc}); zoo ops run as inductor's fallback "
                  "kernels (at the dispatcher's host cost)", stacklevel=3)


def _register() -> None:
    from torch._inductor import ir
    from torch._inductor.lowering import fallback_handler, register_lowering
    from torch._inductor.select_algorithm import ExternKernelChoice, realize_inputs
    from torch._inductor.virtualized import V

    def choice(fn, name: str, out_variant: bool):
        found = ExternKernelChoice.lookup(name) if hasattr(ExternKernelChoice, "lookup") else None
        return found or ExternKernelChoice(fn, name=name, has_out_variant=out_variant)

    def lower(op, build):
        """Register build(*args) as op's lowering; where it raises (an inductor whose internals
        differ) or for C++ wrapper code (AOTInductor, which cannot call Python), the op's
        fallback kernel."""
        @register_lowering(op, type_promotion_kind=None)
        def _(*args, **kwargs):
            try:
                if not V.graph.cpp_wrapper:
                    return build(*args, **kwargs)
            except Exception as exc:  # said once per op
                if op not in _warned:
                    _warned.add(op)
                    _warn(f"inductor's lowering of {op}", exc)
            return fallback_handler(op, add_to_fallback_set=False)(*args, **kwargs)

    mm_choice = choice(mm_into, "zoo_mm", out_variant=True)
    conv_choice = choice(conv2d_made, "zoo_conv2d", out_variant=False)

    def build_mm(a, b, out_dtype=None, kernel_name=None, config_name=None, allow_tf32=None):
        a, b = realize_inputs(a, b)
        layout = ir.FixedLayout(a.get_device(), out_dtype or a.get_dtype(), [a.get_size()[0], b.get_size()[1]])
        return mm_choice.bind((a, b), layout, **_given(kernel_name=kernel_name, config_name=config_name,
                                                       allow_tf32=allow_tf32)).output_node()

    def build_conv(x, w, bias, stride, padding, dilation, groups, out_dtype=None, kernel_name=None,
                   config_name=None):
        inputs = [ir.ExternKernel.require_channels_last(x), ir.ExternKernel.realize_input(w)]
        if bias is not None:
            inputs.append(ir.ExternKernel.realize_input(bias))
        layout = ir.FallbackKernel.tensor_to_layout(V.graph.current_node.meta["val"])  # the fake's strides
        return conv_choice.bind(inputs, layout, stride=list(stride), padding=list(padding), dilation=list(dilation),
                                groups=groups, **_given(out_dtype=out_dtype, kernel_name=kernel_name,
                                                        config_name=config_name)).output_node()

    scaled_choice = choice(scaled_mm_made, "zoo_scaled_mm", out_variant=False)

    def traced_strides(node, index: int):
        """An input as the op was traced with it: the same strides (its fake's)."""
        want = V.graph.current_node.args[index].meta["val"].stride()
        return ir.ExternKernel.require_exact_strides(ir.ExternKernel.realize_input(node), want)

    def build_scaled(a, b, scale_a, scale_b, bias=None, out_dtype=torch.bfloat16, use_fast_accum=False,
                     kernel_name=None, config_name=None):
        inputs = [traced_strides(t, i) for i, t in enumerate((a, b, scale_a, scale_b))]
        if bias is not None:
            inputs.append(ir.ExternKernel.realize_input(bias))
        traced = V.graph.current_node.meta["val"]
        layout = ir.FallbackKernel.tensor_to_layout(traced)
        # The out dtype by name, the traced output's: inductor's code may write a dtype argument
        # as its enum's number (torch 2.11 did, for Float8Linear's out_dtype=x.dtype).
        return scaled_choice.bind(inputs, layout, out_dtype=gemm._dtype_name(traced.dtype),
                                  use_fast_accum=bool(use_fast_accum),
                                  **_given(kernel_name=kernel_name, config_name=config_name)).output_node()

    lower(torch.ops.zoo.mm.default, build_mm)
    lower(torch.ops.zoo.conv2d.default, build_conv)
    lower(torch.ops.zoo.scaled_mm.default, build_scaled)


def _given(**options) -> dict:
    """The options that were given (None: the launch path's own default)."""
    return {k: v for k, v in options.items() if v is not None}
