#!/usr/bin/env bash
# All of tests/ on a GPU machine in one command: xdist workers (WORKERS, default 8) sharing the
# GPU, tests spread one by one (DIST=worksteal where xdist has it, else load; DIST=loadfile keeps
# each file in one worker), numba's
# CPU thread pool split between the workers (NUMBA_NUM_THREADS = cores / workers: unsplit, every
# worker's parallel njit woke 16 threads), a per-test timeout that names a hanging test, the 30
# slowest tests listed, and the log, each test's time (tests-all.tsv, written as tests end) and
# the JUnit XML written to $OUT (or ./gpu-results).
#
#   source .gpukit/env.sh && bash scripts/gpu_tests.sh            # everything
#   WORKERS=4 TIMEOUT=600 bash scripts/gpu_tests.sh tests/radix   # other workers / timeout / paths
#
# Files whose session fixtures compile every kernel or build the site (test_compile, test_exercises,
# test_site, test_distributed) keep their own 30-minute timeout (tests/conftest.py).
set -uo pipefail
out="${OUT:-gpu-results}"
mkdir -p "$out"
py="${PYTHON:-python3}"
paths=("$@")
[ ${#paths[@]} -gt 0 ] || paths=(tests)
start=$(date +%s)
workers="${WORKERS:-8}"
# worksteal (pytest-xdist >= 3.2) hands an idle worker tests queued on a busy one: with "load", the
# seven 50-second planted subset searches once queued on one worker, which then ran 416 s of tests
# while the others ran about 150 s
if [ -z "${DIST:-}" ]; then
  DIST=$($py -c "import xdist, sys; v = tuple(int(x) for x in xdist.__version__.split('.')[:2]); print('worksteal' if v >= (3, 2) else 'load')" 2>/dev/null || echo load)
fi
export NUMBA_NUM_THREADS="${NUMBA_NUM_THREADS:-$(( $(nproc) / workers > 2 ? $(nproc) / workers : 2 ))}"  # at least 2: tests compare thread counts
export GPULAB_TEST_LOG="$out/tests-all.tsv"; : > "$GPULAB_TEST_LOG"
$py -m gpulab info > "$out/info.txt" 2>&1
# shellcheck disable=SC2086
$py -m pytest -q -rs -p no:cacheprovider -n "$workers" --dist "${DIST:-load}" --timeout "${TIMEOUT:-300}" \
    --durations 30 --junitxml="$out/tests-all.xml" "${paths[@]}" 2>&1 | tee "$out/tests-all.log" | tail -60
status=${PIPESTATUS[0]}
echo "== all of ${paths[*]}: exit $status in $(( $(date +%s) - start )) s (log: $out/tests-all.log)"
exit "$status"
