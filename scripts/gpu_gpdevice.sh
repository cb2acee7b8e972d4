#!/usr/bin/env bash
# Issue 29 (GP population kept on the device) on a GPU, one stage per word (default: all three);
# everything under $OUT/w, then $OUT/results.tgz and $OUT/summary.txt (printed last):
#   tests     tests/gp/test_device_population.py and tests/gp/test_breeding_gpu.py on the GPU (the GPU-only
#             ones included: 40,000 individuals bred on the device with both backends, against the CPU)
#   timeline  scripts/gp_breed_timeline.py --generation: one whole generation (train + test evaluation, breeding,
#             validation) at 25,000 and 500,000 individuals on the paths cpu, gpu-host (before), gpu-resident
#             (now), both backends; same_run_as_cpu must be True on every row
#   evolve    gpulab gp evolve, CUDA C: 25,000 individuals x 50 generations (the paper's scale) and 500,000 x 5,
#             CPU then GPU breeding; prints timing.* (total_s, evaluation_s, breeding_s, upload_s, warmup_s) and,
#             per run, generation 0's breed_ms / eval_ms against the median of the later generations
set -uo pipefail
stages="${*:-tests timeline evolve}"
source "$(dirname "$0")/gpu_stages.sh"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if [[ " $stages " == *" tests "* ]]; then
  timeout 300 $py -m pytest -q -x -p no:cacheprovider tests/gp/test_device_population.py tests/gp/test_breeding_gpu.py \
    > "$OUT/tests.log" 2>&1
  say "tests exit $? ($(el) s): $(tail -1 "$OUT/tests.log")"
fi
if [[ " $stages " == *" timeline "* ]]; then
  timeout 400 $py scripts/gp_breed_timeline.py --generation --population ${TL_POP:-25000 500000} --repeat 5 \
    --json "$OUT/gp-generation.json" > "$OUT/generation.txt" 2>&1
  say "generation timeline exit $? ($(el) s)"; tee -a "$summary" < "$OUT/generation.txt"
fi
if [[ " $stages " == *" evolve "* ]]; then
  for run in "25000 50" "500000 5"; do set -- $run; for br in cpu gpu; do
    timeout 200 $py -m gpulab gp evolve --population "$1" --generations "$2" --backend cuda-c --breeding "$br" \
      --out "$OUT/evolve" --stem "evolve-$1-$br" --json > "$OUT/evolve-$1-$br.json" 2> "$OUT/evolve-$1-$br.err"
    say "evolve P=$1 G=$2 breeding=$br exit $? ($(el) s): $($py -c "import json,sys; d=json.load(open(sys.argv[1])); t=d.get('timing',{}); print({k: round(v,4) for k,v in t.items() if isinstance(v,(int,float))}, 'best', d['best'].get('train'))" "$OUT/evolve-$1-$br.json" 2>&1 | tail -1)"
    # per generation (the --out JSON's history): generation 0 against the median of the others, and the programs' growth
    say "   per generation: $($py -c "import json,sys,statistics as st; h=json.load(open(sys.argv[1]))['history']; m=lambda k: round(st.median(x[k] for x in h[1:-1]),3) if len(h)>2 else None; print('gen 0 breed_ms', round(h[0]['breed_ms'],3), 'eval_ms', round(h[0]['eval_ms'],3), '| median of gens 1..G-1 breed_ms', m('breed_ms'), 'eval_ms', m('eval_ms'), '| mean_nodes', round(h[0]['mean_nodes'],1), '->', round(h[-1]['mean_nodes'],1))" "$OUT/evolve/evolve-$1-$br.json" 2>&1 | tail -1)"
  done; done
fi
stages_end
