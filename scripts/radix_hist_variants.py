"""The one-sweep histogram kernel (all four 8-bit digit histograms of 2^k uint32 keys in one
read), in a few shapes, timed side by side on the GPU (CuPy RawKernel, CUDA events, median of
20 after warm-up). Each variant's counts are checked against numpy's before it is timed.

    python scripts/radix_hist_variants.py [--log2 28] [--json FILE]

Shapes (H = threads per block, I = keys per thread, grid = blocks, tile-strided):
  now        the library's kernel as of this script: every key's index checked against n
  full       full tiles take a path without the checks (numba's kernel does this)
  full-po    full, with the loop over passes outside the loop over a thread's keys
  vec        full, each thread loading its keys as uint4 (four consecutive keys per load)
  full-ldg   full, the keys loaded through the read-only path (__ldg)
"""

from __future__ import annotations

import argparse
import json
import sys

SOURCE = r"""
typedef unsigned int u32;
#define RADIX 256
#define PASSES 4
#define TILE (H * I)
extern "C" __global__ void __launch_bounds__(H) hist(const u32 *keys, int *out, int n, int passes) {
    __shared__ int h[PASSES * RADIX];
    int tid = threadIdx.x;
    for (int j = tid; j < PASSES * RADIX; j += H) h[j] = 0;
    __syncthreads();
    for (long base = (long)blockIdx.x * TILE; base < n; base += (long)gridDim.x * TILE) {
        u32 k[I];
#if SHAPE == 0
#pragma unroll
        for (int it = 0; it < I; ++it) { long i = base + it * H + tid; k[it] = i < n ? keys[i] : 0u; }
#pragma unroll
        for (int it = 0; it < I; ++it)
            if (base + it * H + tid < n) {
#pragma unroll
                for (int p = 0; p < PASSES; ++p) if (p < passes) atomicAdd(&h[p * RADIX + ((k[it] >> (p * 8)) & 255)], 1);
            }
#else
        if (base + TILE <= n) {
#if SHAPE == 3
            const uint4 *v = reinterpret_cast<const uint4 *>(keys + base);
#pragma unroll
            for (int q = 0; q < I / 4; ++q) {
                uint4 x = v[q * H + tid];
                k[4 * q] = x.x; k[4 * q + 1] = x.y; k[4 * q + 2] = x.z; k[4 * q + 3] = x.w;
            }
#else
            const u32 *kb = keys + base + tid;
#pragma unroll
            for (int it = 0; it < I; ++it) k[it] = SHAPE == 4 ? __ldg(kb + it * H) : kb[it * H];
#endif
#if SHAPE == 2
#pragma unroll
            for (int p = 0; p < PASSES; ++p)
#pragma unroll
                for (int it = 0; it < I; ++it) if (p < passes) atomicAdd(&h[p * RADIX + ((k[it] >> (p * 8)) & 255)], 1);
#else
#pragma unroll
            for (int it = 0; it < I; ++it)
#pragma unroll
                for (int p = 0; p < PASSES; ++p) if (p < passes) atomicAdd(&h[p * RADIX + ((k[it] >> (p * 8)) & 255)], 1);
#endif
        } else {
            for (int it = 0; it < I; ++it) {
                long i = base + it * H + tid;
                if (i < n) {
                    u32 x = keys[i];
                    for (int p = 0; p < PASSES; ++p) if (p < passes) atomicAdd(&h[p * RADIX + ((x >> (p * 8)) & 255)], 1);
                }
            }
        }
#endif
    }
    __syncthreads();
    for (int j = tid; j < PASSES * RADIX; j += H)
        if (h[j]) atomicAdd(&out[j], h[j]);
}
"""

SHAPES = {"now": 0, "full": 1, "full-po": 2, "vec": 3, "full-ldg": 4}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log2", type=int, default=28)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    import cupy as cp
    import numpy as np

    n = 1 << a.log2
    keys = np.random.default_rng().integers(0, 2**32, n, dtype=np.uint32)
    ref = np.concatenate([np.bincount((keys >> np.uint32(8 * p)) & np.uint32(255), minlength=256) for p in range(4)])
    d = cp.asarray(keys)
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    configs = []
    for shape in SHAPES:
        for H, I in ((384, 16), (128, 16), (256, 16)):
            for grid in (1024, sms * 8, sms * 16):
                configs.append((shape, H, I, grid))
    rows = []
    for shape, H, I, grid in configs:
        tile = H * I
        g = min(grid, -(-n // tile))
        mod = cp.RawModule(code=SOURCE, options=(f"-DH={H}", f"-DI={I}", f"-DSHAPE={SHAPES[shape]}", "-std=c++17"))
        k = mod.get_function("hist")
        out = cp.zeros(4 * 256, cp.int32)
        k((g,), (H,), (d, out, np.int32(n), np.int32(4)))
        ok = bool(np.array_equal(out.get(), ref))
        times = []
        for rep in range(25):
            out.fill(0)
            s, e = cp.cuda.Event(), cp.cuda.Event()
            s.record()
            k((g,), (H,), (d, out, np.int32(n), np.int32(4)))
            e.record()
            e.synchronize()
            if rep >= 5:
                times.append(cp.cuda.get_elapsed_time(s, e))
        ms = float(np.median(times))
        rows.append({"shape": shape, "threads": H, "items": I, "grid": g, "ms": ms, "ok": ok,
                     "GBps": n * 4 / (ms * 1e-3) / 1e9})
        print(f"{shape:8} {H:4} x {I:2} grid {g:5}: {ms:.4f} ms {'ok' if ok else 'WRONG'}", flush=True)
    rows.sort(key=lambda r: r["ms"])
    print("fastest:", rows[:5])
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"n": n, "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "rows": rows}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
