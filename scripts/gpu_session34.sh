#!/usr/bin/env bash
# Sessions 34 and 35's GPU stages (issue 30: the public call's host work before its first launch):
#   rtests  radix's GPU tests with the calls by addresses of chapters 1 and 4 (RTESTS)
#   etests  chapter 5's GPU tests (its pairing sorts through radix plans)
#   pieces  scripts/radix_public_pieces.py: the public call's host time piece by piece
#   inplace scripts/radix_public_inplace.py (session 35): the pieces timed after a synchronised sort, and
#           the events of the plan, the public call and a prototype of the checks in one function
#   pab     radix_public_pieces.py in turns new/old/old/new against the tree in $OLD (default abold): the
#           public call's host time before the plan's sort, and its events ratio, both trees on one host
#   kab     scripts/radix_kept_ab.py in turns new/old/old/new against the tree in $OLD (default abold)
#   rab     gpulab bench radix, onesweep at 2^20 keys and distinct 2M, in turns old/new/new/old
#   rbench  gpulab bench radix at 2^20 keys and distinct 2M, every variant, appended to radix-h200.json
set -uo pipefail
stages="${*:-pieces}"
source "$(dirname "$0")/gpu_stages.sh"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -2 | tr '\n' ' '), stages: $stages"
if [[ " $stages " == *" rtests "* ]]; then
  gpu_pytest rtests ${RT_T:-300} ${RTESTS:-tests/radix tests/matmul/test_call_by_pointers.py tests/test_launch_numba.py tests/test_cudac_packing.py}
fi
if [[ " $stages " == *" etests "* ]]; then
  gpu_pytest etests ${ET_T:-300} ${ETESTS:-tests/euler}
fi
if [[ " $stages " == *" pieces "* ]]; then
  timeout ${PC_T:-200} $py scripts/radix_public_pieces.py > "$OUT/pieces.txt" 2>&1
  say "pieces exit $? ($(el) s)"; tail -40 "$OUT/pieces.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" inplace "* ]]; then
  timeout ${IP_T:-200} $py scripts/radix_public_inplace.py > "$OUT/inplace.txt" 2>&1
  say "inplace exit $? ($(el) s)"; grep -E "entry->|events turn" "$OUT/inplace.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" pab "* ]]; then
  for turn in new old old new; do
    tag=$turn-$(el); in_tree $turn timeout ${PAB_T:-120} $py "$PWD/scripts/radix_public_pieces.py" > "$OUT/pab-$tag.txt" 2>&1
    say "pab $turn exit $? ($(el) s)"; grep -E "public call host|events turn|distinct 2M host" "$OUT/pab-$tag.txt" | sed "s/^/  $turn /" | tee -a "$summary"
  done
fi
if [[ " $stages " == *" kab "* ]]; then
  timeout ${KAB_T:-400} $py scripts/radix_kept_ab.py --old "${OLD:-abold}" --turns ${KAB_TURNS:-4} \
    --out "$OUT/radix-kept-ab.json" > "$OUT/kab.txt" 2>&1
  say "kab exit $? ($(el) s)"; tail -40 "$OUT/kab.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" rab "* ]]; then
  radix_call_ab 2^20 "distinct 2M"
fi
if [[ " $stages " == *" rbench "* ]]; then
  radix_bench_append rbench ${RB_T:-300} ${RB_REPEAT:-20} 2^20 "distinct 2M"
fi
stages_end
