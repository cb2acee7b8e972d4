#!/usr/bin/env bash
# Session 4's GPU work, one call per group of stages (writes under $OUT, prints a short table last):
#   metrics    gpulab bench radix|euler --metrics, numba backend (the trace tables' columns), one size
#   eulersort  chapter 5's pairing with radix `local` (its SORT today) against `onesweep`,
#              ruling_set at deep-42M and shallow-42M, both backends, A B A B
#   cpasync    scripts/gpu_cpasync.sh tests bench (chapter 1's cp.async step); cpatune: its tune and
#              sanitize stages
#   subsetcall scripts/subset_call_timeline.py at n = 50, k = 5 (the plans kept per shape)
#   radixcall  scripts/radix_call_timeline.py at 2^20, 2^24, 2^28 (public call, out=, kernels) + its tests
#   mmnumba    numba warptile: its tests on the GPU, then gpulab bench matmul (warptile, prefetch, wide,
#              cpasync; N=4096, N=8192, thin B) against cuBLAS in the same run
#   cpatests   scripts/gpu_cpasync.sh tests (after the sweep test's fix)
#   gpdev      scripts/gpu_gpdevice.sh (GP population on the device: tests, generation timeline, evolve)
#   sanitize   compute-sanitizer (SAN_TOOLS, default memcheck racecheck synccheck initcheck) on this
#              session's new steps (SAN_CASES "chapter:backend:variant ..."), 4 processes at once
#   subsetglobal  chapter 2's incremental_global against incremental(_warp) at C(200,5) and C(300,5); its tests
#   eulerud    gpulab bench euler, deep-42M directed and undirected (ruling_set), then the stage bounds
#   gp10k      the GP generation timeline again at 10,000 and 25,000 individuals
#   retest     the tests the whole-suite run failed (after their fixes), and the files they sit in
#   tests      the whole test suite (scripts/gpu_tests.sh)
set -uo pipefail
stages="${*:-metrics}"
source "$(dirname "$0")/gpu_stages.sh"
say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
if [[ " $stages " == *" metrics "* ]]; then
  for ch in ${CHAPTERS:-radix euler}; do
    case $ch in radix) sz="2^20"; vs="split1_global split1_shared radix4_shared local4 local onesweep"; ks="";;
                euler) sz="shallow-2^20"; vs="propagate jump shared ruling_set"; ks="propagate_round|jump_round|tile_contract|walk_label";; esac
    timeout "${MT:-270}" $py -m gpulab bench "$ch" --quick --sizes "$sz" --backend numba --variants $vs \
      --metrics ${ks:+--metrics-kernels "$ks" --metrics-launches 40} --repeat 3 --out "$OUT/metrics-$ch" > "$OUT/metrics-$ch.log" 2>&1
    say "bench $ch --metrics exit $? ($(el) s): $(ls "$OUT/metrics-$ch" 2>/dev/null | tr '\n' ' ')"
  done
fi
if [[ " $stages " == *" eulersort "* ]]; then
  for round in 1 2; do for sort in local onesweep; do
    GPULAB_EULER_PARAMS="{\"ruling_set\": {\"numba\": {\"SORT\": \"$sort\"}, \"cuda-c\": {\"SORT\": \"$sort\"}}}" \
      timeout "${ET:-140}" $py -m gpulab bench euler --sizes deep-42M shallow-42M --variants ruling_set --repeat 7 \
      --no-progress --out "$OUT/eulersort-$sort-$round" > "$OUT/eulersort-$sort-$round.log" 2>&1
    say "euler SORT=$sort round $round exit $? ($(el) s)"
    $py - "$OUT/eulersort-$sort-$round" "$sort" <<'PY' | tee -a "$summary"
import json, sys, glob
for f in glob.glob(sys.argv[1] + "/euler-*.json"):
    for r in json.load(open(f))["records"]:
        if r.get("median_ms"):
            print(f"  {sys.argv[2]:9} {r['label']:12} {r['backend']:7} total {r['median_ms']:7.2f} ms  pairing {r.get('stages_ms', {}).get('pairing', 0):6.2f} ms")
PY
  done; done
fi
if [[ " $stages " == *" cpasync "* ]]; then
  OUT="$OUT/cpasync" bash scripts/gpu_cpasync.sh tests bench > /dev/null 2>&1
  say "cpasync tests+bench ($(el) s):"; cat "$OUT/cpasync/cpasync-summary.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" cpatune "* ]]; then
  OUT="$OUT/cpatune" bash scripts/gpu_cpasync.sh ${CPA_STAGES:-tune sanitize} > /dev/null 2>&1
  say "cpasync tune+sanitize ($(el) s):"; cat "$OUT/cpatune/cpasync-summary.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" subsetcall "* ]]; then
  timeout 120 $py scripts/subset_call_timeline.py --n 50 --k 5 --repeat 20 --json "$OUT/subset-call-timeline.json" \
    > "$OUT/subset-call.txt" 2>&1; say "subset call timeline exit $? ($(el) s)"; cat "$OUT/subset-call.txt" | tee -a "$summary"
  timeout 120 $py -m pytest -q -x -p no:cacheprovider tests/subset/test_call_cache.py > "$OUT/subset-cache-tests.log" 2>&1
  say "subset cache tests exit $?: $(tail -1 "$OUT/subset-cache-tests.log")"
fi
if [[ " $stages " == *" radixcall "* ]]; then
  timeout 200 $py scripts/radix_call_timeline.py --log2 20 24 28 --repeat 15 --json "$OUT/radix-call-timeline.json" \
    > "$OUT/radix-call.txt" 2>&1; say "radix call timeline exit $? ($(el) s)"; cat "$OUT/radix-call.txt" | tee -a "$summary"
  timeout 150 $py -m pytest -q -rs -x -p no:cacheprovider tests/radix/test_call_overhead.py > "$OUT/radix-call-tests.log" 2>&1
  say "radix call tests exit $?: $(tail -1 "$OUT/radix-call-tests.log")"
fi
if [[ " $stages " == *" mmnumba "* ]]; then
  timeout 200 $py -m pytest -q -x -p no:cacheprovider tests/matmul/test_numba_warptile.py > "$OUT/mmnumba-tests.log" 2>&1
  say "numba warptile tests exit $?: $(tail -1 "$OUT/mmnumba-tests.log")"
  timeout 200 $py -m pytest -q -p no:cacheprovider tests/matmul/test_matmul.py -k warptile > "$OUT/mmnumba-ladder.log" 2>&1
  say "test_matmul -k warptile exit $?: $(tail -1 "$OUT/mmnumba-ladder.log")"
  timeout 300 $py -m gpulab bench matmul --variants warptile prefetch wide cpasync --sizes N=4096 N=8192 "8192x128x128 (thin B)" \
    --repeat 20 --no-progress --out "$OUT/mm" > "$OUT/mm-bench.txt" 2>&1
  say "bench matmul exit $? ($(el) s)"; grep -E "^N=|^8192|^size" "$OUT/mm-bench.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" cpatests "* ]]; then
  OUT="$OUT/cpatests" bash scripts/gpu_cpasync.sh tests > /dev/null 2>&1
  say "cpasync tests ($(el) s):"; cat "$OUT/cpatests/cpasync-summary.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" gpdev "* ]]; then
  OUT="$OUT/gpdev" bash scripts/gpu_gpdevice.sh ${GPDEV_STAGES:-tests timeline evolve} > /dev/null 2>&1
  say "gp device ($(el) s):"; cat "$OUT/gpdev/summary.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" sanitize "* ]]; then
  cases=${SAN_CASES:-"matmul:cuda-c:cpasync matmul:numba:warptile"}
  for tool in ${SAN_TOOLS:-memcheck racecheck synccheck initcheck}; do for c in $cases; do echo "$tool $c"; done; done |
    xargs -P 4 -L 1 bash -c 'IFS=: read ch be va <<< "$1"; log="'"$OUT"'/san-$0-$ch-$be-$va.log";
      timeout 400 compute-sanitizer --tool "$0" --report-api-errors no --error-exitcode 9 \
        '"$py"' scripts/sanitize.py "$ch" --backend "$be" --variants "$va" > "$log" 2>&1; echo "rc=$?" >> "$log"'
  for f in "$OUT"/san-*.log; do
    say "$(basename "$f" .log): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$f" | tr '\n' ' ') $(grep -cE ' ok\b' "$f") ok cases, $(tail -1 "$f")"
  done
fi
if [[ " $stages " == *" subsetglobal "* ]]; then
  timeout 300 $py -m gpulab bench subset --sizes "C(200,5)" "C(300,5)" --variants incremental incremental_warp incremental_global \
    --repeat 5 --warmup 1 --no-progress --out "$OUT/subsetglobal" > "$OUT/subsetglobal.txt" 2>&1
  say "bench subset exit $? ($(el) s)"; grep -E "^C\(|^size" "$OUT/subsetglobal.txt" | tee -a "$summary"
  timeout 200 $py -m pytest -q -p no:cacheprovider -n 4 tests/subset/test_global_q.py tests/subset/test_default_backend.py \
    tests/subset/test_call_cache.py > "$OUT/subsetglobal-tests.log" 2>&1
  say "subset global tests exit $?: $(tail -1 "$OUT/subsetglobal-tests.log")"
fi
if [[ " $stages " == *" eulerud "* ]]; then
  timeout 300 $py -m gpulab bench euler --sizes deep-42M undirected-deep-42M --variants ruling_set --repeat 7 --no-progress \
    --out "$OUT/eulerud" > "$OUT/eulerud.txt" 2>&1
  say "bench euler exit $? ($(el) s)"; grep -E "42M|^size" "$OUT/eulerud.txt" | tee -a "$summary"
  timeout 60 $py -m gpulab.euler.model "$OUT"/eulerud/euler-*.json "$OUT/eulerud" > "$OUT/eulerud-model.txt" 2>&1
  say "euler model exit $?"; tail -25 "$OUT/eulerud-model.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" gp10k "* ]]; then
  timeout 200 $py scripts/gp_breed_timeline.py --generation --population 10000 25000 --repeat 5 --json "$OUT/gp10k.json" \
    > "$OUT/gp10k.txt" 2>&1; say "gp timeline exit $? ($(el) s)"; grep -v Warning "$OUT/gp10k.txt" | grep -v "warn(" | tee -a "$summary"
fi
if [[ " $stages " == *" retest "* ]]; then
  timeout 300 $py -m pytest -q -p no:cacheprovider -n 8 ${RETEST:-tests/matmul/test_numba_warptile.py tests/radix/test_radix.py \
    tests/radix/test_call_overhead.py tests/euler/test_euler.py tests/gp/test_device_population.py} > "$OUT/retest.log" 2>&1
  say "retest exit $? ($(el) s): $(tail -1 "$OUT/retest.log")"; grep -E "^FAILED" "$OUT/retest.log" | head | tee -a "$summary"
fi
if [[ " $stages " == *" tests "* ]]; then
  OUT="$OUT/tests" WORKERS=${WORKERS:-12} timeout "${TT:-500}" bash scripts/gpu_tests.sh > "$OUT/tests.out" 2>&1
  say "tests exit $? ($(el) s)"; grep -E "passed|failed|FAILED|ERROR" "$OUT/tests.out" | tail -15 | tee -a "$summary"
fi
stages_end
