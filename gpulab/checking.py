"""Helpers for checking GPU results against CPU references (used by tests, tour and benchmarks)."""

from __future__ import annotations

import numpy as np

# Unsigned and signed sentinels written into integer outputs before a launch: a cell the kernel
# forgot to write keeps it and fails the comparison.
INT_SENTINEL = {np.dtype(np.uint32): np.uint32(0xDEADBEEF), np.dtype(np.int32): np.int32(-0x21524111),
                np.dtype(np.uint64): np.uint64(0xDEADBEEFDEADBEEF), np.dtype(np.int64): np.int64(-0x2152411021524111)}


def poisoned(shape, dtype) -> np.ndarray:
    """A host array filled with NaN (floats) or a sentinel (integers)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.full(shape, np.nan, dtype=dtype)
    return np.full(shape, INT_SENTINEL.get(dtype, np.iinfo(dtype).max), dtype=dtype)


def relative_error(out, ref) -> float:
    """``||out - ref|| / ||ref||`` in float64 (Frobenius norm); ``inf`` if ``out`` has NaN/inf."""
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if out.shape != ref.shape:
        raise ValueError(f"shape mismatch: {out.shape} vs reference {ref.shape}")
    if not np.all(np.isfinite(out)):
        return float("inf")
    denom = np.linalg.norm(ref)
    num = np.linalg.norm(out - ref)
    if denom == 0.0:
        return float(num)
    return float(num / denom)


def float32_tolerance(inner: int) -> float:
    """Relative-error bound for a float32 sum of ``inner`` products (rounding grows ~ sqrt(inner)).

    Far tighter than any indexing mistake (which gives errors of order 1) and loose enough for
    any summation order: about 1e-6 * sqrt(inner), floored at 1e-5.
    """
    return max(1e-5, 4e-6 * float(np.sqrt(max(inner, 1))))
