"""Host time per launch of a numba kernel: numba's ``kernel[grid, block](*args)`` against
`gpulab.launch.launch_numba` (its flattened arguments through the driver's `cuLaunchKernel`,
and, as before session 21, through `cuda.core.launch`), and the same kernel in CUDA C through
`gpulab.cudac.launch` (pycuda's prepared call), on a kernel of 26 arguments (15 device arrays
and 11 scalars: more than the breeding's `breed_plan`, 12 arrays and 10 scalars) and one of 2
arrays (as `plan_lengths`), each the median over ROUNDS rounds of N launches (the device
synchronized before each round, the host's clock around the launches alone), the ways
alternating round by round.

    python scripts/launch_numba_ab.py [--n 200] [--rounds 15] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from gpulab import cudac, launch
from gpulab.benchmark import utc_now, versions
from gpulab.device import info

from numba import cuda  # noqa: E402  (after gpulab)


@cuda.jit
def wide(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14,
         s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10):
    i = cuda.grid(1)
    if i < a0.size:
        a0[i] = a1[i] + s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7 + s8 + s9 + (1 if s10 else 0)


CUDA_C = r"""
extern "C" __global__ void wide(double* a0, const double* a1, const double* a2, const double* a3, const double* a4,
    const double* a5, const double* a6, const double* a7, const double* a8, const double* a9, const double* a10,
    const double* a11, const double* a12, const double* a13, const double* a14, long long n, double s1, double s2,
    long long s3, long long s4, long long s5, double s6, double s7, long long s8, long long s9, int s10) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) a0[i] = a1[i] + s1 + s2 + s3 + s4 + s5 + s6 + s7 + s8 + s9 + (s10 ? 1 : 0);
}
extern "C" __global__ void narrow(const int* a, int* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i];
}
"""


def cuda_c_kernels():
    """The two kernels in CUDA C (NVRTC, loaded into pycuda), or None without pycuda."""
    from gpulab import cudac

    if cudac.unavailable_reason():
        return None
    import pycuda.autoprimaryctx  # noqa: F401
    import pycuda.driver as drv

    cc = info().compute_capability
    rep = cudac.nvrtc_compile(CUDA_C, "launch_ab.cu", arch=f"sm_{cc[0]}{cc[1]}", lineinfo=False)
    mod = drv.module_from_buffer(rep.cubin)
    return mod.get_function("wide"), mod.get_function("narrow")


@cuda.jit
def narrow(a, b):
    i = cuda.grid(1)
    if i < a.size:
        b[i] = a[i]


def per_launch_us(fn, n, rounds):
    out = []
    for _ in range(rounds):
        cuda.synchronize()
        t = time.perf_counter()
        for _ in range(n):
            fn()
        out.append((time.perf_counter() - t) / n * 1e6)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--json")
    a = ap.parse_args()
    P = 25_000
    arrays = [cuda.to_device(np.zeros(P, np.float64)) for _ in range(15)]
    scalars = (1, 2.0, 3.0, 4, 5, 6, 7.0, 8.0, 9, 10, True)
    x, y = cuda.to_device(np.zeros(2 * P, np.int32)), cuda.to_device(np.zeros(2 * P, np.int32))
    grid, block = (P + 127) // 128, 128
    real_handle = launch._stream_handle

    def via_cuda_core(fn):
        def run():  # the plan's packed launch declined: the flattened arguments through cuda.core
            launch._stream_handle = lambda s: None
            try:
                fn()
            finally:
                launch._stream_handle = real_handle
        return run

    cc = cuda_c_kernels()
    wide_c = lambda: cudac.launch(cc[0], (grid,), (block,), *arrays, np.int64(P), *(  # noqa: E731
        np.float64(v) if isinstance(v, float) else np.int64(v) for v in scalars[1:-1]), bool(scalars[-1]))
    narrow_c = lambda: cudac.launch(cc[1], (grid,), (block,), x, y, np.int32(2 * P))  # noqa: E731
    wide_ours = lambda: launch.launch_numba(wide, grid, block, *arrays, *scalars)  # noqa: E731
    narrow_ours = lambda: launch.launch_numba(narrow, grid, block, x, y)  # noqa: E731
    cases = {
        "26 arguments (15 arrays)": {"numba": lambda: wide[grid, block](*arrays, *scalars),
                                     "launch_numba, cuda.core": via_cuda_core(wide_ours),
                                     "launch_numba, cuLaunchKernel": wide_ours,
                                     "cudac.launch (pycuda)": wide_c if cc else None},
        "2 arrays": {"numba": lambda: narrow[grid, block](x, y),
                     "launch_numba, cuda.core": via_cuda_core(narrow_ours),
                     "launch_numba, cuLaunchKernel": narrow_ours,
                     "cudac.launch (pycuda)": narrow_c if cc else None},
    }
    rows = []
    for name, ways in cases.items():
        ways = {k: f for k, f in ways.items() if f is not None}
        for f in ways.values():
            f(), f()  # compiled; the fast plan made
        times = {k: [] for k in ways}
        for r in range(a.rounds):
            order = list(ways) if r % 2 == 0 else list(ways)[::-1]
            for k in order:
                times[k] += per_launch_us(ways[k], a.n, 1)
        cuda.synchronize()
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append({"kernel": name, **{f"{k} µs": round(v, 1) for k, v in med.items()}})
        print(rows[-1], flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"about": "host time per launch, median of the rounds (the device synchronized before each): "
                       "numba's own launch; gpulab.launch.launch_numba with its flattened arguments through "
                       "cuda.core.launch (as before session 21) and through the driver's cuLaunchKernel with one "
                       "packed buffer (now); the same kernels in CUDA C through gpulab.cudac.launch (pycuda) "
                       "(scripts/launch_numba_ab.py)", "device": info().as_dict(), "versions": versions(),
                       "date": utc_now(), "launches_per_round": a.n, "rounds": a.rounds, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
