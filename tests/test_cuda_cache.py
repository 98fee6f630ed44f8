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


# ----------------------------------------------------------------------------- a cache that runs only what it made

OTHER = dict(DEFINES, ZOO_GROUP_M=4)


def test_an_entry_copied_over_another_is_not_loaded(cache_dir):
    mine = cuda.compile_cubin(SPEC.source, "sm_75", DEFINES)
    other = cuda.compile_cubin(SPEC.source, "sm_75", OTHER)
    (mine_entry,) = cache_dir.glob(f"*{mine.key[:32]}.cubin")
    (other_entry,) = cache_dir.glob(f"*{other.key[:32]}.cubin")
    other_entry.write_bytes(mine_entry.read_bytes())  # a valid cubin, under another key
    again = cuda.compile_cubin(SPEC.source, "sm_75", OTHER)
    assert not again.from_cache and again.image == other.image


def test_a_new_cache_folder_is_private(cache_dir):
    cuda.compile_cubin(SPEC.source, "sm_75", DEFINES)
    assert cache_dir.stat().st_mode & 0o777 == 0o700


def test_a_folder_others_can_write_is_refused(cache_dir, capsys):
    cache_dir.mkdir(mode=0o777)
    cache_dir.chmod(0o777)
    first = cuda.compile_cubin(SPEC.source, "sm_75", DEFINES)
    (cache_dir / "planted.cubin").write_bytes(b"x")
    assert not cuda.compile_cubin(SPEC.source, "sm_75", DEFINES).from_cache and not first.from_cache
    assert list(cache_dir.glob("*-sm_75-*.cubin")) == []
    assert "others can write to it" in capsys.readouterr().err


def test_a_folder_of_another_user_is_refused(cache_dir, monkeypatch, capsys):
    cache_dir.mkdir(mode=0o700)
    owner = cache_dir.stat().st_uid
    monkeypatch.setattr(cuda.os, "getuid", lambda: owner + 1)
    cuda._warned.clear()
    assert not cuda.compile_cubin(SPEC.source, "sm_75", DEFINES).from_cache
    assert not cuda.compile_cubin(SPEC.source, "sm_75", DEFINES).from_cache
    err = capsys.readouterr().err
    assert f"belongs to user id {owner}" in err and err.count("not using the kernel cache") == 1


def _no_home():
    raise RuntimeError("Could not determine home directory.")


def test_no_home_compiles_in_memory(monkeypatch, capsys):
    for var in ("ZOO_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(cuda.Path, "home", staticmethod(_no_home))
    cuda._warned.clear()
    assert cuda.compile_cubin(SPEC.source, "sm_75", DEFINES).image[:4] == b"\x7fELF"
    assert "no home folder" in capsys.readouterr().err


def test_an_unusable_cache_folder_compiles_in_memory_and_says_so_once(monkeypatch, tmp_path, capsys):
    """Review item 8: a cache folder that cannot be made (here: under a regular file) is a note,
    said once, and a compile in memory; never a failed compile."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("ZOO_CACHE_DIR", str(blocker / "zoo"))
    cuda._warned.clear()
    for _ in range(2):
        built = cuda.compile_cubin(SPEC.source, "sm_75", DEFINES)
        assert built.image[:4] == b"\x7fELF" and not built.from_cache
    err = capsys.readouterr().err
    assert err.count("cannot use the kernel cache") == 1 and "compiling in memory" in err


def test_xdg_cache_home_needs_no_home(monkeypatch, tmp_path):
    monkeypatch.delenv("ZOO_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(cuda.Path, "home", staticmethod(_no_home))
    cuda.compile_cubin(SPEC.source, "sm_75", DEFINES)
    assert cuda.compile_cubin(SPEC.source, "sm_75", DEFINES).from_cache
    assert len(list((tmp_path / "zoo").glob("*.cubin"))) == 1


def test_no_cache_wanted_never_looks_for_one(monkeypatch):
    def fail():
        raise AssertionError("cache_dir() called with use_cache=False")
    monkeypatch.setattr(cuda, "cache_dir", fail)
    assert not cuda.compile_cubin(SPEC.source, "sm_75", DEFINES, use_cache=False).from_cache


def test_a_failed_write_leaves_no_temp_file(cache_dir, monkeypatch, capsys):
    def full(*_):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(cuda.os, "replace", full)
    cuda._warned.clear()
    cuda.compile_cubin(SPEC.source, "sm_75", DEFINES)
    assert list(cache_dir.iterdir()) == []
    assert "cannot write to the kernel cache" in capsys.readouterr().err


def test_key_covers_the_cuda_headers_the_headers_include(tmp_path):
    inc = tmp_path / "include"
    (inc / "crt").mkdir(parents=True)
    files = {"mma.h": '#include "crt/mma.h"\n', "crt/mma.h": '#include "mma.hpp"\n#include <stdint.h>\n',
             "crt/mma.hpp": "// wmma\n", "cuda_fp16.h": '#include "cuda_fp16.hpp"\n',
             "cuda_fp16.hpp": "// half\n", "cuda_bf16.h": "// bf16\n",
             "cuda_runtime_api.h": "#define CUDART_VERSION 13000\n"}
    for name, text in files.items():
        (inc / name).write_text(text)

    def digest():
        cuda._cuda_headers_digest.cache_clear()
        return cuda._cuda_headers_digest((inc,))
    keys = {digest()}
    for name, text in (("crt/mma.hpp", "// wmma 2\n"), ("cuda_fp16.hpp", "// half 2\n"),
                       ("cuda_runtime_api.h", "#define CUDART_VERSION 13010\n")):
        (inc / name).write_text(text)
        keys.add(digest())
    assert len(keys) == 4


@pytest.mark.parametrize("cluster, pdl", [(1, True), (2, True), (2, False)])
def test_launch_config_the_driver_reads(cluster, pdl):
    """The CUlaunchConfig the hot path hands the ctypes cuLaunchKernelEx, read back as the
    driver reads it: grid, block, smem, stream, then the attributes (cluster shape,
    programmatic dependent launch). No GPU needed: only the memory."""
    import ctypes
    from cuda.bindings import driver
    ids = driver.CUlaunchAttributeID
    fn = cuda.Function(0x1234, "k", 200_000, "k", "c")
    address = fn._ex_config((7, 1, 1), 384, 0x5678, cluster, pdl)
    uints = (ctypes.c_uint * 7).from_address(address)
    assert list(uints) == [7, 1, 1, 384, 1, 1, 200_000]
    assert ctypes.c_void_p.from_address(address + 32).value == 0x5678
    count = ctypes.c_uint.from_address(address + 48).value
    assert count == (cluster > 1) + pdl
    attrs = ctypes.c_void_p.from_address(address + 40).value
    found = {ctypes.c_int.from_address(attrs + 72 * i).value: list((ctypes.c_uint * 3).from_address(attrs + 72 * i + 8))
             for i in range(count)}
    expected = {}
    if cluster > 1:
        expected[int(ids.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)] = [cluster, 1, 1]
    if pdl:
        expected[int(ids.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)] = [1, 0, 0]
    assert found == expected
    assert fn._ex_config((7, 1, 1), 384, 0x5678, cluster, pdl) == address  # built once
    assert fn._ex_config((7, 1, 1), 384, 0x5678, cluster, not pdl) != address  # one per setting
