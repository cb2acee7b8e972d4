"""Tests of the chapter 4 exercises (graded per exercise by `gpulab grade radix`)."""

import numpy as np
import pytest
from numba import cuda

from gpulab.checking import poisoned
from gpulab.errors import LimitError, ShapeError


def segmented_reference(values, heads):
    out = np.empty_like(values)
    acc = 0
    for i, (v, h) in enumerate(zip(values, heads)):
        acc = v if (h or i == 0) else acc + v
        out[i] = acc
    return out


@pytest.mark.exercise("radix.1-segmented-scan")
@pytest.mark.parametrize("n", [1, 2, 31, 32, 33, 255, 1024])
def test_segmented_scan(impl, rng, n):
    mod = impl("radix", "segmented_scan")
    values = rng.integers(-100, 100, n).astype(np.int32)
    heads = (rng.random(n) < 0.2).astype(np.int32)
    if n > 2:  # at least one segment starts after element 0, so the segments matter
        heads[rng.integers(1, n)] = 1
    got = mod.segmented_scan(values, heads, out=cuda.to_device(poisoned(n, np.int32)))
    assert np.array_equal(got, segmented_reference(values, heads))


@pytest.mark.exercise("radix.1-segmented-scan")
def test_segmented_scan_limits(impl):
    mod = impl("radix", "segmented_scan")
    with pytest.raises(LimitError, match="1024"):
        mod.segmented_scan(np.ones(1025, np.int32), np.zeros(1025, np.int32))
    with pytest.raises(ShapeError):
        mod.segmented_scan(np.ones(5, np.int32), np.zeros(4, np.int32))


@pytest.mark.exercise("radix.2-compact")
@pytest.mark.parametrize("n", [0, 1, 255, 256, 257, 1031])
def test_compact_greater(impl, rng, n):
    mod = impl("radix", "compact")
    x = rng.standard_normal(n).astype(np.float32)
    t = float(rng.standard_normal())
    while n > 1 and not 0 < (x > np.float32(t)).sum() < n:  # some kept, some dropped
        t = float(rng.standard_normal())
    got = mod.compact_greater(x, t)
    assert np.array_equal(got, x[x > np.float32(t)])


@pytest.mark.exercise("radix.3-sort-records")
@pytest.mark.parametrize("n", [1, 2, 97, 300])
def test_sort_records(impl, rng, n):
    mod = impl("radix", "sort_records")
    rec = np.empty(n, mod.RECORD)
    rec["key"] = rng.integers(0, 20, n, dtype=np.uint32)  # many equal keys: stability shows
    rec["id"] = np.arange(n, dtype=np.uint32)
    rec["weight"] = rng.standard_normal(n).astype(np.float32)
    got = mod.sort_records(rec)
    assert np.array_equal(got, rec[np.argsort(rec["key"], kind="stable")])
