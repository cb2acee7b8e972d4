"""The host work of gpulab.matmul's public call before its kernel starts, step by step (issue 31).

On the thin product (8192x128 times 128x128) the kernel takes about 0.03 ms and the public call
on CuPy arrays about three times that: the GPU waits for the host. This times each step of
`gpulab.matmul.matmul` on CuPy arrays, alone, in a loop: the median over --blocks blocks of
--calls calls, in microseconds of host time. Only the `launch` row enqueues GPU work (the
kernel, on C of the call before); the rows marked `cupy:` and `whole call` are not summed.

    python scripts/matmul_host_breakdown.py --json breakdown.json
"""

from __future__ import annotations

import argparse

import numpy as np

import gpulab.matmul as mm  # before numba: gpulab picks the GPU or the simulator
from numba import cuda  # noqa: E402
from gpulab import arrays  # noqa: E402
from gpulab.benchmark import write_record  # noqa: E402
from gpulab.matmul import host  # noqa: E402
from gpulab.timing import host_us  # noqa: E402


def steps(cA, cB, variant: str, backend: str) -> dict:
    """`name -> zero-argument function`, each one step of the public call, in its order."""
    import cupy

    M, K, N = host.validate(cA, cB)
    v = mm.REGISTRY.resolve(variant, backend)
    s = arrays.numba_stream(None)
    a, b = arrays.device_input_on(cA, "A", stream=s), arrays.device_input_on(cB, "B", stream=s)
    like = arrays.caller_of(a, b)
    dC, made = arrays.device_result((M, N), np.float32, like, stream=s)
    launch = mm._plan(v, M, K, N, s)
    return {
        "cupy: empty((M, N), float32)": lambda: cupy.empty((M, N), cupy.float32),
        "cupy: matmul(A, B), new C": lambda: cA @ cB,
        "validate": lambda: host.validate(cA, cB),
        "REGISTRY.resolve": lambda: mm.REGISTRY.resolve(variant, backend),
        "numba_stream": lambda: arrays.numba_stream(None),
        "device_input_on A": lambda: arrays.device_input_on(cA, "A", stream=s),
        "device_input_on B": lambda: arrays.device_input_on(cB, "B", stream=s),
        "caller_of": lambda: arrays.caller_of(a, b),
        "device_result (kept view)": lambda: arrays.device_result((M, N), np.float32, like, stream=s),
        "_plan (kept)": lambda: mm._plan(v, M, K, N, s),
        "launch": lambda: launch(a.array, b.array, dC),
        "whole call": lambda: mm.matmul(cA, cB, variant, backend),
    }


def cupy_inputs(shape: str):
    """A (M×K) and B (K×N) as CuPy float32 arrays for `shape` "MxKxN" (seeded: the same inputs
    in every run)."""
    import cupy

    M, K, N = (int(x) for x in shape.split("x"))
    rng = np.random.default_rng(1)
    return (cupy.asarray(rng.standard_normal((M, K), dtype=np.float32)),
            cupy.asarray(rng.standard_normal((K, N), dtype=np.float32)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="8192x128x128", help="MxKxN")
    ap.add_argument("--variants", nargs="+", default=["streamk:cuda-c", "streamk:numba"], help="VARIANT:BACKEND")
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--blocks", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    cA, cB = cupy_inputs(a.shape)
    rows = []
    for spec in a.variants:
        variant, backend = spec.split(":")
        mm.matmul(cA, cB, variant, backend)
        cuda.synchronize()
        total = 0.0
        for name, fn in steps(cA, cB, variant, backend).items():
            us = host_us(fn, a.calls, a.blocks)
            cuda.synchronize()
            if not name.startswith("cupy:") and name != "whole call":
                total += us
            rows.append({"variant": variant, "backend": backend, "shape": a.shape, "step": name, "us": us})
        rows.append({"variant": variant, "backend": backend, "shape": a.shape, "step": "sum of the steps", "us": total})
    print(f"\n{'variant':9} {'backend':7} {'step':30} {'us':>7}")
    for r in rows:
        print(f"{r['variant']:9} {r['backend']:7} {r['step']:30} {r['us']:7.2f}")
    if a.json:
        write_record(a.json, "gpulab-matmul-host-breakdown/1", rows)


if __name__ == "__main__":
    main()
