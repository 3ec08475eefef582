#!/usr/bin/env bash
# Issue 3's H100 acceptance runs, each sized for one 10-minute device call (16 cores).
#
#   tools/gpu/acceptance.sh spec1|spec2|diff1|diff2|bench
#
# Run on the GPU machine from the repository root, after installing the carried wheels
# (../shared/GPU.md; .gpu/numpy and .gpu/xdist = `pip download pytest-xdist execnet`):
#   python3 -m pip install -q --no-index --no-deps --target /tmp/np .gpu/numpy/*.whl \
#       .gpu/xdist/*.whl && export PYTHONPATH=/tmp/np:$PWD && tools/gpu/acceptance.sh spec1
# Logs go to $OUT (or ./gpu_logs); CUTILE_FAILLOG keeps failures even when a run is cut.
#
# spec1/spec2: the whole spec suite on the Numba backend (CUTILE_TEST_BACKEND=numba), in two
#   halves by file; diff1/diff2: the differential tests with the gpu Hypothesis profile, in two
#   halves; bench: benchmarks/gpu.py (add the real cuTile's recipe for its column).
set -euo pipefail
out="${OUT:-gpu_logs}"
mkdir -p "$out"
part="${1:?spec1|spec2|diff1|diff2|bench}"
xd=(-q -n 16 --dist worksteal -p no:cacheprovider -W ignore --durations=30)
case "$part" in
  spec1|spec2)
    mapfile -t files < <(ls spec_tests/test_*.py | sort)
    half=$(( ${#files[@]} / 2 ))
    if [[ $part == spec1 ]]; then sel=("${files[@]:0:half}"); else sel=("${files[@]:half}"); fi
    CUTILE_FAILLOG="$out/$part.fail" CUTILE_TEST_BACKEND=numba \
      timeout 570 python3 -m pytest "${sel[@]}" "${xd[@]}" > "$out/$part.log" 2>&1 || true
    tail -40 "$out/$part.log" ;;
  diff1|diff2)
    if [[ $part == diff1 ]]; then
      sel=(spec_tests/diff/test_diff_elementwise.py spec_tests/diff/test_diff_memory.py)
    else
      sel=(spec_tests/diff/test_diff_matmul_control.py spec_tests/diff/test_diff_reduce_shape.py)
    fi
    CUTILE_FAILLOG="$out/$part.fail" HYPOTHESIS_PROFILE=gpu \
      timeout 570 python3 -m pytest "${sel[@]}" "${xd[@]}" > "$out/$part.log" 2>&1 || true
    tail -40 "$out/$part.log" ;;
  bench)
    timeout 570 python3 benchmarks/gpu.py > "$out/bench.log" 2>&1 || true
    tail -16 "$out/bench.log" ;;
  *) echo "unknown part $part" >&2; exit 2 ;;
esac
