#!/usr/bin/env bash
# The cpasync step (chapter 1, CUDA C) on a GPU: one stage per call, everything under $OUT,
# a short summary last (also in $OUT/cpasync-summary.txt).
#   tests     tests/matmul/test_async_step.py, and test_matmul.py's cpasync cases       (~2 min)
#   bench     gpulab bench matmul: warptile vs cpasync vs cuBLAS at N=4096, N=8192, thin B (~1 min)
#   tune      the cpasync sweep (one lever at a time) next to wt_default, N = 4096 and 8192 (~4 min)
#   sanitize  compute-sanitizer memcheck, racecheck, synccheck, initcheck on cpasync only  (~3 min)
#   bash scripts/gpu_cpasync.sh tests bench      (PYTHON=... to pick the interpreter)
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
py="${PYTHON:-python3}"
T0=$(date +%s)
summary="$OUT/cpasync-summary.txt"; : > "$summary"
note() { echo "$*" | tee -a "$summary"; }
for stage in "${@:-tests}"; do
  case "$stage" in
    tests)
      timeout 400 $py -m pytest -q -x -p no:cacheprovider tests/matmul/test_async_step.py > "$OUT/cpasync-tests.log" 2>&1
      note "tests/matmul/test_async_step.py exit $? ($(( $(date +%s) - T0 )) s): $(tail -1 "$OUT/cpasync-tests.log")"
      timeout 200 $py -m pytest -q -x -p no:cacheprovider tests/matmul/test_matmul.py -k cpasync > "$OUT/cpasync-ladder-tests.log" 2>&1
      note "test_matmul.py -k cpasync exit $?: $(tail -1 "$OUT/cpasync-ladder-tests.log")" ;;
    bench)
      timeout 300 $py -m gpulab bench matmul --backend cuda-c --variants warptile cpasync \
        --sizes N=4096 N=8192 "8192x128x128 (thin B)" --repeat 20 --out "$OUT/bench" > "$OUT/cpasync-bench.txt" 2>&1
      note "bench exit $?"; tee -a "$summary" < "$OUT/cpasync-bench.txt" ;;
    tune)
      labels=$($py -c "from gpulab.matmul import tune; print(' '.join(c[0] for c in tune.configs('cuda-c') if c[1] == 'cpasync'))")
      timeout 560 $py -m gpulab.matmul.tune --backend cuda-c --sizes 4096 8192 --configs wt_default $labels \
        --out "$OUT/tune" > "$OUT/cpasync-tune.txt" 2>&1
      note "tune exit $?"; sed -n '/^cuBLAS N=/,$p' "$OUT/cpasync-tune.txt" | tee -a "$summary" ;;
    sanitize)
      for tool in memcheck racecheck synccheck initcheck; do
        timeout 300 compute-sanitizer --tool "$tool" --report-api-errors no --error-exitcode 9 \
          $py scripts/sanitize.py matmul --backend cuda-c --variants cpasync > "$OUT/cpasync-sanitize-$tool.log" 2>&1
        note "$tool exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|sanitize workload: [0-9]' "$OUT/cpasync-sanitize-$tool.log" | tr '\n' ' ')"
      done ;;
    *) echo "unknown stage $stage (tests, bench, tune, sanitize)" >&2; exit 2 ;;
  esac
done
