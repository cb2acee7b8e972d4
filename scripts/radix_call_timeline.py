"""What gpulab.radix.sort's public call adds to its kernels (issue 30: at most 5%), on a GPU.

For each backend and size (uint32 keys, all 32 bits random on a GPU, as `gpulab bench radix`
draws them; 8-bit keys on the simulator), on keys already on the device (numba device arrays):

  kernels ms     the benchmark's runner (`gpulab.radix.bench.runner`): the sort plan's sort alone,
                 its own buffers, no result allocated (what `gpulab bench radix` times)
  public ms      gpulab.radix.sort(d_keys, variant, backend, params): a new result array per call
  public out ms  the same with out=: the caller's array, no allocation
  public cupy ms gpulab.radix.sort on the same keys as a CuPy array (where CuPy is installed): the
                 result comes from CuPy's memory pool (gpulab.arrays.device_empty)
  cold ms        one call right after gpulab.radix.clear_cache() (its plan's buffers allocated;
                 kernels already built), wall clock after a device synchronize, median of 3

kernels / public / public out: CUDA events around each call after --warmup calls, median of
--repeat, in --rounds rounds that time every call once in an order rotated each round; the row
has the median of the rounds (on the simulator the wall clock: CPU cost of simulating, not GPU
speed), and every round's time under "rounds ms". The results
of the public calls are checked against the kernels' (equal, and sorted) once per size. Prints
a table; --json FILE writes the rows with the device, versions and date.

    python scripts/radix_call_timeline.py --log2 20 24 28 --repeat 15 --json radix-call-timeline.json
    GPULAB_DEVICE=sim python scripts/radix_call_timeline.py --log2 5 --repeat 2 --rounds 1   # a dry run
    python scripts/radix_call_timeline.py --log2 20 24 --profile 200   # where a call's host time goes
    python scripts/radix_call_timeline.py --log2 24 --stamps 200       # ... step by step, on the host clock
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import gpulab.radix as rx  # before numba: gpulab picks the GPU or the simulator
from numba import cuda  # noqa: E402  (after gpulab)
from gpulab import cudac, device  # noqa: E402
from gpulab.arrays import to_host  # noqa: E402
from gpulab.benchmark import utc_now, versions  # noqa: E402
from gpulab.radix import bench  # noqa: E402
from gpulab.timing import measure  # noqa: E402

STAGES = ("kernels ms", "public ms", "public out ms", "public cupy ms", "cold ms")


def cold_ms(call, times: int = 3) -> float:
    """Median wall time of `call` right after the public functions' plan cache was emptied."""
    out = []
    for _ in range(times):
        rx.clear_cache()
        cuda.synchronize()
        t0 = time.perf_counter()
        call()
        cuda.synchronize()
        out.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(out)


def row_for(v, log2: int, warmup: int, repeat: int, rounds: int, rng) -> dict:
    n = 2**log2
    state = bench.setup(bench._case("keys", n, f"2^{log2}"), rng)
    d_keys = state["d_keys"]
    try:
        kernels = bench.runner(v, state)
        params = bench._plan(v, state).params  # the compile-time parameters the kernels ran with
        out = cuda.device_array(n, np.uint32)

        def public():
            return rx.sort(d_keys, v.name, v.backend, params)

        def public_out():
            return rx.sort(d_keys, v.name, v.backend, params, out=out)

        ref = to_host(kernels()[0])
        got, _ = to_host(public()), public_out()
        same = bool(np.array_equal(got, ref) and np.array_equal(to_host(out), ref) and np.all(ref[1:] >= ref[:-1]))
        calls = {"kernels ms": kernels, "public ms": public, "public out ms": public_out}
        try:
            import cupy
        except ImportError:
            cupy = None
        if cupy is not None and not device.on_simulator():
            c_keys = cupy.asarray(d_keys)
            same = same and bool(np.array_equal(cupy.asnumpy(rx.sort(c_keys, v.name, v.backend, params)), ref))
            calls["public cupy ms"] = lambda: rx.sort(c_keys, v.name, v.backend, params)
        # rounds: every call timed once per round, in an order rotated each round, so that a
        # drift of the GPU's clocks during the run does not favour the call timed first
        names, per = list(calls), {k: [] for k in calls}
        for r in range(rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                per[name].append(measure(calls[name], warmup=warmup, repeat=repeat).median_ms)
        row = {"backend": v.backend, "variant": v.name, "log2": log2, "n": n, "same_as_kernels": same,
               **{k: statistics.median(x) for k, x in per.items()}, "cold ms": cold_ms(public),
               "rounds ms": per}
        if "public cupy ms" in row:
            row["public cupy / kernels"] = row["public cupy ms"] / row["kernels ms"]
        row["public / kernels"] = row["public ms"] / row["kernels ms"]
        row["public out / kernels"] = row["public out ms"] / row["kernels ms"]
        return row
    finally:
        bench.teardown(state)
        state.clear()
        rx.clear_cache()
        device.release_memory()


def _callers(variant: str, backend: str, keys: np.ndarray, pairs: bool, distinct: bool = False) -> dict:
    """The public calls timed by `profile` and `stamps`, per kind of caller: `sort` on the keys,
    or (`pairs`) `sort_pairs` with uint32 values (the positions), or (`distinct`) `distinct`
    (no `out=`), as numba and CuPy arrays."""
    n = keys.size
    d_keys, out = cuda.to_device(keys), cuda.device_array(n, np.uint32)
    d_vals = cuda.to_device(np.arange(n, dtype=np.uint32)) if pairs else None
    if distinct:
        callers = {"numba": lambda: rx.distinct(d_keys, variant, backend)}
    elif pairs:
        out_v = cuda.device_array(n, np.uint32)
        callers = {"numba": lambda: rx.sort_pairs(d_keys, d_vals, variant, backend),
                   "numba out=": lambda: rx.sort_pairs(d_keys, d_vals, variant, backend, out=(out, out_v))}
    else:
        callers = {"numba": lambda: rx.sort(d_keys, variant, backend),
                   "numba out=": lambda: rx.sort(d_keys, variant, backend, out=out)}
    try:
        import cupy

        c_keys = cupy.asarray(keys)
        if distinct:
            callers["cupy"] = lambda: rx.distinct(c_keys, variant, backend)
        elif pairs:
            c_vals = cupy.asarray(d_vals)
            callers["cupy"] = lambda: rx.sort_pairs(c_keys, c_vals, variant, backend)
        else:
            callers["cupy"] = lambda: rx.sort(c_keys, variant, backend)
    except ImportError:
        pass
    return callers


def profile(backend: str, variant: str, log2: int, calls: int, rng, pairs: bool = False) -> None:
    """cProfile of `calls` warm public calls on 2^log2 device keys (`pairs`: with values), for
    each kind of caller: the functions with the most time of their own, then the most time below
    them (us per call)."""
    from gpulab.timing import host_profile

    n = 2**log2
    callers = _callers(variant, backend, rng.integers(0, 2**32, n, dtype=np.uint32), pairs)
    from gpulab.radix import host

    first_launch = []
    firsts = {m: getattr(host.SortPlan, m) for m in ("histograms", "max_key")}  # onesweep's, the others'

    def stamp(orig):
        def stamped(self, *args, **kw):  # the call's first launch
            first_launch.append(time.perf_counter())
            return orig(self, *args, **kw)
        return stamped

    for name, call in callers.items():
        for _ in range(5):
            call()
        cuda.synchronize()
        pre = []
        for m, orig in firsts.items():
            setattr(host.SortPlan, m, stamp(orig))
        try:
            for _ in range(calls):
                first_launch.clear()
                t0 = time.perf_counter()
                call()
                if first_launch:
                    pre.append(first_launch[0] - t0)
        finally:
            for m, orig in firsts.items():
                setattr(host.SortPlan, m, orig)
        cuda.synchronize()
        size = ("pairs " if pairs else "") + f"2^{log2}"
        if pre:
            print(f"== {backend}/{variant} {size} {name}: host time before the first launch "
                  f"{1e6 * statistics.median(pre):.1f} us (median of {len(pre)})")
        lines = host_profile(call, calls, top=22, after=cuda.synchronize)
        print(f"== {backend}/{variant} {size} {name}: {lines[0]}")
        print("\n".join(lines[1:]))
    rx.clear_cache()


def stamps(backend: str, variant: str, log2: int, calls: int, rng, pairs: bool = False, distinct: int | None = None
           ) -> None:
    """Where one call's host time goes: the host clock (us after the call began, median of
    `calls`) at the entry (>) and exit (<) of each step of the public call and the plan's sort,
    for the plan's sort alone and each kind of caller, with the GPU time of the call (CUDA
    events). The steps are wrapped for this only; the wrappers cost about a microsecond each.
    `distinct`: instead, `gpulab.radix.distinct` on that many keys uniform in [0, distinct/2),
    as `gpulab bench radix` draws them."""
    from gpulab.radix import host

    log = []

    def wrap(obj, name, label):
        orig = getattr(obj, name)

        def stamped(*a, **k):
            log.append((label + ">", time.perf_counter()))
            r = orig(*a, **k)
            log.append((label + "<", time.perf_counter()))
            return r

        setattr(obj, name, stamped)
        return obj, name, orig

    steps = [(host, "validate_keys", "check"), (rx, "_plan", "plan"), (rx, "_take", "take"),
             (host.SortPlan, "sort", "plan.sort"), (host.SortPlan, "histograms", "histograms"),
             (host.SortPlan, "one_pass", "pass"), (host.SortPlan, "passes_that_move", "offsets back"),
             (rx, "_target", "result"), (rx, "to_caller", "to_caller"), (host, "validate_values", "vcheck"),
             (rx, "_launch", "variant"), (rx, "describe", "describe"), (rx, "numba_stream", "stream"),
             (host, "order_on_device", "order"), (device.Readback, "start", "copy"), (rx, "_deliver", "deliver"),
             (device.Readback, "fetch", "fetch"), (host.DistinctPlan, "run", "distinct.run"),
             (rx, "device_empty", "empty"), (rx, "_kept_inputs", "kept"), (host, "unorder_on_device", "unorder"),
             (rx, "device_result", "new")]
    undo = [wrap(*step) for step in steps]
    try:
        n = distinct or 2**log2
        keys = rng.integers(0, max(n // 2, 1) if distinct else 2**32, n, dtype=np.uint32)
        d = cuda.to_device(keys)
        dv = cuda.to_device(np.arange(n, dtype=np.uint32)) if pairs else None
        v = rx.REGISTRY.get(variant, backend)
        plan = v.run(n, pairs, v.launch_params(None))
        if distinct:
            dplan = host.distinct_plan(plan)
            callers = {"plan.run": lambda: dplan.run(d), **_callers(variant, backend, keys, False, distinct=True)}
        else:
            callers = {"plan.sort": lambda: plan.sort(d, dv), **_callers(variant, backend, keys, pairs)}
        start, stop = cuda.event(), cuda.event()
        for name, call in callers.items():
            for _ in range(10):
                call()
            cuda.synchronize()
            runs, gpu = [], []
            for _ in range(calls):
                log.clear()
                start.record()
                t0 = time.perf_counter()
                call()
                t1 = time.perf_counter()
                stop.record()
                stop.synchronize()
                gpu.append(start.elapsed_time(stop))
                runs.append([("call", t0)] + log + [("return", t1)])
            labels = [lab for lab, _ in runs[0]]
            alike = [r for r in runs if [lab for lab, _ in r] == labels]
            at = [1e6 * statistics.median(r[i][1] - r[0][1] for r in alike) for i in range(len(labels))]
            size = f"distinct {n}" if distinct else f"{'pairs ' if pairs else ''}2^{log2}"
            print(f"== {backend}/{variant} {size} {name}: GPU {statistics.median(gpu):.4f} ms; host us after the "
                  f"call began ({len(alike)} of {calls} calls alike):")
            print("   " + " ".join(f"{lab}@{t:.0f}" for lab, t in zip(labels, at)), flush=True)
    finally:
        for obj, name, orig in undo:
            setattr(obj, name, orig)
    rx.clear_cache()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2", type=int, nargs="+", default=[20, 24, 28], help="sizes: 2**k keys")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5, help="each call timed once per round, the order rotated")
    ap.add_argument("--variant", default="onesweep")
    ap.add_argument("--backends", nargs="+", default=["numba", "cuda-c"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write the rows, device, versions and date here")
    ap.add_argument("--profile", type=int, metavar="CALLS",
                    help="instead: cProfile CALLS warm public calls per backend and size, print where the host time goes")
    ap.add_argument("--stamps", type=int, metavar="CALLS",
                    help="instead: the host clock at each step of CALLS calls per backend and size (median)")
    ap.add_argument("--pairs", action="store_true", help="--profile / --stamps: sort_pairs (uint32 values) too")
    ap.add_argument("--distinct", type=int, nargs="+", metavar="N",
                    help="--stamps: instead, gpulab.radix.distinct on N keys uniform in [0, N/2)")
    a = ap.parse_args()
    from radix_call_probe import plain_launches_only  # (this script's directory is on sys.path)

    plain_launches_only()
    rng = np.random.default_rng(a.seed)
    if a.stamps and a.distinct:
        for backend in a.backends:
            for n in a.distinct:
                stamps(backend, a.variant, 0, a.stamps, rng, distinct=n)
        return
    if a.stamps:
        for backend in a.backends:
            for k in a.log2:
                stamps(backend, a.variant, k, a.stamps, rng)
                if a.pairs:
                    stamps(backend, a.variant, k, a.stamps, rng, pairs=True)
        return
    if a.profile:
        for backend in a.backends:
            for k in a.log2:
                profile(backend, a.variant, k, a.profile, rng)
                if a.pairs:
                    profile(backend, a.variant, k, a.profile, rng, pairs=True)
        return
    rows, skipped = [], []
    for backend in a.backends:
        v = rx.REGISTRY.get(a.variant, backend)
        reason = v.unavailable_reason()
        if reason:
            skipped.append({"backend": backend, "variant": v.name, "skipped": reason})
            print(f"{v.key}: skipped: {reason}", flush=True)
            continue
        for k in a.log2:
            rows.append(row_for(v, k, a.warmup, a.repeat, a.rounds, rng))
            print(json.dumps({key: (round(x, 4) if isinstance(x, float) else x) for key, x in rows[-1].items()}),
                  flush=True)
    clock = "cuda-event" if not device.on_simulator() else "wall (simulator)"
    print(f"\n{'backend':8} {'variant':10} {'n':>6} " + " ".join(f"{s:>13}" for s in STAGES)
          + f" {'public/kern':>11} {'out/kern':>9} same")
    for r in rows:
        print(f"{r['backend']:8} {r['variant']:10} {'2^' + str(r['log2']):>6} "
              + " ".join(f"{r[s]:13.4f}" if s in r else f"{'-':>13}" for s in STAGES)
              + f" {r['public / kernels']:11.3f} {r['public out / kernels']:9.3f} {r['same_as_kernels']}")
    print(f"({clock}; the median of {a.rounds} rounds of a median of {a.repeat} after {a.warmup} warm-up calls, "
          "the calls' order rotated each round; cold: wall clock, median of 3)")
    if a.json:
        result = {"schema": "gpulab-radix-call-timeline/1", "date": utc_now(),
                  "script": "python scripts/radix_call_timeline.py " + " ".join(sys.argv[1:]),
                  "device": {**device.info().as_dict(), "pycuda": cudac.pycuda_status()}, "versions": versions(),
                  "settings": {"log2": a.log2, "repeat": a.repeat, "warmup": a.warmup, "rounds": a.rounds, "variant": a.variant,
                               "seed": a.seed, "clock": clock},
                  "rows": rows, "skipped": skipped}
        Path(a.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
