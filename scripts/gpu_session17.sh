#!/usr/bin/env bash
# Issue 31's subset scan on the GPU: the incremental_lanes variant (everything under $OUT/w,
# packed into $OUT/results.tgz beside $OUT/summary.txt):
#   ltests   chapter 2's tests on the GPU, both backends (-k LK, default: lanes)
#   lab      scripts/subset_lanes_ab.py: incremental, incremental_warp, incremental_lanes (+ CHUNKs)
#   lptx     the numba lanes kernel's registers and local memory
#   bench    gpulab bench subset (every variant, the committed sizes), into $OUT/w
set -uo pipefail
stages="${*:-lab}"
source "$(dirname "$0")/gpu_stages.sh"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
dev=h100; [[ $name == *H200* ]] && dev=h200
say "device: $name ($dev), stages: $stages"
if [[ " $stages " == *" lptx "* ]]; then
  $py - >> "$OUT/lptx.txt" 2>&1 <<'PY'
from gpulab.subset import kernels_numba as kn
for K in (3, 5, 6, 8, 16):
    k = kn.lanes_kernel(K).compile(kn.SIG_INCREMENTAL)
    print(f"K={K} regs={k.regs_per_thread} local={getattr(k, 'local_mem_per_thread', '?')}")
PY
  say "lptx: $(grep K= "$OUT/lptx.txt" | tr '\n' ';')"
fi
if [[ " $stages " == *" ltests "* ]]; then
  timeout ${TESTS_T:-400} $py -m pytest -q -n 8 -p no:cacheprovider tests/subset -k "${LK:-lanes}" > "$OUT/ltests.log" 2>&1
  say "tests exit $? ($(el) s): $(tail -1 "$OUT/ltests.log")"
  grep -E "^(FAILED|ERROR)" "$OUT/ltests.log" | head -20 | tee -a "$summary"
fi
if [[ " $stages " == *" lab "* ]]; then
  # shellcheck disable=SC2086
  timeout ${AB_T:-300} $py scripts/subset_lanes_ab.py --sizes ${SIZES:-200:5 100:6 50:5} --chunks ${CHUNKS:-8192 131072} \
    --json "$OUT/subset-lanes-ab-$dev.json" > "$OUT/lab.txt" 2>&1
  say "lanes A/B exit $? ($(el) s)"; grep -v -i warn "$OUT/lab.txt" | tail -40 | tee -a "$summary"
fi
if [[ " $stages " == *" bench "* ]]; then
  timeout ${BENCH_T:-420} $py -m gpulab bench subset --out "$OUT" --repeat ${REPEAT:-5} --warmup 1 > "$OUT/bench.txt" 2>&1
  say "bench exit $? ($(el) s)"; grep -v '^\[' "$OUT/bench.txt" | grep -v -i warn | tail -40 | tee -a "$summary"
fi
stages_end
