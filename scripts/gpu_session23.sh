#!/usr/bin/env bash
# Session 23 on the GPU (everything under $OUT/w, packed into $OUT/results.tgz beside $OUT/summary.txt):
#   mtests  chapter 1's GPU tests of warptile (its k-loop now a function of a k-tile range) and of the
#           new stream-K step, both backends (tests/matmul/test_stream_k.py, tests/matmul/test_matmul.py)
#   msan    compute-sanitizer memcheck and racecheck on the stream-K tests at their small shapes, and
#           scripts/sanitize.py's chapter 1 workload in CUDA C
#   mmbench gpulab bench matmul of the fast variants with streamk, at N = 4096, 8192, 4099 and thin B (CuPy's
#           cuBLAS in the same run) -> matmul-h200-fast.json
#   shapes  scripts/matmul_shapes.py with streamk: the fastest variant per backend at tile-multiple and ragged shapes
#   small   streamk and warptile at N = 1024, 2048 (one part-empty wave: all stream-K at 1024, none at 2048)
#   probe   warptile and streamk against cuBLAS at shapes that fill whole waves and shapes that leave the
#           last wave part-empty (scripts/matmul_waves_probe.py), twice, the variants in turns
set -uo pipefail
stages="${*:-mtests}"
source "$(dirname "$0")/gpu_stages.sh"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -2 | tr '\n' ' '), stages: $stages"
if [[ " $stages " == *" mtests "* ]]; then
  timeout ${MT_T:-200} $py -m pytest -q -p no:cacheprovider -n 4 tests/matmul/test_stream_k.py tests/matmul/test_matmul.py \
    tests/matmul/test_matmul_defaults.py > "$OUT/mtests.log" 2>&1
  say "mtests exit $? ($(el) s): $(tail -1 "$OUT/mtests.log")"; grep -E "^(FAILED|ERROR)" "$OUT/mtests.log" | head | tee -a "$summary"
fi
if [[ " $stages " == *" msan "* ]]; then
  for tool in memcheck racecheck; do
    timeout ${MS_T:-150} compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 $py -m pytest -q -p no:cacheprovider \
      tests/matmul/test_stream_k.py -k "not 4096 and not 8192" > "$OUT/msan-$tool.log" 2>&1
    say "sanitizer $tool on test_stream_k exit $? ($(el) s): $(grep -E "SUMMARY" "$OUT/msan-$tool.log" | tail -1) $(tail -1 "$OUT/msan-$tool.log")"
    timeout ${ST:-150} compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 $py scripts/sanitize.py \
      matmul --backend cuda-c --variants streamk,warptile > "$OUT/sanitize-$tool.log" 2>&1
    say "sanitize.py matmul streamk,warptile $tool exit $? ($(el) s): $(grep -E "SUMMARY" "$OUT/sanitize-$tool.log" | tail -1)"
  done
fi
if [[ " $stages " == *" mmbench "* ]]; then
  timeout ${MM_T:-300} $py -m gpulab bench matmul --variants register prefetch wide vec4 warptile streamk cpasync \
    --sizes N=4096 N=8192 N=4099 "8192x128x128 (thin B)" --repeat 10 --no-progress --out "$OUT/mmbench" > "$OUT/mmbench.txt" 2>&1
  say "bench matmul exit $? ($(el) s)"; grep -E "^(N=|8192x)" "$OUT/mmbench.txt" | grep -E "warptile|streamk|cpasync" | tee -a "$summary"
fi
if [[ " $stages " == *" shapes "* ]]; then
  timeout ${SH_T:-300} $py scripts/matmul_shapes.py --repeat 10 --json "$OUT/matmul-shapes.json" > "$OUT/shapes.txt" 2>&1
  say "shapes exit $? ($(el) s)"; grep -v -i warn "$OUT/shapes.txt" | grep cuda-c | tee -a "$summary"
fi
if [[ " $stages " == *" small "* ]]; then
  timeout 200 $py scripts/matmul_waves_probe.py --variants warptile streamk --repeat 20 \
    --shapes 1024x1024x1024 2048x2048x2048 --json "$OUT/waves-small.json" > "$OUT/waves-small.txt" 2>&1
  say "small exit $? ($(el) s)"; grep -E "^[0-9]" "$OUT/waves-small.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" probe "* ]]; then
  for turn in 1 2; do
    order="warptile streamk"; [[ $turn == 2 ]] && order="streamk warptile"
    timeout ${PR_T:-200} $py scripts/matmul_waves_probe.py --variants $order --repeat 10 \
      --json "$OUT/waves-$turn.json" > "$OUT/waves-$turn.txt" 2>&1
    say "probe $turn exit $? ($(el) s)"; cat "$OUT/waves-$turn.txt" | tee -a "$summary"
  done
fi
stages_end
