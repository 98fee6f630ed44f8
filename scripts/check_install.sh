#!/usr/bin/env bash
# A user's install on a CPU machine: a fresh virtualenv, `pip install .` (the wheel's own
# dependencies: NVRTC, the CUDA headers, cuobjdump), then the offline check for Hopper from
# outside the checkout. torch comes first from the pip cache (any torch >= 2.4).
set -eo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$(mktemp -d)/venv
log=$(dirname "$venv")/pip.log
python3 -m venv "$venv"
{ "$venv/bin/python" -m pip install -q --upgrade pip &&
  "$venv/bin/python" -m pip install -q "${ZOO_TORCH:-torch==2.13.0}" &&
  "$venv/bin/python" -m pip install -q "$root"; } > "$log" 2>&1 || { tail -30 "$log"; exit 1; }
cd "$(dirname "$venv")"
# The installed zoo, not the checkout's: bin/test exports the checkout on PYTHONPATH.
unset PYTHONPATH
where=$("$venv/bin/python" -c "import zoo, zoo.cuda as c; print(zoo.__file__, c.KERNELS_DIR)")
case "$where" in
  "$venv"/*" $venv"/*) ;;
  *) echo "check_install: the venv's zoo is not the installed one: $where"; exit 1 ;;
esac
"$venv/bin/zoo" build --arch sm_90a --check > build.log || { tail -20 build.log; exit 1; }
tail -1 build.log
rm -rf "$(dirname "$venv")"
