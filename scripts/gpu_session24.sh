#!/usr/bin/env bash
# Session 24 on the GPU (everything under $OUT/w, packed into $OUT/results.tgz beside $OUT/summary.txt):
#   rtests  chapter 4's tests (onesweep's early counts both ways, both backends) and chapter 5's Euler
#           tests (its pairing sorts key-value pairs with onesweep)
#   rsan    onesweep under compute-sanitizer memcheck, racecheck and synccheck
#           (scripts/radix_sanitize.py, both backends)
#   rbench  gpulab bench radix, every variant and size (CUB in the same run)
set -uo pipefail
stages="${*:-rtests}"
source "$(dirname "$0")/gpu_stages.sh"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -2 | tr '\n' ' '), stages: $stages"
if [[ " $stages " == *" rtests "* ]]; then
  timeout ${RT_T:-240} $py -m pytest -q -p no:cacheprovider -n 8 tests/radix tests/euler/test_euler.py \
    tests/euler/test_permute_by_sort.py > "$OUT/rtests.log" 2>&1
  say "rtests exit $? ($(el) s): $(tail -1 "$OUT/rtests.log")"; grep -E "^(FAILED|ERROR)" "$OUT/rtests.log" | head | tee -a "$summary"
fi
if [[ " $stages " == *" rsan "* ]]; then
  for t in memcheck racecheck synccheck; do
    timeout ${RS_T:-100} compute-sanitizer --tool $t --report-api-errors no --error-exitcode 9 \
      $py scripts/radix_sanitize.py onesweep > "$OUT/rsan-$t.log" 2>&1
    say "sanitize $t exit $? ($(el) s): $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/rsan-$t.log" | tail -1)"
  done
fi
if [[ " $stages " == *" rbench "* ]]; then
  # in two parts (the second --append), so that a part cut by its timeout leaves the other
  timeout ${RB_T:-300} $py -m gpulab bench radix --sizes 2^20 2^24 2^26 2^28 --repeat 10 --no-progress \
    --out "$OUT/radix" > "$OUT/radix.txt" 2>&1
  say "bench radix keys exit $? ($(el) s)"; grep -E "onesweep" "$OUT/radix.txt" | tee -a "$summary"
  timeout ${RB2_T:-250} $py -m gpulab bench radix --sizes "pairs 2^24" "pairs 2^28" "distinct 2M" "distinct 26M" \
    "distinct 262M" --repeat 10 --no-progress --append --out "$OUT/radix" > "$OUT/radix2.txt" 2>&1
  say "bench radix pairs, distinct exit $? ($(el) s)"; grep -E "onesweep" "$OUT/radix2.txt" | tee -a "$summary"
fi
stages_end
