#!/usr/bin/env bash
# Session 28 on the GPU (everything under $OUT/w, packed into $OUT/results.tgz beside $OUT/summary.txt):
#   rprobe  scripts/radix_call_probe.py at 2^24 keys and pairs with --timeline --out (every launch of a call
#           stamped on the host clock; the public call with out= beside it), the old tree then the new
#           (old = abold, made by `git archive <rev> gpulab | tar x -C abold`)
#   trace   scripts/matmul_block_trace.py: warptile, streamk and streamk with its stream-K blocks first,
#           block by block, at 4096^3, 8192^3 and 4224x4096x4096 (TR_SHAPES, TR_VARIANTS: others)
#   sab     scripts/matmul_block_trace.py, streamk (CUDA C) at 4096^3, 8192^3 and 4099^3 in the trees old/new/new/old
#           (the stream-K blocks' segments taken last to first in the new tree)
#   mtests  chapter 1's stream-K and matmul GPU tests
#   mmbench gpulab bench matmul of the fast variants at N = 4096, 8192, 4099 and thin B (as session 27's)
#   rtests  radix's GPU tests of the public call's results (CuPy, PyTorch, out=, dtypes)
#   rab     gpulab bench radix, onesweep at 2^24 keys and pairs, old/new/new/old (radix_call_ab)
#   rbench1 gpulab bench radix, onesweep only at 2^24 keys and pairs, RB_REPEAT repeats (--append to a copy
#           of the committed JSON)
set -uo pipefail
stages="${*:-rprobe}"
source "$(dirname "$0")/gpu_stages.sh"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -2 | tr '\n' ' '), stages: $stages"
if [[ " $stages " == *" rprobe "* ]]; then
  R=$PWD
  for turn in ${RP_TURNS:-old new}; do
    tag=$turn-$(el); in_tree $turn timeout ${RP_T:-150} $py "$R/scripts/radix_call_probe.py" --log2 24 --pairs --out --timeline \
      --calls ${RP_CALLS:-60} --blocks ${RP_BLOCKS:-2} --json "$OUT/rprobe-$tag.json" > "$OUT/rprobe-$tag.txt" 2>&1
    say "radix probe $turn exit $? ($(el) s)"; grep -v -i warn "$OUT/rprobe-$tag.txt" | grep -A60 "^backend" | tee -a "$summary"
  done
fi
if [[ " $stages " == *" trace "* ]]; then
  timeout ${TR_T:-240} $py scripts/matmul_block_trace.py --shapes ${TR_SHAPES:-4096x4096x4096 8192x8192x8192 4224x4096x4096} \
    --variants ${TR_VARIANTS:-warptile streamk skfirst=streamk:WT_SK_FIRST=1} --repeat ${TR_REPEAT:-10} \
    --json "$OUT/trace.json" --npz "$OUT/trace.npz" > "$OUT/trace.txt" 2>&1
  say "block trace exit $? ($(el) s)"; grep -v -i warn "$OUT/trace.txt" | grep -A20 "^shape" | tee -a "$summary"
fi
if [[ " $stages " == *" sab "* ]]; then
  R=$PWD
  for turn in old new new old; do
    tag=$turn-$(el); in_tree $turn timeout ${SAB_T:-120} $py "$R/scripts/matmul_block_trace.py" --variants ${SAB_VARIANTS:-streamk} \
      --shapes ${SAB_SHAPES:-4096x4096x4096 8192x8192x8192 4099x4099x4099} --repeat 10 --json "$OUT/sab-$tag.json" > "$OUT/sab-$tag.txt" 2>&1
    say "stream-K order $turn exit $? ($(el) s)"; grep -v -i warn "$OUT/sab-$tag.txt" | grep -A8 "^shape" | tail -n +2 | sed "s/^/$turn /" | tee -a "$summary"
  done
fi
if [[ " $stages " == *" mtests "* ]]; then
  matmul_mtests
fi
if [[ " $stages " == *" mmbench "* ]]; then
  matmul_bench_fast
fi
if [[ " $stages " == *" rtests "* ]]; then
  gpu_pytest rtests ${RT_T:-200} ${RTESTS:-tests/radix/test_out_dtypes.py tests/radix/test_call_overhead.py tests/test_foundation.py}
fi
if [[ " $stages " == *" rab "* ]]; then
  radix_call_ab
fi
if [[ " $stages " == *" rbench1 "* ]]; then
  mkdir -p "$OUT/rbench" && cp docs/benchmarks/radix-h200.json "$OUT/rbench/"
  timeout ${RB_T:-200} $py -m gpulab bench radix --variants onesweep --sizes 2^24 "pairs 2^24" --repeat ${RB_REPEAT:-30} \
    --no-progress --append --out "$OUT/rbench" > "$OUT/rbench.txt" 2>&1
  say "bench radix onesweep 2^24 exit $? ($(el) s)"; grep -E "onesweep" "$OUT/rbench.txt" | tee -a "$summary"
fi
stages_end
