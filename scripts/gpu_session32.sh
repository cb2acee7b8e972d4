#!/usr/bin/env bash
# Session 32 on the GPU (everything under $OUT/w, packed into $OUT/results.tgz beside $OUT/summary.txt):
#   tiles   scripts/matmul_small_tiles.py: warptile / streamk with smaller block tiles at thin and small shapes,
#           both backends, beside cuBLAS (TI_ARGS: more arguments)
#   ab      scripts/matmul_small_ab.py: small against streamk in turns, kernel, queued and public call -> small-ab.json
#   mtests  chapter 1's stream-K and matmul GPU tests (matmul_mtests; MTESTS: others)
#   mbench  gpulab bench matmul of the fast variants, small among them (matmul_bench_fast) -> $OUT/mmbench
#   mab     scripts/matmul_call_ab.py on the thin product in turns old/new/new/old (in_tree; old: abold, made from the
#           session's start), streamk in both backends, plus small in the new tree -> mab-<tree>-<seconds>.json
#   profile scripts/matmul_call_profile.py: the public call's host time, a cProfile, the floor -> profile.json
#   mthin   gpulab bench matmul, the fast variants and small at the thin product (20 repeats), appended to a copy of
#           the committed matmul-h200-fast.json (its other sizes kept) -> $OUT/mthin/
#   msan    compute-sanitizer memcheck and racecheck on scripts/sanitize.py's chapter 1 workload for small (both
#           backends), and memcheck on small's forced stream-K splits (test_stream_k.py -k small)
#   rtests  radix's GPU tests (RTESTS, default the distinct tests of test_call_overhead.py and test_radix.py)
set -uo pipefail
stages="${*:-tiles}"
source "$(dirname "$0")/gpu_stages.sh"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -2 | tr '\n' ' '), stages: $stages"
if [[ " $stages " == *" tiles "* ]]; then
  timeout ${TI_T:-400} $py scripts/matmul_small_tiles.py --json "$OUT/small-tiles.json" ${TI_ARGS:-} > "$OUT/small-tiles.txt" 2>&1
  say "small tiles exit $? ($(el) s)"; sed -n '/^shape /,$p' "$OUT/small-tiles.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" ab "* ]]; then
  timeout ${AB_T:-300} $py scripts/matmul_small_ab.py --turns ${AB_TURNS:-3} --json "$OUT/small-ab.json" > "$OUT/small-ab.txt" 2>&1
  say "small ab exit $? ($(el) s)"; sed -n '/^shape /,$p' "$OUT/small-ab.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" mab "* ]]; then
  R=$PWD
  for turn in old new new old; do
    extra=""; [[ $turn == new ]] && extra="small:cuda-c small:numba"
    tag=$turn-$(el); in_tree $turn timeout ${MAB_T:-150} $py "$R/scripts/matmul_call_ab.py" --sizes "8192x128x128 (thin B)" \
      --variants streamk:cuda-c streamk:numba $extra --repeat 20 --tag $turn --json "$OUT/mab-$tag.json" > "$OUT/mab-$tag.txt" 2>&1
    say "matmul call ab $turn exit $? ($(el) s)"; grep -E "^(old|new) " "$OUT/mab-$tag.txt" | tee -a "$summary"
  done
fi
if [[ " $stages " == *" profile "* ]]; then
  timeout ${PR_T:-120} $py scripts/matmul_call_profile.py --variants none:cuda-c small:cuda-c none:numba small:numba \
    --json "$OUT/profile.json" > "$OUT/profile.txt" 2>&1
  say "profile exit $? ($(el) s)"; sed -n '/^variant /,$p' "$OUT/profile.txt" | tee -a "$summary"
fi
[[ " $stages " == *" mtests "* ]] && matmul_mtests
[[ " $stages " == *" mbench "* ]] && matmul_bench_fast
if [[ " $stages " == *" mthin "* ]]; then
  mkdir -p "$OUT/mthin" && cp docs/benchmarks/matmul-h200-fast.json "$OUT/mthin/matmul-h200.json"
  timeout ${MT2_T:-300} $py -m gpulab bench matmul --variants register prefetch wide vec4 warptile streamk small cpasync \
    --sizes "8192x128x128 (thin B)" --repeat 20 --no-progress --append --out "$OUT/mthin" > "$OUT/mthin.txt" 2>&1
  say "bench matmul thin exit $? ($(el) s)"; grep -E "^8192x" "$OUT/mthin.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" msan "* ]]; then
  for tool in memcheck racecheck; do
    for backend in cuda-c numba; do
      timeout ${ST:-80} compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 $py scripts/sanitize.py \
        matmul --backend $backend --variants small > "$OUT/sanitize-$tool-$backend.log" 2>&1
      say "sanitize.py matmul small $backend $tool exit $? ($(el) s): $(grep -E "SUMMARY" "$OUT/sanitize-$tool-$backend.log" | tail -1)"
    done
  done
  timeout ${MS_T:-120} compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 $py -m pytest -q \
    -p no:cacheprovider tests/matmul/test_stream_k.py -k "small" > "$OUT/msan-memcheck.log" 2>&1
  say "memcheck on small's splits exit $? ($(el) s): $(grep -E "SUMMARY" "$OUT/msan-memcheck.log" | tail -1) $(tail -1 "$OUT/msan-memcheck.log")"
fi
if [[ " $stages " == *" rtests "* ]]; then
  gpu_pytest rtests ${RT_T:-200} ${RTESTS:-tests/radix/test_call_overhead.py tests/radix/test_radix.py -k distinct}
fi
stages_end
