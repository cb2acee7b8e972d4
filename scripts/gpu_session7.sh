#!/usr/bin/env bash
# Session 7's GPU work (writes under $OUT, prints a short table last), stages by name:
#   ab       the bit-sliced interpreter's fused programs against one entry per node
#            (scripts/gp_bits_ab.py) on populations grown at the paper's scale, both backends,
#            with whole gp.evolve runs of each. The script and the FUSE parameter exist at commit
#            f668f6b only (fusion was slower and was reverted): check that commit out to rerun it
#   evolve   gpulab gp evolve at the paper's scale (25,000 x 50, three runs) and 500,000 x 5, both
#            backends, breeding on the GPU (each run's --json)
#   euler    the undirected pipeline with the orientation's pairing read off the darts: bench euler
#            at deep-42M and undirected-deep-42M (ruling_set, both backends, median of 7), the
#            stage bounds of that run, and the GPU tests of chapter 5
#   tests    the GPU tests of chapter 3's evaluation and loop (run at f668f6b with tests/gp/test_fused.py too:
#            265 passed on an H100)
set -uo pipefail
stages="${*:-evolve}"
source "$(dirname "$0")/gpu_stages.sh"
say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
if [[ " $stages " == *" ab "* ]]; then
  if [[ ! -f scripts/gp_bits_ab.py ]]; then say "ab skipped: scripts/gp_bits_ab.py is at commit f668f6b only"
  else for b in cuda-c numba; do
    timeout 240 $py scripts/gp_bits_ab.py --backend $b --json "$OUT/gp-bits-ab-$b.json" > "$OUT/gp-bits-ab-$b.log" 2>&1
    say "gp bits A/B $b exit $? ($(el) s)"; grep -E "^evolve|^\|" "$OUT/gp-bits-ab-$b.log" | tee -a "$summary"
  done; fi
fi
if [[ " $stages " == *" evolve "* ]]; then
  run() {  # population generations backend tag
    timeout 200 $py -m gpulab gp evolve --population "$1" --generations "$2" --backend "$3" --breeding gpu \
      --out "$OUT/evolve" --stem "evolve-$1-$3-$4" --json > "$OUT/evolve-$1-$3-$4.json" 2> "$OUT/evolve-$1-$3-$4.err"
    say "evolve P=$1 G=$2 $3 #$4 exit $? ($(el) s): $($py -c "import json,sys; d=json.load(open(sys.argv[1])); t=d.get('timing',{}); print({k: round(v,4) for k,v in t.items() if isinstance(v,(int,float))}, 'best', d['best'].get('train'))" "$OUT/evolve-$1-$3-$4.json" 2>&1 | tail -1)"
  }
  for b in cuda-c numba; do for r in 1 2 3; do run 25000 50 $b $r; done; run 500000 5 $b 1; done
fi
if [[ " $stages " == *" euler "* ]]; then
  timeout 300 $py -m gpulab bench euler --sizes deep-42M undirected-deep-42M --variants ruling_set --repeat 7 --no-progress \
    --out "$OUT/eulerud" > "$OUT/eulerud.txt" 2>&1
  say "bench euler exit $? ($(el) s)"; grep -E "42M|^size" "$OUT/eulerud.txt" | tee -a "$summary"
  timeout 60 $py -m gpulab.euler.model "$OUT"/eulerud/euler-*.json "$OUT/eulerud" > "$OUT/eulerud-model.txt" 2>&1
  say "euler model exit $?"; tail -16 "$OUT/eulerud-model.txt" | tee -a "$summary"
  timeout 300 $py -m pytest -q -p no:cacheprovider -n 8 tests/euler tests/test_euler_layout.py > "$OUT/euler-tests.log" 2>&1
  say "euler tests exit $? ($(el) s): $(tail -1 "$OUT/euler-tests.log")"; grep -E "^FAILED|^ERROR" "$OUT/euler-tests.log" | head | tee -a "$summary"
fi
if [[ " $stages " == *" tests "* ]]; then
  timeout 400 $py -m pytest -q -x -p no:cacheprovider -n 8 tests/gp/test_variants.py \
    tests/gp/test_evolve.py tests/gp/test_device_population.py > "$OUT/tests.log" 2>&1
  say "tests exit $? ($(el) s): $(tail -1 "$OUT/tests.log")"
  grep -E "^FAILED|^ERROR" "$OUT/tests.log" | head -20 | tee -a "$summary"
fi
stages_end
