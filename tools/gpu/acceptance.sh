#!/usr/bin/env bash
# Issue 3's H100 acceptance runs, each sized for one 10-minute device call (16 cores).
#
#   tools/gpu/acceptance.sh spec1|spec2|spec3|spec4|diff1|diff2|diff3|bench|firstcall|examples|oracle
#
# Run on the GPU machine from the repository root with the wheels carried (../shared/GPU.md;
# carry .gpu/numpy and .gpu/xdist, the latter = `pip download pytest-xdist execnet`): they are
# installed into /tmp/np on a fresh machine and put on PYTHONPATH here.
# Logs go to $OUT (or ./gpu_logs); CUTILE_FAILLOG keeps failures even when a run is cut.
#
# spec1..spec4: the whole spec suite on the Numba backend (CUTILE_TEST_BACKEND=numba), in four
#   parts (every fourth file, C-locale order); diff1/diff2/diff3: the differential tests with the
#   gpu Hypothesis profile, in three parts (diff3: every diff file the first two do not name); bench: benchmarks/gpu.py (add the real cuTile's recipe for its column).
# firstcall: issue 15's first launch per workload in fresh processes, kernel cache cold then warm
#   (benchmarks/first_call.py; bench runs it too) and the cache's spec tests.
# examples: issues 10, 11, 13 on the Numba backend: the examples' outputs saved for
#   tools/oracle/run.py --compare ($OUT/numba_examples.npz), what print/printf write
#   (tools/oracle/print_probe.py), the host-API table (tools/host_api/gpu_check.py) and a user's
#   test file (examples/test_my_kernel.py) on both executors.
# oracle: the same examples and print probes on the real cuTile (carry .gpu/oracle, not
#   .gpu/xdist: the two exceed one call's carry; /tmp/np must be there from an earlier call).
set -euo pipefail
if [[ ! -d /tmp/np/xdist && -d .gpu/xdist ]]; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/np .gpu/numpy/*.whl .gpu/xdist/*.whl
fi
export PYTHONPATH="/tmp/np:$PWD${PYTHONPATH:+:$PYTHONPATH}"
out="${OUT:-gpu_logs}"
mkdir -p "$out"
part="${1:?spec1|spec2|spec3|spec4|diff1|diff2|diff3|bench|firstcall|examples|oracle}"
export CUTILE_DURLOG="$out/$part.dur"   # per-test durations, kept when the run is cut
xd=(-q -n 16 --dist worksteal -p no:cacheprovider -W ignore --durations=30)
case "$part" in
  spec[1-4])
    mapfile -t files < <(ls spec_tests/test_*.py | LC_ALL=C sort)
    k=$(( ${part#spec} - 1 )); sel=()
    for i in "${!files[@]}"; do (( i % 4 == k )) && sel+=("${files[$i]}"); done
    CUTILE_FAILLOG="$out/$part.fail" CUTILE_TEST_BACKEND=numba \
      timeout 570 python3 -m pytest "${sel[@]}" "${xd[@]}" > "$out/$part.log" 2>&1 || true
    tail -40 "$out/$part.log" ;;
  diff1|diff2|diff3)
    d1=(spec_tests/diff/test_diff_elementwise.py spec_tests/diff/test_diff_memory.py)
    d2=(spec_tests/diff/test_diff_matmul_control.py spec_tests/diff/test_diff_reduce_shape.py)
    if [[ $part == diff1 ]]; then
      sel=("${d1[@]}")
    elif [[ $part == diff2 ]]; then
      sel=("${d2[@]}")
    else
      sel=()
      for f in spec_tests/diff/test_*.py; do
        [[ " ${d1[*]} ${d2[*]} " == *" $f "* ]] || sel+=("$f")
      done
    fi
    CUTILE_FAILLOG="$out/$part.fail" HYPOTHESIS_PROFILE=gpu \
      timeout 570 python3 -m pytest "${sel[@]}" "${xd[@]}" > "$out/$part.log" 2>&1 || true
    tail -40 "$out/$part.log" ;;
  bench)
    timeout 570 python3 benchmarks/gpu.py > "$out/bench.log" 2>&1 || true
    tail -22 "$out/bench.log" ;;
  firstcall)
    timeout 420 python3 benchmarks/first_call.py > "$out/firstcall.log" 2>&1 || true
    cat "$out/firstcall.log"
    timeout 150 python3 -m pytest spec_tests/test_backend_cache.py -q -p no:cacheprovider \
      2>&1 | tail -5 ;;
  examples)
    CUTILE_BACKEND=numba timeout 300 python3 tools/oracle/run.py --only examples \
      --local "$out/numba_examples.npz" > "$out/examples.log" 2>&1 || true
    tail -30 "$out/examples.log"
    CUTILE_BACKEND=numba timeout 120 python3 tools/oracle/print_probe.py --module cutile \
      > "$out/numba_print.txt" 2>&1 || true
    cat "$out/numba_print.txt"
    timeout 200 python3 tools/host_api/gpu_check.py 2>&1 | tee "$out/hostapi.log" | tail -12
    CUTILE_TEST_EXECUTORS=interp,numba timeout 150 python3 -m pytest -q -p no:cacheprovider \
      -p cutile.testing.pytest_plugin \
      examples/test_my_kernel.py 2>&1 | tail -5 ;;
  oracle)
    python3 -m pip install -q --no-index --no-deps --target /tmp/ct .gpu/oracle/*.whl
    mkdir -p /tmp/ctk && tar xJf .gpu/oracle/ctk134.tar.xz -C /tmp/ctk
    export PATH=/tmp/ctk/nvidia/cu13/bin:$PATH PYTHONPATH=/tmp/ct:$PYTHONPATH
    unset CUDA_HOME CUDA_PATH
    timeout 300 python3 tools/oracle/run.py --only examples --oracle "$out/oracle_examples.npz" \
      > "$out/oracle.log" 2>&1 || true
    tail -30 "$out/oracle.log"
    timeout 200 python3 tools/oracle/print_probe.py --module cuda.tile \
      > "$out/oracle_print.txt" 2>&1 || true
    cat "$out/oracle_print.txt" ;;
  *) echo "unknown part $part" >&2; exit 2 ;;
esac
