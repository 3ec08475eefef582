#!/usr/bin/env bash
# Issue 22's GPU-parity runs, sized for one 10-minute device call on nvidia-h200-x2 (32 cores,
# two GPUs), several parts side by side (each is compile-bound on the CPU):
#
#   tools/gpu/parity.sh nvsuite   NVIDIA's test suite on the Numba backend (tools/nvidia_suite)
#   tools/gpu/parity.sh progen    random programs on both executors (spec_tests/diff/progen.py)
#   tools/gpu/parity.sh bench     benchmarks/gpu.py on a few workloads (BENCH_ONLY)
#   tools/gpu/parity.sh diff      this issue's differential tests (array values, devices, extremes,
#                                 UNDETERMINED padding, print), gpu profile
#   tools/gpu/parity.sh all       the three at once: nvsuite on 20 cores, progen on 8, diff on 4
#
# Carry .gpu/numpy, .gpu/xdist (pytest-xdist + execnet wheels) and .gpu/nvtests (NVIDIA's
# test/ folder: git archive of the mirror, never committed); see tools/nvidia_suite/README.md.
# Environment: NVS_JOBS, NVS_ONLY (file globs), PROGEN_N, PROGEN_JOBS, BUDGET (seconds).
# Everything lands in $OUT as a few archives (the device tool returns at most 8 files).
set -uo pipefail
source "$(dirname "$0")/setup.sh"
budget="${BUDGET:-540}"
part="${1:?nvsuite|progen|diff|all}"

nvsuite() {
  # test_reduction.py (344 kernels, many with large tiles) gets its own processes; the other
  # files run side by side, only the large ones split in shards.
  local only=()
  [[ -n "${NVS_ONLY:-}" ]] && only=(--only "$NVS_ONLY")
  local t=$((budget - 15))
  if [[ -z "${NVS_ONLY:-}" ]]; then
    timeout -s TERM "$budget" python3 tools/nvidia_suite/run.py --tests .gpu/nvtests --mode gpu \
      --backend numba --jobs "${NVS_RJOBS:-5}" --shards "${NVS_RJOBS:-5}" --shard-min-kb 1 \
      --timeout "$t" --only test_reduction.py --out /tmp/nvs-red > "$out/nvsuite-red.log" 2>&1 &
    only=(--skip test_reduction.py)
  fi
  timeout -s TERM "$budget" python3 tools/nvidia_suite/run.py --tests .gpu/nvtests --mode gpu \
    --backend numba --jobs "${NVS_JOBS:-11}" --shards 6 --shard-min-kb 40 --timeout "$t" \
    "${only[@]}" --out /tmp/nvs > "$out/nvsuite.log" 2>&1
  wait
  if [[ -d /tmp/nvs-red ]]; then
    python3 tools/nvidia_suite/run.py --merge /tmp/nvs/results.json /tmp/nvs-red/results.json \
      --out /tmp/nvs-all > /dev/null 2>&1
  fi
  tar czf "$out/nvsuite.tgz" -C /tmp nvs nvs-red nvs-all 2>/dev/null
  tail -25 /tmp/nvs-all/table.txt 2>/dev/null || tail -25 /tmp/nvs/table.txt
}

bench() {
  timeout -s TERM "$budget" python3 benchmarks/gpu.py --no-first-call \
    --only "${BENCH_ONLY:-vadd,softmax,layernorm,mm_f16,attention}" > "$out/bench.log" 2>&1
  tail -14 "$out/bench.log"
}

progen() {
  timeout -s TERM "$budget" python3 -m spec_tests.diff.progen --n "${PROGEN_N:-1500}" \
    --seed "${PROGEN_SEED:-22}" --jobs "${PROGEN_JOBS:-8}" --profile gpu --out /tmp/progen \
    > "$out/progen.log" 2>&1
  tar czf "$out/progen.tgz" -C /tmp progen 2>/dev/null
  tail -5 "$out/progen.log"
}

diff() {
  HYPOTHESIS_PROFILE=gpu timeout -s TERM "$budget" python3 -m pytest -q -n 4 -p no:cacheprovider \
    spec_tests/diff/test_diff_array_values.py spec_tests/diff/test_diff_devices.py \
    spec_tests/diff/test_diff_extremes.py spec_tests/diff/test_diff_undetermined.py \
    spec_tests/diff/test_diff_debug.py > "$out/diff.log" 2>&1
  tail -25 "$out/diff.log"
}

case "$part" in
  nvsuite) nvsuite ;;
  bench) bench ;;
  progen) progen ;;
  diff) diff ;;
  all)
    nvsuite > /tmp/nvs.tail 2>&1 &
    progen > /tmp/progen.tail 2>&1 &
    diff > /tmp/diff.tail 2>&1 &
    wait
    echo "== diff"; cat /tmp/diff.tail; echo "== progen"; cat /tmp/progen.tail
    echo "== nvsuite"; cat /tmp/nvs.tail ;;
  *) echo "unknown part $part" >&2; exit 2 ;;
esac
