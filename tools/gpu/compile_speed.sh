#!/usr/bin/env bash
# Issue 26's GPU runs (compile speed), sized for one 10-minute device call on nvidia-h200:
#
#   tools/gpu/compile_speed.sh check   the direct path's GPU tests, benchmarks/compile.py
#                                      (direct, then CUTILE_NUMBA_DIRECT=0), random programs
#                                      (PROGEN_N, default 500) beside NVIDIA's
#                                      test_reduction.py on the Numba backend, timed
#   tools/gpu/compile_speed.sh speed   benchmarks/gpu.py's mma workloads, direct path then Numba's
#   tools/gpu/compile_speed.sh final   which ptxas, GPU tests of the direct path and the disk
#                                      cache, benchmarks/gpu.py with the disk cache off, then
#                                      random programs beside test_reduction.py
#   tools/gpu/compile_speed.sh bench   benchmarks/compile.py beside the real cuTile: run after
#                                      installing it per ../shared/GPU.md (PYTHONPATH has it)
#
# Carry .gpu/numpy, .gpu/xdist and .gpu/nvtests (NVIDIA's test/ folder, see
# tools/nvidia_suite/README.md).  Logs land in $OUT.
set -uo pipefail
source "$(dirname "$0")/setup.sh"
nvidia-smi --query-gpu=name --format=csv,noheader
case "${1:?check|speed|final|bench}" in
  check)
    python3 -m pytest spec_tests/test_backend_direct.py -q -p no:cacheprovider 2>&1 | tail -25
    python3 benchmarks/compile.py --mode gpu --no-cutile-ref 2>&1 | tee "$out/compile_direct.txt" | tail -32
    CUTILE_NUMBA_DIRECT=0 python3 benchmarks/compile.py --mode gpu --no-cutile-ref \
      > "$out/compile_numba.txt" 2>&1
    tail -6 "$out/compile_numba.txt"
    python3 -m spec_tests.diff.progen --n "${PROGEN_N:-500}" --seed 63 --jobs 10 --profile gpu \
      > "$out/progen.txt" 2>&1 &
    local_start=$(date +%s)
    python3 tools/nvidia_suite/run.py --tests .gpu/nvtests --mode gpu --backend numba --jobs 1 \
      --only test_reduction.py --timeout 420 --out "$out/nvs" > "$out/reduction.txt" 2>&1
    echo "test_reduction.py: $(( $(date +%s) - local_start )) s"; tail -8 "$out/reduction.txt"
    wait
    tail -4 "$out/progen.txt"
    python3 benchmarks/gpu.py --no-first-call --only "${BENCH_ONLY:-vadd,softmax,mm_f16}" \
      2>&1 | tail -12
    ;;
  speed)       # the generated code's speed, direct path against Numba's (same call)
    python3 -m pytest spec_tests/test_backend_direct.py -q -p no:cacheprovider 2>&1 | tail -3
    for d in 1 0; do
      echo "CUTILE_NUMBA_DIRECT=$d"
      CUTILE_NUMBA_DIRECT=$d python3 benchmarks/gpu.py --no-first-call \
        --only "${BENCH_ONLY:-mm_f16,mm_bf16,attention}" 2>&1 | grep -v "^\s*$" | tail -9
    done
    ;;
  final)       # after a change: which ptxas, GPU tests, the speed table (cache off), then
               # random programs beside NVIDIA's test_reduction.py (timed)
    python3 -c "from cutile.numba_backend import direct; print('ptxas:', direct._ptxas())"
    ptxas --version 2>/dev/null | tail -1
    timeout 150 python3 -m pytest spec_tests/test_backend_direct.py \
      spec_tests/test_backend_cache.py -q -p no:cacheprovider 2>&1 | tail -3
    CUTILE_CACHE=0 timeout 240 python3 benchmarks/gpu.py --no-first-call \
      --only "${BENCH_ONLY:-vadd,softmax,layernorm,mm_f32,mm_f16,mm_bf16,bmm,attention}" \
      > "$out/gpu.txt" 2>&1
    grep -v "^\s*$" "$out/gpu.txt" | grep -v "^\[inspect\]" | tail -14
    grep "^\[inspect\]" "$out/gpu.txt"
    timeout 230 python3 -m spec_tests.diff.progen --n "${PROGEN_N:-500}" \
      --seed "${PROGEN_SEED:-64}" --jobs 8 --profile gpu > "$out/progen.txt" 2>&1 &
    local_start=$(date +%s)
    CUTILE_CACHE=0 timeout 240 python3 tools/nvidia_suite/run.py --tests .gpu/nvtests \
      --mode gpu --backend numba --jobs 1 --only test_reduction.py --timeout 230 \
      --out "$out/nvs" > "$out/reduction.txt" 2>&1
    echo "test_reduction.py (one process, beside progen): $(( $(date +%s) - local_start )) s"
    tail -4 "$out/reduction.txt"
    wait
    tail -3 "$out/progen.txt"
    ;;
  bench)
    python3 benchmarks/compile.py --mode gpu 2>&1 | tee "$out/compile_vs_cutile.txt"
    ;;
esac
