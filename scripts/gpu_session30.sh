#!/usr/bin/env bash
# Session 30 on the GPU (everything under $OUT/w, packed into $OUT/results.tgz beside $OUT/summary.txt):
#   rtests  radix's GPU tests (RTESTS, default tests/radix/test_radix.py: the argsort's onesweep_iota passes)
#   etests  chapter 5's Euler GPU tests (its edges are paired by argsorts)
#   eab     trees old/new/new/old (EAB_TURNS): scripts/argsort_ab.py (unless AS_SKIP), then scripts/euler_timeline.py at 42M
#           edges (deep), both backends: the public call's GPU time and where the GPU waits for the host
#   ebench  gpulab bench euler at 42M edges, ruling_set and Hierholzer (euler_bench_42m)
#   rsmall  gpulab bench radix, every variant with CUB at 2^20 keys and distinct 2M / 26M (RS_REPEAT repeats),
#           appended to a copy of the committed radix-h200.json -> $OUT/rsmall/
set -uo pipefail
stages="${*:-eab}"
source "$(dirname "$0")/gpu_stages.sh"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -2 | tr '\n' ' '), stages: $stages"
if [[ " $stages " == *" rtests "* ]]; then
  gpu_pytest rtests ${RT_T:-200} ${RTESTS:-tests/radix/test_radix.py}
fi
if [[ " $stages " == *" etests "* ]]; then
  gpu_pytest etests ${ET_T:-150} ${ETESTS:-tests/euler/test_euler.py tests/euler/test_permute_by_sort.py}
fi
if [[ " $stages " == *" eab "* ]]; then
  R=$PWD
  for turn in ${EAB_TURNS:-old new new old}; do
    tag=$turn-$(el)
    if [[ -z ${AS_SKIP:-} ]]; then
      in_tree $turn timeout ${AS_T:-120} $py "$R/scripts/argsort_ab.py" --repeat ${AS_REPEAT:-20} --json "$OUT/argsort-$tag.json" \
        > "$OUT/argsort-$tag.txt" 2>&1
      say "argsort $turn exit $? ($(el) s)"; grep "^argsort" "$OUT/argsort-$tag.txt" | sed "s/^/$turn /" | tee -a "$summary"
    fi
    in_tree $turn timeout ${TL_T:-150} $py "$R/scripts/euler_timeline.py" ${TL_E:-41943040} --calls ${TL_CALLS:-7} \
      --json "$OUT/timeline-$tag.json" > "$OUT/timeline-$tag.txt" 2>&1
    say "timeline $turn exit $? ($(el) s)"; grep -v -i warn "$OUT/timeline-$tag.txt" | grep -E "^==|waited|gap" | head -40 \
      | sed "s/^/$turn /" | tee -a "$summary"
  done
fi
if [[ " $stages " == *" ebench "* ]]; then
  euler_bench_42m
fi
if [[ " $stages " == *" rsmall "* ]]; then
  radix_bench_append rsmall ${RS_T:-300} ${RS_REPEAT:-20} 2^20 "distinct 2M" "distinct 26M"
fi
stages_end
