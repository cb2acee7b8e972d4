#!/usr/bin/env bash
# Session 6's GPU work (writes under $OUT, prints a short table last), stages by name:
#   probe      where the subset public call's host time goes (cProfile, and the timeline as a
#              baseline); the incremental scan's hot-loop A/B (scripts/subset_scan_ab.py) with ncu's
#              warp-state sections for two of its kernels; numba's one-sweep histogram A/B
#              (scripts/radix_hist_numba_ab.py)
set -uo pipefail
stages="${*:-probe}"
source "$(dirname "$0")/gpu_stages.sh"
say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
if [[ " $stages " == *" probe "* ]]; then
  timeout 200 $py scripts/subset_call_timeline.py --n 50 --k 5 --repeat 50 > "$OUT/call-timeline.log" 2>&1
  say "subset call timeline exit $? ($(el) s)"; tail -16 "$OUT/call-timeline.log" | tee -a "$summary"
  timeout 200 $py scripts/subset_call_timeline.py --n 50 --k 5 --profile 2000 > "$OUT/call-profile.log" 2>&1
  say "subset call profile exit $? ($(el) s)"; grep -A14 "own time" "$OUT/call-profile.log" | tee -a "$summary"
  timeout 240 $py scripts/subset_scan_ab.py --sizes 200:5 100:6 50:5 --blocks 512 1024 --json "$OUT/subset-scan-ab.json" > "$OUT/subset-scan-ab.log" 2>&1
  say "subset scan A/B exit $? ($(el) s)"; tail -25 "$OUT/subset-scan-ab.log" | tee -a "$summary"
  timeout 200 $py scripts/radix_hist_numba_ab.py --log2n 28 24 --json "$OUT/radix-hist-ab.json" > "$OUT/radix-hist-ab.log" 2>&1
  say "radix hist A/B exit $? ($(el) s)"; tail -8 "$OUT/radix-hist-ab.log" | tee -a "$summary"
  NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  if [[ -n "$NCU" ]]; then
    timeout 240 "$NCU" --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy \
      -k 'regex:^(subset_incremental_warp|rows_u4)$' --launch-count 5 \
      $py scripts/subset_scan_ab.py --sizes 200:5 --blocks 512 --repeat 1 > "$OUT/ncu-scan.log" 2>&1
    say "ncu scan exit $? ($(el) s)"
    grep -E "^  [a-z_0-9]+|Stall|Issued Warp|Eligible|Achieved Occupancy|Compute \(SM\) Throughput|Duration|No Eligible|Theoretical Occ" "$OUT/ncu-scan.log" | head -60 | tee -a "$summary"
  else say "no ncu"; fi
fi
stages_end
