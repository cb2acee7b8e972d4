#!/usr/bin/env bash
# Issue 30's undirected Euler pipeline, one stage per word (everything under $OUT/w, packed into
# $OUT/results.tgz beside $OUT/summary.txt):
#   uprobe   scripts/euler_undirected_probe.py at 42M edges, both backends, into euler-undirected-probe-<dev>.json
#   utests   the Euler tests of the undirected pipeline on the GPU (UTESTS, -k UK)
#   uab      gpulab bench euler, ruling_set, deep-42M and undirected-deep-42M, both backends, in rounds of
#            three: the package before this change (.oldtree: `git archive <commit> gpulab`, carried),
#            TRAILS=0, the defaults; into euler-undirected-ab-<dev>.json
set -uo pipefail
stages="${*:-uprobe}"
source "$(dirname "$0")/gpu_stages.sh"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
dev=h100; [[ $name == *H200* ]] && dev=h200
say "device: $name ($dev), stages: $stages"
if [[ " $stages " == *" uprobe "* ]]; then
  timeout ${PROBE_T:-300} $py scripts/euler_undirected_probe.py --json "$OUT/euler-undirected-probe-$dev.json" \
    > "$OUT/uprobe.txt" 2>&1
  say "undirected probe exit $? ($(el) s)"; grep -v -i warn "$OUT/uprobe.txt" | tail -44 | tee -a "$summary"
fi
if [[ " $stages " == *" utests "* ]]; then
  # shellcheck disable=SC2086
  timeout ${TESTS_T:-240} $py -m pytest -q -n 8 -p no:cacheprovider ${UTESTS:-tests/euler/test_euler.py} \
    -k "${UK:-undirected or trail or path or odd or scatter}" > "$OUT/utests.log" 2>&1
  say "tests exit $? ($(el) s): $(tail -1 "$OUT/utests.log")"
  grep -E "^(FAILED|ERROR)" "$OUT/utests.log" | head -20 | tee -a "$summary"
fi
if [[ " $stages " == *" uab "* ]]; then
  # A/B/C in rounds: "before" = the package as it was before this change (its copy in .oldtree),
  # "darts" = this change with TRAILS=0, "trails" = this change's defaults
  # ("before" runs inside .oldtree: `python -m` puts the working directory first on sys.path)
  for round in $(seq ${UAB_ROUNDS:-2}); do for cfg in ${UAB_CFGS:-before darts trails}; do
    dir="$PWD"; p='{}'
    [[ $cfg == before ]] && dir="$PWD/.oldtree"
    [[ $cfg == darts ]] && p='{"ruling_set": {"numba": {"TRAILS": 0}, "cuda-c": {"TRAILS": 0}}}'
    (cd "$dir" && GPULAB_EULER_PARAMS="$p" timeout ${UAB_T:-170} $py -m gpulab bench euler \
      --sizes ${SIZES:-deep-42M undirected-deep-42M} --variants ruling_set --repeat 7 --seed 1 --no-progress \
      --out "$OUT/uab-$cfg-$round" > "$OUT/uab-$cfg-$round.log" 2>&1)
    say "euler $cfg round $round exit $? ($(el) s)"
  done; done
  $py - "$OUT" "$dev" <<'PY' | tee -a "$summary"
import glob, json, statistics, sys
import gpulab
print("this package:", gpulab.__file__)
rows = {}
for f in sorted(glob.glob(sys.argv[1] + "/uab-*-*/euler-*.json")):
    cfg, rnd = f.split("/uab-")[1].split("/")[0].split("-")
    for r in json.load(open(f))["records"]:
        if r.get("median_ms") and r["backend"] != "cpu":
            rows.setdefault((r["label"], r["backend"], cfg), []).append(
                {"round": int(rnd), "median_ms": r["median_ms"], "samples_ms": r.get("samples_ms"),
                 "public_device_ms": r.get("public_device_ms"), "stages_ms": r.get("stages_ms", {}),
                 "stats": r.get("stats"), "check": r.get("check"), "params": r.get("params")})
runs = [{"label": k[0], "backend": k[1], "config": k[2], "rounds": v} for k, v in rows.items()]
json.dump({"about": "scripts/gpu_session16.sh uab: gpulab bench euler, ruling_set, rounds of before (the package "
           "before the change) / darts (TRAILS=0) / trails (defaults)", "runs": runs},
          open(f"{sys.argv[1]}/euler-undirected-ab-{sys.argv[2]}.json", "w"), indent=1)
for (label, backend, cfg), v in sorted(rows.items()):
    st = {k: statistics.median(x["stages_ms"].get(k, 0) for x in v) for k in ("pairing", "labelling")}
    print(f"{label:20} {backend:7} {cfg:7} total {' / '.join(f'{x['median_ms']:.2f}' for x in v)} ms  "
          f"pairing {st['pairing']:.2f} labelling {st['labelling']:.2f} "
          f"TRAILS={v[0]['params'].get('TRAILS')} SCATTER_SLICES={v[0]['params'].get('SCATTER_SLICES')}" +
          ("" if all(x["check"] is not False for x in v) else "  WRONG"))
PY
fi
stages_end
