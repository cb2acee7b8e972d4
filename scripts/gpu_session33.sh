#!/usr/bin/env bash
# Session 33's GPU stages (issue 30: onesweep's kept launches and the public call by addresses):
#   kab     scripts/radix_kept_ab.py in turns new/old/old/new against the tree in $OLD (default abold)
#   rtests  radix's GPU tests (RTESTS, default tests/radix and the launch tests)
#   kprof   the host profile of a 2^20-key sort, plan and public call (radix_kept_ab.py --profile)
#   etests  chapter 5's GPU tests (its pairing sorts through radix plans)
#   rab     gpulab bench radix, onesweep at 2^20 keys and distinct 2M, in turns old/new/new/old
#   rsan    compute-sanitizer memcheck and racecheck on onesweep's workload (scripts/radix_sanitize.py, kept
#           launches included), memcheck on the kept and plain plans' test
#   rbench  gpulab bench radix at 2^20 keys and distinct 2M, every variant, appended to radix-h200.json
set -uo pipefail
stages="${*:-kab}"
source "$(dirname "$0")/gpu_stages.sh"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -2 | tr '\n' ' '), stages: $stages"
if [[ " $stages " == *" rtests "* ]]; then
  gpu_pytest rtests ${RT_T:-300} ${RTESTS:-tests/radix tests/test_launch_numba.py tests/test_cudac_packing.py}
fi
if [[ " $stages " == *" kab "* ]]; then
  timeout ${KAB_T:-400} $py scripts/radix_kept_ab.py --old "${OLD:-abold}" --turns ${KAB_TURNS:-4} \
    --out "$OUT/radix-kept-ab.json" > "$OUT/kab.txt" 2>&1
  say "kab exit $? ($(el) s)"; tail -40 "$OUT/kab.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" kprof "* ]]; then
  timeout ${KP_T:-200} $py scripts/radix_kept_ab.py --profile > "$OUT/kprof.txt" 2>&1
  say "kprof exit $? ($(el) s)"; grep -A16 "^== " "$OUT/kprof.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" etests "* ]]; then
  gpu_pytest etests ${ET_T:-300} ${ETESTS:-tests/euler}
fi
if [[ " $stages " == *" rab "* ]]; then
  radix_call_ab 2^20 "distinct 2M"
fi
if [[ " $stages " == *" rsan "* ]]; then
  for tool in memcheck racecheck; do
    timeout ${ST:-120} compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 $py scripts/radix_sanitize.py \
      onesweep > "$OUT/rsan-$tool.log" 2>&1
    say "rsan $tool exit $? ($(el) s): $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/rsan-$tool.log" | tail -2 | tr '\n' ' ')"
  done
  timeout ${ST:-120} compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 $py -m pytest -q \
    -p no:cacheprovider tests/radix/test_by_addresses.py -k "plan_keeps or readback" > "$OUT/rsan-tests.log" 2>&1
  say "memcheck on the kept plans' test exit $? ($(el) s): $(grep -E "ERROR SUMMARY" "$OUT/rsan-tests.log" | tail -1) $(tail -1 "$OUT/rsan-tests.log")"
fi
if [[ " $stages " == *" rbench "* ]]; then
  radix_bench_append rbench ${RB_T:-300} ${RB_REPEAT:-20} 2^20 "distinct 2M"
fi
stages_end
