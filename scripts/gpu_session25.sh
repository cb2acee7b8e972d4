#!/usr/bin/env bash
# Session 25 on the GPU (everything under $OUT/w, packed into $OUT/results.tgz beside $OUT/summary.txt):
#   rab     the radix public call at 2^24 keys and key-value pairs, this tree against the one in
#           $OLD (abold: `git archive <rev> gpulab | tar x -C abold`), in turns old/new/new/old:
#           gpulab bench radix, onesweep, both backends (CUB in the same run)
#   rstamps where the public call's host time goes at 2^24 (scripts/radix_call_timeline.py
#           --stamps and --profile, keys and pairs, both backends)
#   rprobe  scripts/radix_call_probe.py at 2^24 (keys and pairs, both backends) in the old tree and
#           this one, and this one with every call inside numba's ensure_context (--attach)
#   atests  the whole test suite on the GPU
set -uo pipefail
stages="${*:-rab}"
source "$(dirname "$0")/gpu_stages.sh"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -2 | tr '\n' ' '), stages: $stages"
if [[ " $stages " == *" rab "* ]]; then
  radix_call_ab
fi
if [[ " $stages " == *" rprobe "* ]]; then
  R=$PWD
  for turn in ${PROBE_TURNS:-old new attach}; do
    flag=""; tree=$turn; [[ $turn == attach ]] && { flag=--attach; tree=new; }
    in_tree $tree timeout ${RPB_T:-200} $py "$R/scripts/radix_call_probe.py" --log2 24 --pairs $flag \
      --json "$OUT/probe-$turn.json" > "$OUT/probe-$turn.txt" 2>&1
    say "probe $turn exit $? ($(el) s)"; tail -17 "$OUT/probe-$turn.txt" | tee -a "$summary"
  done
fi
if [[ " $stages " == *" rstamps "* ]]; then
  timeout ${RST_T:-200} $py scripts/radix_call_timeline.py --log2 24 --stamps 100 --pairs > "$OUT/stamps.txt" 2>&1
  say "stamps exit $? ($(el) s)"; grep -A1 "cupy\|plan.sort" "$OUT/stamps.txt" | cut -c1-600 | tee -a "$summary"
  timeout ${RPR_T:-200} $py scripts/radix_call_timeline.py --log2 24 --profile 200 --pairs --backends cuda-c \
    > "$OUT/profile.txt" 2>&1
  say "profile exit $? ($(el) s)"
fi
if [[ " $stages " == *" atests "* ]]; then  # chapter 4's tests first, then the others
  gpu_pytest atests-radix ${AT1_T:-200} tests/radix
  gpu_pytest atests ${AT_T:-360} tests --ignore=tests/radix
fi
stages_end
