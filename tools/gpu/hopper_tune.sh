#!/usr/bin/env bash
# Issue 24's open measurements on the lent H200 (one call; carry .gpu/numpy and .gpu/xdist),
# each a variant against the default, disk cache off:
#   layer norm / softmax (memory-bound, 1 x 4096 rows) across thread counts and block bounds
#   batched matmul at 256 threads and at 2 blocks/SM against the default (128, 3)
#   attention at 3 blocks/SM against the default 4; the deferred wgmma wait at 128 threads
#   float8 mma on this backend (tools/gpu/fp8_mma.py: accuracy probe, 4096^3 throughput)
set -uo pipefail
source "$(dirname "$0")/setup.sh"
export CUTILE_PROGRESS=0 CUTILE_CACHE=0
nvidia-smi --query-gpu=name --format=csv,noheader
bench() { timeout 150 python3 benchmarks/gpu.py --no-first-call --only "$@" 2>&1 \
  | grep -a "TFLOP/s\|GB/s\|inspect" | cut -c1-240; }
echo "== default";                  bench vadd,softmax,layernorm,mm_f16,bmm,attention
for t in 128 512 1024; do echo "== layernorm/softmax, $t threads"; bench layernorm,softmax --threads $t; done
for mb in 2 4; do echo "== layernorm/softmax, 256 threads, $mb blocks/SM"
  CUTILE_NUMBA_MIN_BLOCKS=$mb bench layernorm,softmax --threads 256; done
echo "== bmm, 256 threads";         CUTILE_NUMBA_THREADS=256 bench bmm
echo "== bmm, 2 blocks/SM";         CUTILE_NUMBA_MIN_BLOCKS=2 bench bmm
echo "== attention, 3 blocks/SM";   CUTILE_NUMBA_MIN_BLOCKS=3 bench attention
echo "== deferred wait";            CUTILE_NUMBA_WGMMA=defer bench mm_f16,bmm
echo "== float8 on cutile";         timeout 200 python3 tools/gpu/fp8_mma.py --executor cutile --out "$out" 2>&1 | tail -20
