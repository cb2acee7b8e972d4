#!/usr/bin/env bash
# Issue 29, the GP loop's host synchronizations, on a GPU; one stage per word:
#   tests  the GP tests that touch the evaluator, the breeding and the loop, both backends (xdist)
#   ab     scripts/gp_loop_ab.py: an earlier package (_ab_old/gpulab, made by
#          `git archive <commit> gpulab | tar -x -C _ab_old`, first on PYTHONPATH) and the working one,
#          in separate processes, in turn (AB_TURNS times each; AB_RUNS, AB_ROUNDS)
#   initprobe  scripts/gp_init_probe.py: evolve's initialization, its parts, faults and preemptions
#   ncu    Nsight Compute on one late generation's breeding kernels (scripts/gp_breeding_profile.py)
#   profile  scripts/gp_loop_profile.py: timed runs, then one under cProfile, each backend
#   launch   scripts/launch_numba_ab.py: host time per numba launch, numba's own and gpulab's
#   runs     the working package alone: scripts/gp_loop_ab.py in RUNS_TURNS processes (3 runs each,
#            both backends) into gp-loop-runs.json, and one `gpulab gp evolve` per backend at the
#            paper's scale (seed 1) into gp-evolve-bitsliced[-cuda-c]-now.json
#   elites   scripts/gp_elites_time.py: choose_elites' device time (its two kernels), both backends
#   busy     scripts/gp_device_busy.py: the device's busy time and idle gaps in a paper-scale run,
#            with the earlier package (_ab_old) and the working one
# Environment: TESTS (the test files), AB_BACKENDS, AB_TURNS, AB_RUNS, AB_ROUNDS, *_T (timeouts).
set -uo pipefail
stages="${*:-tests ab}"
source "$(dirname "$0")/gpu_stages.sh"
if [[ " $stages " == *" tests "* ]]; then
  # shellcheck disable=SC2086
  PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" timeout ${TESTS_T:-300} $py -m pytest -q -n 8 --dist loadfile -p no:cacheprovider \
    ${TESTS:-tests/test_launch_numba.py tests/gp/test_reuse.py tests/gp/test_device_population.py tests/gp/test_evolve.py \
    tests/test_readback.py tests/gp/test_breeding_gpu.py tests/test_gp_dispatch.py tests/gp/test_pipeline.py} \
    > "$OUT/tests.log" 2>&1
  say "tests exit $? ($(el) s): $(tail -1 "$OUT/tests.log")"
  grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | head -20 | tee -a "$summary"
fi
if [[ " $stages " == *" ab "* ]]; then
  for turn in $(seq ${AB_TURNS:-3}); do
    for tag in before after; do
      root="$PWD"; [[ $tag == before ]] && root="$PWD/_ab_old"
      PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" timeout ${AB_T:-200} $py scripts/gp_loop_ab.py --runs ${AB_RUNS:-25000x50} \
        --backends ${AB_BACKENDS:-cuda-c numba} --rounds ${AB_ROUNDS:-3} --tag $tag --json "$FINAL/loop-ab-$tag-$turn.json" \
        > "$OUT/ab-$tag-$turn.txt" 2>&1
      say "$tag turn $turn exit $? ($(el) s)"; grep -E "round|^\{" "$OUT/ab-$tag-$turn.txt" | tee -a "$summary"
    done
  done
  PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" $py scripts/gp_loop_ab.py --combine "$FINAL"/loop-ab-before-*.json \
    "$FINAL"/loop-ab-after-*.json --json "$FINAL/gp-loop-ab.json" | tee -a "$summary"
fi
if [[ " $stages " == *" ncu "* ]]; then
  # one late generation's breeding kernels (7 launches a generation match; the warm-up's come first)
  PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" timeout ${NCU_T:-240} ncu \
    --kernel-name regex:"^(breed_plan|plan_lengths|scan_blocks|add_block_totals|breed_write|check_children)$" \
    --launch-skip ${NCU_SKIP:-150} --launch-count ${NCU_COUNT:-14} --section SpeedOfLight \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum $py scripts/gp_breeding_profile.py 30 > "$FINAL/ncu-breeding.txt" 2>&1
  say "ncu exit $? ($(el) s)"
  grep -E "^  [a-z_]+\(|Duration|DRAM Throughput|Memory Throughput|dram__bytes|mean nodes" "$FINAL/ncu-breeding.txt" | head -80 | tee -a "$summary"
fi
if [[ " $stages " == *" initprobe "* ]]; then
  for b in cuda-c numba; do
    PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" timeout 150 $py scripts/gp_init_probe.py $b > "$OUT/initprobe-$b.txt" 2>&1
    say "init probe $b exit $? ($(el) s)"; grep -E "init_s|median" "$OUT/initprobe-$b.txt" | tee -a "$summary"
  done
fi
if [[ " $stages " == *" profile "* ]]; then
  PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" timeout ${PROF_T:-240} $py scripts/gp_loop_profile.py --runs 3 --top 45 \
    --out "$OUT/profile" > "$OUT/profile.txt" 2>&1
  say "profile exit $? ($(el) s)"; grep -E "run [0-9]|profiled" "$OUT/profile.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" launch "* ]]; then
  PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" timeout ${LAUNCH_T:-120} $py scripts/launch_numba_ab.py --n 200 --rounds 21 \
    --json "$FINAL/launch-numba-ab.json" 2>&1 | tee -a "$summary"
fi
if [[ " $stages " == *" busy "* ]]; then
  for tag in before after; do
    root="$PWD"; [[ $tag == before ]] && root="$PWD/_ab_old"
    PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" timeout ${BUSY_T:-200} $py scripts/gp_device_busy.py --runs 3 \
      --out "$OUT/busy-$tag" > "$OUT/busy-$tag.txt" 2>&1
    say "busy $tag exit $? ($(el) s)"
    grep -vi warn "$OUT/busy-$tag.txt" | grep -E "run [0-9]|profiled|idle|->|\|" | tee -a "$summary"
  done
fi
if [[ " $stages " == *" runs "* ]]; then
  for turn in $(seq ${RUNS_TURNS:-4}); do
    PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" timeout ${AB_T:-200} $py scripts/gp_loop_ab.py --runs 25000x50 \
      --backends cuda-c numba --rounds 3 --tag now --json "$OUT/loop-now-$turn.json" > "$OUT/runs-$turn.txt" 2>&1
    say "runs turn $turn exit $? ($(el) s)"; grep -E "round" "$OUT/runs-$turn.txt" | tee -a "$summary"
  done
  PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" $py scripts/gp_loop_ab.py --combine "$OUT"/loop-now-*.json \
    --json "$FINAL/gp-loop-runs.json" | tee -a "$summary"
  for b in numba cuda-c; do
    stem="gp-evolve-bitsliced-now"; [[ $b != numba ]] && stem="gp-evolve-bitsliced-cuda-c-now"
    PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" timeout ${EVOLVE_T:-120} $py -m gpulab gp evolve --population 25000 \
      --generations 50 --stocks 32 --days 768 --test-days 256 --variant bitsliced --backend $b --seed 1 --out "$OUT" \
      --stem "$stem" > "$OUT/evolve-$b.txt" 2>&1
    say "evolve $b exit $?: $(tail -1 "$OUT/evolve-$b.txt")"; cp "$OUT/$stem.json" "$FINAL/" 2>/dev/null
  done
fi
if [[ " $stages " == *" elites "* ]]; then
  PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" timeout ${ELITES_T:-120} $py scripts/gp_elites_time.py \
    --json "$FINAL/gp-elites-time.json" 2>&1 | grep -v -i warn | tee -a "$summary"
fi
stages_end
