#!/usr/bin/env bash
# Session 31 on the GPU (everything under $OUT/w, packed into $OUT/results.tgz beside $OUT/summary.txt):
#   stamps  scripts/radix_call_timeline.py --stamps: where the public call's host time goes at 2^20 keys (sort, both
#           backends, numba and CuPy callers) and for distinct at 2M and 26M keys
#   ab      trees old/new/new/old: gpulab bench radix, onesweep at 2^20 keys and distinct 2M / 26M (radix_call_ab), then
#           scripts/radix_call_timeline.py --stamps for distinct 2M in each tree
#   rtests  radix's GPU tests (RTESTS, default tests/radix/test_radix.py)
#   final   gpulab bench radix --variants onesweep at 2^20 keys and distinct 2M / 26M (with CUB) -> $OUT/final/: a check of
#           the code after the review, not committed to radix-h200.json
#   rdistinct  gpulab bench radix, every variant with CUB at distinct 2M / 26M, appended to a copy of radix-h200.json
#           -> $OUT/rdistinct/ (after the count's single read)
#   rsmall  gpulab bench radix at 2^20 keys and distinct 2M / 26M, appended to a copy of radix-h200.json -> $OUT/rsmall/
set -uo pipefail
stages="${*:-stamps}"
source "$(dirname "$0")/gpu_stages.sh"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -2 | tr '\n' ' '), stages: $stages"
if [[ " $stages " == *" stamps "* ]]; then
  timeout ${ST_T:-200} $py scripts/radix_call_timeline.py --log2 20 --stamps ${ST_CALLS:-50} > "$OUT/stamps-2p20.txt" 2>&1
  say "stamps 2^20 exit $? ($(el) s)"; grep -A1 "^==" "$OUT/stamps-2p20.txt" | tee -a "$summary"
  timeout ${ST_T:-200} $py scripts/radix_call_timeline.py --distinct 2000000 26000000 --stamps ${ST_CALLS:-50} \
    > "$OUT/stamps-distinct.txt" 2>&1
  say "stamps distinct exit $? ($(el) s)"; grep -A1 "^==" "$OUT/stamps-distinct.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" ab "* ]]; then
  radix_call_ab 2^20 "distinct 2M" "distinct 26M"
  R=$PWD
  for turn in ${AB_TURNS:-old new}; do
    in_tree $turn timeout ${AB_T:-150} $py "$R/scripts/radix_call_timeline.py" --distinct 2000000 --stamps 30 \
      > "$OUT/distinct-$turn.txt" 2>&1
    say "distinct stamps $turn exit $? ($(el) s)"; grep -A1 "^==" "$OUT/distinct-$turn.txt" | sed "s/^/$turn /" | tee -a "$summary"
  done
fi
if [[ " $stages " == *" rtests "* ]]; then
  gpu_pytest rtests ${RT_T:-200} ${RTESTS:-tests/radix/test_radix.py}
fi
if [[ " $stages " == *" final "* ]]; then
  timeout ${FI_T:-200} $py -m gpulab bench radix --variants onesweep --sizes 2^20 "distinct 2M" "distinct 26M" --repeat 20 \
    --no-progress --out "$OUT/final" > "$OUT/final.txt" 2>&1
  say "bench radix onesweep exit $? ($(el) s)"; grep -E "onesweep|^size" "$OUT/final.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" rdistinct "* ]]; then
  radix_bench_append rdistinct ${RD_T:-330} ${RS_REPEAT:-20} "distinct 2M" "distinct 26M"
fi
if [[ " $stages " == *" rsmall "* ]]; then
  radix_bench_append rsmall ${RS_T:-300} ${RS_REPEAT:-20} 2^20 "distinct 2M" "distinct 26M"
fi
stages_end
