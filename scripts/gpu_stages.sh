# Sourced by the GPU stage scripts (gpu_session3.sh, gpu_session4.sh, gpu_gpdevice.sh): everything a
# stage writes goes under $OUT/w, which stages_end packs into $OUT/results.tgz beside
# $OUT/summary.txt (the device tool brings back at most a few files), printing the summary last.
#   source scripts/gpu_stages.sh        # sets FINAL, OUT (= $FINAL/w), py, summary; el, say
#   ... stages ...
#   stages_end
FINAL=${OUT:-gpu-out}; OUT="$FINAL/w"; mkdir -p "$OUT"
py="${PYTHON:-python3}"
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }   # seconds since the start
summary="$OUT/summary.txt"; : > "$summary"
say() { echo "$*" | tee -a "$summary"; }                 # a line of the summary
# in_tree CODE CMD...: run CMD with the package tree of CODE, "old" (the tree at $OLD, default abold,
# made by `git archive <rev> gpulab | tar x -C abold`) or "new" (this one), from that tree's directory:
# `python -m` puts the working directory first on sys.path
in_tree() {
  local pp="$PWD"; [[ $1 == old ]] && pp="$PWD/${OLD:-abold}"; shift
  (cd "$pp" && PYTHONPATH="$pp:/tmp/gpukit-site" "$@")
}
# euler_bench_42m: gpulab bench euler, ruling_set and numba Hierholzer, deep-42M, shallow-42M and
# undirected-deep-42M -> $OUT/euler/, then the stage bounds (gpulab.euler.model) beside them
euler_bench_42m() {
  timeout ${EULER_T:-300} $py -m gpulab bench euler --sizes deep-42M shallow-42M undirected-deep-42M \
    --variants ruling_set hierholzer --repeat 7 --no-progress --out "$OUT/euler" > "$OUT/euler.txt" 2>&1
  say "bench euler exit $? ($(el) s)"; grep -E "42M|^size" "$OUT/euler.txt" | tee -a "$summary"
  timeout 60 $py -m gpulab.euler.model "$OUT"/euler/euler-*.json "$OUT/euler" > "$OUT/euler-model.txt" 2>&1
  say "euler model exit $?"; tail -25 "$OUT/euler-model.txt" | tee -a "$summary"
}
# radix_call_ab [SIZES...]: gpulab bench radix, onesweep at SIZES (default 2^24 keys and pairs), in turns
# old/new/new/old (in_tree) -> $OUT/rab-<tree>-<seconds>/, then each turn's kernels, public call and their ratio
radix_call_ab() {
  local sizes=("$@"); (( ${#sizes[@]} )) || sizes=(2^24 "pairs 2^24")
  for turn in old new new old; do
    tag=$turn-$(el); in_tree $turn timeout ${RAB_T:-120} $py -m gpulab bench radix --variants onesweep --sizes "${sizes[@]}" \
      --repeat ${RAB_REPEAT:-20} --no-progress --out "$OUT/rab-$tag" > "$OUT/rab-$tag.txt" 2>&1
    say "rab $turn exit $? ($(el) s)"
  done
  for f in "$OUT"/rab-*/radix-*.json; do
    $py - "$f" <<'PY' | tee -a "$summary"
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["records"]:
    if r["variant"] == "onesweep":
        print(f"{sys.argv[1].split('/')[-2]:>14} {r['backend']:7} {r['label']:11} kern {r['median_ms']:.4f} public {r['public_median_ms']:.4f} "
              f"ratio {r['public_over_kernel']:.3f} peer {r['peer_median_ms']:.4f}")
PY
  done
}
# gpu_pytest NAME TIMEOUT ARGS...: pytest -v on 12 workers -> $OUT/NAME.log (-v, so that a failure is
# in the log even if the timeout cuts the run); its last line and any failures in the summary
gpu_pytest() {
  local name=$1 limit=$2; shift 2
  timeout "$limit" $py -m pytest -v -p no:cacheprovider -n 12 "$@" > "$OUT/$name.log" 2>&1
  say "$name exit $? ($(el) s): $(tail -1 "$OUT/$name.log")"
  grep -E "(FAILED|ERROR) tests" "$OUT/$name.log" | head -20 | tee -a "$summary"
}
# radix_bench_append NAME TIMEOUT REPEAT SIZES...: gpulab bench radix, every variant with CUB at SIZES, appended
# to a copy of the committed radix-h200.json (the other sizes kept) -> $OUT/NAME/, $OUT/NAME.txt; the
# onesweep rows in the summary
radix_bench_append() {
  local name=$1 limit=$2 repeat=$3; shift 3
  mkdir -p "$OUT/$name" && cp docs/benchmarks/radix-h200.json "$OUT/$name/"
  timeout "$limit" $py -m gpulab bench radix --sizes "$@" --repeat "$repeat" --no-progress --append \
    --out "$OUT/$name" > "$OUT/$name.txt" 2>&1
  say "bench radix $* exit $? ($(el) s)"; grep -E "onesweep|^size" "$OUT/$name.txt" | tee -a "$summary"
}
# radix_bench_2p24: every variant at 2^24 keys and pairs (RB_REPEAT repeats, default 10) -> $OUT/rbench/
radix_bench_2p24() {
  radix_bench_append rbench ${RB_T:-200} ${RB_REPEAT:-10} 2^24 "pairs 2^24"
}
# matmul_mtests: chapter 1's stream-K and matmul GPU tests (MTESTS: others) -> $OUT/mtests.log
matmul_mtests() {
  gpu_pytest mtests ${MT_T:-200} ${MTESTS:-tests/matmul/test_stream_k.py tests/matmul/test_matmul.py tests/matmul/test_matmul_defaults.py}
}
# matmul_bench_fast: gpulab bench matmul of the fast variants at N = 4096, 8192, 4099 and thin B, the public
# call on CuPy arrays (cuBLAS through CuPy in the same run) -> $OUT/mmbench
matmul_bench_fast() {
  timeout ${MM_T:-300} $py -m gpulab bench matmul --variants register prefetch wide vec4 warptile streamk small cpasync \
    --sizes N=4096 N=8192 N=4099 "8192x128x128 (thin B)" --repeat ${MM_REPEAT:-10} --no-progress --out "$OUT/mmbench" > "$OUT/mmbench.txt" 2>&1
  say "bench matmul exit $? ($(el) s)"; grep -E "^(N=|8192x)" "$OUT/mmbench.txt" | grep -E "warptile|streamk|small" | tee -a "$summary"
}
# radix_probe_turns NAME TURNS ARGS...: scripts/radix_call_probe.py --log2 24 --pairs ARGS in each tree of TURNS
# (in_tree: "old new" ...) -> $OUT/NAME-<tree>-<seconds>.json / .txt; each turn's table in the summary
# (RP_T, RP_CALLS, RP_BLOCKS; RP_GREP: a filter of the table's rows, default all)
radix_probe_turns() {
  local name=$1 turns=$2 R=$PWD; shift 2
  for turn in $turns; do
    tag=$turn-$(el); in_tree $turn timeout ${RP_T:-150} $py "$R/scripts/radix_call_probe.py" --log2 24 --pairs "$@" \
      --calls ${RP_CALLS:-60} --blocks ${RP_BLOCKS:-2} --json "$OUT/$name-$tag.json" > "$OUT/$name-$tag.txt" 2>&1
    say "radix probe $name $turn exit $? ($(el) s)"; grep -v -i warn "$OUT/$name-$tag.txt" | grep -A80 "^backend" \
      | grep -E "${RP_GREP:-.}" | sed "s/^/$turn /" | tee -a "$summary"
  done
}
stages_end() {
  cp "$summary" "$FINAL/summary.txt"; tar czf "$FINAL/results.tgz" -C "$OUT" . && rm -rf "$OUT"
  echo "== summary"; cat "$FINAL/summary.txt"
}
