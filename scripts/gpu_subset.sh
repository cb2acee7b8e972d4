#!/usr/bin/env bash
# Chapter 2 on the GPU machine: tests on both backends, tuning sweep, benchmark.
#   bash scripts/gpu_subset.sh [test|tune|bench|all]     (writes under $OUT)
set -uo pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
stage=${1:-all}
python3 -m gpulab info | tee "$OUT/info.txt"
if [[ $stage == test || $stage == all ]]; then
  python3 -m pytest -q -p no:cacheprovider tests/subset --timeout 240 -rs --durations=15 > "$OUT/pytest.txt" 2>&1
  echo "pytest exit $?"; tail -45 "$OUT/pytest.txt"
fi
if [[ $stage == tune || $stage == all ]]; then
  python3 -m gpulab.subset.tune --out "$OUT" > "$OUT/tune.txt" 2>&1
  echo "tune exit $?"; tail -25 "$OUT/tune.txt"
fi
if [[ $stage == bench || $stage == all ]]; then
  python3 -m gpulab bench subset --out "$OUT" --repeat ${REPEAT:-5} --warmup 1 > "$OUT/bench.txt" 2>&1
  echo "bench exit $?"; grep -v '^\[' "$OUT/bench.txt" | tail -70
fi
