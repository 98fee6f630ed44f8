"""torch.compile's inductor calls the zoo's launch path for zoo::mm, as it calls cuBLAS for aten::mm.

Inductor runs a custom op it has no lowering for as a fallback kernel: each call goes through
the dispatcher into the op's Python, and through its Python autograd kernel even with grad
off: 19-26 us of host time a GEMM against torch.mm's 13 on a lent H100 host (NOTES.md, "Llama's
compiled prefill is the zoo op's host cost"). The lowering here makes zoo::mm an extern kernel
with an out= variant, as inductor makes aten::mm: its generated code calls
`extern_kernels.zoo_mm(a, b, out=buf)`, the buffer from inductor's own planning, straight into
gemm.mm's plan cache (the eager path).

Inductor's lowering and extern-kernel API is internal: `install()` runs on the first trace
of a zoo op (its fake implementation calls it, so importing the zoo does not import inductor),
and where that API is missing or refuses the node the op stays inductor's fallback kernel.
"""

from __future__ import annotations

import torch

from . import gemm

NAME = "zoo_mm"  # extern_kernels.zoo_mm in inductor's generated code
_installed: list = []  # [True] once install() ran (whether or not the lowering took)


def mm_into(a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor, kernel_name: str | None = None,
            config_name: str | None = None, allow_tf32: bool | None = None) -> torch.Tensor:
    """zoo::mm written into inductor's buffer (its dtype is the op's out_dtype)."""
    return gemm.mm(a, b, out=out, kernel=kernel_name, config=config_name, allow_tf32=allow_tf32)


def install() -> None:
    if _installed:
        return
    _installed.append(True)
    try:
        from torch._inductor import ir
        from torch._inductor.lowering import fallback_handler, register_lowering
        from torch._inductor.select_algorithm import ExternKernelChoice, realize_inputs
        from torch._inductor.virtualized import V
    except ImportError:
        return
    choice = ExternKernelChoice.lookup(NAME) if hasattr(ExternKernelChoice, "lookup") else None
    choice = choice or ExternKernelChoice(mm_into, name=NAME, has_out_variant=True)
    op = torch.ops.zoo.mm.default

    @register_lowering(op, type_promotion_kind=None)
    def _(a, b, out_dtype=None, kernel_name=None, config_name=None, allow_tf32=None):
        try:
            if V.graph.cpp_wrapper:  # C++ (AOTInductor) cannot call the Python launch path
                raise NotImplementedError
            a_in, b_in = realize_inputs(a, b)
            layout = ir.FixedLayout(a_in.get_device(), out_dtype or a_in.get_dtype(),
                                    [a_in.get_size()[0], b_in.get_size()[1]])
            options = {k: v for k, v in (("kernel_name", kernel_name), ("config_name", config_name),
                                         ("allow_tf32", allow_tf32)) if v is not None}
            return choice.bind((a_in, b_in), layout, **options).output_node()
        except Exception:  # an inductor whose internals differ: the op as a fallback kernel
            return fallback_handler(op, add_to_fallback_set=False)(a, b, out_dtype, kernel_name, config_name,
                                                                    allow_tf32)
