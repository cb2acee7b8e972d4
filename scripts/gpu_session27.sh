#!/usr/bin/env bash
# Session 27 on the GPU (everything under $OUT/w, packed into $OUT/results.tgz beside $OUT/summary.txt):
#   probe   scripts/matmul_waves_probe.py at 4096^3 and 8192^3 (and 4224x4096x4096, a whole number of
#           waves): warptile, streamk, and streamk with its stream-K blocks first (WT_SK_FIRST=1) at
#           SK_MIN 16 (the default), 8 and 64 (PR_VARIANTS: others); cuBLAS in the same run; turns PR_TURNS
#           (default 1 2), the even ones with the variants in reverse order
#   mtests  chapter 1's stream-K and matmul GPU tests (the kernel's block-to-tile mapping moved)
#   mmbench gpulab bench matmul of the fast variants at N = 4096, 8192, 4099 and thin B, the public call
#           on CuPy arrays (cuBLAS through CuPy in the same run) -> $OUT/mmbench
#   mbd     scripts/matmul_host_breakdown.py: the public call's host steps, each timed alone (thin B)
#   mab     scripts/matmul_call_ab.py (public call on CuPy arrays, kernel alone, cuBLAS) in the trees
#           old/new/new/old (old = abold, made by `git archive <rev> gpulab | tar x -C abold`)
#   rbench24 gpulab bench radix, every variant at 2^24 keys and pairs, RB_REPEAT repeats (--append to a
#           copy of the committed JSON)
set -uo pipefail
stages="${*:-probe}"
source "$(dirname "$0")/gpu_stages.sh"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -2 | tr '\n' ' '), stages: $stages"
if [[ " $stages " == *" probe "* ]]; then
  vs="${PR_VARIANTS:-warptile streamk skfirst=streamk:WT_SK_FIRST=1 skfirst8=streamk:WT_SK_FIRST=1,SK_MIN=8 skfirst64=streamk:WT_SK_FIRST=1,SK_MIN=64}"
  rev=$(echo $vs | tr ' ' '\n' | tac | tr '\n' ' ')
  for turn in ${PR_TURNS:-1 2}; do
    order="$vs"; [[ $((turn % 2)) == 0 ]] && order="$rev"
    timeout ${PR_T:-200} $py scripts/matmul_waves_probe.py --variants $order --repeat ${PR_REPEAT:-20} \
      --shapes ${PR_SHAPES:-4096x4096x4096 8192x8192x8192 4224x4096x4096} --json "$OUT/waves-$turn.json" > "$OUT/waves-$turn.txt" 2>&1
    say "probe $turn exit $? ($(el) s)"; grep -v -i warn "$OUT/waves-$turn.txt" | tail -8 | tee -a "$summary"
  done
fi
if [[ " $stages " == *" mtests "* ]]; then
  matmul_mtests
fi
if [[ " $stages " == *" mmbench "* ]]; then
  matmul_bench_fast
fi
if [[ " $stages " == *" mbd "* ]]; then
  timeout ${MBD_T:-150} $py scripts/matmul_host_breakdown.py ${MBD_ARGS:-} --json "$OUT/mbd.json" > "$OUT/mbd.txt" 2>&1
  say "matmul host breakdown exit $? ($(el) s)"; grep -v -i warn "$OUT/mbd.txt" | tail -27 | tee -a "$summary"
fi
if [[ " $stages " == *" mab "* ]]; then
  R=$PWD
  for turn in old new new old; do
    tag=$turn-$(el); in_tree $turn timeout ${MAB_T:-150} $py "$R/scripts/matmul_call_ab.py" --repeat 20 --tag $turn \
      --variants ${MAB_VARIANTS:-streamk:cuda-c streamk:numba warptile:cuda-c} --json "$OUT/mab-$tag.json" > "$OUT/mab-$tag.txt" 2>&1
    say "matmul call $turn exit $? ($(el) s)"; grep -E "^(old|new) " "$OUT/mab-$tag.txt" | tee -a "$summary"
  done
fi
if [[ " $stages " == *" rbench24 "* ]]; then
  radix_bench_2p24
fi
stages_end
