#!/bin/bash
# Call 5: zoo::scaled_mm lowered to an extern kernel: the compiled FP8 prefill again, and the FP8 compile tests.
export PYTHONUNBUFFERED=1 PYTHONPATH=.
timeout 120 python3 .devrun/call4.py 2>&1 | grep -v Warning | grep -v warnings.warn
T=tests/test_gpu_models.py::test_an_fp8_llama_in_every_compile_mode
timeout 200 python3 -m pytest -m gpu -q -s "$T[default]" "$T[reduce-overhead]" "$T[dynamic]" "$T[max-autotune-no-cudagraphs]" \
  "tests/test_gpu_models.py::test_an_fp8_llama_on_the_zoo_is_as_close_to_bf16_as_torch_scaled_mms[block]" \
  tests/test_scaled.py::test_scaled_mm_bias_graph_compile_and_long_k 2>&1 | grep -E "zoo / torch|over eager|passed|failed|Error|^E |zoo:" | head -30
