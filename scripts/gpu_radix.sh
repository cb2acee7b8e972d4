#!/usr/bin/env bash
# Chapter 4 on the GPU, in one command:
#   1. gpulab info
#   2. tests/radix on the real GPU, both backends (numba and CUDA C via pycuda), warp-intrinsic
#      variants included
#   3. gpulab bench radix -> radix-<device>.json + .png, and the bytes-moved model table
#   4. a short table, printed last
# On the lent H200:  source .gpukit/env.sh && bash scripts/gpu_radix.sh
# Stages can be chosen: STAGES="tests bench profile" (default "tests bench"), BENCH_ARGS="--quick" etc.
# tune: python -m gpulab.radix.tune (tile shapes); ncu: Nsight Compute sections of one onesweep pass and
# one local downsweep; sanitize: compute-sanitizer memcheck / racecheck / synccheck on small sorts.
# profile (python -m gpulab.radix.profile) runs last: it times the stages of the register/warp sort.
set -uo pipefail
out="${OUT:-gpu-results}"
mkdir -p "$out"
py="${PYTHON:-python3}"
stages="${STAGES:-tests bench}"
status=0

echo "== device"; $py -m gpulab info | tee "$out/info.txt"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader

if [[ " $stages " == *" tests "* ]]; then
  echo "== tests: radix"
  timeout "${TEST_TIMEOUT:-200}" $py -m pytest -q -rs -p no:cacheprovider tests/radix ${TEST_ARGS:-} \
      --junitxml="$out/tests-radix.xml" > "$out/tests-radix.log" 2>&1
  [ $? -eq 0 ] || status=1
  grep -E "FAILED|Error|error" "$out/tests-radix.log" | head -20
  tail -n 3 "$out/tests-radix.log"
fi

if [[ " $stages " == *" bench "* ]]; then
  echo "== bench: radix"
  timeout "${BENCH_TIMEOUT:-300}" $py -m gpulab bench radix --out "$out" --repeat "${REPEAT:-10}" ${BENCH_ARGS:-} \
      > "$out/bench-radix.log" 2>&1 || status=1
  grep -E "wrong|Error|Traceback" "$out/bench-radix.log" | head -10
  for f in "$out"/radix-*.json; do
    [ -f "$f" ] && $py -c "from gpulab.radix import bench; print('wrote', bench.write_model('$f', '$out'))"
  done
fi

if [[ " $stages " == *" tune "* ]]; then
  echo "== tune: radix (tile shape, MIN_BLOCKS, ranking; keys and pairs; vs CUB alone)"
  timeout "${TUNE_TIMEOUT:-240}" $py -m gpulab.radix.tune --out "$out" > "$out/tune-radix.log" 2>&1 || status=1
  sed -n '/^best per/,$p' "$out/tune-radix.log"
  grep -E "WRONG|Traceback" "$out/tune-radix.log" | head -5
fi

if [[ " $stages " == *" ncu "* ]]; then
  echo "== ncu: one onesweep pass and one local downsweep (CUDA C, 2^26 keys)"
  cat > /tmp/radix_ncu.py <<'PY'
import numpy as np, gpulab
from numba import cuda
from gpulab.radix import host
from gpulab.radix.variants import REGISTRY
keys = cuda.to_device(np.random.default_rng(1).integers(0, 2**32, 2**26, dtype=np.uint64).astype(np.uint32))
for name in ("onesweep", "local"):
    v = REGISTRY.get(name, "cuda-c")
    plan = host.SortPlan(v.policy, "cuda-c", 2**26, False, v.params)
    plan.sort(keys); plan.sort(keys)
cuda.synchronize()
PY
  for k in onesweep downsweep; do
    timeout "${NCU_TIMEOUT:-120}" ncu --kernel-name "$k" --launch-skip 5 --launch-count 1 \
        --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
        --section MemoryWorkloadAnalysis --section SchedulerStats $py /tmp/radix_ncu.py > "$out/ncu-$k.txt" 2>&1
    grep -E "Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Warp Cycles Per Issued|Issued Warp Per|No Eligible" "$out/ncu-$k.txt" | head -16
  done
fi

if [[ " $stages " == *" sanitize "* ]]; then
  echo "== compute-sanitizer: local and onesweep, both backends"
  for t in memcheck racecheck synccheck; do
    # --report-api-errors no: numba's driver binding probes optional entry points (cuGetProcAddress
    # answers "invalid argument" for each), which memcheck would count as errors (run 7: 34 of them)
    timeout "${SAN_TIMEOUT:-150}" compute-sanitizer --tool "$t" --report-api-errors no --error-exitcode 9 $py scripts/radix_sanitize.py \
        > "$out/sanitize-$t.log" 2>&1
    echo "-- $t: exit $? ($(grep -c ' ok  ' "$out/sanitize-$t.log") checks ok, $(grep -c WRONG "$out/sanitize-$t.log") wrong)"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Error" "$out/sanitize-$t.log" | head -4
  done
fi

if [[ " $stages " == *" profile "* ]]; then
  echo "== profile: radix"
  timeout "${PROFILE_TIMEOUT:-200}" $py -m gpulab.radix.profile --out "$out" 2>&1 | tee "$out/profile-radix.log" | grep -v Warn
fi

echo
echo "== summary"
[ -f "$out/tests-radix.log" ] && echo "-- tests: $(grep -E '[0-9]+ (passed|failed)' "$out/tests-radix.log" | tail -1)"
$py - "$out" <<'PY'
import glob, json, sys
for path in sorted(glob.glob(f"{sys.argv[1]}/radix-*.json")):
    data = json.load(open(path))
    if "records" not in data:
        continue
    print(f"-- {path}: {data['device']['name']}")
    for r in data["records"]:
        if r["throughput"] is None:
            continue
        peer = "" if not r["ratio_to_peer"] else f"{100 * r['ratio_to_peer']:6.1f}% of CUB"
        print(f"   {r['label']:14s} {r['variant']:14s} {r['backend']:7s} {r['median_ms']:9.4g} ms {r['throughput']:8.4g} Gkeys/s {peer}")
PY
exit $status
