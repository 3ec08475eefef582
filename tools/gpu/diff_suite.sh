#!/usr/bin/env bash
# The whole differential suite on the lent GPU (gpu Hypothesis profile, 16 workers), every
# failure's whole report kept in $OUT/diff.fail (CUTILE_FAILLOG); then the GPU regression
# programs.  Carry .gpu/numpy and .gpu/xdist.  ~4 minutes on an H200.
set -uo pipefail
source "$(dirname "$0")/setup.sh"
export CUTILE_PROGRESS=0 CUTILE_TEST_BACKEND=numba HYPOTHESIS_PROFILE=gpu
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 120 python3 -m pytest -q -p no:cacheprovider -W ignore \
  spec_tests/diff/test_diff_gpu_regressions.py 2>&1 | tail -3
CUTILE_FAILLOG="$out/diff.fail" timeout "${DIFF_TIMEOUT:-330}" python3 -m pytest spec_tests/diff \
  -q -n 16 --dist worksteal -p no:cacheprovider -W ignore 2>&1 | grep -a "passed\|failed\|FAILED" | tail -8
