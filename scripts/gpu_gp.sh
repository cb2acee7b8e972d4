#!/usr/bin/env bash
# Chapter 3 on the GPU machine, the stages beyond scripts/gpu_run.sh gp:
#   final     ONE call that tunes and measures everything (about 7-8 minutes on the H200):
#             tune (python -m gpulab.gp.tune: block shapes, days per pass, words per trading pass, both
#             backends, at seed size; a breakdown of one evaluation) -> gpulab bench gp with the
#             winners (GPULAB_GP_PARAMS) -> 50 generations of gpulab gp evolve at seed size (default
#             variant) -> the train/test experiment in the time left -> ONE tarball
#             $OUT/gp-results.tgz and a summary table, printed last (also $OUT/summary.txt)
#   compile   the compile report (registers / local memory / spills of every kernel)
#   evolve    50 generations at seed size (25,000 × 32 stocks × 768 days), timed end to end,
#             breeding included, for the default variant (and register numba, for comparison)
#   tune      the sweep alone (python -m gpulab.gp.tune)
#   experiment the chapter's train/test experiment on the GPU at the paper's population
#   all       compile, evolve, tune, experiment
# Usage:  bash scripts/gpu_gp.sh [final|compile|evolve|tune|experiment|all]    (writes under $OUT)
# Dry run on a CPU (simulator, tiny sizes, about 5 minutes):
#   GPULAB_DEVICE=sim GP_POP=3 GP_GENS=2 GP_STOCKS=2 GP_DAYS=70 GP_TEST_DAYS=20 GP_BENCH_ARGS=--quick \
#     GP_EXP_POP=20 GP_EXP_GENS=1 GP_EXP_SEEDS=1 GP_EXP_STOCKS=8 GP_EXP_TEST_DAYS=20 bash scripts/gpu_gp.sh final
set -uo pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
stage=${1:-all}
py="${PYTHON:-python3}"
POP=${GP_POP:-25000}
STOCKS=${GP_STOCKS:-32}
DAYS=${GP_DAYS:-768}
GENS=${GP_GENS:-50}
T0=$(date +%s)
elapsed() { echo $(( $(date +%s) - T0 )); }
$py -m gpulab info | tee "$OUT/info.txt"
if [[ $stage == compile || $stage == all || $stage == final ]]; then
  timeout "${GP_COMPILE_TIMEOUT:-90}" $py -m gpulab compile-check gp > "$OUT/compile-gp.txt" 2>&1
  echo "compile-check exit $? ($(elapsed) s)"; grep -E "gp_(register|bitsliced|fitness)" "$OUT/compile-gp.txt" | head -12
fi
if [[ $stage == tune || $stage == all || $stage == final ]]; then
  timeout "${GP_TUNE_TIMEOUT:-200}" $py -m gpulab.gp.tune --out "$OUT" --population "$POP" --stocks "$STOCKS" \
    --days "$DAYS" --budget "${GP_TUNE_BUDGET:-140}" > "$OUT/tune-gp.txt" 2>&1
  echo "tune exit $? ($(elapsed) s)"; sed -n '/^winners/,$p' "$OUT/tune-gp.txt"
fi
if [[ $stage == final ]]; then
  if [[ -f $OUT/gp-params.json ]]; then export GPULAB_GP_PARAMS="$OUT/gp-params.json"; fi
  echo "bench with GPULAB_GP_PARAMS=${GPULAB_GP_PARAMS:-}"
  # shellcheck disable=SC2086
  timeout "${GP_BENCH_TIMEOUT:-230}" $py -m gpulab bench gp --out "$OUT" --repeat "${REPEAT:-10}" ${GP_BENCH_ARGS:-} \
    > "$OUT/bench-gp.log" 2>&1
  echo "bench exit $? ($(elapsed) s)"
fi
if [[ $stage == evolve || $stage == all || $stage == final ]]; then
  # variant:backend pairs; the default variant (bitsliced, numba) first
  runs=${GP_EVOLVE_RUNS:-bitsliced:numba register:numba}
  [[ $stage == final ]] && runs=${GP_EVOLVE_RUNS:-bitsliced:numba bitsliced:cuda-c}
  for vb in $runs; do
    v=${vb%%:*}; b=${vb##*:}
    stem="gp-evolve-$v"; [[ $b != numba ]] && stem="gp-evolve-$v-$b"
    start=$(date +%s.%N)
    timeout "${GP_EVOLVE_TIMEOUT:-90}" $py -m gpulab gp evolve --population "$POP" --generations "$GENS" --stocks "$STOCKS" \
      --days "$DAYS" --test-days "${GP_TEST_DAYS:-256}" --variant "$v" --backend "$b" --seed 1 --out "$OUT" \
      --stem "$stem" > "$OUT/evolve-$v-$b.txt" 2>&1
    rc=$?
    end=$(date +%s.%N)
    echo "evolve $v[$b] exit $rc; process wall time $($py -c "print(round($end - $start, 2))") s (imports, data and kernel compilation included)"
    tail -1 "$OUT/evolve-$v-$b.txt"
  done
fi
if [[ $stage == experiment || $stage == all || $stage == final ]]; then
  left=$(( ${GP_FINAL_BUDGET:-500} - $(elapsed) - 20 ))
  [[ $stage != final ]] && left=${GP_EXP_TIMEOUT:-600}
  if (( left < 30 )); then
    echo "experiment skipped: $left s left of GP_FINAL_BUDGET=${GP_FINAL_BUDGET:-500}"
  else
    timeout "$left" $py -m gpulab gp experiment --backend numba --population "${GP_EXP_POP:-25000}" \
      --generations "${GP_EXP_GENS:-50}" --seeds "${GP_EXP_SEEDS:-5}" --stocks-total "${GP_EXP_STOCKS:-64}" \
      --test-days "${GP_EXP_TEST_DAYS:-256}" --out "$OUT" --stem gp-experiment-h200 \
      --where "H200 machine, bitsliced numba evaluator" > "$OUT/experiment.txt" 2>&1
    echo "experiment exit $? (timeout ${left} s; $(elapsed) s)"; tail -7 "$OUT/experiment.txt"
  fi
fi
if [[ $stage == final ]]; then
  $py scripts/gp_summary.py "$OUT" > "$OUT/summary.txt" 2>&1
  echo "total $(elapsed) s" >> "$OUT/summary.txt"
  # the device returns at most 8 files: everything goes into one tarball, the summary stays beside it
  (cd "$OUT" && find . -maxdepth 1 -type f ! -name gp-results.tgz ! -name summary.txt -printf '%P\n' \
    | tar czf gp-results.tgz -T - && find . -maxdepth 1 -type f ! -name gp-results.tgz ! -name summary.txt -delete)
  echo; cat "$OUT/summary.txt"
fi
