#!/usr/bin/env bash
# The whole GPU run of one or more chapters, in one command:
#   1. gpulab info (device, driver, pycuda)
#   2. the chapters' test suites on the real GPU, both backends (numba and CUDA C via pycuda)
#   3. gpulab bench <chapter> for each chapter: JSON + PNG
#   4. a short summary table, printed last
# Results go to $OUT (the device tool's output folder) or ./gpu-results.
#
# On the lent H200:   source .gpukit/env.sh && bash scripts/gpu_run.sh matmul
# Dry run on a CPU:   GPULAB_DEVICE=sim bash scripts/gpu_run.sh matmul   (simulator, tiny sizes)
set -uo pipefail
chapters=("$@")
[ ${#chapters[@]} -gt 0 ] || chapters=(matmul)
out="${OUT:-gpu-results}"
mkdir -p "$out"
py="${PYTHON:-python3}"
status=0

echo "== device"; $py -m gpulab info | tee "$out/info.txt"

for ch in "${chapters[@]}"; do
  echo "== tests: $ch"
  tests="tests/$ch"
  [ "$ch" = matmul ] && tests="tests/matmul tests/test_foundation.py"
  # shellcheck disable=SC2086
  $py -m pytest -q -rs -p no:cacheprovider $tests --junitxml="$out/tests-$ch.xml" 2>&1 | tee "$out/tests-$ch.log" | tail -25
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
done

for ch in "${chapters[@]}"; do
  echo "== bench: $ch"
  $py -m gpulab bench "$ch" --out "$out" --repeat "${REPEAT:-10}" > "$out/bench-$ch.log" 2>&1 || status=1
  tail -n 4 "$out/bench-$ch.log"
done

echo
echo "== summary"
for ch in "${chapters[@]}"; do
  echo "-- $ch tests: $(grep -E '[0-9]+ (passed|failed)' "$out/tests-$ch.log" | tail -1)"
done
for ch in "${chapters[@]}"; do
  $py - "$out" "$ch" <<'PY'
import glob, json, sys
out, ch = sys.argv[1], sys.argv[2]
for path in sorted(glob.glob(f"{out}/{ch}-*.json")):
    data = json.load(open(path))
    print(f"-- {path}: {data['device']['name']}")
    labels = list(dict.fromkeys(r["label"] for r in data["records"]))
    big = labels[-2] if len(labels) > 1 and "thin" in labels[-1] else labels[-1]
    for r in data["records"]:
        if r["label"] in (big,) or ("thin" in r["label"] and "constant" in r["variant"]):
            t = "skipped" if r["throughput"] is None else f"{r['throughput']:.4g} {r['unit']}"
            peer = "" if not r["ratio_to_peer"] else f"{100 * r['ratio_to_peer']:.1f}% of peer"
            pub = "" if not r.get("public_over_kernel") else f"  public call {r['public_over_kernel']:.3f}x kernel"
            print(f"   {r['label']:24s} {r['variant']:20s} {r['backend']:7s} {t:>18s} {peer}{pub}")
PY
done
exit $status
