#!/usr/bin/env bash
# Session 6's GPU work (writes under $OUT, prints a short table last), stages by name:
#   probe      where the subset public call's host time goes (cProfile, and the timeline as a
#              baseline); the incremental scan's hot-loop A/B (scripts/subset_scan_ab.py) with ncu's
#              warp-state sections for two of its kernels; numba's one-sweep histogram A/B
#              (scripts/radix_hist_numba_ab.py)
#   measure    (on two GPUs) the subset scan's grid (scripts/subset_chunk_cost.py: WAVES against the
#              former cap, whole searches and rank ranges), the Dask subset cases
#              (scripts/bench_distributed.py --only subset, needs .daskkit), radix onesweep against
#              CUB (2^24, 2^28 keys and pairs), the subset call timeline
#   tests      the GPU tests of the files this session touched
#   dask       (on two GPUs) scripts/bench_distributed.py --only subset three times: as it is, with
#              the client's batching interval at 1 ms, and with one rank range per worker (each call's
#              timeline of its last call in the JSON)
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
if [[ " $stages " == *" measure "* ]]; then
  timeout 150 $py scripts/subset_chunk_cost.py --sizes 200:5 200:6 100:6 236:6 --chunks 4 8 --json "$OUT/subset-grid-cuda-c.json" > "$OUT/subset-grid-cuda-c.log" 2>&1
  say "subset grid cuda-c exit $? ($(el) s)"; cat "$OUT/subset-grid-cuda-c.log" | grep "C(" | tee -a "$summary"
  timeout 90 $py scripts/subset_chunk_cost.py --sizes 200:5 100:6 --backends numba --chunks 4 --json "$OUT/subset-grid-numba.json" > "$OUT/subset-grid-numba.log" 2>&1
  say "subset grid numba exit $? ($(el) s)"; grep "C(" "$OUT/subset-grid-numba.log" | tee -a "$summary"
  timeout 60 $py scripts/subset_call_timeline.py --n 50 --k 5 --repeat 50 --json "$OUT/subset-call-timeline-h100.json" > "$OUT/call-timeline.log" 2>&1
  say "subset call timeline exit $? ($(el) s)"; grep -E "public ms|validate|kernels ms" "$OUT/call-timeline.log" | tee -a "$summary"
  timeout 150 $py -m gpulab bench radix --variants onesweep --sizes 2^24 2^28 "pairs 2^28" --repeat 10 --no-progress \
    --out "$OUT/radix" > "$OUT/radix-bench.log" 2>&1
  say "radix bench exit $? ($(el) s)"; tail -12 "$OUT/radix-bench.log" | tee -a "$summary"
  if [[ -d .daskkit ]]; then
    ( source .daskkit/install.sh > /dev/null && timeout 240 $py scripts/bench_distributed.py --only subset --out "$OUT/dist" ) > "$OUT/dist.log" 2>&1
    say "dask bench exit $? ($(el) s)"; grep -E "empty task|^subset|C\(" "$OUT/dist.log" | tail -16 | tee -a "$summary"
  fi
fi
if [[ " $stages " == *" dask "* && -d .daskkit ]]; then
  source .daskkit/install.sh > /dev/null
  for cfg in ${DASK_CFGS:-"default:" "batch1:--client-batch-ms 1" "range1:--chunks-per-worker 1"}; do
    name=${cfg%%:*}; opts=${cfg#*:}
    timeout 170 $py scripts/bench_distributed.py --only subset --out "$OUT/dask-$name" $opts > "$OUT/dask-$name.log" 2>&1
    say "dask $name exit $? ($(el) s)"; grep -E "round trip|scatter of|last call|^subset C" "$OUT/dask-$name.log" | tail -16 | tee -a "$summary"
  done
fi
if [[ " $stages " == *" tests "* ]]; then
  timeout 400 $py -m pytest -q -p no:cacheprovider -n 12 --timeout 200 tests/subset tests/radix/test_onesweep_hist.py \
    tests/radix/test_out_dtypes.py tests/test_readback.py tests/test_plan_cache.py "tests/radix/test_radix.py" -k "not (split1 or radix4 or local4)" > "$OUT/tests.log" 2>&1
  say "tests exit $? ($(el) s)"; tail -4 "$OUT/tests.log" | tee -a "$summary"; grep -E "^FAILED|^ERROR" "$OUT/tests.log" | head -20 | tee -a "$summary"
fi
stages_end
