"""The host work of gpulab.radix's public call before the plan's sort starts, step by step (issue 30).

At 2^24 keys the GPU is idle until the host launches the first pass, so every microsecond
the public call spends before it calls the plan's `sort` adds to the call's GPU time. This
times each step of `_sorted` (and of `sort_pairs` before it) on CuPy arrays, alone, in a loop:
the median over --blocks blocks of --calls calls, in microseconds of host time. The GPU does
nothing during these loops (no step launches work on uint32 keys), so they time the host only.

    python scripts/radix_host_breakdown.py --log2 24 --json breakdown.json
"""

from __future__ import annotations

import argparse

import numpy as np

import gpulab.radix as rx  # before numba: gpulab picks the GPU or the simulator
from numba import cuda  # noqa: E402
from gpulab import arrays  # noqa: E402
from gpulab.benchmark import write_record  # noqa: E402
from gpulab.radix import host  # noqa: E402
from gpulab.timing import host_us  # noqa: E402


PIECES = ("is_device_array", "shape_dtype", "variant.key")


def steps(c_keys, c_vals, backend: str, variant: str, params, pairs: bool) -> dict:
    """`name -> zero-argument function`, each one step of the public call, in its order (the
    `cupy:` rows and the pieces of a step, indented, are not counted in the sum)."""
    import cupy

    n = c_keys.shape[0]
    v, p, pkey = rx._launch(rx._sized(variant, backend, n), backend, params)
    s = arrays.numba_stream(None)
    plan = rx._plan(v, n, pairs, p, pkey, s)
    out = {
        "cupy: __cuda_array_interface__": lambda: c_keys.__cuda_array_interface__,
        "cupy: shape, dtype": lambda: (c_keys.shape, c_keys.dtype),
        "cupy: data.ptr, strides": lambda: (c_keys.data.ptr, c_keys.strides),
        "cupy: flags.c_contiguous": lambda: c_keys.flags.c_contiguous,
        "cupy: current stream ptr": lambda: cupy.cuda.get_current_stream().ptr,
        "cupy: empty(n, uint32)": lambda: cupy.empty(n, cupy.uint32),
        "is_device_array": lambda: arrays.is_device_array(c_keys),
        "shape_dtype": lambda: arrays.shape_dtype(c_keys),
        "variant.key": lambda: v.key,
        "validate_keys": lambda: host.validate_keys(c_keys),
    }
    if pairs:
        out["validate_values"] = lambda: host.validate_values(n, c_vals)
    out.update({
        "_launch (params given)" if params else "_launch": lambda: rx._launch(rx._sized(variant, backend, n), backend,
                                                                            params),
        "numba_stream": lambda: arrays.numba_stream(None),
        "describe": (lambda: arrays.describe(c_keys, c_vals)) if pairs else (lambda: arrays.describe(c_keys)),
        "_plan (cached)": lambda: rx._plan(v, n, pairs, p, pkey, s),
        "_take keys": lambda: rx._take(c_keys, "keys", plan.scratch, s),
    })
    if pairs:
        out["_take values"] = lambda: rx._as(rx._take(c_vals, "values", plan.values_scratch, s), np.uint32)
    d = rx._take(c_keys, "keys", plan.scratch, s)
    out["order_on_device (uint32)"] = lambda: host.order_on_device(d, np.uint32, plan.scratch, s)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2", type=int, default=24)
    ap.add_argument("--backends", nargs="+", default=["cuda-c", "numba"])
    ap.add_argument("--variant", default="onesweep")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--blocks", type=int, default=5)
    ap.add_argument("--with-params", action="store_true",
                    help="also each call with the variant's parameters named (a dict to look up every call)")
    ap.add_argument("--json")
    a = ap.parse_args()
    import cupy

    n = 2**a.log2
    rng = np.random.default_rng(1)
    c_keys = cupy.asarray(rng.integers(0, 2**32, n, dtype=np.uint32))
    c_vals = cupy.arange(n, dtype=cupy.uint32)
    rows = []
    for backend in a.backends:
        v = rx.REGISTRY.get(a.variant, backend)
        for pairs in (False, True):
            for params in ((None, v.launch_params()) if a.with_params else (None,)):
                rx.sort_pairs(c_keys, c_vals, a.variant, backend, params) if pairs else rx.sort(c_keys, a.variant,
                                                                                               backend, params)
                cuda.synchronize()
                total = 0.0
                for name, fn in steps(c_keys, c_vals, backend, a.variant, params, pairs).items():
                    us = host_us(fn, a.calls, a.blocks)
                    if not name.startswith("cupy:") and name not in PIECES:
                        total += us
                    rows.append({"backend": backend, "case": "pairs" if pairs else "keys",
                                 "params": "given" if params else "none", "step": name, "us": us})
                rows.append({"backend": backend, "case": "pairs" if pairs else "keys",
                             "params": "given" if params else "none", "step": "sum of the steps", "us": total})
                rx.clear_cache()
    print(f"\n{'backend':7} {'case':5} {'params':6} {'step':34} {'us':>7}")
    for r in rows:
        print(f"{r['backend']:7} {r['case']:5} {r['params']:6} {r['step']:34} {r['us']:7.2f}")
    if a.json:
        write_record(a.json, "gpulab-radix-host-breakdown/1", rows)


if __name__ == "__main__":
    main()
