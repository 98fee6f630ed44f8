"""The per-arch offline matrix: every kernel x config compiles under NVRTC for each arch it
targets, its SASS has the instructions that define it, no local memory, and it fits the
arch's budget. Select one arch with `pytest -k sm_75` (bin/test loops over all)."""
import ctypes
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from zoo import ZooCudaError, arch, build, configs, cuda, registry, sass
from zoo.specs.base import layout
from zoo.specs.sm90_wgmma import R2UR_WGMMA

MATRIX = [(a, k, c) for k in registry.KERNELS for a in k.offline_archs for c in k.configs]


@pytest.mark.parametrize("target, spec, cfg", MATRIX,
                         ids=[f"{a}-{k.name}-{c.name}" for a, k, c in MATRIX])
def test_compiles_with_its_signature_and_fits(target, spec, cfg):
    lim = arch.offline(target)
    if configs.problems(cfg, spec, lim):
        pytest.skip(f"{cfg.name} does not fit {target}: {configs.problems(cfg, spec, lim)}")
    report = build.build_and_check(spec, cfg, lim)
    grouped = ("", "_grouped") if spec.op == "gemm" and spec.grouped else ("",)  # conv and streaming kernels have none
    built_for = registry.layouts_of(spec, cfg)  # a config may be built for some layouts only (the narrow gemv)
    assert {e.function for e in report.entries if "^T" not in e.dtypes} == \
        ({f + g for f in spec.entry.values() for g in grouped} if layout(False, False) in built_for else set())
    for a_col, b_col in ((False, True), (True, False), (True, True)):  # the builds reading operands column-major
        built = {e.function for e in report.entries if e.dtypes.endswith(build.layout_label(a_col, b_col))
                 and e.dtypes.count("^T") == a_col + b_col}
        wanted = layout(a_col, b_col) in built_for and not (a_col and cfg.swap_ab)
        assert built == (set(spec.entry.values()) if wanted else set()), layout(a_col, b_col)
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


def test_sm90_signature_refuses_wgmma_descriptors_from_vector_registers():
    """The sm90 kernels' wgmma descriptors must be worked out in uniform registers: an R2UR
    within six instructions of a wgmma is what the build before f627c3f had (as cuobjdump
    prints sm_90 SASS: each instruction, then a line of its upper encoding)."""
    def listing(*ops):
        return "".join(f"        /*{16 * i:04x}*/  {op} ;  /* 0x0 */\n  /* 0x0 */\n" for i, op in enumerate(ops))
    wgmma = "HGMMA.64x128x16.F32.BF16 R24, gdesc[UR24].tnspA.tnspB, R24, gsb0"
    fp8 = "QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR8], R24, gsb0"
    spec = registry.SM90_GEMM

    def refused(text):
        return any("R2UR" in f for f in sass.check_signature(text, spec.sass_required, spec.sass_forbidden).forbidden)
    assert refused(listing("R2UR UR24, R4", "R2UR UR25, R5", "IADD3 R4, P0, R10, UR12, RZ", wgmma))
    assert refused(listing("R2UR UR8, R4", *["NOP"] * 5, fp8))
    assert not refused(listing("R2UR UR8, R4", *["NOP"] * 6, wgmma))  # further back: set-up, not the K loop
    assert not refused(listing("UIADD3 UR8, UR7, 0x800, URZ", "USHF.R.S32.HI UR9, URZ, 0x1f, UR8", wgmma))


def test_only_the_fp8_swap_tiles_may_feed_wgmmas_from_vector_registers():
    """Issuing without turns, the promoted FP8 swap tiles keep their descriptors in vector
    registers, measured faster so (NOTES.md, "Swap tiles free of turns, measured: kept"): the
    build check lets them, and no other sm90 config, have an R2UR before a wgmma."""
    def checked(spec, c):
        return R2UR_WGMMA in {label for _, label in spec.forbidden_sass(c)}
    for c in registry.SM90_FP8.configs:
        assert checked(registry.SM90_FP8, c) == (not (c.swap_ab and c.promote)), c.name
    assert any(not checked(registry.SM90_FP8, c) for c in registry.SM90_FP8.configs)
    assert all(checked(registry.SM90_GEMM, c) for c in registry.SM90_GEMM.configs)


def test_the_row_sums_build_chains_its_wgmma_with_the_main_ones():
    """The ZOO_ROW_SUMS build (a Linear's bias gradient summed in dW's kernel) adds an
    HGMMA.64x8x16 beside each of the K loop's wgmmas, in the same batch: one
    WARPGROUP.ARRIVE as in the plain build (under a branch, ptxas gave each wgmma its own;
    NOTES.md, "The bias gradient in the dW kernel"), no local memory, the ones' bytes in the
    smem formula; the plain build has no such wgmma."""
    spec = registry.SM90_GEMM
    cfg = spec.config("64x128pp")
    assert spec.row_sums(cfg) and not spec.row_sums(spec.config("128x192ppc2"))
    assert spec.build_smem_bytes(cfg, True) == spec.smem_bytes(cfg) + spec.row_sums_bytes
    fn = spec.entry[("bfloat16", "bfloat16")]
    builds = {}
    for rows in (False, True):
        cubin = cuda.compile_cubin(spec.source, "sm_90a", spec.defines(cfg, True, False, rows), kernel=spec.name,
                                   config=cfg.name)
        assert sass.resources(cubin.image, fn).local_bytes == 0
        builds[rows] = sass.function_sass(cubin.image, fn)
    plain, summed = builds[False], builds[True]
    assert "HGMMA.64x8x16" not in plain
    assert summed.count("HGMMA.64x8x16") == summed.count("HGMMA.64x128x16") == plain.count("HGMMA.64x128x16")
    assert summed.count("WARPGROUP.ARRIVE") == plain.count("WARPGROUP.ARRIVE")


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


EXPORTABLE = [k for k in registry.KERNELS if k.exports]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH (zoo export builds the host launchers with it)")
@pytest.mark.parametrize("spec", EXPORTABLE, ids=lambda k: k.name)
def test_export_builds_a_shared_library_with_the_launchers(spec, tmp_path):
    """The .cu's host part (outside NVRTC): extern "C" launchers using the error-check macro,
    built by nvcc for the kernel's first target (sm_75 for the T4 kernel)."""
    from zoo import export
    target = spec.offline_archs[0]
    lim = arch.offline(target)
    library = export.build_shared_library(spec, registry.pick_config(spec, lim, registry.Problem(4096, 4096, 4096)),
                                          lim, tmp_path)
    symbols = subprocess.run(["nm", "-D", str(library)], capture_output=True, text=True).stdout
    for name in spec.exports.values():
        assert f" T {name}\n" in symbols, name


def test_export_refuses_clearly(monkeypatch, tmp_path):
    from zoo import ZooError, export
    bare = replace(registry.SM80_GEMM, name="bare", exports={})
    with pytest.raises(ZooError, match="bare has no standalone host launcher yet"):
        export.build_shared_library(bare, bare.configs[0], arch.offline("sm_80"), tmp_path)
    monkeypatch.setattr(export.shutil, "which", lambda _: None)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    if not (export.Path("/usr/local/cuda/bin/nvcc")).is_file():
        with pytest.raises(ZooError, match="nvcc not found: install the CUDA toolkit"):
            export.nvcc_path()


@pytest.mark.parametrize("target", registry.SM75_SGEMM.offline_archs)
def test_simt_sgemm_sass_is_ffma_bound_with_wide_shared_loads(target):
    """The FP32 SIMT kernel: no tensor cores, LDS.128 fragment reads, LDG.128 tile loads, and
    FFMA the bulk of the main loop (16x8 per lane: 128 FFMA per 4 + 2 LDS.128 per k)."""
    spec = registry.SM75_SGEMM
    cubin = cuda.compile_cubin(spec.source, target, spec.defines(spec.config("128x256")))
    ops = sass.opcode_counts(sass.function_sass(cubin.image, spec.entry[("float32", "float32")]))
    lds128 = sum(v for op, v in ops.items() if op.startswith("LDS") and op.endswith(".128"))
    assert not any(op.startswith(("HMMA", "HGMMA", "LDL", "STL")) for op in ops)
    assert any(op.startswith("LDG.E.128") for op in ops)
    assert ops["FFMA"] == 8 * 128 and lds128 == 8 * 6, "BK=8 steps of 128 FFMA and 6 LDS.128"
    # The main loop (first to last FFMA; the edge-tile load paths sit outside it) is FFMA-bound.
    text = sass.function_sass(cubin.image, spec.entry[("float32", "float32")])
    body = text[text.index(" FFMA "):text.rindex(" FFMA ")]
    loop = sass.opcode_counts(body)
    assert loop["FFMA"] + 1 >= 0.85 * sum(loop.values()), loop


def test_tf32_kernel_sass_is_tf32_wgmma_with_register_fragments():
    spec = registry.SM90_TF32
    cubin = cuda.compile_cubin(spec.source, "sm_90a", spec.defines(spec.config("256x128")))
    text = sass.function_sass(cubin.image, spec.entry[("float32", "float32")])
    ops = sass.opcode_counts(text)
    assert text.count("HGMMA.64x256x8.F32.TF32 ") == 4, "four k8 wgmmas per 32-deep K-tile"
    assert "UTMALDG.3D" in ops and "UTMASTG.3D" in ops  # 3-D maps: (columns, rows, batch)
    assert not any(op.startswith(("HMMA", "LDL", "STL")) for op in ops)


def test_sm90_16_bit_epilogue_stages_c_by_stmatrix():
    """The Hopper kernel's 16-bit C goes into its swizzled staging boxes by stmatrix x4 (four
    8 x 8 matrices of the accumulator layout a store): 8 per 64 x 128 slice, not 32 four-byte
    STS (NOTES.md, "An stmatrix epilogue"); fp32 C keeps 8-byte pair stores."""
    spec = registry.SM90_GEMM
    cubin = cuda.compile_cubin(spec.source, "sm_90a", spec.defines(spec.config("128x256")))
    f16 = sass.opcode_counts(sass.function_sass(cubin.image, spec.entry[("float16", "float16")]))
    f32 = sass.opcode_counts(sass.function_sass(cubin.image, spec.entry[("float16", "float32")]))
    assert f16.get("STSM.16.M88.4", 0) >= 2 * 8
    assert "STSM.16.M88.4" not in f32 and "STS.64" in f32


@pytest.mark.parametrize("cfg", [c for c in registry.SM90_GEMM.configs if c.cluster_size > 1], ids=lambda c: c.name)
def test_sm90_cluster_builds_meet_their_peers_once(cfg):
    """A cluster build's CTAs wait for each other once, as they start (barrier init seen by every
    peer); they leave on the producer's tail (each stage freed by the whole cluster's consumers),
    not a closing cluster barrier: 1000^3 fp16 on 64x128ppc2 ran at 93.1% of torch.mm against
    87.6% with the barrier (H200; NOTES.md, "The producer tail, measured")."""
    spec = registry.SM90_GEMM
    cubin = cuda.compile_cubin(spec.source, "sm_90a", spec.defines(cfg))
    name = spec.entry[("float16", "float16")]
    for function in (name, name + "_grouped"):
        ops = sass.opcode_counts(sass.function_sass(cubin.image, function))
        assert (ops.get("UCGABAR_ARV"), ops.get("UCGABAR_WAIT")) == (1, 1), function


@pytest.mark.parametrize("target", arch.OFFLINE_ARCHS)
def test_legacy_peak_microbenchmark_is_pure_hmma(target):
    """scripts/legacy_peak.cu (the HMMA ceiling the docs quote): MMAs on registers only, so
    its loop measures the tensor pipe and nothing else; mma.sync needs sm_80."""
    source = Path(__file__).resolve().parents[1] / "scripts" / "legacy_peak.cu"
    cubin = cuda.compile_cubin(source, target, {})
    for name in ("wmma_peak", "mma_sync_peak"):
        text = sass.function_sass(cubin.image, name)
        if name == "mma_sync_peak" and target == "sm_75":
            assert " HMMA" not in text
            continue
        loop = sass.opcode_counts(text[text.index(" HMMA"):text.rindex(" HMMA")])
        assert sum(v for op, v in loop.items() if op.startswith("HMMA")) >= 64
        assert not any(op.startswith(("LD", "ST")) for op in loop), loop


def test_export_rebuilds_a_truncated_library_and_names_the_nvcc_version(tmp_path, monkeypatch):
    """Review item 9: a library of the right name but cut short is built again, and another
    nvcc version gives another name (a fake nvcc stands in for the real one)."""
    from zoo import export
    calls = tmp_path / "calls"
    nvcc = tmp_path / "bin" / "nvcc"
    nvcc.parent.mkdir()
    nvcc.write_text('#!/bin/sh\nif [ "$1" = --version ]; then echo "release ${FAKE_NVCC:-12.8}"; exit 0; fi\n'
                    f'echo x >> {calls}\nwhile [ $# -gt 1 ]; do shift; done\n'
                    'for last; do :; done\nprintf "\\177ELF library" > "$last"\n')
    nvcc.chmod(0o755)
    monkeypatch.setattr(export, "nvcc_path", lambda: str(nvcc))
    spec = registry.SM75_HGEMM
    lim = arch.offline("sm_75")
    first = export.build_shared_library(spec, spec.configs[0], lim, tmp_path / "out")
    assert first.read_bytes() == b"\x7fELF library"
    assert export.build_shared_library(spec, spec.configs[0], lim, tmp_path / "out") == first
    assert calls.read_text().count("x") == 1, "a whole library is reused"
    first.write_bytes(b"\x7fEL")  # truncated
    assert export.build_shared_library(spec, spec.configs[0], lim, tmp_path / "out") == first
    assert first.read_bytes() == b"\x7fELF library" and calls.read_text().count("x") == 2
    monkeypatch.setenv("FAKE_NVCC", "13.0")
    assert export.build_shared_library(spec, spec.configs[0], lim, tmp_path / "out") != first
    assert not list((tmp_path / "out").glob(".*.tmp"))


@pytest.mark.parametrize("target", arch.OFFLINE_ARCHS)
def test_upload_kernel_builds_for_every_arch(target):
    """kernels/common/upload.cu (grouped tables as kernel parameters, zoo/gemm.py upload): it
    compiles for each arch, its by-value chunk matches the host's, and it keeps no local memory."""
    from zoo import gemm
    cubin = cuda.compile_cubin(gemm.UPLOAD_SOURCE, target, {}, kernel="zoo_upload")
    res = sass.resources(cubin.image, "zoo_upload")
    assert res.local_bytes == 0 and res.stack == 0
    assert "#define ZOO_UPLOAD_WORDS %d" % gemm.UPLOAD_WORDS in gemm.UPLOAD_SOURCE.read_text()


@pytest.mark.parametrize("target", arch.OFFLINE_ARCHS)
def test_im2col_kernel_builds_for_every_arch(target):
    """kernels/common/im2col.cu (conv2d's flat K, zoo/conv.py gather_columns): it compiles for
    each arch, writes the matrix in 16-byte stores, keeps no local memory, and its column limit
    and by-value struct match the host's (field by field, in order)."""
    import re
    from zoo import conv
    cubin = cuda.compile_cubin(conv.IM2COL_SOURCE, target, {}, kernel="zoo_im2col")
    res = sass.resources(cubin.image, "zoo_im2col")
    assert res.local_bytes == 0 and res.stack == 0
    assert re.search(r"\bSTG\.E\.128\b", sass.function_sass(cubin.image, "zoo_im2col"))
    source = conv.IM2COL_SOURCE.read_text()
    assert "#define ZOO_IM2COL_MAX_K %d" % conv.IM2COL_MAX_K in source
    body = source[source.index("struct ZooIm2col {"):]
    body = re.sub(r"//[^\n]*", "", body[:body.index("};")])
    fields = re.findall(r"\b(long long|int)\s+([\w\s,]+);", body)
    kernel = [(kind, name.strip()) for kind, names in fields for name in names.split(",")]
    host = [("long long" if t is ctypes.c_longlong else "int", name) for name, t in conv.Im2col._fields_]
    assert kernel == host
