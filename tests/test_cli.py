"""The CLI without a GPU: offline commands work, GPU commands say so and exit 2."""
import json
import subprocess
import sys

import pytest

from conftest import GPU
from zoo import cli

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
@pytest.mark.parametrize("command", [["run", "--auto-arch"], ["info"]])
def test_gpu_commands_exit_2_with_a_message(command):
    rc, out, err = run(*command, "--json", "-")
    assert rc == 2
    assert "no CUDA GPU is visible" in err
    assert "Traceback" not in err + out
    assert json.loads(out) == {"gpu": None}  # stdout stays machine-readable


def test_build_check_reports_per_config(tmp_path):
    rc, out, err = run("build", "--arch", "sm_75", "--check", "--config", "64x64", "--json", "-")
    assert rc == 0, err
    data = json.loads(out)
    assert data["arch"] == "sm_75" and data["failures"] == 0
    rows = data["results"]
    assert {r["entry"] for r in rows} == {"zoo_hgemm_sm75_f16out", "zoo_hgemm_sm75_f32out",
                                        "zoo_hgemm_sm75_f16out_grouped", "zoo_hgemm_sm75_f32out_grouped"}
    for r in rows:
        assert r["ok"] and r["local_bytes"] == 0 and "HMMA" in r["sass_found"]
        assert r["blocks_per_sm"] >= 1 and r["tiles"] == 64 * 64 and r["waves"] > 1


def test_bad_arguments_are_errors_not_tracebacks():
    rc, _, err = run("build", "--arch", "sm_61")
    assert rc == 2 and "invalid choice" in err
    rc, _, err = run("run", "--iters", "0")
    assert rc in (1, 2) and "Traceback" not in err


def test_run_rejects_nonpositive_sizes_before_touching_the_gpu(monkeypatch, capsys):
    monkeypatch.setattr(cli, "_gpu_available", lambda: True)
    assert cli.main(["run", "-m", "0"]) == 1
    assert "must be >= 1" in capsys.readouterr().err


@no_gpu_only
def test_bench_without_a_gpu_exits_2():
    rc, out, err = run("bench", "--suite", "llm", "--json", "-")
    assert rc == 2 and "no CUDA GPU is visible" in err and json.loads(out) == {"gpu": None}


def test_bench_shapes_are_parsed_or_refused_clearly():
    assert cli._parse_shapes("4096x4096x4096, 128X11008x4096") == [(4096, 4096, 4096), (128, 11008, 4096)]
    for bad in ("4096x4096", "0x1x1", "ax1x1"):
        with pytest.raises(cli.ZooError, match="is not MxNxK"):
            cli._parse_shapes(bad)
    assert len(cli.SUITES["llm"]) == 12 and cli._geomean([50.0, 200.0]) == pytest.approx(100.0)


@no_gpu_only
@pytest.mark.parametrize("extra", [[], ["--pipeline"]])
def test_batched_without_a_gpu_exits_2(extra):
    rc, out, err = run("batched", *extra, "--json", "-")
    assert rc == 2 and "no CUDA GPU is visible" in err and json.loads(out) == {"gpu": None}
