"""Which memory a tensor view's elements occupy, and whether two views share an element.

A kernel that reads its inputs while it writes its output needs them apart. Byte spans are
too coarse: `buf[:, 32:]` and `buf[:, :32]` interleave but share nothing, as do the matrices
of `torch.empty(M, B, N).transpose(0, 1)`. A 2-D view with one unit stride is a set of equal
intervals, one per row (or column), a fixed step apart; two such sets meet or not by
arithmetic. Views with no unit stride are "too hard" (None): callers copy such an input
rather than refuse a call or risk a wrong answer.
"""

from __future__ import annotations

from typing import NamedTuple

import torch


class Rows(NamedTuple):
    """Intervals [base + i * step, base + i * step + width) in bytes, i in [0, count)."""
    base: int
    count: int
    step: int
    width: int

    @property
    def end(self) -> int:
        return self.base + (self.count - 1) * self.step + self.width


def rows_of(t: torch.Tensor) -> Rows | None:
    """t's elements as intervals (t 1-D or 2-D, non-empty); None when neither stride is a unit
    one (then only the byte span is known)."""
    size = t.element_size()
    if t.dim() == 1:
        t = t.unsqueeze(0)
    rows, cols = t.shape
    if cols == 1 or t.stride(1) == 1:
        return Rows(t.data_ptr(), rows, t.stride(0) * size if rows > 1 else 0, cols * size)
    if rows == 1 or t.stride(0) == 1:
        return Rows(t.data_ptr(), cols, t.stride(1) * size if cols > 1 else 0, rows * size)
    return None


def span(t: torch.Tensor) -> tuple[int, int]:
    """The byte range a non-empty tensor's elements lie in."""
    last = sum((n - 1) * st for n, st in zip(t.shape, t.stride()))
    return t.data_ptr(), t.data_ptr() + (last + 1) * t.element_size()


def rows_meet(x: Rows, y: Rows) -> bool:
    """Whether an interval of x and one of y share a byte."""
    if x.base >= y.end or y.base >= x.end:
        return False
    if x.step == y.step and 0 < x.width <= x.step and y.width <= y.step:
        # y's row j starts rem + (q + j - i) * step bytes after x's row i: only q + j - i of
        # 0 or -1 can overlap rows no wider than the step.
        q, rem = divmod(y.base - x.base, x.step)
        reachable = range(-(x.count - 1), y.count)  # j - i
        return (rem < x.width and -q in reachable) or (rem + y.width > x.step and -q - 1 in reachable)
    if x.count > y.count:
        x, y = y, x
    starts = x.base + torch.arange(x.count, dtype=torch.int64) * x.step
    ends = starts + x.width
    if y.count == 1 or y.step == 0:
        return bool(((starts < y.base + y.width) & (ends > y.base)).any())
    # y's rows j with y.base + j*step in (start - y.width, end): [lo, hi]
    lo = torch.div(starts - y.width - y.base, y.step, rounding_mode="floor") + 1
    hi = -torch.div(y.base - ends, y.step, rounding_mode="floor") - 1
    return bool((lo.clamp(min=0) <= hi.clamp(max=y.count - 1)).any())


def share_elements(x: torch.Tensor, y: torch.Tensor) -> bool | None:
    """Whether two views have a byte in common: False, True, or None (too hard to tell)."""
    if x.numel() == 0 or y.numel() == 0:
        return False
    (x0, x1), (y0, y1) = span(x), span(y)
    if x0 >= y1 or y0 >= x1:
        return False
    rx, ry = rows_of(x), rows_of(y)
    if rx is None or ry is None:
        return None
    return rows_meet(rx, ry)


def first_overlap(outs: list[torch.Tensor], inputs: list[torch.Tensor]) -> int | None:
    """The index of an output that shares an element with another output or with an input
    (inputs may share with each other: a shared operand is fine), or None. Outputs have a unit
    stride (checked before); an input too hard to tell counts as overlapping. A sweep over the
    byte spans sorted by start finds the candidate pairs; only those are compared exactly."""
    spans = sorted([(*span(t), True, i) for i, t in enumerate(outs) if t.numel()] +
                   [(*span(t), False, -1 - i) for i, t in enumerate(inputs) if t.numel()])
    tensor = {i: t for i, t in enumerate(outs)} | {-1 - i: t for i, t in enumerate(inputs)}
    active: list[tuple[int, bool, int]] = []  # (end, is_out, index) of spans still open
    found = None
    for start, end, is_out, i in spans:
        active = [s for s in active if s[0] > start]
        for _, other_out, j in active:
            if (is_out or other_out) and share_elements(tensor[i], tensor[j]) is not False:
                hit = min(k for k in (i, j) if k >= 0) if is_out and other_out else (i if is_out else j)
                found = hit if found is None else min(found, hit)
        active.append((end, is_out, i))
    return found
