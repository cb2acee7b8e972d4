#!/usr/bin/env bash
# Chapter 5 on the GPU machine: tune, then benchmark every size with the winners, in one or two
# calls of at most 9 minutes. Everything lands in ONE tarball, $OUT/euler-results.tgz (extract it
# into .gpuout/ to carry part 1's results into part 2), and a short table is printed last.
#
#   part1   tune (python -m gpulab.euler.tune: SPACING/GROWTH/RANK_SPACING, then BLOCK/JUMP_CHECK, both
#           backends, deep-42M and shallow-42M) -> euler-best-params.json; then gpulab bench euler
#           with those parameters: deep/shallow 2^18..2^22 and blog-3M (every variant), 2^24 and
#           42M (Hierholzer, networkx where it finishes, jump, shared, ruling_set), de Bruijn
#           B(2,16..24), B(4,8..12) (ruling_set, jump, Hierholzer, networkx)
#   part2   tests/euler on the GPU (both backends); 2^30 edges (deep, shallow) and B(2,28), B(2,30),
#           B(4,14), B(4,15) with ruling_set and jump (Hierholzer is not timed there: ~10 minutes
#           per run at 2^30 on one core, measured 22 s at 42M). Reads .gpuout/euler-h200.json and
#           .gpuout/euler-best-params.json when present (part 1's tarball, extracted there) and
#           merges its records into that JSON.
#   final   part1 then part2 (a machine without the 9-minute limit)
#
# On the lent H200:  bash scripts/gpu_euler.sh part1       (then: mkdir -p .gpuout && tar -xzf
#                    <part1's euler-results.tgz> -C .gpuout; bash scripts/gpu_euler.sh part2)
# Dry run on a CPU:  GPULAB_DEVICE=sim OUT=/tmp/eo bash scripts/gpu_euler.sh part1   (tiny sizes)
# Every stage runs under `timeout`: its own cap, and never past the part's budget (EULER_BUDGET,
# default 510 s, minus a reserve for packing), so the tarball is always written.
set -uo pipefail
part=${1:-part1}
OUT=${OUT:-gpu-results}
RES=${EULER_RES:-/tmp/euler-results}   # outside $OUT: only the tarball and the summary come back
BUDGET=${EULER_BUDGET:-510}
py="${PYTHON:-python3}"
mkdir -p "$OUT" "$RES"
SECONDS=0
status=0
sim=0
[ "${GPULAB_DEVICE:-}" = sim ] && sim=1

if [ $sim = 1 ]; then  # the simulator's cases (gpulab.euler.bench.cases): a dry run of every stage
  SMALL="deep-96 shallow-120"; MID=""; DB_SMALL="B(2,5)"; BIG_DEEP="deep-96"; BIG_SHALLOW=""; DB_BIG=""
  TEST_K="reference_circuit and ruling_set"
else
  SMALL="deep-2^18 shallow-2^18 deep-2^20 shallow-2^20 deep-2^22 shallow-2^22 blog-3M"
  MID="deep-2^24 shallow-2^24 deep-42M shallow-42M"
  DB_SMALL="B(2,16) B(2,20) B(2,24) B(4,8) B(4,10) B(4,12)"
  BIG_DEEP="deep-2^30"; BIG_SHALLOW="shallow-2^30"
  DB_BIG="B(2,28) B(2,30) B(4,14) B(4,15)"
  TEST_K=""
fi

# stage NAME CAP_SECONDS COMMAND...: run under timeout (the cap, or what is left of the budget)
stage() {
  local name=$1 cap=$2; shift 2
  local left=$(( BUDGET - SECONDS - 40 ))
  local t=$(( cap < left ? cap : left ))
  if [ "$t" -lt 20 ]; then
    echo "== $name: skipped, ${left}s left of the ${BUDGET}s budget" | tee -a "$RES/stages.log"
    return
  fi
  echo "== $name (timeout ${t}s, at ${SECONDS}s)" | tee -a "$RES/stages.log"
  timeout "$t" "$@" > "$RES/$name.log" 2>&1
  local rc=$?
  echo "   $name exit $rc after ${SECONDS}s$([ $rc = 124 ] && echo ' (timed out)')" | tee -a "$RES/stages.log"
  [ $rc = 0 ] || status=1
  tail -n 6 "$RES/$name.log"
}

run_bench() {  # run_bench NAME CAP "SIZES" VARIANTS...
  local name=$1 cap=$2 sizes=$3; shift 3
  [ -n "$sizes" ] || return 0
  local -a sz
  read -r -a sz <<< "$sizes"
  [ $sim = 1 ] && set -- hierholzer ruling_set  # the dry run: the default variant and the CPU peer
  stage "$name" "$cap" env GPULAB_EULER_PARAMS="$PARAMS" $py -m gpulab bench euler --out "$RES" --append \
    --sizes "${sz[@]}" --variants "$@"
}

pack() {
  $py - "$RES" <<'PY' > "$RES/summary.txt" 2>&1
import glob, json, sys
res = sys.argv[1]
from pathlib import Path
for path in sorted(glob.glob(f"{res}/euler-*.json")):
    name = Path(path).name
    if name.startswith(("euler-tuning", "euler-best", "euler-stages")):
        continue
    data = json.load(open(path))
    try:
        from gpulab.euler.bench import write_stages
        write_stages(path, res)
    except Exception as exc:  # noqa: BLE001
        print(f"(stage rows not written: {exc})")
    recs = data["records"]
    print(f"-- {name}: {data['device']['name']}, {len(recs)} records")
    by = {(r["label"], r["variant"], r["backend"]): r for r in recs}
    def ms(label, variant="ruling_set", backend="cuda-c"):
        r = by.get((label, variant, backend))
        return r["median_ms"] if r else None
    print(f"   {'size':14s} {'variant':11s} {'backend':7s} {'ms':>10s} {'x Hierholzer':>13s}  stages (ms)")
    for r in recs:
        if r["variant"] not in ("ruling_set", "jump", "hierholzer") or r["label"] not in (
                "deep-2^20", "deep-42M", "shallow-42M", "blog-3M", "deep-2^30", "shallow-2^30", "B(2,24)",
                "B(2,30)", "B(4,15)", "deep-96", "shallow-120", "B(2,5)"):
            continue
        t = f"{r['median_ms']:.4g}" if r["median_ms"] is not None else "skipped"
        peer = f"{r['ratio_to_peer']:.3g}x" if r.get("ratio_to_peer") else ""
        st = " ".join(f"{k[:5]}={v:.3g}" for k, v in (r.get("stages_ms") or {}).items())
        print(f"   {r['label']:14s} {r['variant']:11s} {r['backend']:7s} {t:>10s} {peer:>13s}  {st}"
              + ("" if r["median_ms"] is not None else f"  ({(r['skipped'] or '')[:80]})"))
    print("   targets (ruling_set, device-resident in and out):")
    for be in ("cuda-c", "numba"):
        d, s, b30, db = ms("deep-42M", backend=be), ms("shallow-42M", backend=be), ms("deep-2^30", backend=be), \
            ms("B(2,30)", backend=be)
        f = lambda x: "not run" if x is None else f"{x:.4g} ms"  # noqa: E731
        ok = lambda x, lim: "" if x is None else (" ok" if x <= lim else " MISSED")  # noqa: E731
        ratio = f"{s / d:.3g}x" if d and s else "not run"
        print(f"   {be:7s} deep-42M {f(d)} (<= 20 ms{ok(d, 20)}), shallow/deep {ratio}"
              f"{'' if not (d and s) else ok(s / d, 2)}, deep-2^30 {f(b30)} (<= 1 s{ok(b30, 1000)}), "
              f"B(2,30) {f(db)} (<= 1 s{ok(db, 1000)})")
best = Path(res) / "euler-best-params.json"
if best.exists():
    print(f"-- tuned parameters ({best.name}): {json.loads(best.read_text())}")
PY
  cat "$RES/stages.log" >> "$RES/summary.txt"
  tar -czf "$OUT/euler-results.tgz" -C "$RES" .
  cp "$RES/summary.txt" "$OUT/euler-summary.txt"
  echo
  echo "== wrote $OUT/euler-results.tgz ($(tar -tzf "$OUT/euler-results.tgz" | wc -l) files) after ${SECONDS}s"
  echo "== summary"
  cat "$RES/summary.txt"
}

do_part1() {
  $py -m gpulab info > "$RES/info.txt" 2>&1
  head -3 "$RES/info.txt"
  stage tune 240 $py -m gpulab.euler.tune --out "$RES"
  grep -A30 "To make the winners" "$RES/tune.log" || true
  PARAMS="$RES/euler-best-params.json"
  [ -f "$PARAMS" ] || PARAMS=""
  # the blog's sizes first: a stage cut by its timeout writes no records
  run_bench bench-42M 240 "$MID" hierholzer networkx jump shared ruling_set
  run_bench bench-small 150 "$SMALL" hierholzer networkx partition propagate jump shared ruling_set
  run_bench bench-debruijn-small 120 "$DB_SMALL" hierholzer networkx jump ruling_set
}

do_part2() {
  for f in .gpuout/euler-*.json .gpuout/euler-*.png; do  # part 1's results: merged into, kept
    [ -f "$f" ] && cp "$f" "$RES/" && echo "carried in $f"
  done
  for f in .gpuout/*.log .gpuout/info.txt .gpuout/summary.txt; do
    [ -f "$f" ] && cp "$f" "$RES/part1-$(basename "$f")"
  done
  PARAMS="$RES/euler-best-params.json"
  [ -f "$PARAMS" ] || { PARAMS=""; echo "no tuned parameters carried in: the registry's defaults"; }
  local -a targs=(tests/euler)
  [ -n "$TEST_K" ] && targs+=(-k "$TEST_K")
  [ -n "${EULER_SKIP_TESTS:-}" ] || stage tests 150 $py -m pytest -q -rs -p no:cacheprovider "${targs[@]}"
  run_bench bench-deep-2p30 150 "$BIG_DEEP" ruling_set jump
  run_bench bench-debruijn-big 200 "$DB_BIG" ruling_set jump
  run_bench bench-shallow-2p30 150 "$BIG_SHALLOW" ruling_set jump
}

case $part in
  part1) do_part1 ;;
  part2) do_part2 ;;
  final) BUDGET=${EULER_BUDGET:-1100}; do_part1; do_part2 ;;
  *) echo "usage: bash scripts/gpu_euler.sh part1|part2|final"; exit 2 ;;
esac
pack
exit $status
