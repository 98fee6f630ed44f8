"""The zoo's ops on DTensors without a GPU (issue 40 item 3): one process playing rank 0 of two
under torch's fake process group, tensors on the meta device. The sharding rules, tensor and
sequence parallel over zoo.nn.Linear forward and backward, and the ZooErrors for what the
rules do not cover run here in CI. tests/test_gpu_multi.py has the same on two GPUs with NCCL,
values compared with torch's layers, and on a mesh of one rank where one GPU is visible."""
import pytest
import torch

import zoo
from zoo import ZooError

dist = pytest.importorskip("torch.distributed")
if not dist.is_available():
    pytest.skip("torch.distributed is not available in this torch build", allow_module_level=True)
fake_pg = pytest.importorskip("torch.testing._internal.distributed.fake_pg",
                              reason="torch's fake process group (torch >= 2.5)")
tensor = pytest.importorskip("torch.distributed.tensor")
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

H = torch.float16


@pytest.fixture(scope="module")
def mesh():
    if dist.is_initialized():
        pytest.skip("a process group is already initialized in this process")
    dist.init_process_group("fake", store=fake_pg.FakeStore(), rank=0, world_size=2)
    try:
        from torch.distributed.device_mesh import init_device_mesh
        yield init_device_mesh("cpu", (2,))
    finally:
        dist.destroy_process_group()


def sharded(mesh, shape, placement, dtype=H):
    return tensor.distribute_tensor(torch.empty(*shape, device="meta", dtype=dtype), mesh, [placement])


class OpLog(TorchDispatchMode):
    """The ops DTensor is asked to run (a mode sees them before DTensor's dispatch)."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


# (placement of a, placement of b) -> placement of a @ b: the rows of a, the columns of b, K
# (partial sums), or nothing sharded
@pytest.mark.parametrize("pa, pb, want, local", [
    (Replicate(), Shard(1), Shard(1), (96, 80)),
    (Shard(0), Replicate(), Shard(0), (48, 160)),
    (Shard(1), Shard(0), Partial(), (96, 160)),
    (Replicate(), Replicate(), Replicate(), (96, 160)),
])
def test_zoo_mm_on_dtensors_returns_the_dtensor_its_rules_give(mesh, pa, pb, want, local):
    with OpLog() as log:
        c = zoo.mm(sharded(mesh, (96, 256), pa), sharded(mesh, (256, 160), pb))
    assert isinstance(c, DTensor) and c.placements == (want,)
    assert tuple(c.shape) == (96, 160) and tuple(c.to_local().shape) == local
    assert log.ops.count("zoo.mm.default") == 1 and "aten.mm.default" not in log.ops


@pytest.mark.parametrize("pa, pb, want, local", [
    (Shard(0), Shard(0), Shard(0), (2, 64, 80)),
    (Shard(1), Replicate(), Shard(1), (4, 32, 80)),
    (Replicate(), Shard(2), Shard(2), (4, 64, 40)),
    (Shard(2), Shard(1), Partial(), (4, 64, 80)),
])
def test_zoo_bmm_on_dtensors_returns_the_dtensor_its_rules_give(mesh, pa, pb, want, local):
    c = zoo.bmm(sharded(mesh, (4, 64, 96), pa), sharded(mesh, (4, 96, 80), pb))
    assert isinstance(c, DTensor) and c.placements == (want,)
    assert tuple(c.shape) == (4, 64, 80) and tuple(c.to_local().shape) == local


def test_tensor_parallel_zoo_linear_layers_run_the_zoo_op_forward_and_backward(mesh):
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    kw = dict(device="meta", dtype=torch.bfloat16)
    model = torch.nn.Sequential(zoo.nn.Linear(256, 512, **kw), torch.nn.GELU(), zoo.nn.Linear(512, 128, **kw))
    parallelize_module(model, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    assert model[0].weight.placements == (Shard(0),) and model[2].weight.placements == (Shard(1),)
    x = torch.empty(8, 32, 256, **kw)
    with OpLog() as log:
        y = model(x)
        y.float().square().mean().backward()
    assert tuple(y.shape) == (8, 32, 128)
    # forward: one product a layer; backward: dW of the first layer (x needs no gradient), dX
    # and dW of the second; none of them torch's
    assert log.ops.count("zoo.mm.default") == 5
    assert not any(op in log.ops for op in ("aten.mm.default", "aten.addmm.default"))
    for layer in (model[0], model[2]):
        grad = layer.weight.grad
        assert isinstance(grad, DTensor) and grad.placements == layer.weight.placements
        assert grad.to_local().shape == layer.weight.to_local().shape


class Block(torch.nn.Module):
    """A transformer's MLP with its residual: norm, up, GELU, down, on `linear` layers."""

    def __init__(self, linear, **kw):
        super().__init__()
        self.norm, self.up, self.down = torch.nn.LayerNorm(256, **kw), linear(256, 512, **kw), linear(512, 256, **kw)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")  # SequenceParallel's hooks, on torch's layers too
def test_a_sequence_parallel_block_on_zoo_layers_communicates_as_on_torchs(mesh):
    """The norm over a sequence shard (SequenceParallel), gathered into zoo.nn.Linear (columns)
    and reduce-scattered out of it (rows): the same collectives as torch's layers (counted by
    CommDebugMode, which sees those DTensor issues too), with zoo::mm for every product,
    forward and backward."""
    from torch.distributed.tensor.debug import CommDebugMode
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel, SequenceParallel,
                                                   parallelize_module)
    kw = dict(device="meta", dtype=torch.bfloat16)
    x = DTensor.from_local(torch.empty(4, 32, 256, **kw), mesh, [Shard(1)], run_check=False)  # 64 tokens in all
    logs, comms = [], []
    for linear in (torch.nn.Linear, zoo.nn.Linear):
        block = parallelize_module(Block(linear, **kw), mesh, {
            "norm": SequenceParallel(), "up": ColwiseParallel(input_layouts=Shard(1)),
            "down": RowwiseParallel(output_layouts=Shard(1), use_local_output=False)})
        with OpLog() as log:
            y = block(x)
            y.float().square().mean().backward()
        with CommDebugMode() as comm:  # a pass of its own: nested, the modes see ops twice
            block(x).float().square().mean().backward()
        assert y.placements == (Shard(1),) and tuple(y.shape) == (4, 64, 256)
        assert block.up.weight.grad.placements == (Shard(0),) and block.down.weight.grad.placements == (Shard(1),)
        logs.append(log.ops)
        comms.append({str(op): n for op, n in comm.get_comm_counts().items()})
    assert comms[1] == comms[0] and any("reduce_scatter" in op for op in comms[0]), comms
    assert logs[1].count("zoo.mm.default") == 6  # 2 forward, 4 backward
    assert not any(op.startswith(("aten.mm", "aten.addmm")) for op in logs[1])


def test_what_the_rules_do_not_cover_raises_a_zoo_error(mesh):
    a, b = sharded(mesh, (96, 256), Replicate()), sharded(mesh, (256, 160), Shard(1))
    plain = torch.empty(256, 160, device="meta", dtype=H)
    with pytest.raises(ZooError, match="DTensors only, got a tensor that is not one for b"):
        zoo.mm(a, plain)
    with pytest.raises(ZooError, match="not one for bias"):
        zoo.mm(a, b, bias=torch.empty(160, device="meta", dtype=H))
    with pytest.raises(ZooError, match="no out="):
        zoo.mm(a, b, out=torch.empty(96, 160, device="meta", dtype=H))
    with pytest.raises(ZooError, match="not one for a"):
        zoo.bmm(torch.empty(4, 64, 96, device="meta", dtype=H), sharded(mesh, (4, 96, 80), Shard(0)))
    with pytest.raises(ZooError, match="no lists"):
        zoo.bmm([a], [b])
    with pytest.raises(ZooError, match="not one for weight, bias"):
        zoo.nn.Linear(256, 160, device="meta", dtype=H)(a)
    x, w = sharded(mesh, (2, 16, 8, 8), Shard(0)), sharded(mesh, (32, 16, 3, 3), Replicate())
    with pytest.raises(ZooError, match="zoo.conv2d has no sharding rules"):
        zoo.conv2d(x, w)
    one = torch.ones((), device="meta")
    e4m3 = torch.float8_e4m3fn
    qa, qb = sharded(mesh, (64, 256), Shard(0), e4m3), sharded(mesh, (128, 256), Replicate(), e4m3).t()
    with pytest.raises(ZooError, match="zoo.scaled_mm has no sharding rules"):
        zoo.scaled_mm(qa, qb, one, one)
    plain_a = torch.empty(64, 256, device="meta", dtype=e4m3)
    with pytest.raises(ZooError, match="zoo.scaled_mm has no sharding rules"):  # a DTensor scale alone
        zoo.scaled_mm(plain_a, plain_a.t(), tensor.distribute_tensor(one, mesh, [Replicate()]), one)


def test_torchs_implicit_replication_still_takes_plain_tensors_beside_dtensors(mesh):
    """Under torch's implicit_replication(), a plain tensor beside DTensors counts as
    replicated, for torch.mm and for the zoo's calls alike."""
    from torch.distributed.tensor.experimental import implicit_replication
    a, w = sharded(mesh, (96, 256), Shard(0)), torch.empty(256, 160, device="meta", dtype=H)
    with implicit_replication():
        c = zoo.mm(a, w)
        y = zoo.nn.Linear(256, 160, device="meta", dtype=H)(a)
    assert c.placements == (Shard(0),) and tuple(c.to_local().shape) == (48, 160)
    assert y.placements == (Shard(0),) and tuple(y.shape) == (96, 160)
