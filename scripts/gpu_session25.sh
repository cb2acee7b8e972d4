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
  for turn in old new new old; do
    tag=$turn-$(el); in_tree $turn timeout ${RAB_T:-120} $py -m gpulab bench radix --variants onesweep --sizes 2^24 "pairs 2^24" \
      --repeat 20 --no-progress --out "$OUT/rab-$tag" > "$OUT/rab-$tag.txt" 2>&1
    say "rab $turn exit $? ($(el) s)"
  done
  for f in "$OUT"/rab-*/radix-*.json; do
    $py - "$f" <<'PY' | tee -a "$summary"
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["records"]:
    if r["variant"] == "onesweep":
        print(f"{sys.argv[1].split('/')[-2]:>14} {r['backend']:7} {r['label']:11} kern {r['median_ms']:.4f} public {r['public_median_ms']:.4f} "
              f"ratio {r['public_over_kernel']:.3f} peer {r['peer_median_ms']:.4f}")
PY
  done
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
if [[ " $stages " == *" atests "* ]]; then
  # chapter 4's tests first, then the others; -v, so that a failure is in the log even if the timeout cuts the run
  timeout ${AT1_T:-200} $py -m pytest -v -p no:cacheprovider -n 12 tests/radix > "$OUT/atests-radix.log" 2>&1
  say "atests radix exit $? ($(el) s): $(tail -1 "$OUT/atests-radix.log")"
  grep -E "(FAILED|ERROR) tests" "$OUT/atests-radix.log" | head -20 | tee -a "$summary"
  timeout ${AT_T:-360} $py -m pytest -v -p no:cacheprovider -n 12 tests --ignore=tests/radix > "$OUT/atests.log" 2>&1
  say "atests others exit $? ($(el) s): $(tail -1 "$OUT/atests.log")"
  grep -E "(FAILED|ERROR) tests" "$OUT/atests.log" | head -20 | tee -a "$summary"
fi
stages_end
