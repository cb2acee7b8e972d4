#!/usr/bin/env bash
# Session 26 on the GPU (everything under $OUT/w, packed into $OUT/results.tgz beside $OUT/summary.txt):
#   bd      scripts/radix_host_breakdown.py at 2^24: the public call's host steps before the plan's
#           sort, each timed alone, in the trees BD_TURNS names in turn (old = abold, made by
#           `git archive <rev> gpulab | tar x -C abold`; new = this one; a -N suffix tells turns apart)
#   rprobe  scripts/radix_call_probe.py at 2^24, keys and pairs, both backends (old and/or new tree:
#           PROBE_TURNS, default "new", -N suffixes as in bd; a turn named new-prewalk runs it with --prewalk)
#   rab     gpulab bench radix, onesweep at 2^24 keys and pairs, old/new/new/old turns
#   rbench24 gpulab bench radix, every variant at 2^24 keys and pairs (--append to the committed JSON)
#   qtests  the test files in $QTESTS on the GPU
#   atests  the whole test suite on the GPU (AT_SKIP_RADIX=1: all but tests/radix)
set -uo pipefail
stages="${*:-bd}"
source "$(dirname "$0")/gpu_stages.sh"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
R=$PWD
say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -2 | tr '\n' ' '), stages: $stages"
if [[ " $stages " == *" bd "* ]]; then
  for turn in ${BD_TURNS:-new}; do
    in_tree ${turn%-*} timeout ${BD_T:-200} $py "$R/scripts/radix_host_breakdown.py" --log2 24 ${BD_ARGS:-} \
      --json "$OUT/breakdown-$turn.json" > "$OUT/breakdown-$turn.txt" 2>&1
    say "breakdown $turn exit $? ($(el) s)"; grep -E "sum of" "$OUT/breakdown-$turn.txt" | tee -a "$summary"
  done
fi
if [[ " $stages " == *" rprobe "* ]]; then
  for turn in ${PROBE_TURNS:-new}; do
    in_tree ${turn%-*} timeout ${RPB_T:-200} $py "$R/scripts/radix_call_probe.py" --log2 24 ${PROBE_ARGS:---pairs} \
      $([[ $turn == *-prewalk ]] && echo --prewalk) --json "$OUT/probe-$turn.json" > "$OUT/probe-$turn.txt" 2>&1
    say "probe $turn exit $? ($(el) s)"; tail -17 "$OUT/probe-$turn.txt" | tee -a "$summary"
  done
fi
if [[ " $stages " == *" rab "* ]]; then
  radix_call_ab
fi
if [[ " $stages " == *" rbench24 "* ]]; then
  radix_bench_2p24
fi
if [[ " $stages " == *" qtests "* ]]; then
  gpu_pytest qtests ${QT_T:-300} ${QTESTS:-tests/radix/test_call_overhead.py}
fi
if [[ " $stages " == *" atests "* ]]; then  # chapter 4's tests first (unless AT_SKIP_RADIX), then the others
  [[ -z "${AT_SKIP_RADIX:-}" ]] && gpu_pytest atests-radix ${AT1_T:-200} tests/radix
  gpu_pytest atests ${AT_T:-360} tests --ignore=tests/radix
fi
stages_end
