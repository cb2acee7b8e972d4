#!/usr/bin/env bash
# Session 9's GPU work (writes under $OUT, prints a short table last), stages by name:
#   tests    chapter 5's tests on the GPU (tests/euler, tests/test_euler_layout.py)
#   sanitize compute-sanitizer (memcheck, racecheck, synccheck, initcheck) on chapter 5 (scripts/sanitize.py),
#            and memcheck and initcheck on the test of the ranking from the labelling's sublists
#   sublists chapter 5's ranking from the labelling's sublists (SUBLISTS = 1) against splitters of
#            its own (SUBLISTS = 0): gpulab bench euler, ruling_set, deep-42M, shallow-42M and
#            undirected-deep-42M, both backends, rounds A B A B (GPULAB_EULER_PARAMS sets SUBLISTS),
#            each record's total, public call and stage split
set -uo pipefail
stages="${*:-sublists}"
source "$(dirname "$0")/gpu_stages.sh"
say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
if [[ " $stages " == *" tests "* ]]; then
  timeout "${TT:-300}" $py -m pytest -q -p no:cacheprovider -n 8 --timeout 240 tests/euler tests/test_euler_layout.py \
    > "$OUT/euler-tests.log" 2>&1
  say "euler tests exit $? ($(el) s): $(tail -1 "$OUT/euler-tests.log")"
  grep -E "^FAILED|^ERROR" "$OUT/euler-tests.log" | head -20 | tee -a "$summary"
fi
if [[ " $stages " == *" sanitize "* ]]; then
  timeout "${ST:-240}" $py scripts/sanitize.py --all-tools --jobs 4 --out "$OUT/sanitize" euler > "$OUT/sanitize.log" 2>&1
  say "sanitize exit $? ($(el) s)"; tail -12 "$OUT/sanitize.log" | tee -a "$summary"
  for tool in memcheck initcheck; do
    timeout 200 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 $py -m pytest -q -p no:cacheprovider \
      tests/euler/test_euler.py -k "labelling_sublists or too_many_labelling" > "$OUT/san-sublists-$tool.log" 2>&1
    say "sanitizer $tool on the sublists tests exit $? ($(el) s): $(grep -E "ERROR SUMMARY|passed|failed" "$OUT/san-sublists-$tool.log" | tr '\n' ' ')"
  done
fi
if [[ " $stages " == *" sublists "* ]]; then
  # CONFIGS: SUBLISTS:SPACING pairs, each run per round in this order (the A/B: 0:128 1:128)
  for round in 1 2 3; do for cfg in ${CONFIGS:-0:128 1:128}; do
    sub=${cfg%:*}; sp=${cfg#*:}
    p="{\"SUBLISTS\": $sub, \"SPACING\": $sp}"
    GPULAB_EULER_PARAMS="{\"ruling_set\": {\"numba\": $p, \"cuda-c\": $p}}" \
      timeout "${ET:-150}" $py -m gpulab bench euler --sizes ${SIZES:-deep-42M shallow-42M undirected-deep-42M} \
      --variants ruling_set --repeat 7 --no-progress --out "$OUT/sub-$sub-$sp-$round" > "$OUT/sub-$sub-$sp-$round.log" 2>&1
    say "euler SUBLISTS=$sub SPACING=$sp round $round exit $? ($(el) s)"
  done; done
  $py - "$OUT" <<'PY' | tee -a "$summary"
import glob, json, statistics, sys
rows = {}
for f in sorted(glob.glob(sys.argv[1] + "/sub-*-*-*/euler-*.json")):
    sub, sp, rnd = f.split("/sub-")[1].split("/")[0].split("-")
    for r in json.load(open(f))["records"]:
        if r.get("median_ms") and r["backend"] != "cpu":
            st = r.get("stages_ms", {})
            rows.setdefault((r["label"], r["backend"], int(sub), int(sp)), []).append(
                {"round": int(rnd), "median_ms": r["median_ms"], "samples_ms": r.get("samples_ms"),
                 "public_device_ms": r.get("public_device_ms"), "stages_ms": st, "stats": r.get("stats"),
                 "check": r.get("check"), "params": r.get("params")})
runs = [{"label": k[0], "backend": k[1], "SUBLISTS": k[2], "SPACING": k[3], "rounds": v} for k, v in rows.items()]
json.dump({"runs": runs}, open(sys.argv[1] + "/sublists-ab.json", "w"), indent=1)
print(f"{'graph':22} {'backend':7} {'S':>1} {'SP':>4} {'total ms (rounds)':>17} {'public':>7} {'label':>6} {'rank':>6}")
for (label, backend, sub, sp), v in sorted(rows.items()):
    med = lambda k: statistics.median((x[k] or 0) if k != "stages" else 0 for x in v)
    stg = lambda k: statistics.median(x["stages_ms"].get(k, 0) for x in v)
    print(f"{label:22} {backend:7} {sub:>1} {sp:>4} {' / '.join(f'{x['median_ms']:.2f}' for x in v):>17} "
          f"{med('public_device_ms'):7.2f} {stg('labelling'):6.2f} {stg('ranking'):6.2f}"
          + ("" if all(x["check"] is not False for x in v) else "  WRONG"))
PY
fi
stages_end
