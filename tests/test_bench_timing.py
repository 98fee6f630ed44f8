"""The side-by-side timers' input rotation, on the CPU (CUDA events and synchronize stubbed)."""
import torch

from zoo import bench


class _FakeEvent:
    clock = 0.0

    def __init__(self, enable_timing=False):
        self.t = None

    def record(self, stream=None):
        _FakeEvent.clock += 1.0
        self.t = _FakeEvent.clock

    def elapsed_time(self, end):
        return end.t - self.t


def _recording_fns(names, log):
    return {name: (lambda n: lambda s: log.append((n, s)))(name) for name in names}


def test_device_timer_never_hands_a_call_the_inputs_of_the_call_before(monkeypatch):
    """Two calls in a row must not share an input set: the second would find the inputs the
    first just read in L2 (torch.mm, then zoo.mm on the same 32 MB of weights, timed the zoo
    from L2 and torch.mm from DRAM). Every fn still sees every set."""
    monkeypatch.setattr(torch.cuda, "Event", _FakeEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    log = []
    names = ["torch.mm", "zoo", "third"]
    timings = bench.time_side_by_side(_recording_fns(names, log), sets=4, warmup=0, iters=8, graph=False)
    assert [n for n, _ in log] == names * 8  # interleaved call by call, in order
    # Call after call, across the fns, the sets go round: a set comes back only after all others.
    assert [s for _, s in log] == [k % 4 for k in range(len(log))]
    for name in names:
        assert {s for n, s in log if n == name} == set(range(4))
        assert len(timings[name].times_ms) == 8


def test_wall_timer_starts_each_fn_on_sets_the_one_before_did_not_just_read(monkeypatch):
    """Each fn's run of calls goes on where the one before left the rotation: it does not
    start again at set 0, which the fn before read a few calls ago."""
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    log = []
    names = ["torch.mm", "zoo"]
    bench.wall_side_by_side(_recording_fns(names, log), sets=3, warmup=0, iters=4, calls=5)
    assert [s for _, s in log] == [k % 3 for k in range(len(log))]
    for name in names:
        assert {s for n, s in log if n == name} == set(range(3))


def test_wall_timer_lets_each_fn_go_first_as_often(monkeypatch):
    """The fns' order is reversed every other round: a fixed order always gives the same fn the
    round's start, right after the other's synchronize, a bias a ratio near 1 cannot tell from
    a difference between the two."""
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    log = []
    names = ["torch", "zoo"]
    timings = bench.wall_side_by_side(_recording_fns(names, log), sets=1, warmup=0, iters=4, calls=2)
    runs = [n for k, (n, _) in enumerate(log) if k % 2 == 0]  # one entry per run of 2 calls
    assert runs == ["torch", "zoo", "zoo", "torch", "torch", "zoo", "zoo", "torch"]
    assert all(len(t.times_ms) == 4 for t in timings.values())
