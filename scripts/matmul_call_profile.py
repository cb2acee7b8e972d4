"""Where gpulab.matmul's public call spends its host time on a small product (issue 31), and how
little the driver itself needs. On CuPy arrays, per variant and backend:

* `whole call`: `mm.matmul(cA, cB, variant, backend)` in a loop, host microseconds per call
  (median over --blocks blocks of --calls calls; the GPU keeps up or queues);
* cProfile of --profile calls (`gpulab.timing.host_profile`): the functions with the most time
  of their own and with their callees, µs per call (the profiler's overhead inflates every row
  alike; read the order, not the values);
* the floor (CUDA C only): a new C from CuPy's pool, the arguments packed with `struct`, and
  pycuda's kernel launch with them, each alone.

    python scripts/matmul_call_profile.py --json profile.json
"""

from __future__ import annotations

import argparse

import gpulab.matmul as mm  # before numba: gpulab picks the GPU or the simulator
from numba import cuda  # noqa: E402
from gpulab.benchmark import write_record  # noqa: E402
from gpulab.matmul import host  # noqa: E402
from gpulab.timing import host_profile, host_us as _host_us  # noqa: E402
from matmul_host_breakdown import cupy_inputs  # noqa: E402  (the same seeded inputs)


def host_us(fn, calls: int, blocks: int) -> float:
    """`gpulab.timing.host_us`, the GPU drained before each block (a block of launches shorter
    than their kernels would otherwise wait for the queue)."""
    import statistics

    meds = []
    for _ in range(blocks):
        cuda.synchronize()
        meds.append(_host_us(fn, calls, 1))
    return statistics.median(meds)


def floor_rows(cA, cB, variant: str, calls: int, blocks: int) -> list[tuple[str, float]]:
    import struct

    import cupy

    from gpulab import cudac

    M, K = cA.shape
    N = cB.shape[1]
    v = mm.REGISTRY.get(variant, "cuda-c")
    grid, block, extra, kern = host._launch_parts(v.policy, "cuda-c", M, K, N, v.launch_params(), 0)
    fn = kern.kernel(v.policy.kernel)
    C = cupy.empty((M, N), cupy.float32)
    args = (cA.data.ptr, cB.data.ptr, C.data.ptr, M, N, K,
            *(cudac._pointer(x) if hasattr(x, "__cuda_array_interface__") else int(x) for x in extra))
    packer = struct.Struct("PPPiii" + "".join("P" if hasattr(x, "__cuda_array_interface__") else "i" for x in extra))
    buf = packer.pack(*args)
    g3 = tuple(grid) + (1,) * (3 - len(grid))
    b3 = tuple(block) + (1,) * (3 - len(block))
    run = fn._launch_kernel
    return [
        ("floor: cupy.empty((M, N), float32)", host_us(lambda: cupy.empty((M, N), cupy.float32), calls, blocks)),
        ("floor: 3 data pointers (cupy .data.ptr)", host_us(lambda: (cA.data.ptr, cB.data.ptr, C.data.ptr), calls, blocks)),
        ("floor: struct pack of the arguments", host_us(lambda: packer.pack(*args), calls, blocks)),
        ("floor: pycuda _launch_kernel, packed", host_us(lambda: run(g3, b3, buf, 0, None), calls, blocks)),
        ("floor: cudac.launch", host_us(lambda: cudac.launch(fn, grid, block, cA, cB, C, *args[3:6], *extra),
                                        calls, blocks)),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="8192x128x128", help="MxKxN")
    ap.add_argument("--variants", nargs="+", default=["none:cuda-c", "small:cuda-c", "none:numba"],
                    help="VARIANT:BACKEND (none: the call names no variant)")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--blocks", type=int, default=7)
    ap.add_argument("--profile", type=int, default=3000)
    ap.add_argument("--top", type=int, default=22)
    ap.add_argument("--json")
    a = ap.parse_args()
    cA, cB = cupy_inputs(a.shape)
    rows, profiles = [], {}
    for spec in a.variants:
        variant, backend = spec.split(":")
        variant = None if variant == "none" else variant
        call = lambda: mm.matmul(cA, cB, variant, backend)  # noqa: E731
        call()
        cuda.synchronize()
        rows.append({"variant": variant or "(none)", "backend": backend, "step": "whole call",
                     "us": host_us(call, a.calls, a.blocks)})
        cuda.synchronize()
        profiles[spec] = "\n".join(host_profile(call, a.profile, top=a.top, after=cuda.synchronize))
        print(f"== cProfile {spec}, {a.profile} calls\n{profiles[spec]}\n")
    for name, us in floor_rows(cA, cB, "small", a.calls, a.blocks):
        cuda.synchronize()
        rows.append({"variant": "small", "backend": "cuda-c", "step": name, "us": us})
    print(f"\n{'variant':9} {'backend':7} {'step':42} {'us':>7}")
    for r in rows:
        print(f"{r['variant']:9} {r['backend']:7} {r['step']:42} {r['us']:7.2f}")
    if a.json:
        write_record(a.json, "gpulab-matmul-call-profile/1", rows, profiles=profiles)


if __name__ == "__main__":
    main()
