#!/usr/bin/env bash
# Session 22 on the GPU (everything under $OUT/w, packed into $OUT/results.tgz beside $OUT/summary.txt):
#   ltests  the GPU tests of session 21's launch changes not yet run on a GPU (tests/test_launch_numba.py,
#           cudac packing), chapter 4's size default and the radix GPU tests
#   r30     onesweep at exactly 2^30 keys, both backends (scripts/radix_2p30_check.py), with its limit 2^30
#   e30     gpulab bench euler, ruling_set, deep-2^30 (one plan of about 81 GiB), warm-up 1, median of 3
#   etests  chapter 5's kernel tests of find_links / min_links and the Euler tests, on the GPU
#   eab     the circuit graph's links (find_links, min_links: one label gather an out-slot, one append a
#           segment) A/B: the package with HEAD's Euler kernels (OLD, default abold) and now, in turns
#           A B A B, both backends: deep-42M, shallow-42M, undirected-deep-42M (repeat 7) and deep-2^30
#           (warm-up 1, repeat 3) -> eab-<code>-<turn>/, eab30-<code>-<turn>/
#   ebench  gpulab bench euler, ruling_set and numba Hierholzer, deep-42M, shallow-42M, undirected-deep-42M
#   pab     the pairing's permutation by a sort past SCATTER_SLICES slices (EulerPlan.permute_by_sort) A/B: OLD
#           (default abold: the same tree with the one-launch scatter) and now in turns A B A B, both backends,
#           deep-2^30 (warm-up 1, repeat 3) -> pab-<code>-<turn>/; first its tests on the GPU
#   pprobe  where the pairing's time goes at 2^30 edges, CUDA C (scripts/euler_pairing_probe.py --edges 2^30)
#   pairsab onesweep key-value sorts of 2^28 keys, CUDA C, under VALUE_DIGITS and the key-value tile's blocks per
#           SM, CUB's SortPairs in the same process, 3 rounds in rotated order (scripts/radix_pairs_ab.py)
#   dtests  (two GPUs, needs .daskkit: bash scripts/pack_daskkit.sh) tests/test_distributed.py, one worker per GPU,
#           with session 21's launch paths (launch_numba's packed cuLaunchKernel in worker threads)
#   ktests  the Euler kernel tests after the review fixes (both backends)
#   rbench  gpulab bench radix, local and onesweep at 2^24, 2^28, pairs 2^24, pairs 2^28 (CUB in the same run)
set -uo pipefail
stages="${*:-ltests}"
source "$(dirname "$0")/gpu_stages.sh"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -2 | tr '\n' ' '), stages: $stages"
if [[ " $stages " == *" ltests "* ]]; then
  timeout ${LT_T:-150} $py -m pytest -q -p no:cacheprovider -n 8 tests/test_launch_numba.py tests/test_cudac_packing.py \
    tests/radix ${LT_EXTRA:-} > "$OUT/ltests.log" 2>&1
  say "ltests exit $? ($(el) s): $(tail -1 "$OUT/ltests.log")"; grep -E "^(FAILED|ERROR)" "$OUT/ltests.log" | head | tee -a "$summary"
fi
if [[ " $stages " == *" r30 "* ]]; then
  timeout ${R30_T:-150} $py scripts/radix_2p30_check.py > "$OUT/r30.txt" 2>&1
  say "radix 2^30 check exit $? ($(el) s)"; grep -E "^(cuda-c|numba):|Error" "$OUT/r30.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" e30 "* ]]; then
  timeout ${E30_T:-300} $py -m gpulab bench euler --sizes deep-2^30 --variants ruling_set --warmup 1 --repeat 3 \
    --no-progress --out "$OUT/euler30" > "$OUT/euler30.txt" 2>&1
  say "bench euler 2^30 exit $? ($(el) s)"; grep -E "2\^30|^size" "$OUT/euler30.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" etests "* ]]; then
  timeout ${ET_T:-200} $py -m pytest -q -p no:cacheprovider -n 8 tests/euler/test_find_links.py tests/euler/test_euler.py \
    tests/euler/test_pick_splitters.py > "$OUT/etests.log" 2>&1
  say "etests exit $? ($(el) s): $(tail -1 "$OUT/etests.log")"; grep -E "^(FAILED|ERROR)" "$OUT/etests.log" | head | tee -a "$summary"
fi
if [[ " $stages " == *" eab "* ]]; then
  for turn in 1 2; do for code in old new; do
    in_tree $code timeout 150 $py -m gpulab bench euler --variants ruling_set --sizes deep-42M shallow-42M \
      undirected-deep-42M --repeat 7 --no-progress --out "$OUT/eab-$code-$turn" > "$OUT/eab-$code-$turn.txt" 2>&1
    say "eab $code $turn exit $? ($(el) s)"; grep -E "42M" "$OUT/eab-$code-$turn.txt" | tee -a "$summary"
    in_tree $code timeout 120 $py -m gpulab bench euler --variants ruling_set --sizes deep-2^30 --warmup 1 --repeat 3 \
      --no-progress --out "$OUT/eab30-$code-$turn" > "$OUT/eab30-$code-$turn.txt" 2>&1
    say "eab30 $code $turn exit $? ($(el) s)"; grep -E "2\^30" "$OUT/eab30-$code-$turn.txt" | tee -a "$summary"
  done; done
fi
if [[ " $stages " == *" ebench "* ]]; then
  euler_bench_42m
fi
if [[ " $stages " == *" pab "* ]]; then
  timeout 120 $py -m pytest -q -p no:cacheprovider -n 8 tests/euler/test_permute_by_sort.py tests/euler/test_find_links.py \
    > "$OUT/ptests.log" 2>&1
  say "ptests exit $? ($(el) s): $(tail -1 "$OUT/ptests.log")"; grep -E "^(FAILED|ERROR)" "$OUT/ptests.log" | head | tee -a "$summary"
  for turn in 1 2; do for code in old new; do
    in_tree $code timeout 120 $py -m gpulab bench euler --variants ruling_set --sizes deep-2^30 --warmup 1 --repeat 3 \
      --no-progress --out "$OUT/pab-$code-$turn" > "$OUT/pab-$code-$turn.txt" 2>&1
    say "pab $code $turn exit $? ($(el) s)"; grep -E "2\^30" "$OUT/pab-$code-$turn.txt" | tee -a "$summary"
  done; done
fi
if [[ " $stages " == *" pprobe "* ]]; then
  timeout ${PP_T:-300} $py scripts/euler_pairing_probe.py --edges 1073741824 --backends cuda-c --repeat 3 \
    --json "$OUT/pairing-probe-2p30.json" > "$OUT/pprobe.txt" 2>&1
  say "pairing probe exit $? ($(el) s)"; grep -E "^cuda-c" "$OUT/pprobe.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" pairsab "* ]]; then
  timeout ${PAB_T:-240} $py scripts/radix_pairs_ab.py --rounds 3 --json "$OUT/radix-pairs-ab.json" --sets "" \
    VALUE_DIGITS=1 VALUE_DIGITS=1,PAIRS_ONESWEEP_MIN_BLOCKS=3 PAIRS_ONESWEEP_MIN_BLOCKS=3 \
    VALUE_DIGITS=1,PAIRS_ITEMS=12,PAIRS_ONESWEEP_MIN_BLOCKS=3 > "$OUT/pairsab.txt" 2>&1
  say "pairs ab exit $? ($(el) s)"; grep -A8 "== medians" "$OUT/pairsab.txt" | tee -a "$summary"
  grep -E "keys (ok|WRONG)" "$OUT/pairsab.txt" | cut -c1-200 | tee -a "$summary"
fi
if [[ " $stages " == *" dtests "* ]]; then
  ( source .daskkit/install.sh ) > "$OUT/daskkit.log" 2>&1; say "daskkit: $(tail -1 "$OUT/daskkit.log")"
  ( source .daskkit/install.sh > /dev/null && timeout ${DT_T:-360} $py -m pytest -q -p no:cacheprovider \
    tests/test_distributed.py ${DT_K:+-k "$DT_K"} ) > "$OUT/dtests.log" 2>&1
  say "dtests exit $? ($(el) s): $(tail -1 "$OUT/dtests.log")"; grep -E "^(FAILED|ERROR)" "$OUT/dtests.log" | head | tee -a "$summary"
fi
if [[ " $stages " == *" ktests "* ]]; then  # the kernels' tests after the review (append_links, pair's empty slice)
  timeout ${KT_T:-150} $py -m pytest -q -p no:cacheprovider -n 8 tests/euler/test_find_links.py \
    tests/euler/test_permute_by_sort.py tests/euler/test_euler.py -k "cuda or numba" > "$OUT/ktests.log" 2>&1
  say "ktests exit $? ($(el) s): $(tail -1 "$OUT/ktests.log")"; grep -E "^(FAILED|ERROR)" "$OUT/ktests.log" | head | tee -a "$summary"
fi
if [[ " $stages " == *" rbench "* ]]; then
  timeout ${RB_T:-240} $py -m gpulab bench radix --variants local onesweep --sizes 2^24 2^28 "pairs 2^24" "pairs 2^28" \
    --repeat 10 --no-progress --out "$OUT/radix" > "$OUT/radix.txt" 2>&1
  say "bench radix exit $? ($(el) s)"; grep -E "^(2\^|pairs)" "$OUT/radix.txt" | tee -a "$summary"
fi
stages_end
