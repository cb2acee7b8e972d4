"""The public call's host work before its first launch, timed where it runs (issue 30).

`scripts/radix_public_pieces.py` timed each piece of the call by addresses in a warm loop;
their sum (about 2 us) is a third of the 6-7 us that the public call spends before the plan's
first launch when each call follows a synchronised sort, as the benchmark times it. This script
times each piece in that place: a sort of `--n` keys is queued, the host waits for it, and
only then the piece runs (median of `--calls`). It also times, by CUDA events in turns
(`gpulab.timing.measure_rounds`), the plan alone, the public call (`gpulab.radix.sort`,
`distinct`), and `FUSED`: the same checks written as one function that looks up the last
call's plan by identity of its arguments (a prototype, not the package's code), its result
asked for when every pass but the last is queued. `fused early` asks for it before the host
waits for the digit counts: it needs the `early` argument that `SortPlan.sort` had during
session 35 (call 3 timed it; it was not faster, and is gone), and is left out without it:
    python scripts/radix_public_inplace.py [--n 1048576] [--calls 300] [--turns 2]
"""
from __future__ import annotations

import argparse
import ctypes
import inspect
import statistics
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2**20)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--turns", type=int, default=2)
    a = ap.parse_args()
    import cupy as cp
    import numpy as np
    from numba import cuda

    import gpulab.radix as rx
    from gpulab import arrays, launch
    from gpulab.timing import measure_rounds

    n, U32 = a.n, np.dtype(np.uint32)
    ND = cp.ndarray
    has_cc = hasattr(ND, "_c_contiguous")
    print(f"cupy {cp.__version__}, ndarray._c_contiguous: {has_cc}")
    getdev, getstream = cp.cuda.runtime.getDevice, cp.cuda.get_current_stream
    py_get = ctypes.PyDLL("libcuda.so.1").cuCtxGetCurrent  # (no GIL release around the call)
    py_get.restype = ctypes.c_int
    c_get = ctypes.CDLL("libcuda.so.1").cuCtxGetCurrent
    c_get.restype = ctypes.c_int
    holder = ctypes.c_void_p()
    ref = ctypes.byref(holder)
    MAX = rx._BY_ADDRESSES_MAX
    memo = {}

    def plan_for(variant, backend, params, n, ctx, distinct):
        m = memo.get(distinct)
        if m is not None and m[0] is variant and m[1] is backend and m[2] is params and m[3] == n and m[4] == ctx:
            return m[5]
        v, p, pkey = rx._launch(variant, backend, params)
        if not v.policy.histograms_first:
            return None
        plan = rx._plan(v, n, False, p, pkey, 0, distinct, ctx)
        memo[distinct] = (variant, backend, params, n, ctx, plan)
        return plan

    def checked(keys):
        """n, ctx where the keys can go by address, else None."""
        if type(keys) is not ND or keys.dtype is not U32 or keys.ndim != 1 or not keys._c_contiguous:
            return None
        n = keys.size
        if not 2 <= n <= MAX or keys.data.device_id != getdev() or getstream().ptr:
            return None
        ctx = holder.value if py_get(ref) == 0 else 0
        return (n, ctx) if ctx else None

    def fused_sort(keys, variant=None, backend="numba", params=None, early=False):
        c = checked(keys)
        plan = plan_for(variant, backend, params, c[0], c[1], False) if c else None
        if plan is None:
            return rx.sort(keys, variant, backend, params)
        made = []

        def target():
            r = ND(c[0], U32)
            made.append(r)
            return r, None

        plan.sort(keys, None, out=target, **({"early": True} if early else {}))
        return made[0]

    def fused_distinct(keys, variant=None, backend="numba", params=None, view=False):
        c = checked(keys)
        plan = plan_for(variant, backend, params, c[0], c[1], True) if c else None
        if plan is None:
            return rx.distinct(keys, variant, backend, params)
        m = c[0]
        out, count = plan.run(keys, out=lambda: ND(m, U32))
        return ND(count, U32, out.data) if view else out[:count]

    med = statistics.median
    keys = cp.asarray(np.random.default_rng().integers(0, 2**32, n, dtype=np.uint32))
    dkeys = cp.asarray(np.random.default_rng().integers(0, 1_000_000, 2_000_000, dtype=np.uint32))
    for backend in ("cuda-c", "numba"):
        ref_sorted = cp.sort(keys)
        assert bool((fused_sort(keys, "onesweep", backend) == ref_sorted).all()), "fused sort wrong"
        assert bool((rx.sort(keys, "onesweep", backend) == ref_sorted).all()), "public sort wrong"
        ref_d = cp.unique(dkeys)
        for view in (False, True):
            got = fused_distinct(dkeys, "onesweep", backend, view=view)
            assert got.shape == ref_d.shape and bool((got == ref_d).all()), "fused distinct wrong"
        cuda.synchronize()
        ctx = launch.current_context()
        v, p, pkey = rx._launch("onesweep", backend, None)
        plan = rx._plan(v, n, False, p, pkey, 0, False, ctx)
        d_keys = cuda.as_cuda_array(keys)
        res = ND(n, U32)
        count = n // 3
        ev = cuda.event()
        pieces = {
            "nothing (a lambda)": lambda: None,
            "cupy_on_current_device": lambda: arrays.cupy_on_current_device(keys, None),
            "keys.flags.c_contiguous": lambda: keys.flags.c_contiguous,
            "keys._c_contiguous": (lambda: keys._c_contiguous) if has_cc else None,
            "type/dtype/ndim/size": lambda: (type(keys) is ND, keys.dtype is U32, keys.ndim, keys.size),
            "getDevice + data.device_id": lambda: keys.data.device_id != getdev(),
            "get_current_stream().ptr": lambda: getstream().ptr,
            "current_context (package)": launch.current_context,
            "cuCtxGetCurrent, CDLL": lambda: c_get(ref),
            "cuCtxGetCurrent, PyDLL": lambda: py_get(ref),
            "_launch": lambda: rx._launch("onesweep", backend, None),
            "_plan": lambda: rx._plan(v, n, False, p, pkey, 0, False, ctx),
            "fused checks": lambda: checked(keys),
            "fused plan look-up": lambda: plan_for("onesweep", backend, None, n, ctx, False),
            "cupy.ndarray(n)": lambda: ND(n, U32),
            "result[:count]": lambda: res[:count],
            "cupy.ndarray(count, memptr)": lambda: ND(count, U32, res.data),
        }
        for name, fn in pieces.items():
            if fn is None:
                continue
            t = []
            for _ in range(a.calls):
                plan.sort(d_keys)
                ev.record()
                ev.synchronize()
                t0 = time.perf_counter_ns()
                fn()
                t.append(time.perf_counter_ns() - t0)
            print(f"{backend:7} in place  {name:30} {med(t) / 1e3:6.2f} us")
        # host time from entry to the plan's sort, public and fused, in place
        cls, orig, stamp = type(plan), type(plan).sort, [0]

        def stamped(self, *args, **kw):
            stamp[0] = time.perf_counter_ns()
            return orig(self, *args, **kw)

        cls.sort = stamped
        try:
            for name, call in (("public", lambda: rx.sort(keys, "onesweep", backend)),
                               ("fused", lambda: fused_sort(keys, "onesweep", backend))) * 2:
                t = []
                for _ in range(a.calls):
                    ev.record()
                    ev.synchronize()
                    t0 = time.perf_counter_ns()
                    call()
                    t.append(stamp[0] - t0)
                print(f"{backend:7} in place  entry->plan.sort, {name:8} {med(t) / 1e3:6.2f} us")
        finally:
            cls.sort = orig
        # CUDA events in turns, as the benchmark times them
        dplan = rx._plan(v, 2_000_000, False, p, pkey, 0, True, ctx)
        d_dkeys = cuda.as_cuda_array(dkeys)
        runs = {"plan": lambda: plan.sort(d_keys), "public": lambda: rx.sort(keys, "onesweep", backend),
                "fused": lambda: fused_sort(keys, "onesweep", backend),
                "fused early": lambda: fused_sort(keys, "onesweep", backend, early=True)}
        if "early" not in inspect.signature(type(plan).sort).parameters:
            del runs["fused early"]
        druns = {"plan": lambda: dplan.run(d_dkeys), "public": lambda: rx.distinct(dkeys, "onesweep", backend),
                 "fused": lambda: fused_distinct(dkeys, "onesweep", backend),
                 "fused+view": lambda: fused_distinct(dkeys, "onesweep", backend, view=True)}
        for turn in range(a.turns):
            for what, rs in (("2^20", runs), ("distinct 2M", druns)):
                names = list(rs) if turn % 2 == 0 else list(rs)[::-1]
                got = measure_rounds([rs[k] for k in names], warmups=[20] * len(names), repeat=400, rounds=8)
                us = {k: g.median_ms * 1e3 for k, g in zip(names, got)}
                line = ", ".join(f"{k} {us[k]:6.1f} us ({us[k] / us['plan']:.3f})" for k in rs)
                print(f"{backend:7} events turn {turn} {what:12} {line}")


if __name__ == "__main__":
    main()
