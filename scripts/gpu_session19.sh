#!/usr/bin/env bash
# Issue 30 on an H200 (everything under $OUT/w, packed into $OUT/results.tgz beside $OUT/summary.txt):
#   radix   gpulab bench radix, onesweep and local, 2^24, 2^28, pairs 2^24 and 2^28, CUB in the same run;
#           the public call on CuPy arrays (sort, sort_pairs) beside the kernels
#   split   Nsight Compute, one 2^28-key sort per process: CUB SortKeys/SortPairs and onesweep in CUDA C and
#           numba, each kernel's duration and DRAM bytes (scripts/radix_kernel_split.py) -> radix-split.json
#   euler   gpulab bench euler, ruling_set and numba Hierholzer, deep-42M, shallow-42M and undirected-deep-42M,
#           then the stage bounds (gpulab.euler.model)
#   htests  the radix GPU tests of onesweep and its histogram (-k HK), and the Euler pairing tests
#   hab     the histogram change A/B: gpulab bench radix, onesweep, 2^24, 2^28, pairs 2^28, the package before
#           (OLD, a package tree: PYTHONPATH=$OLD) and now in turns A B A B (hab-<code>-<turn>/)
#   hab24   the same A/B at 2^24 keys and pairs, onesweep and local, 20 repeats (hab24-<code>-<turn>/)
#   sanitize compute-sanitizer memcheck and racecheck on onesweep, both backends (scripts/radix_sanitize.py)
set -uo pipefail
stages="${*:-radix}"
source "$(dirname "$0")/gpu_stages.sh"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
dev=h100; [[ $name == *H200* ]] && dev=h200
say "device: $name ($dev), stages: $stages"
if [[ " $stages " == *" radix "* ]]; then
  timeout ${RADIX_T:-300} $py -m gpulab bench radix --variants onesweep local --sizes 2^24 2^28 "pairs 2^24" "pairs 2^28" \
    --repeat ${REPEAT:-10} --no-progress --out "$OUT/radix" > "$OUT/radix.txt" 2>&1
  say "bench radix exit $? ($(el) s)"; grep -E "^(2\^|pairs|size)" "$OUT/radix.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" split "* ]]; then
  mkdir -p "$OUT/split"
  for what in keys pairs; do for who in cub cuda-c numba; do
    timeout 120 ncu --csv --profile-from-start off --cache-control none --clock-control none \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
      $py scripts/radix_kernel_split.py ${LOG2N:-28} $who $what > "$OUT/split/$who-$what.csv" 2> "$OUT/split/$who-$what.err"
    say "split $who $what exit $? ($(el) s)"
  done; done
  $py scripts/radix_kernel_split.py --parse "$OUT"/split/*.csv --json "$OUT/radix-split-$dev.json" | tee -a "$summary"
fi
if [[ " $stages " == *" euler "* ]]; then
  timeout ${EULER_T:-300} $py -m gpulab bench euler --sizes deep-42M shallow-42M undirected-deep-42M \
    --variants ruling_set hierholzer --repeat 7 --no-progress --out "$OUT/euler" > "$OUT/euler.txt" 2>&1
  say "bench euler exit $? ($(el) s)"; grep -E "42M|^size" "$OUT/euler.txt" | tee -a "$summary"
  timeout 60 $py -m gpulab.euler.model "$OUT"/euler/euler-*.json "$OUT/euler" > "$OUT/euler-model.txt" 2>&1
  say "euler model exit $?"; tail -25 "$OUT/euler-model.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" htests "* ]]; then
  timeout ${T_T:-200} $py -m pytest -q -p no:cacheprovider -n 8 tests/radix/test_onesweep_hist.py tests/radix/test_radix.py \
    tests/euler/test_euler.py -k "${HK:-onesweep or hist or pairing}" > "$OUT/htests.log" 2>&1
  say "tests exit $? ($(el) s): $(tail -1 "$OUT/htests.log")"; grep -E "^(FAILED|ERROR)" "$OUT/htests.log" | head | tee -a "$summary"
fi
if [[ " $stages " == *" hab "* ]]; then
  for turn in 1 2; do for code in old new; do
    in_tree $code timeout 200 $py -m gpulab bench radix --variants onesweep \
      --sizes 2^24 2^28 "pairs 2^28" --repeat 10 --no-progress --out "$OUT/hab-$code-$turn" > "$OUT/hab-$code-$turn.txt" 2>&1
    say "bench $code $turn exit $? ($(el) s)"; grep -E "^(2\^|pairs)" "$OUT/hab-$code-$turn.txt" | tee -a "$summary"
    in_tree $code $py -c "import gpulab.radix.host as h; print('  code ran:', h.__file__, \
      'HIST_BLOCKS_PER_SM' in dir(h))" 2>/dev/null | tee -a "$summary"
  done; done
fi
if [[ " $stages " == *" hab24 "* ]]; then
  for turn in 1 2; do for code in old new; do
    in_tree $code timeout 100 $py -m gpulab bench radix --variants onesweep local \
      --sizes 2^24 "pairs 2^24" --repeat 20 --no-progress --out "$OUT/hab24-$code-$turn" > "$OUT/hab24-$code-$turn.txt" 2>&1
    say "bench $code $turn exit $? ($(el) s)"; grep -E "^(2\^|pairs)" "$OUT/hab24-$code-$turn.txt" | tee -a "$summary"
  done; done
fi
if [[ " $stages " == *" sanitize "* ]]; then
  for t in memcheck racecheck; do
    timeout ${SAN_T:-100} compute-sanitizer --tool $t --report-api-errors no --error-exitcode 9 $py scripts/radix_sanitize.py onesweep \
      > "$OUT/sanitize-$t.log" 2>&1
    say "$t exit $? ($(el) s): $(grep -c ' ok  ' "$OUT/sanitize-$t.log") ok, $(grep -c WRONG "$OUT/sanitize-$t.log") wrong"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/sanitize-$t.log" | tail -2 | tee -a "$summary"
  done
fi
stages_end
