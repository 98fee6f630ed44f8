"""The one module that talks to cuda-python (`cuda.bindings`).

NVRTC compile to a cubin (with a disk cache), module load, function lookup, launch
(cuLaunchKernelEx) on torch's current stream, TMA tensor maps (cuTensorMapEncodeTiled),
device attributes, and the translation of every CUresult / nvrtcResult into a ZooCudaError.
Nothing else in the zoo imports cuda.bindings.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import os
import re
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

# An installed wheel keeps the kernel sources inside the package (zoo/kernels); a checkout
# beside it (kernels/). The package's own folder first: site-packages/kernels may be another's.
KERNELS_DIR = next((d for d in (Path(__file__).resolve().parent / "kernels",
                                Path(__file__).resolve().parent.parent / "kernels") if d.is_dir()),
                   Path(__file__).resolve().parent.parent / "kernels")
CACHE_FORMAT = b"zoo-cubin-v2"


class ZooError(Exception):
    """A problem the user can fix: bad input, no GPU, an ineligible kernel or config."""


class ZooCudaError(ZooError):
    """A failed CUDA Driver API or NVRTC call."""

    def __init__(self, call: str, error: str, *, kernel: str | None = None,
                 config: str | None = None, log: str | None = None):
        self.call, self.error, self.kernel, self.config, self.log = call, error, kernel, config, log
        where = "".join(f" [{k}={v}]" for k, v in (("kernel", kernel), ("config", config)) if v)
        super().__init__(f"{call} failed: {error}{where}" + (f"\n--- NVRTC log ---\n{log.strip()}" if log else ""))


def _bindings():
    try:
        from cuda.bindings import driver, nvrtc
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ZooError(
            "cuda-python is not installed (pip install cuda-python nvidia-cuda-nvrtc); "
            f"import failed: {exc}") from exc
    return driver, nvrtc


def _check(result, call: str, **ctx):
    """Unpack a cuda.bindings result tuple, raising ZooCudaError on a non-success code."""
    driver, nvrtc = _bindings()
    status, *values = result if isinstance(result, tuple) else (result,)
    if isinstance(status, nvrtc.nvrtcResult):
        if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            _, name = nvrtc.nvrtcGetErrorString(status)
            raise ZooCudaError(call, name.decode(), **ctx)
    elif status != driver.CUresult.CUDA_SUCCESS:
        _, name = driver.cuGetErrorName(status)
        raise ZooCudaError(call, name.decode() if name else str(status), **ctx)
    return None if not values else values[0] if len(values) == 1 else tuple(values)


# ----------------------------------------------------------------------------- NVRTC

NVRTC_HELP = ("NVRTC (libnvrtc) was not found: the zoo compiles its kernels at run time. Install it with "
              "`pip install nvidia-cuda-nvrtc nvidia-cuda-runtime nvidia-cuda-crt` (CUDA 13 drivers) or "
              "`pip install -r requirements-cu12.txt` (CUDA 12 drivers), or set CUDA_HOME to a CUDA toolkit")


@functools.lru_cache(maxsize=None)
def _nvrtc():
    """cuda.bindings' nvrtc, once its library is known to load (one clear line if not)."""
    _, nvrtc = _bindings()
    try:
        nvrtc.nvrtcVersion()
    except Exception as exc:  # noqa: BLE001 - cuda.pathfinder's DynamicLibNotFoundError and kin
        raise ZooError(f"{NVRTC_HELP} ({type(exc).__name__}: {exc})") from None
    return nvrtc


def nvrtc_version() -> tuple[int, int]:
    return _check(_nvrtc().nvrtcVersion(), "nvrtcVersion")


def nvrtc_supported_archs() -> list[int]:
    nvrtc = _nvrtc()
    count = _check(nvrtc.nvrtcGetNumSupportedArchs(), "nvrtcGetNumSupportedArchs")
    return list(_check(nvrtc.nvrtcGetSupportedArchs(), "nvrtcGetSupportedArchs"))[:count]


CUDA_HEADERS = ("mma.h", "crt/mma.h", "cuda_fp16.h", "cuda_bf16.h")  # what the kernels include


def cuda_include_dirs() -> list[Path]:
    """Folders holding the CUDA headers NVRTC needs (mma.h, crt/mma.h, cuda_fp16.h): pip wheels
    first (CUDA 13's in one folder, CUDA 12's crt/ in the nvcc wheel), then a CUDA toolkit."""
    candidates = []
    with contextlib.suppress(Exception):  # pathfinder is optional; fall through to the toolkit
        from cuda import pathfinder
        found = pathfinder.find_nvidia_header_directory("cudart")
        candidates += [Path(found)] if found else []
    for site in {Path(p) for p in sys.path if p.endswith("site-packages")}:
        candidates += sorted(site.glob("nvidia/*/include"))
    candidates += [Path(os.environ[env]) / "include" for env in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(env)]
    candidates.append(Path("/usr/local/cuda/include"))
    dirs = []
    for header in ("mma.h", "crt/mma.h"):
        where = next((d for d in candidates if (d / header).is_file()), None)
        if where is None:
            raise ZooError(
                f"CUDA header {header} not found; install it with `pip install nvidia-cuda-runtime "
                "nvidia-cuda-crt` (CUDA 12: nvidia-cuda-runtime-cu12 nvidia-cuda-nvcc-cu12) or set "
                "CUDA_HOME. Looked in: " + ", ".join(map(str, dict.fromkeys(candidates))))
        if where not in dirs:
            dirs.append(where)
    return dirs


def _included_sources(path: Path, seen: dict[Path, bytes] | None = None) -> dict[Path, bytes]:
    """The file and every zoo header it includes (quoted includes, transitively)."""
    seen = {} if seen is None else seen
    if path in seen:
        return seen
    text = path.read_bytes()
    seen[path] = text
    for name in re.findall(rb'^\s*#\s*include\s+"([^"]+)"', text, flags=re.M):
        for root in (path.parent, KERNELS_DIR):
            header = (root / name.decode()).resolve()
            if header.is_file():
                _included_sources(header, seen)
                break
    return seen


@functools.lru_cache(maxsize=8)
def _cuda_headers_digest(includes: tuple[Path, ...]) -> bytes:
    """A hash of the CUDA headers the kernels include and every header those include in turn
    (cuda_fp16.hpp, crt/mma.hpp, ...), found in the include folders, with the folders' CUDA
    version: a wheel upgrade that changes any of them changes the cache key."""
    def find(name: str, near: Path | None) -> Path | None:
        places = ([near] if near else []) + list(includes)
        return next((d / name for d in places if (d / name).is_file()), None)

    digest = hashlib.sha256()
    seen: set[Path] = set()
    todo = [(name, find(name, None)) for name in CUDA_HEADERS]
    while todo:
        name, path = todo.pop()
        if path is None or path.resolve() in seen:  # None: a system header (<stdint.h>), not CUDA's to change
            continue
        path = path.resolve()
        seen.add(path)
        text = path.read_bytes()
        digest.update(name.encode() + hashlib.sha256(text).digest())
        for inc in re.findall(rb'^\s*#\s*include\s+[<"]([^>"]+)[>"]', text, flags=re.M):
            todo.append((inc.decode(), find(inc.decode(), path.parent)))
    for d in includes:
        version = d / "cuda_runtime_api.h"
        if version.is_file():
            found = re.search(rb"#define\s+CUDART_VERSION\s+(\d+)", version.read_bytes())
            digest.update(found.group(1) if found else b"?")
    return digest.digest()


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        print(f"zoo: {message}", file=sys.stderr)


def cache_dir() -> Path | None:
    """The folder of compiled cubins: $ZOO_CACHE_DIR, else $XDG_CACHE_HOME/zoo, else
    ~/.cache/zoo; None (compile in memory, said once) when no home can be found."""
    if os.environ.get("ZOO_CACHE_DIR"):
        return Path(os.environ["ZOO_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "zoo"
    try:
        return Path.home() / ".cache" / "zoo"
    except RuntimeError:  # no HOME and no passwd entry
        _warn_once("no home folder to keep compiled kernels in; compiling in memory "
                   "(set ZOO_CACHE_DIR to keep them)")
        return None


def _private_cache() -> Path | None:
    """cache_dir(), made 0700 if new; None (and a note, once) when it cannot be used safely:
    a cubin in it is loaded and run, so it must be ours and writable by nobody else."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=0o700)
        info = folder.stat()
    except OSError as exc:
        _warn_once(f"cannot use the kernel cache {folder} ({exc.strerror}); compiling in memory")
        return None
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        _warn_once(f"not using the kernel cache {folder}: it belongs to user id {info.st_uid}, not to "
                   f"you ({os.getuid()}), and its cubins would run as your code; compiling in memory "
                   "(set ZOO_CACHE_DIR to a folder of your own)")
        return None
    if info.st_mode & 0o022:
        _warn_once(f"not using the kernel cache {folder}: others can write to it (mode "
                   f"{info.st_mode & 0o777:o}); compiling in memory (chmod 700 it, or set ZOO_CACHE_DIR)")
        return None
    return folder


@dataclass(frozen=True)
class Cubin:
    image: bytes
    arch: str
    key: str
    from_cache: bool


def compile_cubin(source: Path, arch: str, defines: dict[str, int | str] | None = None, *,
                  kernel: str | None = None, config: str | None = None,
                  use_cache: bool = True) -> Cubin:
    """Compile a kernel source to a cubin for `arch` (e.g. "sm_75", "sm_90a").

    The cache key hashes the source, every zoo header it includes, the CUDA headers it
    includes (transitively) and their version, the options, the NVRTC version and the arch.
    """
    nvrtc = _nvrtc()
    ctx = {"kernel": kernel, "config": config}
    known = nvrtc_supported_archs()
    if int(re.sub(r"\D", "", arch)) not in known:
        major, minor = nvrtc_version()
        raise ZooError(f"NVRTC {major}.{minor} cannot compile for {arch} (it knows sm_"
                       f"{', sm_'.join(map(str, known))}); install a newer nvidia-cuda-nvrtc")
    includes = cuda_include_dirs()
    options = [f"--gpu-architecture={arch}", "-std=c++17", "-default-device", "-lineinfo",
               f"-I{KERNELS_DIR}"] + [f"-I{d}" for d in includes]
    options += [f"-D{k}={v}" for k, v in sorted((defines or {}).items())]
    version = nvrtc_version()

    sources = _included_sources(Path(source).resolve())
    digest = hashlib.sha256(CACHE_FORMAT)
    for path, text in sorted(sources.items()):
        digest.update(path.name.encode() + hashlib.sha256(text).digest())
    digest.update(_cuda_headers_digest(tuple(includes)))
    # Include paths are checkout-specific; what they point at is hashed above.
    portable = [o for o in options if not o.startswith("-I")]
    digest.update(repr((portable, version, arch)).encode())
    key = digest.hexdigest()

    folder = _private_cache() if use_cache else None
    entry = folder / f"{Path(source).stem}-{arch}-{key[:32]}.cubin" if folder else None
    image = _read_cache(entry, key) if entry is not None else None
    if image is not None:
        return Cubin(image, arch, key, True)

    src = sources[Path(source).resolve()]
    prog = _check(nvrtc.nvrtcCreateProgram(src, Path(source).name.encode(), 0, [], []), "nvrtcCreateProgram", **ctx)
    try:
        opts = [o.encode() for o in options]
        status = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)[0]
        if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            log = b" " * _check(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize", **ctx)
            _check(nvrtc.nvrtcGetProgramLog(prog, log), "nvrtcGetProgramLog", **ctx)
            _, name = nvrtc.nvrtcGetErrorString(status)
            raise ZooCudaError("nvrtcCompileProgram", f"{name.decode()} ({arch})",
                               log=log.decode(errors="replace").rstrip("\x00 "), **ctx)
        image = b" " * _check(nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize", **ctx)
        _check(nvrtc.nvrtcGetCUBIN(prog, image), "nvrtcGetCUBIN", **ctx)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    if entry is not None:
        _write_cache(entry, key, image)
    return Cubin(bytes(image), arch, key, False)


def _entry_header(key: str, image: bytes) -> bytes:
    """An entry's first line: the format, the key it was stored under, its image's hash. An
    entry copied over another (or planted) has the wrong key and is not loaded."""
    return CACHE_FORMAT + b" " + key.encode() + b" " + hashlib.sha256(image).hexdigest().encode()


def _read_cache(entry: Path, key: str) -> bytes | None:
    """A cached cubin; None when missing, corrupt or stored under another key (rebuilt then)."""
    try:
        blob = entry.read_bytes()
    except OSError:
        return None
    header, _, image = blob.partition(b"\n")
    return image if header == _entry_header(key, image) else None


def _write_cache(entry: Path, key: str, image: bytes) -> None:
    """Atomic: write a temp file in the same folder, then rename over the entry; a failed
    write leaves no temp file behind and only costs a recompile next time (said once)."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-", suffix=".cubin")
        with os.fdopen(fd, "wb") as f:
            f.write(_entry_header(key, image) + b"\n" + image)
        os.replace(tmp, entry)
        tmp = None
    except OSError as exc:
        _warn_once(f"cannot write to the kernel cache {entry.parent} ({exc.strerror}); "
                   "kernels are compiled again in each process")
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


# ----------------------------------------------------------------------------- driver

_lock = threading.RLock()  # re-entered: load_function holds it while primary_context may take it
_contexts: dict[int, object] = {}
_functions: dict[tuple, "Function"] = {}


def driver_version() -> tuple[int, int]:
    driver, _ = _bindings()
    _check(driver.cuInit(0), "cuInit")
    v = _check(driver.cuDriverGetVersion(), "cuDriverGetVersion")
    return v // 1000, (v % 1000) // 10


def primary_context(device_index: int):
    """The device's primary context (the one torch uses), retained once."""
    ctx = _contexts.get(device_index)
    if ctx is None:
        driver, _ = _bindings()
        with _lock:
            ctx = _contexts.get(device_index)
            if ctx is None:
                _check(driver.cuInit(0), "cuInit")
                dev = _check(driver.cuDeviceGet(device_index), "cuDeviceGet")
                ctx = _contexts[device_index] = _check(driver.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
    return ctx


@contextlib.contextmanager
def device_context(device_index: int):
    """The device's primary context current on this thread for the block: pushed (and popped
    after) only when another one is current, so a caller's own context is left as it was."""
    driver, _ = _bindings()
    ctx = primary_context(device_index)
    current = _check(driver.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if int(current) == int(ctx):
        yield ctx
        return
    _check(driver.cuCtxPushCurrent(ctx), "cuCtxPushCurrent")
    try:
        yield ctx
    finally:
        _check(driver.cuCtxPopCurrent(), "cuCtxPopCurrent")


class _Hot(NamedTuple):
    launch: object        # cuLaunchKernel
    get_context: object   # cuCtxGetCurrent
    launch_ex: object     # cuLaunchKernelEx
    event_record: object  # cuEventRecord
    stream_wait: object   # cuStreamWaitEvent


_HOT: list = []  # [_Hot, or None], once resolved


def _resolve_hot():
    _HOT[:] = [_hot_entry_points()]
    return _HOT[0]


def _hot_entry_points() -> "_Hot | None":
    """The driver calls every launch (and the streams mode's fork and join) makes, as ctypes
    functions from the driver's own entry points (cuGetProcAddress). cuda.bindings' wrappers
    of them cost ~3 us each on the lent host, as much as the rest of a small call; these cost
    a tenth. None (use the wrappers) where the driver does not give them."""
    driver, _ = _bindings()
    names = (b"cuLaunchKernel", b"cuCtxGetCurrent", b"cuLaunchKernelEx", b"cuEventRecord", b"cuStreamWaitEvent")
    try:
        _check(driver.cuInit(0), "cuInit")
        version = _check(driver.cuDriverGetVersion(), "cuDriverGetVersion")
        flags = driver.CUdriverProcAddress_flags.CU_GET_PROC_ADDRESS_DEFAULT
        found = [_check(driver.cuGetProcAddress(name, version, flags), "cuGetProcAddress") for name in names]
    except ZooError:
        return None
    found = [v[0] if isinstance(v, tuple) else v for v in found]
    if not all(found):
        return None
    u32, ptr, status = ctypes.c_uint, ctypes.c_void_p, ctypes.c_int
    types = (ctypes.CFUNCTYPE(status, ptr, u32, u32, u32, u32, u32, u32, u32, ptr, ptr, ptr),
             ctypes.CFUNCTYPE(status, ctypes.POINTER(ptr)),
             ctypes.CFUNCTYPE(status, ptr, ptr, ptr, ptr),
             ctypes.CFUNCTYPE(status, ptr, ptr),
             ctypes.CFUNCTYPE(status, ptr, ptr, u32))
    return _Hot(*(kind(int(address)) for kind, address in zip(types, found)))


class StreamFork:
    """Side streams that fork from a caller's stream and join it again, through events made once
    (torch's Stream and Event objects cost microseconds each per call on the lent host): each
    side waits for the caller's work so far, the caller's later work for every side's. The
    events are shared: a caller holds one lock from its fork to its join."""

    def __init__(self, device_index: int, sides: list[int]):
        driver, _ = _bindings()
        flags = driver.CUevent_flags.CU_EVENT_DISABLE_TIMING
        with device_context(device_index) as ctx:
            self.context = int(ctx)
            self.events = [_check(driver.cuEventCreate(int(flags)), "cuEventCreate") for _ in range(len(sides) + 1)]
        self.device_index, self.sides = device_index, list(sides)
        self._handles = [int(e) for e in self.events]

    def fork(self, stream: int) -> None:
        record, wait = self._calls()
        record(self._handles[0], stream)
        for side in self.sides:
            wait(side, self._handles[0])

    def join(self, stream: int) -> None:
        record, wait = self._calls()
        for side, event in zip(self.sides, self._handles[1:]):
            record(event, side)
            wait(stream, event)

    def _calls(self):
        """(record(event, stream), wait(stream, event)): the ctypes entry points where the
        events' context is current on this thread, else cuda.bindings' in that context."""
        hot = _HOT[0] if _HOT else _resolve_hot()
        if hot is not None:
            current = ctypes.c_void_p()
            hot.get_context(ctypes.byref(current))
            if current.value == self.context:
                return (lambda e, s: _check_status(hot.event_record(e, s), "cuEventRecord"),
                        lambda s, e: _check_status(hot.stream_wait(s, e, 0), "cuStreamWaitEvent"))
        driver, _ = _bindings()

        def record(event: int, stream: int) -> None:
            with device_context(self.device_index):
                _check(driver.cuEventRecord(driver.CUevent(event), driver.CUstream(stream)), "cuEventRecord")

        def wait(stream: int, event: int) -> None:
            with device_context(self.device_index):
                _check(driver.cuStreamWaitEvent(driver.CUstream(stream), driver.CUevent(event), 0), "cuStreamWaitEvent")
        return record, wait


def _check_status(status: int, call: str, **ctx) -> None:
    """Raise ZooCudaError for a ctypes entry point's nonzero CUresult."""
    if status:
        driver, _ = _bindings()
        _check((driver.CUresult(status),), call, **ctx)


def current_context() -> int:
    """The handle of the context current on this thread (0: none)."""
    driver, _ = _bindings()
    return int(_check(driver.cuCtxGetCurrent(), "cuCtxGetCurrent"))


class StreamBuffer:
    """Device memory the zoo keeps across calls (a stream's split-K workspace), taken from the
    driver's stream-ordered allocator on the one stream that uses it (cuMemAllocAsync), zeroed
    there, and given back there (cuMemFreeAsync) after the work queued before. Not from
    torch's caching allocator: while torch routes a thread's allocations to a CUDA-graph
    memory pool (a capture, or torch.compile's CUDA-graph trees warming up), a buffer kept
    from there would stay alive in that pool, which torch.compile refuses ("tensors in the
    cudagraph pool not tracked as outputs")."""

    def __init__(self, device_index: int, nbytes: int, stream: int):
        driver, _ = _bindings()
        self.device_index, self.nbytes, self.stream = device_index, nbytes, stream
        size, handle = max(nbytes, 4), driver.CUstream(stream)
        with device_context(device_index):
            status, ptr = driver.cuMemAllocAsync(size, handle)
            # A device without stream-ordered memory pools (some virtualized GPUs): plain
            # memory, given back only once the stream is done with it (free).
            self.ordered = status != driver.CUresult.CUDA_ERROR_NOT_SUPPORTED
            ptr = _check((status, ptr), "cuMemAllocAsync") if self.ordered else \
                _check(driver.cuMemAlloc(size), "cuMemAlloc")
            self.ptr = int(ptr)
            _check(driver.cuMemsetD8Async(self.ptr, 0, size, handle), "cuMemsetD8Async")

    def read(self) -> bytes:
        """The contents, once the stream's work so far is done (for tests and checks)."""
        driver, _ = _bindings()
        out = bytearray(self.nbytes)
        with device_context(self.device_index):
            _check(driver.cuStreamSynchronize(driver.CUstream(self.stream)), "cuStreamSynchronize")
            _check(driver.cuMemcpyDtoH(out, self.ptr, self.nbytes), "cuMemcpyDtoH")
        return bytes(out)

    def free(self) -> None:
        """Give the memory back once the stream's work so far is done."""
        if self.ptr:
            driver, _ = _bindings()
            with device_context(self.device_index):
                if self.ordered:
                    _check(driver.cuMemFreeAsync(self.ptr, driver.CUstream(self.stream)), "cuMemFreeAsync")
                else:
                    _check(driver.cuStreamSynchronize(driver.CUstream(self.stream)), "cuStreamSynchronize")
                    _check(driver.cuMemFree(self.ptr), "cuMemFree")
            self.ptr = 0


_DEVICE_ATTRIBUTES = {  # device_attributes' keys and the CU_DEVICE_ATTRIBUTE_* each reads
    "cc_major": "COMPUTE_CAPABILITY_MAJOR", "cc_minor": "COMPUTE_CAPABILITY_MINOR", "sm_count": "MULTIPROCESSOR_COUNT",
    "smem_per_sm": "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", "smem_per_block_optin": "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
    "smem_reserved_per_block": "RESERVED_SHARED_MEMORY_PER_BLOCK", "regs_per_sm": "MAX_REGISTERS_PER_MULTIPROCESSOR",
    "regs_per_block": "MAX_REGISTERS_PER_BLOCK", "max_threads_per_sm": "MAX_THREADS_PER_MULTIPROCESSOR",
    "max_blocks_per_sm": "MAX_BLOCKS_PER_MULTIPROCESSOR", "l2_bytes": "L2_CACHE_SIZE", "sm_clock_khz": "CLOCK_RATE",
    "mem_clock_khz": "MEMORY_CLOCK_RATE", "mem_bus_bits": "GLOBAL_MEMORY_BUS_WIDTH"}


def device_attributes(device_index: int) -> dict[str, int]:
    """Hardware facts read from the device (the offline table lives in zoo/arch.py)."""
    driver, _ = _bindings()
    _check(driver.cuInit(0), "cuInit")
    dev = _check(driver.cuDeviceGet(device_index), "cuDeviceGet")
    A = driver.CUdevice_attribute
    out = {k: int(_check(driver.cuDeviceGetAttribute(getattr(A, f"CU_DEVICE_ATTRIBUTE_{a}"), dev),
                         "cuDeviceGetAttribute")) for k, a in _DEVICE_ATTRIBUTES.items()}
    out["name"] = _check(driver.cuDeviceGetName(64, dev), "cuDeviceGetName").split(b"\x00")[0].decode()
    return out


class Function:
    """A loaded kernel: launch it with a grid, block, dynamic smem and typed arguments."""

    def __init__(self, handle, name: str, smem_bytes: int, kernel: str | None, config: str | None,
                 context: int = 0):
        self.handle, self.name, self.smem_bytes = handle, name, smem_bytes
        self.handle_int, self.context = int(handle), context  # for the ctypes entry points
        self.ctx = {"kernel": kernel or name, "config": config}
        self._configs: dict[tuple, object] = {}
        self._ex_configs: dict[tuple, tuple] = {}

    def _config(self, grid: tuple[int, int, int], block: tuple[int, int, int], stream: int,
                cluster: int, pdl: bool = False):
        """The CUlaunchConfig for this launch shape, built once (a Python object per field
        costs microseconds, which small GEMMs feel)."""
        key = (grid, block, stream, cluster, pdl)
        config = self._configs.get(key)
        if config is not None:
            return config
        driver, _ = _bindings()
        config = driver.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = grid
        config.blockDimX, config.blockDimY, config.blockDimZ = block
        config.sharedMemBytes = self.smem_bytes
        config.hStream = driver.CUstream(stream)
        attrs = []
        if cluster > 1:
            attr = driver.CUlaunchAttribute()
            attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
            attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = cluster, 1, 1
            attrs.append(attr)
        if pdl:
            attr = driver.CUlaunchAttribute()
            attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
            attr.value.programmaticStreamSerializationAllowed = 1
            attrs.append(attr)
        config.attrs = attrs
        config.numAttrs = len(attrs)
        if len(self._configs) > 256:
            self._configs.clear()
        self._configs[key] = config
        return config

    def _ex_config(self, grid: tuple[int, int, int], threads: int, stream: int, cluster: int,
                   pdl: bool = False) -> int:
        """The address of _config's CUlaunchConfig for the ctypes cuLaunchKernelEx, kept with
        the object it points into (_config's own cache may drop it)."""
        key = (grid, threads, stream, cluster, pdl)
        made = self._ex_configs.get(key)
        if made is None:
            config = self._config(grid, (threads, 1, 1), stream, cluster, pdl)
            if len(self._ex_configs) > 256:
                self._ex_configs.clear()
            made = self._ex_configs[key] = (config, int(config.getPtr()))
        return made[1]

    def launch(self, grid: tuple[int, int, int], threads: int, args: "PackedArgs", stream: int,
               device_index: int, cluster: int = 1, pdl: bool = False) -> None:
        """Launch on `stream` with arguments packed once (PackedArgs), in clusters of `cluster`
        blocks along x when above 1, in the device's primary context (a caller's own is restored
        after). pdl: as a programmatic dependent of the grid before it, which may still run (for
        kernels that wait for it, griddepcontrol.wait, before touching global memory: KernelSpec.pdl)."""
        fast = _HOT[0] if _HOT else _resolve_hot()
        extended = cluster > 1 or pdl  # launch attributes: cuLaunchKernelEx
        if fast is not None:
            current = ctypes.c_void_p()
            fast.get_context(ctypes.byref(current))
            if current.value == self.context:
                if extended:
                    status = fast.launch_ex(self._ex_config(grid, threads, stream, cluster, pdl), self.handle_int,
                                            args.address, None)
                else:
                    status = fast.launch(self.handle_int, grid[0], grid[1], grid[2], threads, 1, 1,
                                         self.smem_bytes, stream, args.address, None)
                _check_status(status, "cuLaunchKernelEx" if extended else "cuLaunchKernel", **self.ctx)
                return
        driver, _ = _bindings()
        with device_context(device_index):
            if extended:
                status = driver.cuLaunchKernelEx(self._config(grid, (threads, 1, 1), stream, cluster, pdl),
                                                 self.handle, args.address, 0)
            else:
                status = driver.cuLaunchKernel(self.handle, grid[0], grid[1], grid[2], threads, 1, 1,
                                               self.smem_bytes, stream, args.address, 0)
        _check(status, "cuLaunchKernelEx" if extended else "cuLaunchKernel", **self.ctx)

    @functools.lru_cache(maxsize=None)
    def resident_clusters(self, threads: int, cluster: int, sm_count: int) -> int:
        """How many clusters of `cluster` blocks the GPU holds at once (the driver's occupancy
        calculator; for clusters it knows which SMs can pair up)."""
        driver, _ = _bindings()
        if cluster == 1:
            n = max_active_blocks(self, threads) * sm_count
        else:
            config = self._config((cluster, 1, 1), (threads, 1, 1), 0, cluster)
            n = int(_check(driver.cuOccupancyMaxActiveClusters(self.handle, config),
                           "cuOccupancyMaxActiveClusters", **self.ctx))
        if n < 1:
            raise ZooError(f"{self.ctx['kernel']} [{self.ctx['config']}]: no cluster of {cluster} "
                           f"blocks of {threads} threads and {self.smem_bytes} B fits this GPU")
        return n


GRID_YZ_MAX = 65535  # CUDA's limit on a grid's y and z dimensions


def load_function(device_index: int, cubin: Cubin, name: str, smem_bytes: int, *,
                  kernel: str | None = None, config: str | None = None) -> Function:
    """Load (once per device and cubin) and look up an extern "C" kernel by name; its max
    dynamic shared memory is set here, once, not on every launch."""
    key = (device_index, cubin.key, name, smem_bytes)
    fn = _functions.get(key)
    if fn is not None:
        return fn
    driver, _ = _bindings()
    ctx = {"kernel": kernel or name, "config": config}
    major, _ = driver_version()
    rt_major, _ = nvrtc_version()
    if rt_major > major:
        raise ZooError(
            f"NVRTC {rt_major}.x builds code the installed CUDA {major}.x driver cannot load; "
            f"install cuda-python and nvidia-cuda-nvrtc for CUDA {major} "
            f"(pip install 'cuda-python=={major}.*' 'nvidia-cuda-nvrtc-cu{major}') or update the driver")
    with _lock, device_context(device_index):
        module = _check(driver.cuModuleLoadData(cubin.image), "cuModuleLoadData", **ctx)
        handle = _check(driver.cuModuleGetFunction(module, name.encode()), "cuModuleGetFunction", **ctx)
        _check(driver.cuFuncSetAttribute(
            handle, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            smem_bytes), "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", **ctx)
        fn = _functions[key] = Function(handle, name, smem_bytes, kernel, config, int(primary_context(device_index)))
    return fn


def function_attributes(fn: Function) -> dict[str, int]:
    driver, _ = _bindings()
    A = driver.CUfunction_attribute
    names = {"registers": "NUM_REGS", "local_bytes": "LOCAL_SIZE_BYTES", "static_smem": "SHARED_SIZE_BYTES"}
    return {k: _check(driver.cuFuncGetAttribute(getattr(A, f"CU_FUNC_ATTRIBUTE_{a}"), fn.handle), "cuFuncGetAttribute")
            for k, a in names.items()}


def max_active_blocks(fn: Function, threads: int) -> int:
    """The driver's occupancy: resident blocks per SM for `fn` with its dynamic smem."""
    driver, _ = _bindings()
    return int(_check(driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(fn.handle, threads, fn.smem_bytes),
                      "cuOccupancyMaxActiveBlocksPerMultiprocessor", **fn.ctx))


# ctypes types for kernel arguments, so callers never import cuda.bindings.
POINTER, INT32, INT64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
TENSOR_MAP = "tensor map"  # an argument type: the value is tensor_map's arguments (None: a blank map)
# An argument type: the value is an encoded map (im2col_tensor_map), replaced whole (set_map).
ENCODED_MAP = "encoded tensor map"
BY_VALUE = "struct"  # an argument type: the value is a ctypes.Structure instance, passed by value
TENSOR_MAP_BYTES = 128


class PackedArgs:
    """A kernel's arguments packed once, as the void** array cuLaunchKernel reads: one ctypes
    object per argument (a tensor map: its 128 bytes, passed by value). A repeated launch
    patches the addresses in place (set, set_map_address) instead of packing again."""

    def __init__(self, args: list[tuple[object, object]]):
        self.maps = {i: v for i, (v, t) in enumerate(args) if t is TENSOR_MAP}
        self.values = [self._value(v, t) for v, t in args]
        self.array = (ctypes.c_void_p * len(self.values))(*(ctypes.addressof(v) for v in self.values))
        self.address = ctypes.addressof(self.array)
        offset = map_address_offset() if self.maps else None
        # The maps' address fields as integers, to patch with one assignment each.
        self.map_addresses = {i: ctypes.c_uint64.from_buffer(self.values[i], offset)
                              for i in self.maps} if offset is not None else None

    @staticmethod
    def _value(v, t):
        if t is TENSOR_MAP:
            return (ctypes.c_ubyte * TENSOR_MAP_BYTES).from_buffer_copy(
                tensor_map_bytes(tensor_map(*v)) if v else bytes(TENSOR_MAP_BYTES))
        if t is ENCODED_MAP:
            return (ctypes.c_ubyte * TENSOR_MAP_BYTES).from_buffer_copy(tensor_map_bytes(v))
        if t is BY_VALUE:
            if not isinstance(v, ctypes.Structure):
                raise TypeError(f"a BY_VALUE argument is a ctypes.Structure, got {type(v).__name__}")
            return v
        return t(v)

    def set(self, index: int, value: int) -> None:
        self.values[index].value = value

    def set_map(self, index: int, encoded) -> None:
        """Replace the ENCODED_MAP argument at `index` by another encoded map."""
        ctypes.memmove(self.values[index], tensor_map_bytes(encoded), TENSOR_MAP_BYTES)

    def address_field(self, index: int, offset: int) -> ctypes.c_uint64:
        """The address field (at `offset`) of the encoded map at `index`, to re-point it."""
        return ctypes.c_uint64.from_buffer(self.values[index], offset)

    def set_map_address(self, index: int, address: int) -> None:
        """Point the tensor map at `index` at `address` (same layout, same alignment class):
        its address field patched where the driver's encoding allows, else encoded again."""
        if self.map_addresses is not None:
            self.map_addresses[index].value = address
        else:
            params = (address, *self.maps[index][1:])
            ctypes.memmove(self.values[index], tensor_map_bytes(tensor_map(*params)), TENSOR_MAP_BYTES)


# ----------------------------------------------------------------------------- TMA

_TMA_DTYPES = {"float16": ("CU_TENSOR_MAP_DATA_TYPE_FLOAT16", 2),
               "bfloat16": ("CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", 2),
               "float32": ("CU_TENSOR_MAP_DATA_TYPE_FLOAT32", 4),
               # FP8 (zoo.scaled_mm): TMA moves bytes; wgmma reads them as e4m3
               "float8_e4m3fn": ("CU_TENSOR_MAP_DATA_TYPE_UINT8", 1)}
TMA_SWIZZLE_BYTES = 128  # the kernels' shared-memory tiles use the 128-byte swizzle


def _tma_dtype(dtype: str) -> tuple[str, int]:
    """The CUtensorMapDataType name and element size of `dtype`, the driver initialized to encode."""
    if dtype not in _TMA_DTYPES:
        raise ZooError(f"TMA tensor maps of {dtype} are not supported ({', '.join(_TMA_DTYPES)})")
    _check(_bindings()[0].cuInit(0), "cuInit")
    return _TMA_DTYPES[dtype]


def tma_layout_problem(address: int, size: int, rows: int, cols: int, row_stride: int,
                       matrices: int = 1, matrix_stride: int = 0) -> str | None:
    """Why TMA cannot address `matrices` row-major (rows, cols) matrices of `size`-byte
    elements at `address` (strides in elements), or None when it can: the base and the
    strides must be 16-byte multiples, and the matrices must not overlap."""
    stride, between = _tma_strides(size, rows, cols, row_stride, matrices, matrix_stride)
    if address % 16 or stride % 16 or between % 16:
        return (f"TMA needs a 16-byte-aligned base and strides; got address {address:#x}, "
                f"row stride {stride} B, matrix stride {between} B")
    if between < stride * rows:
        return f"TMA matrices must not overlap: matrix stride {between} B < {rows} rows of {stride} B"
    return None


def _tma_strides(size: int, rows: int, cols: int, row_stride: int, matrices: int,
                 matrix_stride: int) -> tuple[int, int]:
    """(row, matrix) strides in bytes; a stride that never addresses (one row, one matrix) is
    replaced by a legal one."""
    stride = row_stride * size if rows > 1 else -(-cols * size // 16) * 16
    return stride, (matrix_stride * size if matrices > 1 else stride * rows)


TMA_SECTOR_BYTES = 32  # an L2 sector: TMA reads rows that start off one slowly (NOTES.md)


def l2_promotion_bytes(row_stride_bytes: int) -> int:
    """How much TMA fetches into L2 per request for a map: 256 bytes where rows start on
    128-byte boundaries, 128 where they do not (a 128-byte box row then spans two lines, and
    256-byte fetches waste more of them: 3000^3 fp16, 6000-byte rows, went from 55% to 63% of
    torch.mm on an H100; NOTES.md)."""
    return 256 if row_stride_bytes % 128 == 0 else 128


@functools.lru_cache(maxsize=256)
def tensor_map(address: int, dtype: str, rows: int, cols: int, row_stride: int,
               box_rows: int, box_cols: int, matrices: int = 1, matrix_stride: int = 0):
    """A TMA descriptor (cuTensorMapEncodeTiled) of `matrices` row-major (rows, cols) matrices
    at `address`, `row_stride` elements per row and `matrix_stride` from one matrix to the
    next: 3-D boxes of box_rows x box_cols x 1, 128-byte swizzle, elements outside the tensor
    read as zero, L2 promotion by l2_promotion_bytes. Pass it as a kernel argument typed None.
    Cached: it depends only on these values."""
    driver, _ = _bindings()
    name, size = _tma_dtype(dtype)
    if problem := tma_layout_problem(address, size, rows, cols, row_stride, matrices, matrix_stride):
        raise ZooError(problem)
    stride, between = _tma_strides(size, rows, cols, row_stride, matrices, matrix_stride)
    if box_cols * size > TMA_SWIZZLE_BYTES or not (1 <= box_rows <= 256):
        raise ZooError(f"TMA box {box_rows}x{box_cols} of {dtype}: rows must be 1-256 and a row "
                       f"at most {TMA_SWIZZLE_BYTES} bytes (the swizzle span)")
    u64, u32 = driver.cuuint64_t, driver.cuuint32_t
    return _check(driver.cuTensorMapEncodeTiled(
        getattr(driver.CUtensorMapDataType, name), 3, address, [u64(cols), u64(rows), u64(matrices)],
        [u64(stride), u64(between)], [u32(box_cols), u32(box_rows), u32(1)], [u32(1)] * 3,
        *_map_modes(driver, l2_promotion_bytes(stride))), "cuTensorMapEncodeTiled")


def _map_modes(driver, l2_bytes: int) -> tuple:
    """What every map of the zoo takes: not interleaved, the 128-byte swizzle, L2 promotion of
    `l2_bytes`, zeros (not NaN) outside the tensor."""
    return (driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
            driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
            getattr(driver.CUtensorMapL2promotion, f"CU_TENSOR_MAP_L2_PROMOTION_L2_{l2_bytes}B"),
            driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)


IM2COL_CORNER = (-128, 127)  # a 4-D im2col map's bounding-box corners (cuTensorMapEncodeIm2col)
IM2COL_MAX_STRIDE = 8        # its element strides (the conv stride)


@functools.lru_cache(maxsize=256)
def im2col_tensor_map(address: int, dtype: str, images: int, height: int, width: int, channels: int,
                      lower: tuple[int, int], upper: tuple[int, int], strides: tuple[int, int],
                      pixels: int, channels_per_pixel: int):
    """A TMA descriptor in im2col mode (cuTensorMapEncodeIm2col) of a packed NHWC tensor at
    `address`: each load reads `pixels` pixels x `channels_per_pixel` channels, walking W, H and
    the images through the bounding box whose (h, w) corners `lower` and `upper` are offsets
    from the image's first and last pixel, `strides` (h, w) apart; 128-byte swizzle, zeros
    outside the image. Cached: it depends only on these values."""
    driver, _ = _bindings()
    name, size = _tma_dtype(dtype)
    pixel = channels * size
    if address % 16 or pixel % 16:
        raise ZooError(f"a TMA im2col map needs a 16-byte-aligned base and pixels a multiple of 16 "
                       f"bytes; got address {address:#x}, {pixel}-byte pixels")
    low, high = IM2COL_CORNER
    if not all(low <= v <= high for v in (*lower, *upper)) or not all(1 <= v <= IM2COL_MAX_STRIDE for v in strides):
        raise ZooError(f"a TMA im2col map takes corners in [{low}, {high}] and strides 1-{IM2COL_MAX_STRIDE}; "
                       f"got corners {lower}, {upper}, strides {strides}")
    u64, u32 = driver.cuuint64_t, driver.cuuint32_t
    return _check(driver.cuTensorMapEncodeIm2col(
        getattr(driver.CUtensorMapDataType, name), 4, address,
        [u64(channels), u64(width), u64(height), u64(images)],
        [u64(pixel), u64(pixel * width), u64(pixel * width * height)],
        [lower[1], lower[0]], [upper[1], upper[0]],  # innermost first: (w, h)
        channels_per_pixel, pixels,
        [u32(1), u32(strides[1]), u32(strides[0]), u32(1)], *_map_modes(driver, 128)), "cuTensorMapEncodeIm2col")


@functools.lru_cache(maxsize=256)
def weights_tensor_map(address: int, dtype: str, k: int, r: int, s: int, c: int, box_k: int, box_c: int):
    """A 4-D tiled TMA descriptor of packed convolution weights K x R x S x C (channels
    innermost) at `address`: boxes of box_k output channels x box_c input channels of one
    filter tap, 128-byte swizzle, zeros past C (and K). Cached: it depends only on these values."""
    driver, _ = _bindings()
    name, size = _tma_dtype(dtype)
    if address % 16 or c * size % 16 or box_c * size > TMA_SWIZZLE_BYTES or not 1 <= box_k <= 256:
        raise ZooError(f"a TMA map of {k}x{r}x{s}x{c} {dtype} weights needs a 16-byte-aligned base, rows of "
                       f"16-byte multiples and a box of at most 256 x {TMA_SWIZZLE_BYTES} B; got "
                       f"address {address:#x}, box {box_k} x {box_c}")
    u64, u32 = driver.cuuint64_t, driver.cuuint32_t
    return _check(driver.cuTensorMapEncodeTiled(
        getattr(driver.CUtensorMapDataType, name), 4, address,
        [u64(c), u64(s), u64(r), u64(k)], [u64(c * size), u64(s * c * size), u64(r * s * c * size)],
        [u32(box_c), u32(1), u32(1), u32(box_k)], [u32(1)] * 4, *_map_modes(driver, 256)), "cuTensorMapEncodeTiled")


_ADDRESS_PROBES = {  # a layout of each kind of map, for map_address_offset
    "tiled": lambda addr: tensor_map.__wrapped__(addr, "float16", 256, 256, 264, 64, 64),
    "im2col": lambda addr: im2col_tensor_map.__wrapped__(addr, "float16", 2, 9, 9, 64, (0, 0), (0, 0), (1, 1), 64, 64),
    "weights": lambda addr: weights_tensor_map.__wrapped__(addr, "float16", 128, 3, 3, 64, 128, 64)}


@functools.lru_cache(maxsize=None)
def map_address_offset(kind: str = "tiled") -> int | None:
    """Where an encoded map of `kind` keeps its global address: the offset at which one layout
    encoded at three addresses differs by exactly the address (checked by patching one into
    another); None when this driver encodes it some other way (maps encoded per address)."""
    maps = {addr: tensor_map_bytes(_ADDRESS_PROBES[kind](addr)) for addr in (0x10000, 0x7f0000001230, 0x5500000abc0)}
    (one, first), (two, second), (three, third) = maps.items()
    for offset in range(0, TENSOR_MAP_BYTES - 7, 8):
        if int.from_bytes(first[offset:offset + 8], "little") == one and \
                int.from_bytes(second[offset:offset + 8], "little") == two:
            patched = first[:offset] + three.to_bytes(8, "little") + first[offset + 8:]
            return offset if patched == third else None
    return None


def tensor_map_bytes(tensor_map) -> bytes:
    """The 128 bytes of a tensor map, to place in a table the kernel reads from global memory."""
    return ctypes.string_at(tensor_map.getPtr(), 128)
