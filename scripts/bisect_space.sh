#!/usr/bin/env bash
# Which test, run first in the same process on the GPU, makes the next f-string lose its " "?
# (tests/test_steps_hook.py::test_a_rows_marker_can_give_columns_their_unit failed that way in two
# GPU runs, on the workers that had run the tests listed in $1 before it.)
py="${PYTHON:-python3}"
target=tests/test_steps_hook.py::test_a_rows_marker_can_give_columns_their_unit
for g in test_figures test_foundation test_gp_dispatch test_plan_cache test_radix_dispatch test_simwarp test_site; do
  ids=$(grep "$g" "$1" | tr '\n' ' ')
  out=$(timeout 60 $py -m pytest -q -p no:cacheprovider -p no:randomly $ids $target 2>&1 | tail -1)
  echo "$g -> $out"
done
