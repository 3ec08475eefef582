#!/usr/bin/env bash
# Issue 24's open measurements on the lent H200 (one 10-minute call; carry .gpu/numpy and
# .gpu/xdist), each a variant of the wgmma path against the default, disk cache off:
#   attention at 3 blocks/SM (170 registers, no spills?) against the default 4 (128, spills)
#   batched matmul at 256 threads against the default 128
#   the deferred wgmma wait (CUTILE_NUMBA_WGMMA=defer) at the default 128 threads
# then the differential suite's matmul-heavy files with the gpu Hypothesis profile.
set -uo pipefail
source "$(dirname "$0")/setup.sh"
export CUTILE_PROGRESS=0 CUTILE_CACHE=0
nvidia-smi --query-gpu=name --format=csv,noheader
bench() { timeout 120 python3 benchmarks/gpu.py --no-first-call --only "$1" 2>&1 \
  | grep -a "TFLOP/s\|inspect" | cut -c1-240; }
echo "== default";            bench mm_f16,bmm,attention
echo "== attention, 3 blocks/SM"; CUTILE_NUMBA_MIN_BLOCKS=3 bench attention
echo "== bmm, 256 threads";   CUTILE_NUMBA_THREADS=256 bench bmm
echo "== deferred wait";      CUTILE_NUMBA_WGMMA=defer bench mm_f16,bmm
CUTILE_TEST_BACKEND=numba HYPOTHESIS_PROFILE=gpu timeout 240 python3 -m pytest \
  spec_tests/diff/test_diff_programs.py spec_tests/diff/test_diff_matmul_control.py \
  spec_tests/diff/test_diff_gpu_regressions.py spec_tests/test_backend_wgmma.py \
  -q -n 12 -p no:cacheprovider 2>&1 | grep -a "passed\|failed\|FAILED" | tail -6
