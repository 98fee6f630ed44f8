"""`zoo tune`: the user's GPU measures which (kernel, config, split-K) runs each shape fastest,
and zoo.mm takes those winners from then on; `zoo tune --conv` likewise which conv kernel and
config (or conv2d's flat K) runs each convolution fastest, for zoo.conv2d.

The winners live in one JSON file per device in the kernel cache folder (tune-<gpu>.json),
written atomically, under a key of what they were measured with: GPU name, compute
capability, driver, zoo version and a hash of every kernel source and config file. A file
whose key differs from the running one is stale: ignored, with a note (once). The registry's
model stays the choice for every shape the file does not name. This is how a T4 owner gets the
best config on hardware nobody else measured.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import cuda
from ._version import __version__
from .configs import CONFIGS_DIR

TUNE_FORMAT = 1


@dataclass(frozen=True)
class Choice:
    kernel: str
    config: str
    splits: int | None  # None: the registry's split-K rule


def sources_hash() -> str:
    """Every kernel source and config file: a change to any makes older winners stale."""
    digest = hashlib.sha256()
    files = sorted([*cuda.KERNELS_DIR.rglob("*.cu"), *cuda.KERNELS_DIR.rglob("*.cuh"), *CONFIGS_DIR.glob("*.yaml")])
    for path in files:
        digest.update(path.name.encode() + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def device_key(name: str, cc: tuple[int, int], driver: tuple[int, int]) -> dict:
    return {"format": TUNE_FORMAT, "gpu": name, "cc": f"{cc[0]}.{cc[1]}", "driver": f"{driver[0]}.{driver[1]}",
            "zoo": __version__, "sources": sources_hash()}


def problem_key(dtype: str, out_dtype: str, tf32: bool, m: int, n: int, k: int) -> str:
    return f"{dtype}->{out_dtype}{' tf32' if tf32 else ''} {m}x{n}x{k}"


# A convolution's winner: "kernel" a conv kernel (with its "config"), or a route of conv2d's:
# FLAT, the flat K; GEMM, a 1x1 convolution as one zoo.mm (conv.runs_as_gemm).
FLAT = "flat K"
GEMM = "zoo.mm"


def conv_key(dtype: str, out_dtype: str, images: int, channels: int, height: int, width: int,
             out_channels: int, r: int, s: int, stride: tuple, padding: tuple, dilation: tuple) -> str:
    return (f"conv {dtype}->{out_dtype} {images},{channels},{height},{width} * {out_channels},{r},{s} "
            f"s{stride[0]},{stride[1]} p{padding[0]},{padding[1]} d{dilation[0]},{dilation[1]}")


def tuning_file(gpu_name: str) -> Path | None:
    folder = cuda.cache_dir()
    if folder is None:
        return None
    return folder / f"tune-{re.sub(r'[^A-Za-z0-9]+', '-', gpu_name).strip('-').lower()}.json"


def read(path: Path, key: dict) -> tuple[dict[str, dict], str | None]:
    """(winners, why the file is not used or None)."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}, "no tuning file"
    except (OSError, ValueError) as exc:
        return {}, f"unreadable tuning file {path} ({exc})"
    if data.get("key") != key:
        changed = sorted(k for k in key if data.get("key", {}).get(k) != key[k])
        return {}, (f"tuning file {path} is stale ({', '.join(changed)} changed since it was measured); "
                    "run `zoo tune` again")
    return data.get("winners", {}), None


def write(path: Path, key: dict, winners: dict[str, dict]) -> None:
    """Merge `winners` into the file (a file with another key is replaced), atomically."""
    old, why = read(path, key)
    merged = {**old, **winners}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump({"key": key, "winners": merged}, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


_loaded: dict[int, tuple[Path | None, dict[str, dict], str | None]] = {}


def in_use(device_index: int) -> tuple[Path | None, dict[str, dict], str | None]:
    """(file, winners, why not used) for a device, read once per process (zoo tune resets it)."""
    if device_index not in _loaded:
        attrs = cuda.device_attributes(device_index)
        path = tuning_file(attrs["name"])
        key = device_key(attrs["name"], (attrs["cc_major"], attrs["cc_minor"]), cuda.driver_version())
        winners, why = read(path, key) if path else ({}, "no cache folder for a tuning file")
        if why and why != "no tuning file":
            cuda._warn_once(why)
        _loaded[device_index] = (path, winners, why)
    return _loaded[device_index]


def lookup(device_index: int, dtype: str, out_dtype: str, tf32: bool, m: int, n: int, k: int) -> Choice | None:
    return lookup_key(device_index, problem_key(dtype, out_dtype, tf32, m, n, k))


def lookup_key(device_index: int, key: str) -> Choice | None:
    """The winner the file in use names for `key` (problem_key, conv_key), or None."""
    _, winners, _ = in_use(device_index)
    won = winners.get(key)
    return Choice(won["kernel"], won["config"], won.get("splits")) if won else None


def forget() -> None:
    _loaded.clear()
