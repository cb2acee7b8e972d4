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
--repeat (on the simulator the wall clock: CPU cost of simulating, not GPU speed). The results
of the public calls are checked against the kernels' (equal, and sorted) once per size. Prints
a table; --json FILE writes the rows with the device, versions and date.

    python scripts/radix_call_timeline.py --log2 20 24 28 --repeat 15 --json radix-call-timeline.json
    GPULAB_DEVICE=sim python scripts/radix_call_timeline.py --log2 5 --repeat 2   # a dry run
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


def row_for(v, log2: int, warmup: int, repeat: int, rng) -> dict:
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
        row = {"backend": v.backend, "variant": v.name, "log2": log2, "n": n, "same_as_kernels": same,
               "kernels ms": measure(kernels, warmup=warmup, repeat=repeat).median_ms,
               "public ms": measure(public, warmup=warmup, repeat=repeat).median_ms,
               "public out ms": measure(public_out, warmup=warmup, repeat=repeat).median_ms,
               "cold ms": cold_ms(public)}
        try:
            import cupy
        except ImportError:
            cupy = None
        if cupy is not None and not device.on_simulator():
            c_keys = cupy.asarray(d_keys)
            same = same and bool(np.array_equal(cupy.asnumpy(rx.sort(c_keys, v.name, v.backend, params)), ref))
            row["same_as_kernels"] = same
            row["public cupy ms"] = measure(lambda: rx.sort(c_keys, v.name, v.backend, params), warmup=warmup,
                                            repeat=repeat).median_ms
            row["public cupy / kernels"] = row["public cupy ms"] / row["kernels ms"]
        row["public / kernels"] = row["public ms"] / row["kernels ms"]
        row["public out / kernels"] = row["public out ms"] / row["kernels ms"]
        return row
    finally:
        bench.teardown(state)
        state.clear()
        rx.clear_cache()
        device.release_memory()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2", type=int, nargs="+", default=[20, 24, 28], help="sizes: 2**k keys")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--variant", default="onesweep")
    ap.add_argument("--backends", nargs="+", default=["numba", "cuda-c"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write the rows, device, versions and date here")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    rows, skipped = [], []
    for backend in a.backends:
        v = rx.REGISTRY.get(a.variant, backend)
        reason = v.unavailable_reason()
        if reason:
            skipped.append({"backend": backend, "variant": v.name, "skipped": reason})
            print(f"{v.key}: skipped: {reason}", flush=True)
            continue
        for k in a.log2:
            rows.append(row_for(v, k, a.warmup, a.repeat, rng))
            print(json.dumps({key: (round(x, 4) if isinstance(x, float) else x) for key, x in rows[-1].items()}),
                  flush=True)
    clock = "cuda-event" if not device.on_simulator() else "wall (simulator)"
    print(f"\n{'backend':8} {'variant':10} {'n':>6} " + " ".join(f"{s:>13}" for s in STAGES)
          + f" {'public/kern':>11} {'out/kern':>9} same")
    for r in rows:
        print(f"{r['backend']:8} {r['variant']:10} {'2^' + str(r['log2']):>6} "
              + " ".join(f"{r[s]:13.4f}" if s in r else f"{'-':>13}" for s in STAGES)
              + f" {r['public / kernels']:11.3f} {r['public out / kernels']:9.3f} {r['same_as_kernels']}")
    print(f"({clock}; median of {a.repeat} after {a.warmup} warm-up calls; cold: wall clock, median of 3)")
    if a.json:
        result = {"schema": "gpulab-radix-call-timeline/1", "date": utc_now(),
                  "script": "python scripts/radix_call_timeline.py " + " ".join(sys.argv[1:]),
                  "device": {**device.info().as_dict(), "pycuda": cudac.pycuda_status()}, "versions": versions(),
                  "settings": {"log2": a.log2, "repeat": a.repeat, "warmup": a.warmup, "variant": a.variant,
                               "seed": a.seed, "clock": clock},
                  "rows": rows, "skipped": skipped}
        Path(a.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
