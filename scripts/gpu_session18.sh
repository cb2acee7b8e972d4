#!/usr/bin/env bash
# Issue 29 on an H200, beyond scripts/gpu_session15.sh (gp, gpruns, gpexp, tests):
#   ncu   Nsight Compute on one late generation's breeding kernels (scripts/gp_breeding_profile.py,
#         CUDA C) at 25,000 individuals (generation ~21 of 30) and at 500,000 (generation ~8 of 10):
#         duration, DRAM bytes and throughput per kernel, into ncu-breeding-<population>.txt
#   subcall  issue 31: the subset public call at n = 50, k = 5 on a device C, the code before (OLD, a
#         package tree: PYTHONPATH=$OLD) and now, in turns A B A B: scripts/subset_call_timeline.py
#         (call-<code>-<turn>.json) and gpulab bench subset at n=50 k=5 (public call beside the kernels;
#         NO_BENCH=1: the timelines only)
#   subfinal issue 31, the code now: the GPU tests of device input (subset and radix, CuPy included),
#         the call timeline twice (subset-call-timeline-<turn>.json), cProfile of the public call on a
#         CuPy C, and gpulab bench subset at n=50 k=5 (20 repeats) into subset-call/
#   matmul   issue 31, chapter 1: the tests of device input and defaults (tests/matmul, -k), the public
#         call on CuPy arrays before (OLD tree) and now in turns (scripts/matmul_call_ab.py:
#         mmcall-<code>-<turn>.json), then gpulab bench matmul of the fast variants at N = 4096,
#         8192, 4099 and thin B (mmbench/)
#   shapes   issue 31, chapter 1: scripts/matmul_shapes.py, the fast variants at tile-multiple and
#         other shapes, both backends (matmul-shapes.json)
set -uo pipefail
stages="${*:-ncu}"
source "$(dirname "$0")/gpu_stages.sh"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
say "device: $name, stages: $stages"
if [[ " $stages " == *" ncu "* ]]; then
  for spec in ${NCU_RUNS:-25000:30:150 500000:10:56}; do
    IFS=: read -r pop gens skip <<< "$spec"
    timeout ${NCU_T:-200} ncu \
      --kernel-name regex:"^(breed_plan|plan_lengths|scan_blocks|add_block_totals|breed_write|check_children)$" \
      --launch-skip "$skip" --launch-count ${NCU_COUNT:-14} --section SpeedOfLight \
      --metrics dram__bytes_read.sum,dram__bytes_write.sum $py scripts/gp_breeding_profile.py "$gens" "$pop" \
      > "$OUT/ncu-breeding-$pop.txt" 2>&1
    say "ncu $pop exit $? ($(el) s)"
    grep -E "^  [a-z_]+ \(|Duration|DRAM Throughput|dram__bytes|mean nodes" "$OUT/ncu-breeding-$pop.txt" \
      | sed -n "1,${NCU_LINES:-48}p" | tee -a "$summary"
  done
fi
if [[ " $stages " == *" subcall "* ]]; then
  for turn in 1 2; do for code in old new; do
    pp="$PWD"; [[ $code == old ]] && pp="$PWD/${OLD:-abold}"
    PYTHONPATH="$pp:/tmp/gpukit-site" timeout 150 $py scripts/subset_call_timeline.py --n 50 --k 5 --repeat 50 \
      --json "$OUT/call-$code-$turn.json" > "$OUT/call-$code-$turn.txt" 2>&1
    say "timeline $code $turn exit $? ($(el) s)"
    grep -E "^(public|dev checks|launch dev|kernels ms)" "$OUT/call-$code-$turn.txt" | tee -a "$summary"
    [[ -n "${NO_BENCH:-}" ]] && continue
    PYTHONPATH="$pp:/tmp/gpukit-site" timeout 150 $py -m gpulab bench subset --sizes "n=50 k=5" \
      --variants shared constant_local incremental incremental_warp incremental_global incremental_lanes \
      --repeat 20 --no-progress --out "$OUT/bench-$code-$turn" > "$OUT/bench-$code-$turn.txt" 2>&1
    say "bench $code $turn exit $? ($(el) s)"
    $py - "$OUT/bench-$code-$turn" <<'PY' | tee -a "$summary"
import glob, json, sys
for f in glob.glob(sys.argv[1] + "/subset-*.json"):
    for r in json.load(open(f))["records"]:
        if r["backend"] != "cpu" and r.get("median_ms"):
            print(f"  {r['variant']:20} {r['backend']:7} kernels {r['median_ms']:.3f}  public {r['public_median_ms'] or 0:.3f} ms"
                  + ("" if r.get("check") is not False else "  WRONG"))
PY
  done; done
fi
if [[ " $stages " == *" subfinal "* ]]; then
  timeout ${T_T:-200} $py -m pytest -q -p no:cacheprovider -n 8 tests/subset/test_call_cache.py tests/subset/test_subset.py \
    tests/radix -k "device or cache or packing or cupy or torch or stream or reuses" > "$OUT/tests.log" 2>&1
  say "tests exit $? ($(el) s): $(tail -1 "$OUT/tests.log")"; grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | head | tee -a "$summary"
  for turn in 1 2; do
    timeout 150 $py scripts/subset_call_timeline.py --n 50 --k 5 --repeat 50 --json "$OUT/subset-call-timeline-$turn.json" \
      > "$OUT/call-$turn.txt" 2>&1
    say "timeline $turn exit $? ($(el) s)"; grep -v -i warn "$OUT/call-$turn.txt" | tail -19 | tee -a "$summary"
  done
  timeout 100 $py scripts/subset_call_timeline.py --n 50 --k 5 --profile 1000 --profile-input cupy > "$OUT/profile-cupy.txt" 2>&1
  say "profile exit $? ($(el) s)"; grep -E "^==|least_correlated|validated_packed|search_packed|launch_numba" "$OUT/profile-cupy.txt" | tee -a "$summary"
  timeout 150 $py -m gpulab bench subset --sizes "n=50 k=5" --repeat 20 --no-progress --out "$OUT/subset-call" \
    --variants global shared constant_local incremental incremental_warp incremental_global incremental_lanes cpu_parallel \
    > "$OUT/bench.txt" 2>&1
  say "bench exit $? ($(el) s)"; grep -E "^n=50" "$OUT/bench.txt" | head -20 | tee -a "$summary"
fi
if [[ " $stages " == *" matmul "* ]]; then
  timeout ${T_T:-150} $py -m pytest -q -p no:cacheprovider -n 8 tests/matmul \
    -k "device or cupy or torch or default or stream or warptile" > "$OUT/mm-tests.log" 2>&1
  say "matmul tests exit $? ($(el) s): $(tail -1 "$OUT/mm-tests.log")"; grep -E "^(FAILED|ERROR)" "$OUT/mm-tests.log" | head | tee -a "$summary"
  for turn in 1 2; do for code in old new; do
    pp="$PWD"; [[ $code == old ]] && pp="$PWD/${OLD:-abold}"
    PYTHONPATH="$pp:/tmp/gpukit-site" timeout 150 $py scripts/matmul_call_ab.py --repeat 20 --tag $code \
      --json "$OUT/mmcall-$code-$turn.json" > "$OUT/mmcall-$code-$turn.txt" 2>&1
    say "matmul call $code $turn exit $? ($(el) s)"; grep -E "^(old|new) " "$OUT/mmcall-$code-$turn.txt" | tee -a "$summary"
  done; done
  timeout ${MM_T:-240} $py -m gpulab bench matmul --variants register prefetch wide vec4 warptile cpasync \
    --sizes N=4096 N=8192 N=4099 "8192x128x128 (thin B)" --repeat 10 --no-progress --out "$OUT/mmbench" > "$OUT/mmbench.txt" 2>&1
  say "bench matmul exit $? ($(el) s)"; grep -E "^(N=|8192x)" "$OUT/mmbench.txt" | grep -E "warptile|cpasync" | tee -a "$summary"
fi
if [[ " $stages " == *" shapes "* ]]; then
  timeout ${SH_T:-300} $py scripts/matmul_shapes.py --repeat 10 --json "$OUT/matmul-shapes.json" > "$OUT/shapes.txt" 2>&1
  say "shapes exit $? ($(el) s)"; grep -v -i warn "$OUT/shapes.txt" | tee -a "$summary"
fi
stages_end
