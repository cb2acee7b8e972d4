"""Where the public call's host time goes before its first launch (issue 30), piece by piece.

On a GPU with CuPy, for each backend: the host time of each piece of `gpulab.radix`'s call by
addresses (`_by_addresses`) by itself (mean of many calls, perf_counter), and, with the sort
synchronised after each call as `gpulab.timing.measure` times it, the host time from the public
call's entry to the plan's `sort` (everything the public call does before the plan's first
launch) and the time spent in the result's allocation (median of the calls):
    python scripts/radix_public_pieces.py [--n 1048576] [--calls 2000]
"""
from __future__ import annotations

import argparse
import statistics
import time


def mean_us(fn, calls: int) -> float:
    for _ in range(50):
        fn()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2**20)
    ap.add_argument("--calls", type=int, default=2000)
    a = ap.parse_args()
    import cupy as cp
    import numpy as np
    from numba import cuda

    import gpulab.radix as rx
    from gpulab import arrays, launch
    from gpulab.timing import measure

    n = a.n
    keys = cp.asarray(np.random.default_rng().integers(0, 2**32, n, dtype=np.uint32))
    u32 = np.dtype(np.uint32)
    for backend in ("cuda-c", "numba"):
        rx.sort(keys, "onesweep", backend)
        cuda.synchronize()
        ctx = launch.current_context()
        v, p, pkey = rx._launch("onesweep", backend, None)
        res, count = cp.ndarray(n, u32), n // 3
        pieces = {
            "cupy_on_current_device": lambda: arrays.cupy_on_current_device(keys, None),
            "keys.ndim/dtype/size/flags": lambda: (keys.ndim != 1 or keys.dtype != u32 or keys.size < 2
                                                   or not keys.flags.c_contiguous),
            "keys.dtype is u32": lambda: keys.dtype is u32,
            "current_context": launch.current_context,
            "_launch": lambda: rx._launch("onesweep", backend, None),
            "_plan": lambda: rx._plan(v, n, False, p, pkey, 0, False, ctx),
            "cupy.empty": lambda: cp.empty(n, np.uint32),
            "cupy.ndarray": lambda: cp.ndarray((n,), u32),
            "keys.data.ptr": lambda: keys.data.ptr,
            "vector_address": lambda: launch.vector_address(keys),
            "cupy.cuda.runtime.getDevice": cp.cuda.runtime.getDevice,
            "cupy.cuda.get_current_stream().ptr": lambda: cp.cuda.get_current_stream().ptr,
            "result[:count] (CuPy slice)": lambda: res[:count],
            "cupy.ndarray(count, memptr=result.data)": lambda: cp.ndarray(count, u32, res.data),
        }
        for name, fn in pieces.items():
            print(f"{backend:7} piece {name:36} {mean_us(fn, a.calls):7.2f} us")
        cuda.synchronize()
        # the public call's host time before the plan's sort, and inside the allocation
        plan = rx._plan(v, n, False, p, pkey, 0, False, ctx)
        cls = type(plan)
        orig = cls.sort
        stamps = {}

        def stamped(self, *args, **kw):
            stamps["in"] = time.perf_counter()
            out = kw.get("out")
            if callable(out):
                def timed():
                    t = time.perf_counter()
                    r = out()
                    stamps["alloc"] = time.perf_counter() - t
                    stamps["asked"] = t
                    return r
                kw["out"] = timed
            r = orig(self, *args, **kw)
            stamps["done"] = time.perf_counter()
            return r

        cls.sort = stamped
        pre, alloc, total, before_alloc = [], [], [], []
        try:
            for _ in range(300):
                cuda.synchronize()
                t0 = time.perf_counter()
                rx.sort(keys, "onesweep", backend)
                t1 = time.perf_counter()
                pre.append((stamps["in"] - t0) * 1e6)
                alloc.append(stamps["alloc"] * 1e6)
                before_alloc.append((stamps["asked"] - stamps["in"]) * 1e6)
                total.append((t1 - t0) * 1e6)
        finally:
            cls.sort = orig
        med = statistics.median
        print(f"{backend:7} public call host: entry->plan.sort {med(pre):6.2f} us, plan.sort->allocation {med(before_alloc):6.2f}, "
              f"allocation {med(alloc):6.2f}, whole call {med(total):6.2f} us (medians of 300, synchronised between calls)")
        # the plan alone, the same way
        tp = []
        for _ in range(300):
            cuda.synchronize()
            t0 = time.perf_counter()
            plan.sort(keys)
            tp.append((time.perf_counter() - t0) * 1e6)
        print(f"{backend:7} plan.sort(cupy keys) host {med(tp):6.2f} us")
        # distinct: host time before the plan's run, and after it (the result's slice)
        dkeys = cp.asarray(np.random.default_rng().integers(0, 1_000_000, 2_000_000, dtype=np.uint32))  # the benchmark's case
        rx.distinct(dkeys, "onesweep", backend)
        dplan = rx._plan(v, 2_000_000, False, p, pkey, 0, True, ctx)
        dcls, dorig = type(dplan), type(dplan).run

        def dstamped(self, *args, **kw):
            stamps["in"] = time.perf_counter()
            r = dorig(self, *args, **kw)
            stamps["done"] = time.perf_counter()
            return r

        dcls.run = dstamped
        dpre, dpost = [], []
        try:
            for _ in range(300):
                cuda.synchronize()
                t0 = time.perf_counter()
                rx.distinct(dkeys, "onesweep", backend)
                t1 = time.perf_counter()
                dpre.append((stamps["in"] - t0) * 1e6)
                dpost.append((t1 - stamps["done"]) * 1e6)
        finally:
            dcls.run = dorig
        print(f"{backend:7} distinct 2M host: entry->plan.run {med(dpre):6.2f} us, plan.run's return->call's return {med(dpost):6.2f} us")
        d_dkeys = cuda.as_cuda_array(dkeys)
        for turn in range(2):
            tk = measure(lambda: dplan.run(d_dkeys), warmup=20, repeat=200).median_ms * 1e3
            tpub = measure(lambda: rx.distinct(dkeys, "onesweep", backend), warmup=20, repeat=200).median_ms * 1e3
            print(f"{backend:7} distinct events turn {turn}: plan {tk:6.1f} us, public {tpub:6.1f} us, ratio {tpub / tk:.3f}")
        # CUDA events, as the benchmark times them: the plan on numba arrays, the public call on CuPy
        d_keys = cuda.as_cuda_array(keys)
        for turn in range(2):
            tk = measure(lambda: plan.sort(d_keys), warmup=20, repeat=200).median_ms * 1e3
            tpub = measure(lambda: rx.sort(keys, "onesweep", backend), warmup=20, repeat=200).median_ms * 1e3
            print(f"{backend:7} events turn {turn}: plan {tk:6.1f} us, public {tpub:6.1f} us, ratio {tpub / tk:.3f}")


if __name__ == "__main__":
    main()
