# Sourced by bin/zoo and bin/test: picks a Python that has what the zoo needs, setting one up
# on a fresh machine. Sets ZOO_PY and puts the checkout on PYTHONPATH.
#   - A GPU machine whose python3 already has torch, cuda-python, pyyaml, rich, pytest (and
#     CUDA headers) uses it as is: nothing is installed, no network is needed.
#   - Otherwise a virtualenv in .venv gets requirements.txt (CUDA 13 NVRTC and headers), or
#     requirements-cu12.txt where nvidia-smi reports a CUDA 12 driver (NVRTC must not be newer
#     than the driver), and torch if it is missing (ZOO_TORCH, default torch==2.13.0; the zoo
#     works with any torch >= 2.4).
ZOO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PYTHONPATH="$ZOO_ROOT${PYTHONPATH:+:$PYTHONPATH}"
zoo_probe="import torch, yaml, rich, pytest; from zoo import cuda, sass; cuda.nvrtc_version(); cuda.cuda_include_dirs()${ZOO_NEED_CUOBJDUMP:+; sass.cuobjdump_path()}"

if [ -n "${ZOO_PYTHON:-}" ]; then
  ZOO_PY=$ZOO_PYTHON
elif python3 -c "$zoo_probe" >/dev/null 2>&1; then
  ZOO_PY=python3
else
  ZOO_PY="$ZOO_ROOT/.venv/bin/python"
  if ! "$ZOO_PY" -c "$zoo_probe" >/dev/null 2>&1; then
    echo "zoo: setting up $ZOO_ROOT/.venv (first run only)" >&2
    [ -x "$ZOO_PY" ] || python3 -m venv "$ZOO_ROOT/.venv" || return 1
    "$ZOO_PY" -m pip install -q --upgrade pip >&2 || return 1
    "$ZOO_PY" -c "import torch" >/dev/null 2>&1 || "$ZOO_PY" -m pip install -q "${ZOO_TORCH:-torch==2.13.0}" >&2 || return 1
    reqs="$ZOO_ROOT/requirements.txt"
    driver_cuda=
    if command -v nvidia-smi >/dev/null 2>&1; then
      driver_cuda=$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9]*\)\..*/\1/p' | head -n 1) || true
    fi
    if [ "$driver_cuda" = 12 ]; then reqs="$ZOO_ROOT/requirements-cu12.txt"; fi
    "$ZOO_PY" -m pip install -q -r "$reqs" >&2 || return 1
    "$ZOO_PY" -c "$zoo_probe" || { echo "zoo: set-up finished but the check above failed" >&2; return 1; }
  fi
fi
export ZOO_PY
