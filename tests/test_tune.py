"""zoo tune's file: keyed by what it was measured with, written atomically, stale files
ignored with a note; on a GPU, zoo.mm takes its winners."""
import json

import pytest
import torch

import zoo
from zoo import gemm, tune

KEY = tune.device_key("NVIDIA Tesla T4", (7, 5), (12, 8))
WIN = {"kernel": "sm75_hgemm_wmma", "config": "64x64", "splits": None, "us": 10.0, "torch_us": 12.0}


def test_winners_round_trip_and_merge(tmp_path):
    path = tmp_path / "tune-t4.json"
    tune.write(path, KEY, {"float16->float16 16x4096x4096": WIN})
    tune.write(path, KEY, {"float16->float16 1x4096x4096": dict(WIN, config="128x128")})
    winners, why = tune.read(path, KEY)
    assert why is None and set(winners) == {"float16->float16 16x4096x4096", "float16->float16 1x4096x4096"}
    assert [p.name for p in tmp_path.iterdir()] == ["tune-t4.json"]  # no temp file left


@pytest.mark.parametrize("field", ["gpu", "cc", "driver", "zoo", "sources"], ids=lambda f: f"key-{f}")
def test_a_file_measured_under_another_key_is_stale(tmp_path, field):
    path = tmp_path / "tune.json"
    tune.write(path, KEY, {"float16->float16 16x4096x4096": WIN})
    other = dict(KEY, **{field: "something else"})
    winners, why = tune.read(path, other)
    assert winners == {} and f"stale ({field} changed" in why and "run `zoo tune` again" in why
    tune.write(path, other, {"x": WIN})  # measuring under the new key replaces the old winners
    assert json.loads(path.read_text())["winners"] == {"x": WIN}


def test_a_kernel_or_config_edit_changes_the_sources_hash(tmp_path, monkeypatch):
    before = tune.sources_hash()
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "k.cu").write_text("// one\n")
    monkeypatch.setattr(tune.cuda, "KERNELS_DIR", kernels)
    one = tune.sources_hash()
    (kernels / "k.cu").write_text("// two\n")
    assert len({before, one, tune.sources_hash()}) == 3


def test_unreadable_file_is_a_note_not_a_crash(tmp_path):
    path = tmp_path / "tune.json"
    path.write_text("{ not json")
    winners, why = tune.read(path, KEY)
    assert winners == {} and "unreadable tuning file" in why


def test_file_name_is_the_gpu_name(monkeypatch, tmp_path):
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path))
    assert tune.tuning_file("NVIDIA H100 80GB HBM3") == tmp_path / "tune-nvidia-h100-80gb-hbm3.json"


def _tuning_file_in(folder, monkeypatch):
    """The tuning file in `folder`, the compile cache left where it is: a fresh cache would
    compile every candidate of `zoo tune` again (minutes)."""
    monkeypatch.setattr(tune, "tuning_file", lambda gpu_name: folder / "tune-this-gpu.json")


@pytest.mark.gpu
def test_zoo_mm_takes_the_tuned_choice(tmp_path, monkeypatch):
    """After `zoo tune` on a shape, zoo.mm plans that shape with the winner; another winner in
    the file changes the choice; shapes the file does not name keep the model's."""
    from zoo import cli, cuda
    _tuning_file_in(tmp_path, monkeypatch)
    tune.forget()
    gemm._calls.clear()
    assert cli.main(["tune", "--shapes", "64x512x1024", "--iters", "5"]) == 0
    idx = torch.cuda.current_device()
    path, winners, why = tune.in_use(idx)
    assert why is None and path.parent == tmp_path
    (name, won), = winners.items()
    # zoo tune --show lists it as in use; zoo info names the file.
    import json
    assert cli.main(["tune", "--show", "--json", str(tmp_path / "show.json")]) == 0
    shown = json.loads((tmp_path / "show.json").read_text())
    assert shown["in_use"] and shown["file"] == str(path) and shown["winners"][name]["config"] == won["config"]
    assert cli.main(["info", "--json", str(tmp_path / "info.json")]) == 0
    assert json.loads((tmp_path / "info.json").read_text())["tuning file (zoo tune)"] == f"{path}: 1 tuned shapes in use"
    a = torch.randn(64, 1024, device="cuda", dtype=torch.float16)
    b = torch.randn(1024, 512, device="cuda", dtype=torch.float16)
    zoo.mm(a, b)
    plan = next(iter(gemm._calls.values()))
    assert plan.launch.choice == (won["kernel"], won["config"], won["splits"])
    # Another winner, written as zoo tune would: the next plan takes it.
    model = zoo.select(gemm.device_limits(idx), zoo.Problem(64, 512, 1024))
    other = next(c for c in model[0].configs if c.name != won["config"] and c.name != model[1].name
                 and not zoo.configs.problems(c, model[0], gemm.device_limits(idx)))
    attrs = cuda.device_attributes(idx)
    key = tune.device_key(attrs["name"], gemm.device_limits(idx).cc, cuda.driver_version())
    tune.write(path, key, {name: dict(won, kernel=model[0].name, config=other.name, splits=None)})
    tune.forget()
    gemm._calls.clear()
    c = zoo.mm(a, b)
    assert next(iter(gemm._calls.values())).launch.choice[1] == other.name
    assert zoo.bench.verify(a, b, c).ok
    zoo.mm(a[:32], b)  # not tuned: the model's choice
    assert list(gemm._calls.values())[-1].launch.choice[2] is None
    tune.forget()


def test_a_tuned_convolution_is_planned_with_its_winner(tmp_path, monkeypatch):
    """conv2d's plan reads `zoo tune --conv`'s winner for its shape (conv.tune_key): the flat K
    where that won, a named conv kernel and config otherwise (no GPU needed: the plan's
    construction is stubbed); other shapes keep the automatic choice."""
    from zoo import arch, conv, registry
    shape = conv.Conv(32, 56, 56, 64, 64, 3, 3, (1, 1), (1, 1), (1, 1))
    key = conv.tune_key(shape, "float16", "float16")
    assert key == "conv float16->float16 32,64,56,56 * 64,3,3 s1,1 p1,1 d1,1"
    winners = {key: {"kernel": tune.FLAT, "config": "", "us": 1.0, "cudnn_us": 2.0}}
    monkeypatch.setattr(tune, "in_use", lambda idx: (tmp_path / "t.json", winners, None))
    monkeypatch.setattr(conv.gemm, "device_limits", lambda idx: arch.offline("sm_90a"))
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    made = []
    monkeypatch.setattr(conv, "flat_plan", lambda x, sh, out: made.append(("flat", sh)) or "flat plan")
    monkeypatch.setattr(conv, "plan_launch", lambda spec, cfg, *a: made.append((spec.name, cfg.name, a[-1])) or (None, None))
    x = torch.empty(32, 64, 56, 56, device="meta", dtype=torch.float16)
    assert conv.plan_conv(x, shape, torch.float16, None, None) == "flat plan" and made[-1] == ("flat", shape)
    winners[key] = {"kernel": registry.SM90_CONV.name, "config": "128x128", "us": 1.0, "cudnn_us": 2.0}
    conv.plan_conv(x, shape, torch.float16, None, None)
    assert made[-1] == (registry.SM90_CONV.name, "128x128", None)  # no splits named: the registry's rule
    winners[key]["splits"] = 3
    conv.plan_conv(x, shape, torch.float16, None, None)
    assert made[-1] == (registry.SM90_CONV.name, "128x128", 3)
    other = conv.Conv(32, 56, 56, 64, 64, 3, 3, (2, 2), (1, 1), (1, 1))  # not in the file
    auto = registry.select(arch.offline("sm_90a"), registry.Problem(other.gemm_m, 64, other.gemm_k), op="conv")[1]
    conv.plan_conv(x, other, torch.float16, None, None)
    assert made[-1] == (registry.SM90_CONV.name, auto.name, None)


def test_conv_tuning_tries_split_k_where_tiles_leave_sms_idle(monkeypatch):
    """zoo tune --conv's candidates: every conv config with the registry's split rule, and on
    the TMA conv kernel 1-4 slices of K where the config's tiles are fewer than the SMs (a 7x7
    layer of batch 32: 52 tiles of 128x128 for 132 SMs), none where they fill them."""
    from zoo import arch, conv, registry, tuner
    monkeypatch.setattr(tuner.gemm, "device_limits", lambda idx: arch.offline("sm_90a"))
    small = conv.Conv(32, 7, 7, 512, 512, 3, 3, (1, 1), (1, 1), (1, 1))
    large = conv.Conv(32, 56, 56, 64, 256, 1, 1, (1, 1), (0, 0), (1, 1))
    picks = tuner.conv_candidates(0, small, "float16", "float16")
    tma = {(cfg.name, n) for spec, cfg, n in picks if spec is registry.SM90_CONV}
    assert {("128x128", n) for n in (None, 1, 2, 3, 4)} <= tma  # 72 K-tiles: 4 slices of 18
    assert all(n is None for spec, _, n in picks if spec is not registry.SM90_CONV)  # the others cannot split
    assert picks[-1] == (tune.FLAT, None, None)  # the flat K; no zoo.mm route for a 3x3
    large_picks = tuner.conv_candidates(0, large, "float16", "float16")
    assert all(n is None for _, _, n in large_picks)
    assert large_picks[-2:] == [(tune.FLAT, None, None), (tune.GEMM, None, None)]  # a 1x1 is a GEMM as it stands


@pytest.mark.gpu
def test_zoo_tune_conv_writes_a_winner_that_conv2d_takes(tmp_path, monkeypatch):
    """`zoo tune --conv layer` measures every conv kernel / config and the flat K on the issue's
    layer, each verified, and writes the fastest; zoo.conv2d then plans that layer with it."""
    from zoo import cli, conv, convnets
    _tuning_file_in(tmp_path, monkeypatch)
    tune.forget()
    conv.forget_plans()
    _, shape = convnets.SUITES["layer"][0]
    gen = torch.Generator(device="cuda").manual_seed(3)
    x, w = conv.inputs(shape, torch.float16, gen)
    with torch.no_grad():
        zoo.conv2d(x, w, padding=1)  # a plan made before the tuning, with the automatic choice
    assert cli.main(["tune", "--conv", "layer", "--iters", "3", "--warmup", "1",
                     "--json", str(tmp_path / "conv.json")]) == 0
    assert not conv._calls and not conv._plans  # made before the file changed: forgotten
    report = json.loads((tmp_path / "conv.json").read_text())
    (key, won), = report["winners"].items()
    rows = report["measured"][0]["rows"]
    assert key.startswith("conv float16->float16 32,64,56,56") and any(r["kernel"] == tune.FLAT for r in rows)
    assert all(r["verified"] for r in rows) and won["us"] == min(r["us"] for r in rows)
    with torch.no_grad():
        y = zoo.conv2d(x, w, padding=1)
    (plan, _), = conv._calls.values()  # the plan conv2d ran
    assert isinstance(plan, conv.FlatConvPlan) if won["kernel"] == tune.FLAT else \
        isinstance(plan, conv.GemmConvPlan) if won["kernel"] == tune.GEMM else \
        (plan.spec.name, plan.cfg.name) == (won["kernel"], won["config"])
    assert conv.verify(x, w, y, shape).ok
    tune.forget()
    conv.forget_plans()
