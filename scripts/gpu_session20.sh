#!/usr/bin/env bash
# Session 20 on the GPUs (everything under $OUT/w, packed into $OUT/results.tgz beside $OUT/summary.txt):
#   dask    (two GPUs, needs .daskkit: bash scripts/pack_daskkit.sh) scripts/bench_distributed.py --only subset, ${DASK_RUNS:-2} runs of the
#           current code (one rank range per worker, the default) -> dask-<run>/distributed-<device>x2.json
#   esplit  Nsight Compute, one deep-42M Euler circuit per backend on GPU 0, each kernel's duration and DRAM
#           bytes (scripts/euler_kernel_split.py) -> euler-split.json
#   ebench  gpulab bench euler, ruling_set and numba Hierholzer, deep-42M, shallow-42M and undirected-deep-42M
#           (on GPU 0), then the stage bounds (gpulab.euler.model)
#   etests  the Euler GPU tests of the ruling set, its pick, its jumping and the trails
#   esan    compute-sanitizer memcheck and racecheck on chapter 5, both backends (scripts/sanitize.py)
#   eab     an A/B of the labelling (the pick, then the jumping that stops on the device): gpulab bench euler, ruling_set, deep-42M, shallow-42M and undirected-deep-42M,
#           the package before (OLD, a package tree) and now in turns A B A B (eab-<code>-<turn>/)
set -uo pipefail
stages="${*:-dask}"
source "$(dirname "$0")/gpu_stages.sh"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -2 | tr '\n' ' '), stages: $stages"
if [[ " $stages " == *" dask "* ]]; then
  ( source .daskkit/install.sh ) > "$OUT/daskkit.log" 2>&1; say "daskkit: $(tail -1 "$OUT/daskkit.log")"
  for run in $(seq 1 ${DASK_RUNS:-2}); do
    ( source .daskkit/install.sh > /dev/null && timeout ${DASK_T:-240} $py scripts/bench_distributed.py --only subset \
      --repeat ${DASK_REPEAT:-5} --out "$OUT/dask-$run" ) > "$OUT/dask-$run.log" 2>&1
    say "dask run $run exit $? ($(el) s)"
    grep -E "round trip|scatter of|^subset C|^case" "$OUT/dask-$run.log" | tail -8 | tee -a "$summary"
  done
fi
if [[ " $stages " == *" esplit "* ]]; then
  mkdir -p "$OUT/esplit"
  for b in cuda-c numba; do
    CUDA_VISIBLE_DEVICES=0 timeout 200 ncu --csv --profile-from-start off --cache-control none --clock-control none \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
      $py scripts/euler_kernel_split.py ${EULER_E:-41943040} $b > "$OUT/esplit/$b.csv" 2> "$OUT/esplit/$b.err"
    say "esplit $b exit $? ($(el) s)"
  done
  $py scripts/euler_kernel_split.py --parse "$OUT"/esplit/*.csv --json "$OUT/euler-split.json" | tee -a "$summary"
fi
if [[ " $stages " == *" etests "* ]]; then
  timeout ${T_T:-300} $py -m pytest -q -p no:cacheprovider -n 8 tests/euler/test_pick_splitters.py tests/euler/test_euler.py \
    tests/euler/test_stage_bounds.py -k "${EK:-ruling or trail or label or pick or bound}" > "$OUT/etests.log" 2>&1
  say "etests exit $? ($(el) s): $(tail -1 "$OUT/etests.log")"; grep -E "^(FAILED|ERROR)" "$OUT/etests.log" | head | tee -a "$summary"
fi
if [[ " $stages " == *" esan "* ]]; then
  timeout ${ST:-200} $py scripts/sanitize.py --all-tools --jobs 4 --tools memcheck,racecheck --timeout 150 --out "$OUT/sanitize" euler \
    > "$OUT/sanitize.log" 2>&1
  say "sanitize exit $? ($(el) s)"; tail -6 "$OUT/sanitize.log" | tee -a "$summary"
fi
if [[ " $stages " == *" eab "* ]]; then
  for turn in 1 2; do for code in old new; do
    in_tree $code timeout 200 $py -m gpulab bench euler --variants ruling_set \
      --sizes deep-42M shallow-42M undirected-deep-42M --repeat 7 --no-progress --out "$OUT/eab-$code-$turn" \
      > "$OUT/eab-$code-$turn.txt" 2>&1
    say "eab $code $turn exit $? ($(el) s)"; grep -E "42M" "$OUT/eab-$code-$turn.txt" | tee -a "$summary"
  done; done
fi
if [[ " $stages " == *" ebench "* ]]; then
  euler_bench_42m
fi
stages_end
