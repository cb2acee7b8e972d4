#!/usr/bin/env bash
# Issue 29, reuse of copied individuals' fitness, on a GPU; one stage per word (default: both):
#   tests  the GP tests that touch the evaluator, the breeding and the loop, both backends (xdist)
#   sanitize  compute-sanitizer memcheck and initcheck on tests/gp/test_reuse.py (both backends)
#   costs  scripts/gp_host_costs.py: the host's time per call in one generation's breeding and evaluation
#   ab     scripts/gp_reuse_ab.py: whole runs with reuse off, copies, trees, interleaved (AB_RUNS, AB_ROUNDS)
set -uo pipefail
stages="${*:-tests sanitize ab}"
source "$(dirname "$0")/gpu_stages.sh"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if [[ " $stages " == *" tests "* ]]; then
  timeout 330 $py -m pytest -q -n 8 --dist loadfile -p no:cacheprovider tests/gp/test_reuse.py \
    tests/gp/test_device_population.py tests/gp/test_evolve.py tests/test_readback.py tests/gp/test_breeding_gpu.py tests/test_gp_dispatch.py \
    "tests/gp/test_variants.py" -k "not (test_variant_matches_reference and not bitsliced)" > "$OUT/tests.log" 2>&1
  say "tests exit $? ($(el) s): $(tail -1 "$OUT/tests.log")"
  grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | head -20 | tee -a "$summary"
fi
if [[ " $stages " == *" sanitize "* ]]; then
  for tool in memcheck initcheck; do
    timeout 150 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 $py -m pytest -q \
      -p no:cacheprovider tests/gp/test_reuse.py -k "${SAN_K:-not run_that_reuses}" > "$OUT/san-reuse-$tool.log" 2>&1
    say "sanitizer $tool on the reuse tests exit $? ($(el) s): $(grep -E "ERROR SUMMARY|passed|failed" "$OUT/san-reuse-$tool.log" | tr '\n' ' ')"
  done
fi
if [[ " $stages " == *" costs "* ]]; then
  timeout 200 $py scripts/gp_host_costs.py --json "$FINAL/gp-host-costs.json" > "$OUT/costs.txt" 2>&1
  say "host costs exit $? ($(el) s)"; grep -v -i warn "$OUT/costs.txt" | tail -20 | tee -a "$summary"
fi
if [[ " $stages " == *" ab "* ]]; then
  timeout ${AB_T:-400} $py scripts/gp_reuse_ab.py --runs ${AB_RUNS:-25000x50:6 500000x5} --backends cuda-c numba \
    --rounds ${AB_ROUNDS:-3} --json "$FINAL/gp-reuse-ab.json" > "$OUT/ab.txt" 2>&1
  say "reuse A/B exit $? ($(el) s)"; tail -16 "$OUT/ab.txt" | tee -a "$summary"
fi
stages_end
