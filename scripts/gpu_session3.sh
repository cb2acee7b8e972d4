#!/usr/bin/env bash
# Session 3's GPU checks, one stage per call (writes under $OUT, prints a short table last):
#   smoke     ncu present?  GPU breeding tests on the GPU; evolve at paper scale, cpu vs gpu
#             breeding, both backends
#   timeline  scripts/gp_breed_timeline.py: a breeding's stages at 25,000 and 500,000 individuals
#   big       gpulab gp evolve at 500,000 individuals, 5 generations, CUDA C, CPU then GPU breeding
#   abswap    the subset A/B of numba global with the trees' order swapped
#   subsetcall scripts/subset_call_timeline.py: a subset public call's stages at n = 50, k = 5
#   tests     the whole test suite (scripts/gpu_tests.sh)
#   ab        subset A/B old (.ab-old) vs new, the variants session 2 flagged, 4 rounds of 20
#   metrics   gpulab bench CH --metrics for every chapter's ladder (quick sizes)
set -uo pipefail
stages="${*:-smoke}"
source "$(dirname "$0")/gpu_stages.sh"
if [[ " $stages " == *" smoke "* ]]; then
  (ncu --version 2>&1 | tail -1; which ncu) | tee -a "$summary"
  timeout 200 $py -m pytest -q -x -p no:cacheprovider tests/gp/test_breeding_gpu.py > "$OUT/breeding-tests.log" 2>&1
  say "breeding tests exit $? ($(el) s): $(tail -1 "$OUT/breeding-tests.log")"
  for b in ${GP_BACKENDS:-cuda-c numba}; do for br in cpu gpu; do
    timeout 120 $py -m gpulab gp evolve --backend "$b" --breeding "$br" --out "$OUT/evolve" --stem "evolve-$b-$br" --json \
      > "$OUT/evolve-$b-$br.json" 2> "$OUT/evolve-$b-$br.err"
    say "evolve $b breeding=$br exit $? ($(el) s): $($py -c "import json,sys; d=json.load(open(sys.argv[1])); t=d.get('timing',{}); print({k: round(v,4) for k,v in t.items() if isinstance(v,(int,float))})" "$OUT/evolve-$b-$br.json" 2>&1 | tail -1)"
  done; done
fi
if [[ " $stages " == *" timeline "* ]]; then
  timeout 200 $py scripts/gp_breed_timeline.py --population ${TL_POP:-25000 500000} --repeat 5 --json "$OUT/breed-timeline.json" \
    > "$OUT/timeline.txt" 2>&1; say "timeline exit $? ($(el) s)"; cat "$OUT/timeline.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" subsetcall "* ]]; then  # where a subset public call's time goes (issue 31)
  timeout 90 $py scripts/subset_call_timeline.py --n 50 --k 5 --repeat 20 --json "$OUT/subset-call-timeline.json" \
    > "$OUT/subset-call.txt" 2>&1; say "subset call timeline exit $? ($(el) s)"; cat "$OUT/subset-call.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" tests "* ]]; then
  OUT="$OUT/tests" WORKERS=${WORKERS:-8} timeout "${TT:-560}" bash scripts/gpu_tests.sh > "$OUT/tests.out" 2>&1
  say "tests exit $? ($(el) s)"; grep -E "passed|failed|FAILED|ERROR" "$OUT/tests.out" | tail -15 | tee -a "$summary"
fi
if [[ " $stages " == *" big "* ]]; then  # 500,000 individuals, 5 generations, CUDA C, both breedings
  for br in cpu gpu; do
    timeout 150 $py -m gpulab gp evolve --population 500000 --generations 5 --backend cuda-c --breeding "$br" \
      --out "$OUT/evolve" --stem "evolve-500k-$br" --json > "$OUT/evolve-500k-$br.json" 2> "$OUT/evolve-500k-$br.err"
    say "evolve 500k breeding=$br exit $? ($(el) s): $($py -c "import json,sys; d=json.load(open(sys.argv[1])); t=d.get('timing',{}); print({k: round(v,4) for k,v in t.items() if isinstance(v,(int,float))})" "$OUT/evolve-500k-$br.json" 2>&1 | tail -1)"
  done
fi
if [[ " $stages " == *" abswap "* ]]; then  # the same A/B with the trees' order swapped (is "second" slower?)
  timeout 120 $py scripts/bench_ab.py subset:"n=50 k=5,n=20 k=9" --old . --new .ab-old --rounds 4 --backends numba \
    --out "$OUT/abswap" --repeat 20 --variants global > "$OUT/abswap.log" 2>&1
  say "abswap (old=new tree, new=.ab-old) exit $? ($(el) s)"; tail -6 "$OUT/abswap.log" | tee -a "$summary"
fi
if [[ " $stages " == *" ab "* ]]; then
  timeout "${ABT:-300}" $py scripts/bench_ab.py subset:"n=50 k=5,n=20 k=9" --old .ab-old --new . --rounds "${ROUNDS:-4}" \
    --out "$OUT/ab" --repeat 20 --variants global incremental incremental_warp > "$OUT/ab.log" 2>&1
  say "ab exit $? ($(el) s)"; tail -40 "$OUT/ab.log" | tee -a "$summary"
fi
if [[ " $stages " == *" metrics "* ]]; then
  for ch in ${CHAPTERS:-matmul subset gp radix euler}; do
    # one small size per chapter: ncu replays every kernel once per counter pass
    case $ch in subset) sz="n=50 k=5";; gp) sz="P=1024 32x768";; radix) sz="2^20";; euler) sz="deep 2^20";; *) sz="";; esac
    timeout "${MT:-150}" $py -m gpulab bench "$ch" --quick ${sz:+--sizes "$sz"} --metrics --repeat 3 --out "$OUT/metrics-$ch" \
      > "$OUT/metrics-$ch.log" 2>&1
    say "bench $ch --metrics exit $? ($(el) s)"
  done
fi
stages_end
