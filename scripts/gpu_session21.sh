#!/usr/bin/env bash
# Session 21 on the GPU (everything under $OUT/w, packed into $OUT/results.tgz beside $OUT/summary.txt):
#   lab     host time per launch: numba's launch, launch_numba through cuda.core (as before) and through
#           cuLaunchKernel (now), CUDA C through pycuda (scripts/launch_numba_ab.py) -> launch-ab.json
#   ltests  launch_numba's tests, then the GPU tests of matmul, radix, Euler and the GP's device breeding
#   nab     A/B of the launch paths (and Euler's kept views), the package before (OLD, a package tree) and now
#           in turns A B A B, both backends: gpulab bench matmul (warptile, register: N=4096, thin B), radix
#           (onesweep, 2^24), euler (ruling_set, deep-42M, shallow-42M) -> nab-<chapter>-<code>-<turn>/
#   ehost   where the host's time goes in a deep-42M Euler circuit, both backends (scripts/euler_host_profile.py)
#   mmbench gpulab bench matmul, every variant of the committed matmul-h200-fast.json
#   eparams chapter 5's BLOCK / JUMP_CHECK in turns, public call, deep-42M and shallow-42M, both backends
#           (scripts/euler_params_ab.py) -> eparams-<backend>.json
#   r30     onesweep at exactly 2^30 keys, both backends (scripts/radix_2p30_check.py)
#   e30     gpulab bench euler, ruling_set, deep-2^30 (one plan of about 81 GiB), warm-up 1, median of 3
#   ebench  gpulab bench euler, ruling_set and numba Hierholzer, deep-42M, shallow-42M, undirected-deep-42M
set -uo pipefail
stages="${*:-lab}"
source "$(dirname "$0")/gpu_stages.sh"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -2 | tr '\n' ' '), stages: $stages"
if [[ " $stages " == *" lab "* ]]; then
  timeout 120 $py scripts/launch_numba_ab.py --n 200 --rounds 21 --json "$OUT/launch-ab.json" > "$OUT/lab.txt" 2>&1
  say "launch ab exit $? ($(el) s)"; grep -v -i warn "$OUT/lab.txt" | tail -4 | tee -a "$summary"
  $py -c "import pycuda.driver as d; print('pycuda Function:', [a for a in dir(d.Function) if not a.startswith('__')])" 2>&1 | tail -1 | tee -a "$summary"
fi
if [[ " $stages " == *" ltests "* ]]; then
  timeout ${LT_T:-240} $py -m pytest -q -p no:cacheprovider -n 8 tests/test_launch_numba.py tests/matmul tests/radix \
    tests/euler/test_euler.py tests/gp/test_breeding_gpu.py tests/gp/test_device_population.py -k "${LK:-launch or numba or cuda}" > "$OUT/ltests.log" 2>&1
  say "ltests exit $? ($(el) s): $(tail -1 "$OUT/ltests.log")"; grep -E "^(FAILED|ERROR)" "$OUT/ltests.log" | head | tee -a "$summary"
fi
if [[ " $stages " == *" nab "* ]]; then
  for turn in 1 2; do for code in old new; do
    in_tree $code timeout 100 $py -m gpulab bench matmul --variants warptile register \
      --sizes N=4096 "8192x128x128 (thin B)" --repeat 20 --no-progress --out "$OUT/nab-mm-$code-$turn" > "$OUT/nab-mm-$code-$turn.txt" 2>&1
    say "mm $code $turn exit $? ($(el) s)"; grep -E "^(N=|8192x)" "$OUT/nab-mm-$code-$turn.txt" | tee -a "$summary"
    in_tree $code timeout 100 $py -m gpulab bench radix --variants onesweep \
      --sizes 2^24 --repeat 20 --no-progress --out "$OUT/nab-rx-$code-$turn" > "$OUT/nab-rx-$code-$turn.txt" 2>&1
    say "rx $code $turn exit $? ($(el) s)"; grep -E "^2\^" "$OUT/nab-rx-$code-$turn.txt" | tee -a "$summary"
    in_tree $code timeout 200 $py -m gpulab bench euler --variants ruling_set \
      --sizes deep-42M shallow-42M --repeat 7 --no-progress --out "$OUT/nab-eu-$code-$turn" > "$OUT/nab-eu-$code-$turn.txt" 2>&1
    say "eu $code $turn exit $? ($(el) s)"; grep -E "42M" "$OUT/nab-eu-$code-$turn.txt" | tee -a "$summary"
  done; done
fi
if [[ " $stages " == *" ehost "* ]]; then
  timeout 200 $py scripts/euler_host_profile.py ${EULER_E:-41943040} --calls 5 > "$OUT/ehost.txt" 2>&1
  say "ehost exit $? ($(el) s)"; grep -E "^==|launch path" "$OUT/ehost.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" mmbench "* ]]; then
  timeout ${MM_T:-240} $py -m gpulab bench matmul --variants register prefetch wide vec4 warptile cpasync \
    --sizes N=4096 N=8192 N=4099 "8192x128x128 (thin B)" --repeat 10 --no-progress --out "$OUT/mmbench" > "$OUT/mmbench.txt" 2>&1
  say "bench matmul exit $? ($(el) s)"; grep -E "^(N=|8192x)" "$OUT/mmbench.txt" | grep -E "warptile|register" | tee -a "$summary"
fi
if [[ " $stages " == *" eparams "* ]]; then
  timeout 200 $py scripts/euler_params_ab.py --backend cuda-c --rounds 3 --repeat 7 --json "$OUT/eparams-cuda-c.json" \
    --sets BLOCK=128,JUMP_CHECK=4 BLOCK=128,JUMP_CHECK=8 BLOCK=128,JUMP_CHECK=16 BLOCK=256,JUMP_CHECK=8 \
    > "$OUT/eparams-cuda-c.txt" 2>&1
  say "eparams cuda-c exit $? ($(el) s)"; grep "^{" "$OUT/eparams-cuda-c.txt" | tee -a "$summary"
  timeout 200 $py scripts/euler_params_ab.py --backend numba --rounds 3 --repeat 7 --json "$OUT/eparams-numba.json" \
    --sets BLOCK=256,JUMP_CHECK=8 BLOCK=256,JUMP_CHECK=16 BLOCK=128,JUMP_CHECK=8 > "$OUT/eparams-numba.txt" 2>&1
  say "eparams numba exit $? ($(el) s)"; grep "^{" "$OUT/eparams-numba.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" r30 "* ]]; then
  timeout ${R30_T:-120} $py scripts/radix_2p30_check.py > "$OUT/r30.txt" 2>&1
  say "radix 2^30 check exit $? ($(el) s)"; grep -E "^(cuda-c|numba):|Error" "$OUT/r30.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" e30 "* ]]; then
  timeout ${E30_T:-420} $py -m gpulab bench euler --sizes deep-2^30 --variants ruling_set --warmup 1 --repeat 3 \
    --no-progress --out "$OUT/euler30" > "$OUT/euler30.txt" 2>&1
  say "bench euler 2^30 exit $? ($(el) s)"; grep -E "2\^30|^size" "$OUT/euler30.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" ebench "* ]]; then
  euler_bench_42m
fi
stages_end
