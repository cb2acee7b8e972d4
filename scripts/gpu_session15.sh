#!/usr/bin/env bash
# The open targets of issues 29, 30 and 31 measured with the code as it stands, one stage per word
# (everything under $OUT/w, packed into $OUT/results.tgz beside $OUT/summary.txt):
#   gate     the GPU's name; with ONLY_ON set (e.g. ONLY_ON=H200) the script stops here on any other GPU
#   gp       issue 29: `gpulab gp evolve` at the paper's scale (25,000 x 50, 32 stocks x 768 days, seed 1),
#            both backends, into gp-evolve[-cuda-c]-<dev>.json (+ plot); scripts/gp_breed_timeline.py
#            --generation at 25,000 and 500,000 individuals into gp-generation-<dev>.json
#   tests    the GP tests of the initialization, the breeding and the loop on the GPU, both backends (xdist)
#   gpexp    issue 29's experiments at the paper's population (25,000 x 50, numba bitsliced): the paper's grid
#            (32/64/128 stocks x 256/768/1,536 days, 10 seeds) into gp-experiment-grid-<dev>.json, and
#            8/32 stocks x 256/768 days (5 seeds, 64 stocks in the test) into gp-experiment-<dev>.json
#   gpruns   scripts/gp_loop_ab.py in RUNS_TURNS processes (3 runs each, both backends) into gp-loop-runs-<dev>.json
#   radix    issue 30: gpulab bench radix, onesweep and local, 2^24, 2^28 and pairs 2^28 (CUB in the same run)
#   euler    issue 30: gpulab bench euler, deep-42M directed and undirected (ruling_set), then the stage bounds;
#            EULER_BIG=1 adds deep-2^30 (about 89 GiB: an H200 only)
#   subset   issue 31: the public call at n = 50, k = 5 (scripts/subset_call_timeline.py) and gpulab bench subset
#            at C(200,5) and C(300,5)
#   scatter  issue 30: chapter 5's pairing scatter in slices of half the L2 (the default) against one launch
#            (SCATTER_SLICES=1): gpulab bench euler, ruling_set, deep-42M and shallow-42M, both backends,
#            rounds A B A B (GPULAB_EULER_PARAMS), into euler-scatter-ab.json; after the Euler tests that
#            touch the pairing (ETESTS)
#   matmul   issue 31: gpulab bench matmul, warptile and cpasync (CUDA C) and warptile (numba) at N = 4096, 8192
#            and thin B, cuBLAS in the same run
set -uo pipefail
stages="${*:-gate gp}"
source "$(dirname "$0")/gpu_stages.sh"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
dev=h100; [[ $name == *H200* ]] && dev=h200
say "device: $name ($dev), stages: $stages"
if [[ " $stages " == *" gate "* && -n "${ONLY_ON:-}" && $name != *"$ONLY_ON"* ]]; then
  say "not an ${ONLY_ON}: nothing run"; stages_end; exit 0
fi
if [[ " $stages " == *" tests "* ]]; then
  # shellcheck disable=SC2086
  timeout ${TESTS_T:-240} $py -m pytest -q -n 8 --dist loadfile -p no:cacheprovider \
    ${TESTS:-tests/gp/test_pipeline.py tests/gp/test_evolve.py tests/gp/test_breeding_gpu.py tests/gp/test_device_population.py} \
    > "$OUT/tests.log" 2>&1
  say "tests exit $? ($(el) s): $(tail -1 "$OUT/tests.log")"
  grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | head -20 | tee -a "$summary"
fi
if [[ " $stages " == *" gp "* ]]; then
  for b in numba cuda-c; do
    stem="gp-evolve-$dev"; [[ $b != numba ]] && stem="gp-evolve-cuda-c-$dev"
    timeout ${EVOLVE_T:-150} $py -m gpulab gp evolve --population 25000 --generations 50 --stocks 32 --days 768 \
      --test-days 256 --variant bitsliced --backend $b --seed 1 --out "$OUT" --stem "$stem" > "$OUT/evolve-$b.txt" 2>&1
    say "evolve $b exit $? ($(el) s): $(tail -1 "$OUT/evolve-$b.txt")"
    say "   timing: $($py -c "import json,sys; t=json.load(open(sys.argv[1]))['timing']; print({k: round(v,4) for k,v in t.items() if isinstance(v,(int,float))})" "$OUT/$stem.json" 2>&1 | tail -1)"
  done
  timeout ${TL_T:-300} $py scripts/gp_breed_timeline.py --generation --population 25000 500000 --repeat 5 \
    --json "$OUT/gp-generation-$dev.json" > "$OUT/generation.txt" 2>&1
  say "generation timeline exit $? ($(el) s)"; grep -v -i warn "$OUT/generation.txt" | tail -16 | tee -a "$summary"
fi
if [[ " $stages " == *" gpexp "* ]]; then
  timeout ${GRID_T:-300} $py -m gpulab gp experiment --backend numba --population 25000 --generations 50 --seeds 10 \
    --stocks 32,64,128 --days 256,768,1536 --out "$OUT" --stem "gp-experiment-grid-$dev" \
    --where "device tool, $name" > "$OUT/grid.txt" 2>&1
  say "grid exit $? ($(el) s)"; grep -v -i warn "$OUT/grid.txt" | tail -12 | tee -a "$summary"
  timeout ${EXP_T:-200} $py -m gpulab gp experiment --backend numba --population 25000 --generations 50 --seeds 5 \
    --stocks-total 64 --test-days 256 --out "$OUT" --stem "gp-experiment-$dev" \
    --where "$name machine, bitsliced numba evaluator" > "$OUT/experiment.txt" 2>&1
  say "experiment exit $? ($(el) s)"; grep -v -i warn "$OUT/experiment.txt" | tail -7 | tee -a "$summary"
fi
if [[ " $stages " == *" gpruns "* ]]; then
  for turn in $(seq ${RUNS_TURNS:-2}); do
    timeout ${AB_T:-200} $py scripts/gp_loop_ab.py --runs 25000x50 --backends cuda-c numba --rounds 3 --seeds ${RUNS_SEEDS:-0} --tag now \
      --json "$OUT/loop-now-$turn.json" > "$OUT/runs-$turn.txt" 2>&1
    say "runs turn $turn exit $? ($(el) s)"; grep -E "round" "$OUT/runs-$turn.txt" | tee -a "$summary"
  done
  $py scripts/gp_loop_ab.py --combine "$OUT"/loop-now-*.json --json "$OUT/gp-loop-runs-$dev.json" | tee -a "$summary"
fi
if [[ " $stages " == *" radix "* ]]; then
  timeout ${RADIX_T:-300} $py -m gpulab bench radix --variants onesweep local --sizes 2^24 2^28 "pairs 2^28" \
    --repeat 10 --no-progress --out "$OUT/radix" > "$OUT/radix.txt" 2>&1
  say "bench radix exit $? ($(el) s)"; grep -E "^(2\^|pairs|size)" "$OUT/radix.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" euler "* ]]; then
  sizes="deep-42M undirected-deep-42M"; [[ -n "${EULER_BIG:-}" ]] && sizes="$sizes deep-2^30"
  # shellcheck disable=SC2086
  timeout ${EULER_T:-300} $py -m gpulab bench euler --sizes $sizes --variants ruling_set --repeat 7 --no-progress \
    --out "$OUT/euler" > "$OUT/euler.txt" 2>&1
  say "bench euler exit $? ($(el) s)"; grep -E "42M|2\^30|^size" "$OUT/euler.txt" | tee -a "$summary"
  timeout 60 $py -m gpulab.euler.model "$OUT"/euler/euler-*.json "$OUT/euler" > "$OUT/euler-model.txt" 2>&1
  say "euler model exit $?"; tail -25 "$OUT/euler-model.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" subset "* ]]; then
  timeout 120 $py scripts/subset_call_timeline.py --n 50 --k 5 --repeat 50 --json "$OUT/subset-call-timeline-$dev.json" \
    > "$OUT/subsetcall.txt" 2>&1
  say "subset call exit $? ($(el) s)"; grep -v -i warn "$OUT/subsetcall.txt" | tail -8 | tee -a "$summary"
  timeout ${SUBSET_T:-300} $py -m gpulab bench subset --sizes "C(200,5)" "C(300,5)" \
    --variants incremental incremental_warp incremental_global --repeat 5 --warmup 1 --no-progress \
    --out "$OUT/subset" > "$OUT/subset.txt" 2>&1
  say "bench subset exit $? ($(el) s)"; grep -E "^C\(|^size" "$OUT/subset.txt" | tee -a "$summary"
fi
if [[ " $stages " == *" scatter "* ]]; then
  timeout ${ET_T:-150} $py -m pytest -q -p no:cacheprovider -n 8 tests/euler/test_euler.py \
    -k "${ETESTS:-scatter or pairing or reference_circuit or tuned_parameters}" > "$OUT/euler-tests.log" 2>&1
  say "euler tests exit $? ($(el) s): $(tail -1 "$OUT/euler-tests.log")"
  grep -E "^(FAILED|ERROR)" "$OUT/euler-tests.log" | head -10 | tee -a "$summary"
  for round in $(seq ${SC_ROUNDS:-2}); do for sl in 1 12; do
    p="{\"SCATTER_SLICES\": $sl}"
    GPULAB_EULER_PARAMS="{\"ruling_set\": {\"numba\": $p, \"cuda-c\": $p}}" \
      timeout ${SC_T:-150} $py -m gpulab bench euler --sizes ${SIZES:-deep-42M shallow-42M} --variants ruling_set \
      --repeat 7 --no-progress --out "$OUT/sc-$sl-$round" > "$OUT/sc-$sl-$round.log" 2>&1
    say "euler SCATTER_SLICES=$sl round $round exit $? ($(el) s)"
  done; done
  $py - "$OUT" <<'PY' | tee -a "$summary"
import glob, json, statistics, sys
rows = {}
for f in sorted(glob.glob(sys.argv[1] + "/sc-*-*/euler-*.json")):
    sl, rnd = f.split("/sc-")[1].split("/")[0].split("-")
    for r in json.load(open(f))["records"]:
        if r.get("median_ms") and r["backend"] != "cpu":
            rows.setdefault((r["label"], r["backend"], int(sl)), []).append(
                {"round": int(rnd), "median_ms": r["median_ms"], "samples_ms": r.get("samples_ms"),
                 "public_device_ms": r.get("public_device_ms"), "stages_ms": r.get("stages_ms", {}),
                 "check": r.get("check"), "params": r.get("params")})
runs = [{"label": k[0], "backend": k[1], "SCATTER_SLICES": k[2], "rounds": v} for k, v in rows.items()]
json.dump({"runs": runs}, open(sys.argv[1] + "/euler-scatter-ab.json", "w"), indent=1)
for (label, backend, sl), v in sorted(rows.items()):
    stg = statistics.median(x["stages_ms"].get("pairing", 0) for x in v)
    print(f"{label:14} {backend:7} slices<={sl:2d}  total {' / '.join(f'{x['median_ms']:.2f}' for x in v)} ms  "
          f"pairing {stg:.2f} ms" + ("" if all(x["check"] is not False for x in v) else "  WRONG"))
PY
fi
if [[ " $stages " == *" matmul "* ]]; then
  timeout ${MATMUL_T:-300} $py -m gpulab bench matmul --variants warptile cpasync --sizes N=4096 N=8192 \
    "8192x128x128 (thin B)" --repeat 10 --no-progress --out "$OUT/matmul" > "$OUT/matmul.txt" 2>&1
  say "bench matmul exit $? ($(el) s)"; grep -E "^(N=|8192x|size)" "$OUT/matmul.txt" | tee -a "$summary"
fi
stages_end
