#!/usr/bin/env bash
# Session 29 on the GPU (everything under $OUT/w, packed into $OUT/results.tgz beside $OUT/summary.txt):
#   rsteps  scripts/radix_call_probe.py at 2^24 keys and pairs with --timeline --steps --readback --out: every
#           launch and every step of the public call before the plan's sort stamped on entry and return,
#           and the host time of the offsets' copy queued with the GPU idle and busy (RP_TURNS: trees)
#   rplain  scripts/radix_call_probe.py at 2^24 keys and pairs without stamps, trees old/new/new/old (RPL_TURNS)
#   rback   scripts/readback_probe.py: the host time of a small readback's pieces, GPU idle and busy
#   etests  chapter 5's Euler GPU tests (its edges are paired by radix sort plans)
#   rtests  radix's GPU tests of the public call's results (CuPy, PyTorch, out=, dtypes)
#   rbench24 gpulab bench radix, every variant at 2^24 keys and pairs with CUB, RB_REPEAT repeats, appended to a
#           copy of the committed radix-h200.json (radix_bench_2p24)
#   rab     gpulab bench radix, onesweep at 2^24 keys and pairs, old/new/new/old (radix_call_ab)
set -uo pipefail
stages="${*:-rsteps}"
source "$(dirname "$0")/gpu_stages.sh"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -2 | tr '\n' ' '), stages: $stages"
if [[ " $stages " == *" rsteps "* ]]; then
  radix_probe_turns rsteps "${RP_TURNS:-new}" --out --timeline --steps --readback
fi
if [[ " $stages " == *" rplain "* ]]; then
  RP_GREP=" on " radix_probe_turns rplain "${RPL_TURNS:-old new new old}"
fi
if [[ " $stages " == *" rback "* ]]; then
  timeout ${RBK_T:-120} $py scripts/readback_probe.py --json "$OUT/readback.json" > "$OUT/readback.txt" 2>&1
  say "readback probe exit $? ($(el) s)"; grep -v -i warn "$OUT/readback.txt" | tail -8 | tee -a "$summary"
fi
if [[ " $stages " == *" rtests "* ]]; then
  gpu_pytest rtests ${RT_T:-200} ${RTESTS:-tests/radix/test_out_dtypes.py tests/radix/test_call_overhead.py tests/test_foundation.py}
fi
if [[ " $stages " == *" rbench24 "* ]]; then
  radix_bench_2p24
fi
if [[ " $stages " == *" etests "* ]]; then
  gpu_pytest etests ${ET_T:-150} ${ETESTS:-tests/euler}
fi
if [[ " $stages " == *" rab "* ]]; then
  radix_call_ab
fi
stages_end
