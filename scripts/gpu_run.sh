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
# In parts (each under a time limit): SKIP_TESTS=1 skips step 2; BENCH_ARGS is passed to
# gpulab bench, e.g. BENCH_ARGS="--sizes deep-42M shallow-42M --append".
set -uo pipefail
chapters=("$@")
[ ${#chapters[@]} -gt 0 ] || chapters=(matmul)
out="${OUT:-gpu-results}"
mkdir -p "$out"
py="${PYTHON:-python3}"
status=0

echo "== device"; $py -m gpulab info | tee "$out/info.txt"

for ch in "${chapters[@]}"; do
  [ -n "${SKIP_TESTS:-}" ] && break
  echo "== tests: $ch"
  tests="tests/$ch"
  [ "$ch" = matmul ] && tests="tests/matmul tests/test_foundation.py"
  # shellcheck disable=SC2086
  $py -m pytest -q -rs -p no:cacheprovider $tests --junitxml="$out/tests-$ch.xml" 2>&1 | tee "$out/tests-$ch.log" | tail -25
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
done

for ch in "${chapters[@]}"; do
  echo "== bench: $ch"
  # shellcheck disable=SC2086
  $py -m gpulab bench "$ch" --out "$out" --repeat "${REPEAT:-10}" ${BENCH_ARGS:-} > "$out/bench-$ch.log" 2>&1 || status=1
  tail -n 4 "$out/bench-$ch.log"
done

echo
echo "== summary"
for ch in "${chapters[@]}"; do
  [ -f "$out/tests-$ch.log" ] && echo "-- $ch tests: $(grep -E '[0-9]+ (passed|failed)' "$out/tests-$ch.log" | tail -1)"
done
for ch in "${chapters[@]}"; do
  $py - "$out" "$ch" <<'PY'
import glob, json, sys
out, ch = sys.argv[1], sys.argv[2]
for path in sorted(glob.glob(f"{out}/{ch}-*.json")):
    data = json.load(open(path))
    print(f"-- {path}: {data['device']['name']}")
    if ch == "euler":  # the GPU-run issue's targets: the blog's size, 2^30 edges, B(2,30)
        for r in data["records"]:
            if r["label"] not in ("deep-42M", "shallow-42M", "blog-3M", "deep-2^30", "shallow-2^30", "B(2,30)",
                                  "B(4,15)", "deep-96", "shallow-120", "B(2,5)"):
                continue
            t = f"{r['median_ms']:.4g} ms" if r["median_ms"] is not None else "skipped"
            peer = f"{r['ratio_to_peer']:.3g}x Hierholzer" if r.get("ratio_to_peer") else ""
            pub = f"public {r['public_device_ms']:.4g} ms" if r.get("public_device_ms") else ""
            h2h = f"host {r['host_to_host_ms']:.4g} ms" if r.get("host_to_host_ms") else ""
            cyc = r.get("graph", {}).get("cycles_after_pairing")
            print(f"   {r['label']:14s} {r['variant']:11s} {r['backend']:7s} {t:>14s} {peer:>18s} {pub} {h2h}"
                  + (f" cycles={cyc}" if cyc else "") + ("" if r["median_ms"] is not None else f"  ({(r['skipped'] or '')[:90]})"))
        continue
    labels = list(dict.fromkeys(r["label"] for r in data["records"]))
    big = labels[-2] if len(labels) > 1 and "thin" in labels[-1] else labels[-1]
    if ch == "gp":  # every size: ms per generation, GP ops/s, speedups, compile time
        for r in data["records"]:
            if r["median_ms"] is None:
                continue
            extra = "".join(f" {k}={r[k]:.3g}" for k in ("speedup_same_algorithm", "word_ops_per_s", "compile_ms") if k in r)
            peer = "" if not r["ratio_to_peer"] else f" {r['ratio_to_peer']:.3g}x peer"
            print(f"   {r['label']:22s} {r['variant']:14s} {r['backend']:7s} {r['median_ms']:10.4g} ms "
                  f"{r['throughput']:.3g} GP ops/s{peer}{extra}")
        continue
    for r in data["records"]:
        if r["label"] in (big,) or ("thin" in r["label"] and "constant" in r["variant"]):
            t = "skipped" if r["throughput"] is None else f"{r['throughput']:.4g} {r['unit']}"
            peer = "" if not r["ratio_to_peer"] else f"{100 * r['ratio_to_peer']:.1f}% of peer"
            pub = "" if not r.get("public_over_kernel") else f"  public call {r['public_over_kernel']:.3f}x kernel"
            print(f"   {r['label']:24s} {r['variant']:20s} {r['backend']:7s} {t:>18s} {peer}{pub}")
PY
done
exit $status
