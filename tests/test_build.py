"""The per-arch offline matrix: every kernel x config compiles under NVRTC for each arch it
targets, its SASS has the instructions that define it, no local memory, and it fits the
arch's budget. Select one arch with `pytest -k sm_75` (bin/test loops over all)."""
import shutil
import subprocess
from dataclasses import replace

import pytest

from zoo import ZooCudaError, arch, build, configs, cuda, registry, sass

MATRIX = [(a, k, c) for k in registry.KERNELS for a in k.offline_archs for c in k.configs]


@pytest.mark.parametrize("target, spec, cfg", MATRIX,
                         ids=[f"{a}-{k.name}-{c.name}" for a, k, c in MATRIX])
def test_compiles_with_its_signature_and_fits(target, spec, cfg):
    lim = arch.offline(target)
    if configs.problems(cfg, spec, lim):
        pytest.skip(f"{cfg.name} does not fit {target}: {configs.problems(cfg, spec, lim)}")
    report = build.build_and_check(spec, cfg, lim)
    assert {e.function for e in report.entries} == {f + g for f in spec.entry.values() for g in ("", "_grouped")}
    for e in report.entries:
        assert e.problems == (), f"{e.function}: {e.problems}"
        assert e.signature.missing == [] and e.signature.forbidden == []
        assert e.resources.local_bytes == 0 and e.resources.stack == 0
        assert e.resources.registers <= lim.max_regs_per_thread
        assert e.occupancy.blocks_per_sm >= 1


@pytest.mark.parametrize("target", arch.OFFLINE_ARCHS)
def test_sm75_kernel_sass_is_tensor_core_with_wide_loads(target):
    spec = registry.SM75_HGEMM
    cubin = cuda.compile_cubin(spec.source, target, spec.defines(spec.config("128x128")))
    ops = sass.opcode_counts(sass.function_sass(cubin.image, spec.entry[("float16", "float16")]))
    assert any(op.startswith("HMMA") for op in ops)
    assert any(op.startswith("LDG.E.128") for op in ops)
    assert any(op.startswith("LDSM") for op in ops), "WMMA loads should be ldmatrix on sm_75+"
    assert not any(op.startswith(("LDGSTS", "LDL", "STL")) for op in ops)


@pytest.mark.parametrize("target", registry.SM80_GEMM.offline_archs)
def test_sm80_kernel_sass_is_cp_async_ldmatrix_mma(target):
    spec = registry.SM80_GEMM
    cubin = cuda.compile_cubin(spec.source, target, spec.defines(spec.config("128x256")))
    f16 = sass.opcode_counts(sass.function_sass(cubin.image, spec.entry[("float16", "float16")]))
    bf16 = sass.opcode_counts(sass.function_sass(cubin.image, spec.entry[("bfloat16", "float32")]))
    assert any(op.startswith("LDGSTS.E.BYPASS") and ".128" in op for op in f16), "16-byte cp.async.cg"
    assert "LDSM.16.M88.4" in f16 and "LDSM.16.MT88.4" in f16, "ldmatrix.x4 and .x4.trans"
    assert any(op.startswith("HMMA.16816.F32") and "BF16" not in op for op in f16)
    assert any(op.startswith("HMMA.16816.F32.BF16") for op in bf16)
    # One barrier per K-step in the main loop (plus prologue and epilogue).
    assert 1 <= f16.get("BAR.SYNC.DEFER_BLOCKING", 0) <= 4


def test_a_kernel_whose_smem_formula_disagrees_fails_to_compile(cache_dir):
    spec = registry.SM75_HGEMM
    defines = dict(spec.defines(spec.config("64x64")), ZOO_SMEM_BYTES=1234)
    with pytest.raises(ZooCudaError, match="host smem formula") as info:
        cuda.compile_cubin(spec.source, "sm_75", defines, kernel=spec.name, config="64x64")
    assert info.value.kernel == spec.name and info.value.config == "64x64"
    assert "nvrtcCompileProgram" in str(info.value)


def test_signature_check_catches_missing_and_forbidden():
    fake = "/*0000*/ LDGSTS.E.128 [R1], [R2.64] ;\n/*0010*/ FFMA R1, R2, R3, R4 ;"
    res = sass.check_signature(fake, registry.SM75_HGEMM.sass_required, registry.SM75_HGEMM.sass_forbidden)
    assert not res.ok
    assert "HMMA" in res.missing and any("LDGSTS" in f for f in res.forbidden)


def test_occupancy_follows_the_limits():
    t4, h100 = arch.offline("sm_75"), arch.offline("sm_90a")
    # 128x128: 37888 B smem, 244 registers, 128 threads.
    occ = sass.occupancy(t4, 128, 244, 37888)
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.limiter) == (1, 4, "shared memory")
    occ = sass.occupancy(h100, 128, 244, 37888)
    assert (occ.blocks_per_sm, occ.limiter) == (2, "registers")
    assert occ.waves(1024, 132) == pytest.approx(1024 / 264)
    # 64x64: 96 registers -> 384 per warp-unit rounding to 3072 per warp, 5 blocks by registers.
    assert sass.occupancy(h100, 128, 96, 19456).by_resource["registers"] == 5
    assert sass.occupancy(replace(t4, max_regs_per_thread=255), 128, 300, 1024).blocks_per_sm == 0


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH (the host launchers are an nvcc-only part)")
def test_host_launchers_build_as_a_shared_library_with_nvcc(tmp_path):
    """The .cu's host part (outside NVRTC): extern "C" launchers using the error-check macro."""
    so = tmp_path / "libzoo_sm75.so"
    proc = subprocess.run(["nvcc", "-std=c++17", "-arch=sm_75", f"-I{cuda.KERNELS_DIR}", "-Xcompiler", "-fPIC",
                           "-shared", str(registry.SM75_HGEMM.source), "-o", str(so)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    symbols = subprocess.run(["nm", "-D", str(so)], capture_output=True, text=True).stdout
    assert " T zoo_hgemm_sm75\n" in symbols and " T zoo_hgemm_sm75_half\n" in symbols


def test_sm90_kernel_sass_is_tma_wgmma_warp_specialized():
    spec = registry.SM90_GEMM
    cubin = cuda.compile_cubin(spec.source, "sm_90a", spec.defines(spec.config("128x256")))
    f16_text = sass.function_sass(cubin.image, spec.entry[("float16", "float16")])
    bf16_text = sass.function_sass(cubin.image, spec.entry[("bfloat16", "float32")])
    assert "HGMMA.64x256x16.F32 " in f16_text and "HGMMA.64x256x16.F32.BF16 " in bf16_text
    assert ".tnspB" in f16_text, "B is read N-major (transposed) from shared memory"
    f16 = sass.opcode_counts(f16_text)
    assert "UTMALDG.2D" in f16 and "UTMASTG.2D" in f16, "TMA loads and the TMA-store epilogue"
    assert any(op.startswith("SYNCS.PHASECHK") for op in f16), "mbarrier parity waits"
    assert any(op.startswith("USETMAXREG") for op in f16), "setmaxnreg between the warpgroup roles"
    assert not any(op.startswith(("HMMA", "LDL", "STL")) for op in f16)
    # setmaxnreg only balances if the block is launched at exactly the budget the kernel assumes.
    res = sass.resources(cubin.image, spec.entry[("float16", "float16")])
    assert res.registers == registry._sm90_launch_registers(spec.config("128x256")) == 168


def test_sm90_cluster_config_multicasts():
    spec = registry.SM90_GEMM
    cubin = cuda.compile_cubin(spec.source, "sm_90a", spec.defines(spec.config("128x256c2")))
    text = sass.function_sass(cubin.image, spec.entry[("float16", "float16")])
    assert "UTMALDG.2D.MULTICAST" in text, "B boxes go to both CTAs of the cluster"
