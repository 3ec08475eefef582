#!/usr/bin/env bash
# Issue 24's probe on the lent GPU, one part per process under `timeout` (a wrong mbarrier
# phase or descriptor hangs a kernel rather than failing it), then the SASS of each probe
# kernel: HGMMA (wgmma), UTMALDG/UTMASTG (TMA) and SYNCS (mbarrier) instruction counts.
# Carry .gpu/numpy and .gpu/xdist.  Logs and cubins land in $OUT.
set -uo pipefail
source "$(dirname "$0")/setup.sh"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export WGMMA_PROBE_CUBINS="$out/cubins"
mkdir -p "$WGMMA_PROBE_CUBINS"
for part in ${PARTS:-wgmma tma copy gemm gemmws}; do
  echo "== part $part"
  timeout "${PART_TIMEOUT:-120}" python3 tools/gpu/wgmma_probe.py --parts "$part" \
    > "$out/probe_$part.txt" 2>&1
  rc=$?
  sed -n '/== summary ==/,$p' "$out/probe_$part.txt" | tail -n +2
  [[ $rc -ne 0 ]] && { echo "part $part: exit $rc (124 = timed out)"; tail -15 "$out/probe_$part.txt"; }
done
for f in "$WGMMA_PROBE_CUBINS"/*.cubin; do
  [[ -e $f ]] || continue
  sass=$(cuobjdump -sass "$f" 2>/dev/null || /usr/local/cuda/bin/cuobjdump -sass "$f")
  printf '%-28s HGMMA %4d  UTMALDG %3d  UTMASTG %3d  SYNCS %3d  WARPSYNC %3d\n' \
    "$(basename "$f" .cubin)" "$(grep -c HGMMA <<<"$sass")" "$(grep -c UTMALDG <<<"$sass")" \
    "$(grep -c UTMASTG <<<"$sass")" "$(grep -c SYNCS <<<"$sass")" "$(grep -c WARPSYNC <<<"$sass")"
done
