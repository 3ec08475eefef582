#!/usr/bin/env bash
# float8 wgmma on the lent H200 (carry .gpu/numpy, .gpu/xdist; ~5 minutes): the GPU tests,
# accuracy and throughput (tools/gpu/fp8_mma.py), then compute-sanitizer racecheck and
# memcheck on every tensor-core form (tools/gpu/tc_sanitize.py).
set -uo pipefail
source "$(dirname "$0")/setup.sh"
export CUTILE_PROGRESS=0
nvidia-smi --query-gpu=name --format=csv,noheader
CUTILE_TEST_BACKEND=numba timeout 200 python3 -m pytest -q -p no:cacheprovider -W ignore \
  spec_tests/diff/test_diff_matmul_control.py -k "float8_wgmma_on_hopper" 2>&1 | tail -15
timeout 200 python3 tools/gpu/fp8_mma.py --executor cutile --out "$out" 2>&1 | tail -25
for tool in racecheck memcheck; do
  echo "== $tool"
  timeout 240 compute-sanitizer --tool "$tool" python3 tools/gpu/tc_sanitize.py 2>&1 \
    | grep -a -v "^    " | tail -22
done
