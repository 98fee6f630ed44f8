"""zoo.mm's input checks, which need no GPU: each names what was wrong."""
import pytest
import torch

import zoo

H = torch.float16


@pytest.mark.parametrize("a, b, kwargs, message", [
    ([[1.0]], torch.ones(1, 1, dtype=H), {}, "a must be a torch.Tensor, got list"),
    (torch.ones(2, 3, 4, dtype=H), torch.ones(4, 2, dtype=H), {}, "a must be 2-D, got 3-D"),
    (torch.ones(2, 3, dtype=H), torch.ones(3, dtype=H), {}, "b must be 2-D, got 1-D"),
    (torch.ones(2, 3, dtype=H), torch.ones(4, 5, dtype=H), {}, r"a's K=3 must equal b's K=4"),
    (torch.ones(2, 3, dtype=H), torch.ones(3, 5), {}, "must share a dtype"),
    (torch.ones(2, 3, dtype=torch.float64), torch.ones(3, 5, dtype=torch.float64), {}, "float64 is not supported: the zoo's kernels take torch.float16 or torch.bfloat16"),
    (torch.ones(2, 3, dtype=H), torch.ones(3, 5, dtype=H), {}, "must be CUDA tensors, got device cpu"),
])
def test_bad_inputs_raise_clear_errors(a, b, kwargs, message):
    with pytest.raises(zoo.ZooError, match=message):
        zoo.mm(a, b, **kwargs)


def test_bad_out_dtype():
    a, b = torch.ones(2, 3, dtype=H), torch.ones(3, 5, dtype=H)
    with pytest.raises(zoo.ZooError, match=r"out_dtype must be torch.float16 \(the input dtype\) or torch.float32"):
        zoo.gemm.check_inputs(a, b, torch.bfloat16)


def test_errors_are_exceptions_not_asserts():
    # ZooError survives `python -O`; it is also what the CLI turns into exit status 1.
    assert issubclass(zoo.ZooError, Exception) and not issubclass(zoo.ZooError, AssertionError)
