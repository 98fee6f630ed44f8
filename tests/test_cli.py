"""The CLI without a GPU: offline commands work, GPU commands say so and exit 2."""
import json
import subprocess
import sys

import pytest

from conftest import GPU
from zoo import ZooError, bench, cli

no_gpu_only = pytest.mark.skipif(GPU, reason="checks the no-GPU behaviour; a GPU is present")


def run(*args):
    proc = subprocess.run([sys.executable, "-m", "zoo", *args], capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


def test_list_shows_the_registry_and_json():
    rc, out, _ = run("list", "--json", "-")
    assert rc == 0
    data = json.loads(out)
    (k,) = [k for k in data["kernels"] if k["kernel"] == "sm75_hgemm_wmma"]
    assert k["eligible_cc"] == ">= 7.5" and {c["name"] for c in k["configs"]} >= {"128x128", "64x64"}


@no_gpu_only
@pytest.mark.parametrize("command", [["run", "--auto-arch"], ["info"], ["tune"], ["tune", "--show"]])
def test_gpu_commands_exit_2_with_a_message(command):
    rc, out, err = run(*command, "--json", "-")
    assert rc == 2
    assert "no CUDA GPU is visible" in err
    assert "Traceback" not in err + out
    assert json.loads(out) == {"gpu": None}  # stdout stays machine-readable


@pytest.mark.parametrize("command", cli.GPU_COMMANDS)
def test_every_gpu_command_takes_a_device(command):
    args = cli.parser().parse_args([command, "--device", "1"])
    assert args.device == 1 and args.fn.__name__ == f"cmd_{command}"


@no_gpu_only
def test_a_device_without_a_gpu_is_the_commands_own_message():
    rc, out, err = run("info", "--device", "1", "--json", "-")
    assert rc == 2 and "no CUDA GPU is visible" in err and json.loads(out) == {"gpu": None}


@pytest.mark.gpu
def test_a_device_this_machine_lacks_is_one_clear_line(tmp_path):
    import torch
    count = torch.cuda.device_count()
    rc, out, err = run("info", "--device", str(count))
    assert rc == 1 and f"no GPU {count}: this machine shows {count}" in err and "Traceback" not in err + out
    rc, _, err = run("info", "--device", str(count - 1), "--json", str(tmp_path / "info.json"))
    assert rc == 0, err
    assert json.loads((tmp_path / "info.json").read_text())["device"]["part"] == torch.cuda.get_device_name(count - 1)


def test_build_check_reports_per_config(tmp_path):
    rc, out, err = run("build", "--arch", "sm_75", "--check", "--kernel", "sm75_hgemm_wmma", "--config", "64x64",
                       "--json", "-")
    assert rc == 0, err
    data = json.loads(out)
    assert data["arch"] == "sm_75" and data["failures"] == 0
    rows = data["results"]
    assert {r["entry"] for r in rows} == {"zoo_hgemm_sm75_f16out", "zoo_hgemm_sm75_f32out",
                                        "zoo_hgemm_sm75_f16out_grouped", "zoo_hgemm_sm75_f32out_grouped"}
    for r in rows:
        assert r["ok"] and r["local_bytes"] == 0 and "HMMA" in r["sass_found"]
        assert r["blocks_per_sm"] >= 1 and r["tiles"] == 64 * 64 and r["waves"] > 1


def test_build_check_in_a_log_shows_every_name_whole():
    """Piped into a file (160 columns), the table keeps kernel, config and dtypes whole (issue
    42: they showed as `sm75_h…`), the SASS column wrapping instead; every entry has a row."""
    rc, out, err = run("build", "--arch", "sm_90a", "--check", "--kernel", "sm90_gemm_tma_wgmma", "--config",
                       "128x192ppc2x2")
    assert rc == 0, err
    assert "…" not in out
    rows = [line for line in out.splitlines() if "sm90_gemm_tma_wgmma" in line and "128x192ppc2x2" in line]
    dtypes = {line.split("│")[3].strip() for line in rows}
    assert {"fp16->fp16", "fp16->fp16 grouped", "bf16->fp32 B^T", "bf16->bf16 A^T", "fp16->fp32 A^T B^T"} <= dtypes
    assert len(rows) == 4 * (2 + 3)  # 4 dtype pairs: one GEMM, grouped, and three column-major builds


def test_bad_arguments_are_errors_not_tracebacks():
    rc, _, err = run("build", "--arch", "sm_61")
    assert rc == 2 and "invalid choice" in err
    rc, _, err = run("run", "--iters", "0")
    assert rc in (1, 2) and "Traceback" not in err


def test_run_rejects_nonpositive_sizes_before_touching_the_gpu(monkeypatch, capsys):
    import torch
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert cli.main(["run", "-m", "0"]) == 1
    assert "must be >= 1" in capsys.readouterr().err


@no_gpu_only
def test_bench_without_a_gpu_exits_2():
    rc, out, err = run("bench", "--suite", "llm", "--json", "-")
    assert rc == 2 and "no CUDA GPU is visible" in err and json.loads(out) == {"gpu": None}


def test_bench_shapes_are_parsed_or_refused_clearly():
    assert bench.parse_shapes("4096x4096x4096, 128X11008x4096") == [(4096, 4096, 4096), (128, 11008, 4096)]
    for bad in ("4096x4096", "0x1x1", "ax1x1"):
        with pytest.raises(ZooError, match="is not MxNxK"):
            bench.parse_shapes(bad)
    assert len(bench.SUITES["llm"]) == 12 and bench.geomean([50.0, 200.0]) == pytest.approx(100.0)


@no_gpu_only
@pytest.mark.parametrize("extra", [[], ["--pipeline"]])
def test_batched_without_a_gpu_exits_2(extra):
    rc, out, err = run("batched", *extra, "--json", "-")
    assert rc == 2 and "no CUDA GPU is visible" in err and json.loads(out) == {"gpu": None}


def test_explain_reads_the_cubin_and_the_arch_table():
    rc, out, err = run("explain", "sm75_hgemm_wmma", "--out-dtype", "fp32", "--json", "-")
    assert rc == 0, err
    data = json.loads(out)
    assert data["arch"] == "sm_75" and data["chosen"] == "128x256"
    assert data["ridge_flop_per_byte"] == pytest.approx(65e12 / 320e9)   # T4 datasheet roofline
    by_name = {c["config"]: c for c in data["configs"]}
    big = by_name["128x256"]
    assert big["function"] == "zoo_hgemm_sm75_f32out" and 200 <= big["registers"] <= 255
    assert big["blocks_per_sm"] == min(big["by_resource"].values()) == 1 and big["limiter"] == "registers"
    assert big["tile_flop_per_byte"] == pytest.approx(128 * 256 / (128 + 256))
    assert big["waves"] == pytest.approx(512 / 40) and "2 loaded into registers" in big["pipeline"]
    assert by_name["128x128"]["limiter"] == "shared memory"  # 37 KiB: one block in the T4's 64 KiB


def test_explain_a_streaming_kernel_counts_its_blocks_on_ffma():
    rc, out, err = run("explain", "sm75_gemv_stream", "-n", "4096", "-k", "4096", "--json", "-")
    assert rc == 0, err
    data = json.loads(out)
    assert data["m"] == 1 and data["chosen"] == "1x256"                  # one row unless -m says more
    assert data["ridge_flop_per_byte"] == pytest.approx(8.1e12 / 320e9)   # the T4's FFMA roofline, not its tensor cores
    one = {c["config"]: c for c in data["configs"]}["1x256"]
    slots = one["blocks_per_sm"] * 40
    assert 16 < one["tiles"] <= slots and one["waves"] <= 1   # 16 column blocks x K slices: one wave


def test_explain_refuses_what_a_kernel_cannot_do():
    rc, _, err = run("explain", "sm90_gemm_tma_wgmma", "--arch", "sm_75")
    assert rc == 1 and "builds for sm_90a, not sm_75" in err
    rc, _, err = run("explain", "nope")
    assert rc == 1 and "unknown kernel 'nope'" in err


def test_plot_without_matplotlib_is_one_clear_line(monkeypatch):
    import builtins
    from zoo import plot
    real = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(ZooError, match="--plot needs matplotlib: pip install matplotlib"):
        plot.bench_plot([], "t", "x.png")


def test_host_cost_is_of_the_steady_state(monkeypatch):
    """zoo batched's host column: a graph=True call's capture (its second call with a set of
    buffers) is a one-time cost that must not be averaged into the host time per call (it was:
    230 us per call for the streams mode from a graph, labelled host-bound)."""
    import time

    import torch
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    calls = []

    def fn():
        calls.append(1)
        if len(calls) <= 2:  # the eager first call, then the capture
            time.sleep(0.02)
    assert bench.host_us(fn) < 200


def test_fp8_bench_leaves_out_torchs_time_where_torchs_answer_is_wrong(monkeypatch, tmp_path):
    """torch 2.11's blockwise _scaled_mm is wrong where K / 128 is no multiple of 4 (error 0.1
    against the zoo's 1.7e-3 at K = 11008, lent H200): its time is no comparison, so that row
    has no "% of torch" and stays out of the geometric mean, and the table says why."""
    import argparse
    import torch
    from zoo import arch, gemm
    from zoo.cli import run as run_cmd
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(gemm, "device_limits", lambda index: arch.offline("sm_90a"))

    def measure(idx, m, n, k, recipe, out_dtype, fast_accum, warmup, iters, seed, graph, config):
        off = k == 11008
        return {"timings": {"zoo": bench.Timing([0.02]), "torch": bench.Timing([0.03 if off else 0.01])},
                "error": 1.7e-3, "torch_error": 0.1 if off else 1.7e-3, "bound": 4e-3 if off else 3.4e-3,
                "ok": True, "torch_wrong": off, "kernel": "sm90_scaled_fp8", "config": "128x128p"}
    monkeypatch.setattr(run_cmd.tuner, "measure_scaled", measure)
    out = tmp_path / "fp8.json"
    args = argparse.Namespace(json=str(out), out_dtype=None, kernel=None, all_kernels=False, tf32=False,
                              fast_accum=False, recipe="block", warmup=1, iters=1, seed=0, eager=False, config=None)
    assert run_cmd._scaled(args, {"llm": [(128, 4096, 4096), (128, 4096, 11008)]}, "bench") == 0
    doc = json.loads(out.read_text())
    wrong = [r for r in doc["results"] if r["k"] == 11008][0]
    assert wrong["torch_wrong"] and wrong["pct_of_torch"] is None
    assert doc["geomean_pct_of_torch"]["llm"] == pytest.approx(50.0)  # the K = 4096 row alone


def test_plots_keep_their_titles_and_labels_inside_the_image(tmp_path):
    """A long title over long bar labels ran past the image's right edge (the whole-models
    plot in the README lost the end of its title): every plot is saved with a margin, so
    nothing touches the image's edges."""
    pytest.importorskip("matplotlib")
    import matplotlib.image
    from zoo import plot
    cases = [("llama", "prefill 4x512, eager"), ("llama", "decode 64 tokens, static cache, reduce-overhead"),
             ("mlp-train", "8 x Linear(1024, 1024) bf16, batch 8192, step from a CUDA graph")]
    rows = [{"model": m, "case": c, "torch_ms": 1.0, "zoo_ms": 0.9 + 0.1 * i} for i, (m, c) in enumerate(cases)]
    title = "whole models, zoo vs torch (fp16; mlp-train bf16), NVIDIA H200, 2026-11-29"
    image = matplotlib.image.imread(plot.models_plot(rows, title, tmp_path / "m.png"))
    for edge in (image[0], image[-1], image[:, 0], image[:, -1]):
        assert (edge[:, :3] > 0.99).all(), "something is drawn against the image's edge"


def test_fp8_bench_table_stays_readable_when_a_shape_is_refused(monkeypatch, tmp_path):
    """A shape zoo.scaled_mm refuses is one short row, its reason printed whole under the table:
    in the config column the reason (over 100 characters, no_wrap) squeezed every other column
    to an ellipsis in an 80-200 column log ("s…", "M 4…"; results/h200-2026-11-29/seventeenth/
    call6/B-tensor-holdt2-1.txt)."""
    import argparse
    import torch
    from rich.console import Console
    from zoo import arch, gemm, tuner
    from zoo.cli import run
    reason = "K and N must be multiples of 16 (16-byte rows of FP8), got K=1000, N=1000"
    def refused(*args, **kwargs):
        raise ZooError(reason)
    monkeypatch.setattr(tuner, "measure_scaled", refused)
    monkeypatch.setattr(gemm, "device_limits", lambda index: arch.offline("sm_90a"))
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    shown = Console(record=True, width=120)
    monkeypatch.setattr(run, "report_console", lambda args: shown)
    args = argparse.Namespace(out_dtype=None, kernel=None, all_kernels=False, tf32=False, recipe="tensor",
                              fast_accum=False, iters=5, warmup=1, seed=0, eager=False, config=None,
                              json=str(tmp_path / "fp8.json"))
    assert run._scaled(args, {"square": [(1000, 1000, 1000)]}, "bench") == 0
    text = shown.export_text()
    assert "% of torch" in text and "suite" in text and "…" not in text, text
    assert "1000x1000x1000" in text and reason in " ".join(text.split()), text
    assert json.loads((tmp_path / "fp8.json").read_text())["results"][0]["refused"] == reason
