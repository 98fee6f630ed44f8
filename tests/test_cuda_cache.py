"""The NVRTC disk cache: hits, misses on any input change, corrupt entries rebuilt."""
import pytest

from zoo import ZooCudaError, ZooError, cuda, registry

SPEC = registry.SM75_HGEMM
DEFINES = SPEC.defines(SPEC.config("64x64"))


def test_second_compile_is_a_cache_hit(cache_dir):
    first = cuda.compile_cubin(SPEC.source, "sm_75", DEFINES)
    second = cuda.compile_cubin(SPEC.source, "sm_75", DEFINES)
    assert not first.from_cache and second.from_cache
    assert first.image == second.image and first.image[:4] == b"\x7fELF"
    assert len(list(cache_dir.glob("*.cubin"))) == 1


def test_key_changes_with_arch_defines_and_headers(cache_dir, tmp_path, monkeypatch):
    base = cuda.compile_cubin(SPEC.source, "sm_75", DEFINES).key
    assert cuda.compile_cubin(SPEC.source, "sm_80", DEFINES).key != base
    assert cuda.compile_cubin(SPEC.source, "sm_75", dict(DEFINES, ZOO_GROUP_M=4)).key != base
    # A change in an included zoo header must change the key too.
    kernels = tmp_path / "kernels"
    (kernels / "common").mkdir(parents=True)
    (kernels / "sm75").mkdir()
    (kernels / "sm75" / "k.cu").write_text(SPEC.source.read_text())
    header = (cuda.KERNELS_DIR / "common" / "zoo_common.cuh").read_text()
    (kernels / "common" / "zoo_common.cuh").write_text(header)
    monkeypatch.setattr(cuda, "KERNELS_DIR", kernels)
    one = cuda.compile_cubin(kernels / "sm75" / "k.cu", "sm_75", DEFINES).key
    (kernels / "common" / "zoo_common.cuh").write_text(header + "\n// changed\n")
    two = cuda.compile_cubin(kernels / "sm75" / "k.cu", "sm_75", DEFINES).key
    assert one != two


def test_corrupt_entry_is_rebuilt(cache_dir):
    good = cuda.compile_cubin(SPEC.source, "sm_75", DEFINES)
    (entry,) = cache_dir.glob("*.cubin")
    entry.write_bytes(entry.read_bytes()[:-100])  # truncated, as by a crash mid-write
    again = cuda.compile_cubin(SPEC.source, "sm_75", DEFINES)
    assert not again.from_cache and again.image == good.image
    assert cuda.compile_cubin(SPEC.source, "sm_75", DEFINES).from_cache


def test_compile_error_carries_the_nvrtc_log(cache_dir, tmp_path):
    bad = tmp_path / "bad.cu"
    bad.write_text('extern "C" __global__ void k() { undefined_symbol(); }\n')
    with pytest.raises(ZooCudaError) as info:
        cuda.compile_cubin(bad, "sm_75", kernel="bad", config="none")
    err = info.value
    assert err.call == "nvrtcCompileProgram" and "undefined_symbol" in err.log
    assert "[kernel=bad] [config=none]" in str(err) and "NVRTC log" in str(err)


def test_an_arch_this_nvrtc_cannot_target_is_a_clear_error(cache_dir):
    with pytest.raises(ZooError, match=r"NVRTC \d+\.\d+ cannot compile for sm_99"):
        cuda.compile_cubin(SPEC.source, "sm_99", DEFINES)
