#!/usr/bin/env bash
# Chapter 4's last H200 call of the one-sweep round: onesweep's key-value rows re-benched with
# the key-value shape the sweep chose (384 x 8, MIN_BLOCKS 4) into the committed JSON (--append
# replaces those records only; CUB's SortPairs is measured again in the same run), the chapter's
# tests on the GPU, and compute-sanitizer on small sorts.
#   source .gpukit/env.sh && bash scripts/gpu_radix_final.sh
set -uo pipefail
out="${OUT:-gpu-results}"
mkdir -p "$out"
py="${PYTHON:-python3}"
cp docs/benchmarks/radix-h200.json "$out/"
echo "== bench: onesweep pairs"
timeout 150 $py -m gpulab bench radix --variants onesweep --sizes "pairs 2^24" "pairs 2^28" --append --out "$out" \
    > "$out/bench-onesweep-pairs.log" 2>&1
grep -a -E "^\[" "$out/bench-onesweep-pairs.log"
STAGES="tests sanitize" TEST_TIMEOUT=170 SAN_TIMEOUT=110 TEST_ARGS="tests/test_simwarp.py" bash scripts/gpu_radix.sh
