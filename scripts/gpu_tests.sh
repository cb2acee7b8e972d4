#!/usr/bin/env bash
# All of tests/ on a GPU machine in one command: 4 xdist workers, one chapter per worker
# (--dist "${DIST:-loadgroup}" with the xdist_group marks of tests/conftest.py, so each kernel is compiled
# once, in the worker that runs its chapter), a per-test timeout that names a hanging test,
# the 30 slowest tests listed, and the log and JUnit XML written to $OUT (or ./gpu-results).
#
#   source .gpukit/env.sh && bash scripts/gpu_tests.sh            # everything
#   WORKERS=8 TIMEOUT=600 bash scripts/gpu_tests.sh tests/radix   # other workers / timeout / paths
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
export GPULAB_TEST_LOG="$out/tests-all.tsv"; : > "$GPULAB_TEST_LOG"
$py -m gpulab info > "$out/info.txt" 2>&1
# shellcheck disable=SC2086
$py -m pytest -q -rs -p no:cacheprovider -n "${WORKERS:-4}" --dist "${DIST:-loadgroup}" --timeout "${TIMEOUT:-300}" \
    --durations 30 --junitxml="$out/tests-all.xml" "${paths[@]}" 2>&1 | tee "$out/tests-all.log" | tail -60
status=${PIPESTATUS[0]}
echo "== all of ${paths[*]}: exit $status in $(( $(date +%s) - start )) s (log: $out/tests-all.log)"
exit "$status"
