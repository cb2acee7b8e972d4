#!/usr/bin/env bash
# Chapter 3 on the GPU machine, the stages beyond scripts/gpu_run.sh gp:
#   compile   the compile report (registers / local memory / spills of every kernel)
#   evolve    50 generations at seed size (25,000 × 32 stocks × 768 days), timed end to end,
#             breeding included, for the default variant (and register numba, for comparison)
#   tune      block-shape sweep of coalesced / register / bitsliced at seed size (scripts/tune_gp.py)
#   experiment the chapter's train/test experiment on the GPU at a larger population
#   all       every stage
# Usage:  bash scripts/gpu_gp.sh [compile|evolve|tune|experiment|all]    (writes under $OUT)
# Dry run on a CPU:  GPULAB_DEVICE=sim GP_POP=20 GP_GENS=2 GP_STOCKS=2 GP_DAYS=40 GP_TEST_DAYS=20 bash scripts/gpu_gp.sh evolve
set -uo pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
stage=${1:-all}
py="${PYTHON:-python3}"
POP=${GP_POP:-25000}
STOCKS=${GP_STOCKS:-32}
DAYS=${GP_DAYS:-768}
GENS=${GP_GENS:-50}
$py -m gpulab info | tee "$OUT/info.txt"
if [[ $stage == compile || $stage == all ]]; then
  $py -m gpulab compile-check gp > "$OUT/compile-gp.txt" 2>&1
  echo "compile-check exit $?"; cat "$OUT/compile-gp.txt"
fi
if [[ $stage == evolve || $stage == all ]]; then
  for v in ${GP_VARIANTS:-bitsliced register}; do
    start=$(date +%s.%N)
    $py -m gpulab gp evolve --population "$POP" --generations "$GENS" --stocks "$STOCKS" --days "$DAYS" \
      --test-days "${GP_TEST_DAYS:-256}" --variant "$v" --seed 1 --out "$OUT" --stem "gp-evolve-$v" > "$OUT/evolve-$v.txt" 2>&1
    rc=$?
    end=$(date +%s.%N)
    echo "evolve $v exit $rc; process wall time $($py -c "print(round($end - $start, 2))") s (imports, data and kernel compilation included)"
    tail -4 "$OUT/evolve-$v.txt"
  done
fi
if [[ $stage == tune || $stage == all ]]; then
  $py scripts/tune_gp.py --out "$OUT" > "$OUT/tune-gp.txt" 2>&1
  echo "tune exit $?"; tail -40 "$OUT/tune-gp.txt"
fi
if [[ $stage == experiment || $stage == all ]]; then
  $py -m gpulab gp experiment --backend numba --population "${GP_EXP_POP:-25000}" --generations "${GP_EXP_GENS:-50}" \
    --seeds "${GP_EXP_SEEDS:-5}" --out "$OUT" --stem gp-experiment-h200 \
    --where "H200 machine, bitsliced numba evaluator" > "$OUT/experiment.txt" 2>&1
  echo "experiment exit $?"; tail -8 "$OUT/experiment.txt"
fi
