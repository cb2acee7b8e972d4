"""A/B of the incremental scan's hot loop in CUDA C, outside the library (issue 31: C(200,5) at
1.65e11 subsets/s against a 3e11 target). Each candidate is chapter 2's `kernels.cu` plus one
extra kernel compiled with it (CuPy's NVRTC), launched as `IncrementalPlan` launched
`subset_incremental_warp` before its WAVES cap (same chunks and shared memory; the grid capped at
MAX_BLOCKS only), timed with CUDA events (median of
--repeat after a warm-up) and checked against the library's own answer:

  warp         the library's subset_incremental_warp, as it is
  rows         the row's bounds hoisted out of the hot loop: 32-bit counters, the row offset
               j(j-1)/2 advanced by an addition, the rank computed once per row
  rows_u2/u4   `rows` with the hot loop unrolled 2 or 4 times: that many subsets' loads in flight
  lockstep     a warp walks one row at a time: its lanes share the first k-1 indices and take
               consecutive last ones (no divergence); Q staged transposed in shared memory so
               those lanes read consecutive words (no bank conflicts)

The sums keep the canonical order (bit for bit the library's), so every candidate must return
the library's (value, rank). Prints a table; --json writes it.

Each candidate is a whole copy of the scan with one change, on purpose: rewritten onto helpers
shared with the library, the same arithmetic compiled differently and ran slower (the library's
kernel 6%, rows_u4 9%: docs/benchmarks/ab-runs/subset-scan-shared-helpers-h100.log).

    python scripts/subset_scan_ab.py --sizes 200:5 100:6 50:5 --json ab.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import cupy as cp
import numpy as np

from gpulab import device, subset
from gpulab.benchmark import utc_now, versions
from gpulab.subset import host
from gpulab.subset.combinatorics import binomial_table, choose
from gpulab.subset.reference import correlation, squared_packed, synthetic_returns

ROWS = r"""
template <int K, int UNROLL>
__device__ __forceinline__ void scan_rows(const double* __restrict__ Q, const u64* __restrict__ T, int n,
                                          u64 start, u64 count, double& best, u64& best_rank)
{
    int c[K];
    double P[K];
    const int stride = n + 1;
    {
        u64 m = start;
        int x = 0;
#pragma unroll
        for (int i = 0; i < K; ++i) {
            const int r = K - 1 - i;
            while (m >= T[r * stride + n - 1 - x]) { m -= T[r * stride + n - 1 - x]; ++x; }
            c[i] = x++;
        }
    }
    P[0] = 0.0;
#pragma unroll
    for (int b = 1; b < K - 1; ++b) {
        const int rb = c[b] * (c[b] - 1) / 2;
        double s = P[b - 1];
#pragma unroll
        for (int a = 0; a < b; ++a) s += Q[rb + c[a]];
        P[b] = s;
    }
    u64 rank = start;
    u64 left = count;
    while (true) {
        const double base = P[K - 2];
        const int j0 = c[K - 1];
        const int len = (u64)(n - j0) < left ? n - j0 : (int)left;  // this row's subsets, or the rest
        int rj = j0 * (j0 - 1) / 2;
        double rowbest = best;
        int bestj = -1;
#pragma unroll UNROLL
        for (int j = j0; j < j0 + len; ++j) {
            double s = base;
#pragma unroll
            for (int a = 0; a < K - 1; ++a) s += Q[rj + c[a]];
            if (s < rowbest) { rowbest = s; bestj = j; }
            rj += j;
        }
        if (bestj >= 0) { best = rowbest; best_rank = rank + (u64)(bestj - j0); }
        rank += len;
        left -= len;
        if (left == 0) break;
        int i = -1;
#pragma unroll
        for (int t = 0; t < K - 1; ++t) if (c[t] != n - K + t) i = t;
        if (i < 0) break;
#pragma unroll
        for (int t = 0; t < K; ++t) {
            if (t == i) c[t] += 1;
            else if (t > i) c[t] = c[t > 0 ? t - 1 : 0] + 1;
        }
#pragma unroll
        for (int b = 1; b < K - 1; ++b) {
            if (b >= i) {
                const int rb = c[b] * (c[b] - 1) / 2;
                double s = P[b - 1];
#pragma unroll
                for (int a = 0; a < b; ++a) s += Q[rb + c[a]];
                P[b] = s;
            }
        }
    }
}

template <int UNROLL>
__device__ __forceinline__ void rows_search(const double* __restrict__ Q, const u64* __restrict__ T, int n,
                                            int npairs, u64 base, u64 stop, u64 chunk, long long nchunks,
                                            double* out_val, u64* out_rank)
{
    extern __shared__ double smem[];
    stage_q(Q, smem, npairs);
    double best = INF_D;
    u64 best_rank = RANK_NONE;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < nchunks; t += stride) {
        const u64 start = base + (u64)t * chunk;
        const u64 count = min(chunk, stop - start);
        scan_rows<SUBSET_K, UNROLL>(smem, T, n, start, count, best, best_rank);
    }
    double* wv = smem + npairs;
    u64* wr = (u64*)(wv + 32);
    const int lane = threadIdx.x % 32, w = threadIdx.x / 32, nw = (blockDim.x + 31) / 32;
    warp_argmin(best, best_rank);
    if (lane == 0) { wv[w] = best; wr[w] = best_rank; }
    __syncthreads();
    if (w == 0) {
        best = lane < nw ? wv[lane] : INF_D;
        best_rank = lane < nw ? wr[lane] : RANK_NONE;
        warp_argmin(best, best_rank);
        if (lane == 0) { out_val[blockIdx.x] = best; out_rank[blockIdx.x] = best_rank; }
    }
}
#define ROWS_KERNEL(NAME, U) \
extern "C" __global__ void NAME(const double* __restrict__ Q, const u64* __restrict__ T, int n, int npairs, \
    u64 base, u64 stop, u64 chunk, long long nchunks, double* out_val, u64* out_rank) \
{ rows_search<U>(Q, T, n, npairs, base, stop, chunk, nchunks, out_val, out_rank); }
ROWS_KERNEL(rows, 1)
ROWS_KERNEL(rows_u2, 2)
ROWS_KERNEL(rows_u4, 4)

// lockstep: a warp walks one row at a time. Its 32 lanes share c[0..K-2] (and P) and take
// consecutive last indices j, so they branch together; Q is staged transposed (row c holds
// Q(c, j) for j > c, contiguous in j), so the lanes' loads of one a hit consecutive words.
__device__ __forceinline__ int uoff(int c, int n) { return c * (2 * n - c - 1) / 2 - c - 1; }  // U[uoff(c) + j] = Q(c, j), j > c

template <int K>
__device__ __forceinline__ void lockstep_range(const double* __restrict__ U, const u64* __restrict__ T, int n,
                                               u64 start, u64 count, int lane, double& best, u64& best_rank)
{
    int c[K];
    double P[K];
    const int stride = n + 1;
    {
        u64 m = start;
        int x = 0;
#pragma unroll
        for (int i = 0; i < K; ++i) {
            const int r = K - 1 - i;
            while (m >= T[r * stride + n - 1 - x]) { m -= T[r * stride + n - 1 - x]; ++x; }
            c[i] = x++;
        }
    }
    P[0] = 0.0;
#pragma unroll
    for (int b = 1; b < K - 1; ++b) {
        double s = P[b - 1];
#pragma unroll
        for (int a = 0; a < b; ++a) s += U[uoff(c[a], n) + c[b]];
        P[b] = s;
    }
    u64 rank = start;
    u64 left = count;
    while (true) {
        const double base = P[K - 2];
        const int j0 = c[K - 1];
        const int len = (u64)(n - j0) < left ? n - j0 : (int)left;
        int o[K - 1];
#pragma unroll
        for (int a = 0; a < K - 1; ++a) o[a] = uoff(c[a], n) + j0;
        for (int jj = lane; jj < len; jj += 32) {
            double s = base;
#pragma unroll
            for (int a = 0; a < K - 1; ++a) s += U[o[a] + jj];
            if (s < best) { best = s; best_rank = rank + (u64)jj; }
        }
        rank += len;
        left -= len;
        if (left == 0) break;
        int i = -1;
#pragma unroll
        for (int t = 0; t < K - 1; ++t) if (c[t] != n - K + t) i = t;
        if (i < 0) break;
#pragma unroll
        for (int t = 0; t < K; ++t) {
            if (t == i) c[t] += 1;
            else if (t > i) c[t] = c[t > 0 ? t - 1 : 0] + 1;
        }
#pragma unroll
        for (int b = 1; b < K - 1; ++b) {
            if (b >= i) {
                double s = P[b - 1];
#pragma unroll
                for (int a = 0; a < b; ++a) s += U[uoff(c[a], n) + c[b]];
                P[b] = s;
            }
        }
    }
}

extern "C" __global__ void lockstep(const double* __restrict__ Q, const u64* __restrict__ T, int n, int npairs,
                                    u64 base, u64 stop, u64 chunk, long long nchunks, double* out_val, u64* out_rank)
{
    extern __shared__ double smem[];
    const int lane = threadIdx.x % 32, w = threadIdx.x / 32, nw = blockDim.x / 32;
    for (int r = 1 + w; r < n; r += nw)  // stage Q transposed: row r of the lower triangle -> column r
        for (int c = lane; c < r; c += 32) smem[uoff(c, n) + r] = Q[r * (r - 1) / 2 + c];
    __syncthreads();
    double best = INF_D;
    u64 best_rank = RANK_NONE;
    const long long warps = (long long)gridDim.x * nw;
    for (long long t = blockIdx.x * (long long)nw + w; t * 32 < nchunks; t += warps) {
        const u64 start = base + (u64)t * 32 * chunk;  // the warp's 32 chunks, walked together
        const u64 count = min(32 * chunk, stop - start);
        lockstep_range<SUBSET_K>(smem, T, n, start, count, lane, best, best_rank);
    }
    double* wv = smem + npairs;
    u64* wr = (u64*)(wv + 32);
    warp_argmin(best, best_rank);
    if (lane == 0) { wv[w] = best; wr[w] = best_rank; }
    __syncthreads();
    if (w == 0) {
        best = lane < nw ? wv[lane] : INF_D;
        best_rank = lane < nw ? wr[lane] : RANK_NONE;
        warp_argmin(best, best_rank);
        if (lane == 0) { out_val[blockIdx.x] = best; out_rank[blockIdx.x] = best_rank; }
    }
}
"""

CANDIDATES = {"warp": "subset_incremental_warp", "rows": "rows", "rows_u2": "rows_u2", "rows_u4": "rows_u4",
              "lockstep": "lockstep"}


def run(n: int, k: int, repeat: int, blocks: list[int]) -> list[dict]:
    src = (Path(host.__file__).with_name("kernels.cu")).read_text() + ROWS
    mod = cp.RawModule(code=src, options=(f"-DSUBSET_K={k}", "-std=c++17", "-lineinfo"))
    C = correlation(synthetic_returns(500, n, factors=3, strength=0.5, seed=n * 100 + k))
    Q = squared_packed(C)
    want = subset.least_correlated(C, k, variant="incremental_warp", backend="cuda-c")
    dQ, dT = cp.asarray(Q), cp.asarray(binomial_table(n, k))
    width = choose(n, k)
    rows = []
    for block in blocks:
        p = dict(subset.REGISTRY.get("incremental_warp", "cuda-c").params, BLOCK=block)
        chunk = max(min(p["CHUNK"], 32), min(p["CHUNK"], -(-width // (device.info().sm_count * 2048))))
        nchunks = -(-width // chunk)
        grid = max(1, min(-(-nchunks // block), p["MAX_BLOCKS"]))
        shared = 8 * host.npairs(n) + 16 * block
        vals, ranks = cp.empty(grid, cp.float64), cp.empty(grid, cp.uint64)
        for name, kname in CANDIDATES.items():
            kern = mod.get_function(kname)
            row = {"n": n, "k": k, "block": block, "candidate": name, "regs": kern.num_regs}
            try:
                kern.max_dynamic_shared_size_bytes = shared
                args = (dQ, dT, np.int32(n), np.int32(host.npairs(n)), np.uint64(0), np.uint64(width),
                        np.uint64(chunk), np.int64(nchunks), vals, ranks)
                launch = lambda: kern((grid,), (block,), args, shared_mem=shared)  # noqa: E731
                vals.fill(np.nan)
                launch()
                cp.cuda.Device().synchronize()
            except Exception as e:  # noqa: BLE001  (a block too large for the registers: say so)
                rows.append({**row, "error": str(e).splitlines()[0]})
                continue
            v, r = vals.get(), ranks.get()
            i = min(range(grid), key=lambda b: (v[b], r[b]))
            row["same"] = bool(int(r[i]) == want.rank and abs(np.sqrt(2 * v[i]) - want.distance) <= 1e-12 * want.distance)
            ms = []
            for _ in range(repeat):
                e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                e0.record()
                launch()
                e1.record()
                e1.synchronize()
                ms.append(cp.cuda.get_elapsed_time(e0, e1))
            row["ms"] = statistics.median(ms)
            row["subsets_per_s"] = width / (row["ms"] * 1e-3)
            rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", nargs="+", default=["200:5", "100:6", "50:5"])
    ap.add_argument("--blocks", nargs="+", type=int, default=[512])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = []
    for s in a.sizes:
        n, k = map(int, s.split(":"))
        rows += run(n, k, a.repeat, a.blocks)
    print(f"{device.info().name}")
    for r in rows:
        extra = r.get("error") or f"{r['ms']:9.3f} ms {r['subsets_per_s']:.3g}/s same={r['same']}"
        print(f"C({r['n']},{r['k']}) block {r['block']:5} {r['candidate']:8} regs {r['regs']:3} {extra}")
    if a.json:
        Path(a.json).write_text(json.dumps({"device": device.info().name, "date": utc_now(), "versions": versions(),
                                            "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
