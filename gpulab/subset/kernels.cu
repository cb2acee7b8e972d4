// Chapter 2 kernels in CUDA C: the least-correlated k-subset of n strategies.
//
// Q: packed strictly-lower triangle of the squared correlations, Q[i(i-1)/2 + j] = C[i,j]^2 (i > j).
// T: binomial table, T[r * (n + 1) + a] = C(a, r), uint64. Ranks are uint64 throughout.
// Every kernel sums the pairs of a subset in the same canonical order (grouped by the larger
// position b = 1..k-1, a = 0..b-1 inside), with additions only, so all variants agree bit for bit.

typedef unsigned long long u64;

#ifndef MAX_K
#define MAX_K 16
#endif
#ifndef SUBSET_K
#define SUBSET_K 5
#endif
#define CONST_PAIRS 8192
#define RANK_NONE 0xFFFFFFFFFFFFFFFFull
#define INF_D __longlong_as_double(0x7FF0000000000000ll)

// --8<-- [start:unrank_dev]
__device__ __forceinline__ void unrank_into(const u64* __restrict__ T, int n, int k, u64 m, int* out)
{
    const int stride = n + 1;
    int x = 0;
    for (int i = 0; i < k; ++i) {
        const int r = k - 1 - i;
        while (m >= T[r * stride + n - 1 - x]) {  // skip the C(n-1-x, r) subsets that start with x
            m -= T[r * stride + n - 1 - x];
            ++x;
        }
        out[i] = x++;
    }
}
// --8<-- [end:unrank_dev]

__device__ __forceinline__ bool better(double v, u64 r, double bv, u64 br)
{
    return v < bv || (v == bv && r < br);
}

// Tree reduction of (value, rank) over the block; vals/ranks point at 2 * blockDim.x slots of shared memory.
__device__ void block_argmin(double* vals, u64* ranks, double& best, u64& best_rank)
{
    const int tid = threadIdx.x;
    vals[tid] = best;
    ranks[tid] = best_rank;
    __syncthreads();
    for (int step = blockDim.x / 2; step > 0; step /= 2) {
        if (tid < step && better(vals[tid + step], ranks[tid + step], vals[tid], ranks[tid])) {
            vals[tid] = vals[tid + step];
            ranks[tid] = ranks[tid + step];
        }
        __syncthreads();
    }
    best = vals[0];
    best_rank = ranks[0];
}

// --8<-- [start:global]
extern "C" __global__ void subset_global(const double* __restrict__ Q, const u64* __restrict__ T, int n, int k,
                                         u64 base, long long count, int* sel, double* sub, double* dist)
{
    const long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const int npk = k * (k - 1) / 2;
    int* my_sel = sel + tid * k;       // this thread's selection ... in global memory
    double* my_sub = sub + tid * npk;  // ... and its gathered submatrix, in global memory too
    for (long long t = tid; t < count; t += stride) {
        unrank_into(T, n, k, base + (u64)t, my_sel);
        int p = 0;
        for (int b = 1; b < k; ++b) {
            const int rb = my_sel[b] * (my_sel[b] - 1) / 2;
            for (int a = 0; a < b; ++a) my_sub[p++] = Q[rb + my_sel[a]];
        }
        double s = 0.0;
        for (int q = 0; q < npk; ++q) s += my_sub[q];
        dist[t] = sqrt(2.0 * s);
    }
}
// --8<-- [end:global]

// --8<-- [start:shared]
extern "C" __global__ void subset_shared(const double* __restrict__ Q, const u64* __restrict__ T, int n, int k,
                                         int npairs, u64 base, long long count, double* out_val, u64* out_rank)
{
    // [Q: npairs doubles][values: B doubles][ranks: B u64][selections: B*k ints]
    extern __shared__ double smem[];
    double* Qs = smem;
    double* red_v = smem + npairs;
    u64* red_r = (u64*)(red_v + blockDim.x);
    int* my_sel = (int*)(red_r + blockDim.x) + threadIdx.x * k;
    for (int i = threadIdx.x; i < npairs; i += blockDim.x) Qs[i] = Q[i];
    __syncthreads();
    double best = INF_D;
    u64 best_rank = RANK_NONE;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < count; t += stride) {
        const u64 m = base + (u64)t;
        unrank_into(T, n, k, m, my_sel);
        double s = 0.0;
        for (int b = 1; b < k; ++b) {
            const int rb = my_sel[b] * (my_sel[b] - 1) / 2;
            for (int a = 0; a < b; ++a) s += Qs[rb + my_sel[a]];
        }
        const double d = sqrt(2.0 * s);
        if (d < best) { best = d; best_rank = m; }
    }
    block_argmin(red_v, red_r, best, best_rank);
    if (threadIdx.x == 0) { out_val[blockIdx.x] = best; out_rank[blockIdx.x] = best_rank; }
}
// --8<-- [end:shared]

// --8<-- [start:constant_local]
__constant__ double Q_const[CONST_PAIRS];  // 64 KiB: all of constant memory

extern "C" __global__ void subset_constant_local(const u64* __restrict__ T, int n, int k, u64 base, long long count,
                                                 double* out_val, u64* out_rank)
{
    extern __shared__ double smem[];
    int sel[MAX_K];  // thread-local: registers if the compiler can, the local-memory stack otherwise
    double best = INF_D;
    u64 best_rank = RANK_NONE;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < count; t += stride) {
        const u64 m = base + (u64)t;
        unrank_into(T, n, k, m, sel);
        double s = 0.0;
        for (int b = 1; b < k; ++b) {
            const int rb = sel[b] * (sel[b] - 1) / 2;
            for (int a = 0; a < b; ++a) s += Q_const[rb + sel[a]];  // 32 lanes, 32 addresses: serialized
        }
        const double d = sqrt(2.0 * s);
        if (d < best) { best = d; best_rank = m; }
    }
    block_argmin(smem, (u64*)(smem + blockDim.x), best, best_rank);
    if (threadIdx.x == 0) { out_val[blockIdx.x] = best; out_rank[blockIdx.x] = best_rank; }
}
// --8<-- [end:constant_local]

// --8<-- [start:q_at]
// Q[i] where the kernel keeps Q: in shared memory (GLOBAL_Q false: a plain load, ld.shared once
// Q is known to point there), or in global memory read through the read-only data cache
// (GLOBAL_Q true: __ldg, ld.global.nc; a miss in L1 goes to L2, which holds all of Q).
template <bool GLOBAL_Q>
__device__ __forceinline__ double q_at(const double* __restrict__ Q, int i)
{
    return GLOBAL_Q ? __ldg(Q + i) : Q[i];
}
// --8<-- [end:q_at]

// --8<-- [start:scan]
// Best (sum, rank) over `count` consecutive ranks from `start`; K is a compile-time constant, and
// every index into c[] and P[] is one after unrolling, so both live in registers. GLOBAL_Q: where
// Q is read from (q_at).
template <int K, bool GLOBAL_Q = false>
__device__ __forceinline__ void scan_chunk(const double* __restrict__ Q, const u64* __restrict__ T, int n,
                                           u64 start, u64 count, double& best, u64& best_rank)
{
    int c[K];
    double P[K];
    const int stride = n + 1;
    {  // unrank start
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
        for (int a = 0; a < b; ++a) s += q_at<GLOBAL_Q>(Q, rb + c[a]);
        P[b] = s;
    }
    u64 rank = start;
    const u64 end = start + count;
    while (true) {
        const double base = K >= 2 ? P[K >= 2 ? K - 2 : 0] : 0.0;
        int j = c[K - 1];
        for (; j < n && rank < end; ++j, ++rank) {
            // --8<-- [start:hot]
            const int rj = j * (j - 1) / 2;  // row j of the packed triangle: k-1 lookups per subset
            double s = base;
#pragma unroll
            for (int a = 0; a < K - 1; ++a) s += q_at<GLOBAL_Q>(Q, rj + c[a]);
            if (s < best) { best = s; best_rank = rank; }  // squared sums: no sqrt per subset
            // --8<-- [end:hot]
        }
        if (rank >= end) break;
        int i = -1;  // the rightmost of c[0..K-2] that can still move
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
                for (int a = 0; a < b; ++a) s += q_at<GLOBAL_Q>(Q, rb + c[a]);
                P[b] = s;
            }
        }
    }
}
// --8<-- [end:scan]

__device__ __forceinline__ void stage_q(const double* __restrict__ Q, double* Qs, int npairs)
{
    for (int i = threadIdx.x; i < npairs; i += blockDim.x) Qs[i] = Q[i];
    __syncthreads();
}

// --8<-- [start:incremental]
// The whole search in one launch: chunks of the ranks [base, stop), grid-stride, then the block's
// argmin. GLOBAL_Q false: every block first copies Q into shared memory (8 n(n-1)/2 bytes: the
// device's shared memory per block caps n); true: Q is read where it lies (q_at), and shared
// memory holds only the argmin's 16 bytes per thread, whatever n.
template <bool GLOBAL_Q>
__device__ __forceinline__ void incremental_search(const double* __restrict__ Q, const u64* __restrict__ T, int n,
                                                   int npairs, u64 base, u64 stop, u64 chunk, long long nchunks,
                                                   double* out_val, u64* out_rank)
{
    extern __shared__ double smem[];  // [Q: npairs, unless GLOBAL_Q][values: B][ranks: B]
    const int o = GLOBAL_Q ? 0 : npairs;
    if (!GLOBAL_Q) stage_q(Q, smem, npairs);
    double best = INF_D;
    u64 best_rank = RANK_NONE;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < nchunks; t += stride) {
        const u64 start = base + (u64)t * chunk;  // chunks of the ranks [base, stop)
        const u64 count = min(chunk, stop - start);
        scan_chunk<SUBSET_K, GLOBAL_Q>(GLOBAL_Q ? Q : smem, T, n, start, count, best, best_rank);
    }
    block_argmin(smem + o, (u64*)(smem + o + blockDim.x), best, best_rank);
    if (threadIdx.x == 0) { out_val[blockIdx.x] = best; out_rank[blockIdx.x] = best_rank; }
}

extern "C" __global__ void subset_incremental(const double* __restrict__ Q, const u64* __restrict__ T, int n,
                                              int npairs, u64 base, u64 stop, u64 chunk, long long nchunks,
                                              double* out_val, u64* out_rank)
{
    incremental_search<false>(Q, T, n, npairs, base, stop, chunk, nchunks, out_val, out_rank);
}
// --8<-- [end:incremental]

// --8<-- [start:incremental_global]
extern "C" __global__ void subset_incremental_global(const double* __restrict__ Q, const u64* __restrict__ T, int n,
                                                     int npairs, u64 base, u64 stop, u64 chunk, long long nchunks,
                                                     double* out_val, u64* out_rank)
{
    incremental_search<true>(Q, T, n, npairs, base, stop, chunk, nchunks, out_val, out_rank);  // npairs: unused
}
// --8<-- [end:incremental_global]

// --8<-- [start:warp_argmin]
__device__ __forceinline__ void warp_argmin(double& v, u64& r)
{
#pragma unroll
    for (int off = 16; off > 0; off /= 2) {
        const double v2 = __shfl_down_sync(0xFFFFFFFFu, v, off);
        const u64 r2 = __shfl_down_sync(0xFFFFFFFFu, r, off);
        if (better(v2, r2, v, r)) { v = v2; r = r2; }
    }
}

extern "C" __global__ void subset_incremental_warp(const double* __restrict__ Q, const u64* __restrict__ T, int n,
                                                   int npairs, u64 base, u64 stop, u64 chunk, long long nchunks,
                                                   double* out_val, u64* out_rank)
{
    extern __shared__ double smem[];
    stage_q(Q, smem, npairs);
    double best = INF_D;
    u64 best_rank = RANK_NONE;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < nchunks; t += stride) {
        const u64 start = base + (u64)t * chunk;  // chunks of the ranks [base, stop)
        const u64 count = min(chunk, stop - start);
        scan_chunk<SUBSET_K>(smem, T, n, start, count, best, best_rank);
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
// --8<-- [end:warp_argmin]

// --8<-- [start:lanes]
// incremental_lanes: a warp shares everything but the last two indices. A *unit* is a prefix
// G = c[0..K-3]; its subsets are the pairs (x, j), c[K-3] < x < j < n. Lane L owns the
// x = xb + L + 32 s (s < LANE_SLOTS: n <= 32 LANE_SLOTS) and keeps, in registers, PX[s] = the
// sum over the pairs of (G, x) (scan_chunk's P[K-2]). The warp walks j: it loads G's terms of
// row j once (uniform: broadcasts), and each lane adds its PX, those terms and Q[row j + x] —
// 32 consecutive words across the warp: no bank conflicts, one load per subset. The terms are
// scan_chunk's, in its order: the same sums, bit for bit.
#define LANE_SLOTS 8

// Ranks from the unit's first subset (G, xb, xb+1) to (G, x, x+1): the x' in [xb, x) each own n-1-x' subsets.
__device__ __forceinline__ int rows_before(int x, int xb, int n)
{
    return (x - xb) * (n - 1) - (x * (x - 1) - xb * (xb - 1)) / 2;
}

// One unit, the x in [xlo, xhi] of it (all of it unless the chunk cuts it: BOUNDED then also
// keeps only the ranks in [start, end)).
template <int K, bool BOUNDED>
__device__ __forceinline__ void lanes_unit(const double* __restrict__ Q, const int* c, int n, int xb, int xlo, int xhi,
                                           const double* PX, u64 RG, u64 start, u64 end, int lane, double& best,
                                           u64& best_rank)
{
    for (int j = xlo + 1; j < n; ++j) {
        const int rj = j * (j - 1) / 2;
        double g[K > 2 ? K - 2 : 1];  // G's terms of row j, the same in every lane
#pragma unroll
        for (int a = 0; a < K - 2; ++a) g[a] = Q[rj + c[a]];
        // --8<-- [start:lanes_hot]
#pragma unroll
        for (int s = 0; s < LANE_SLOTS; ++s) {
            if (xb + 32 * s >= j || xb + 32 * s > xhi) break;  // the warp's x's from here on are past j
            const int x = xb + lane + 32 * s;
            if (x < j && x >= xlo && x <= xhi) {
                double v = PX[s];
#pragma unroll
                for (int a = 0; a < K - 2; ++a) v += g[a];
                v += Q[rj + x];  // lanes: consecutive x, consecutive words
                if (v <= best) {  // rare once best is small: then the rank
                    const u64 r = RG + (u64)(rows_before(x, xb, n) + j - x - 1);
                    if ((!BOUNDED || (r >= start && r < end)) && (v < best || r < best_rank)) {
                        best = v;
                        best_rank = r;
                    }
                }
            }
        }
        // --8<-- [end:lanes_hot]
    }
}

template <int K>
__device__ __forceinline__ void scan_lanes(const double* __restrict__ Q, const u64* __restrict__ T, int n,
                                           u64 start, u64 count, int lane, double& best, u64& best_rank)
{
    if (K == 1) {  // every sum is 0.0: the chunk's first rank is its best
        if (better(0.0, start, best, best_rank)) { best = 0.0; best_rank = start; }
        return;
    }
    int c[K];
    double P[K];
    const int stride = n + 1;
    {  // unrank start (every lane the same)
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
    for (int b = 1; b < K - 2; ++b) {  // the pairs inside G
        const int rb = c[b] * (c[b] - 1) / 2;
        double s = P[b - 1];
#pragma unroll
        for (int a = 0; a < b; ++a) s += Q[rb + c[a]];
        P[b] = s;
    }
    const u64 end = start + count;
    int xb = K >= 3 ? c[K >= 3 ? K - 3 : 0] + 1 : 0;
    const int x0 = c[K >= 2 ? K - 2 : 0];  // (K >= 2 here: K = 1 returned above)
    u64 RG = start - (u64)(rows_before(x0, xb, n) + c[K - 1] - x0 - 1);  // the rank of (G, xb, xb+1)
    while (true) {
        const int m = n - xb;
        const u64 size = (u64)m * (m - 1) / 2;
        const double PG = K >= 3 ? P[K >= 3 ? K - 3 : 0] : 0.0;
        double PX[LANE_SLOTS];
#pragma unroll
        for (int s = 0; s < LANE_SLOTS; ++s) {
            const int x = xb + lane + 32 * s;
            double v = PG;
            if (x < n) {
                const int rx = x * (x - 1) / 2;
#pragma unroll
                for (int a = 0; a < K - 2; ++a) v += Q[rx + c[a]];
            }
            PX[s] = v;
        }
        if (RG >= start && end - RG >= size) {
            lanes_unit<K, false>(Q, c, n, xb, xb, n - 2, PX, RG, start, end, lane, best, best_rank);
        } else {  // the chunk cuts this unit: only the x's its ranks reach
            int xlo = xb, xhi = xb;
            u64 r = RG;
            for (int x = xb; x < n - 1; ++x) {
                const u64 next = r + (u64)(n - 1 - x);  // (G, x, .) holds the ranks [r, next)
                if (next <= start) xlo = x + 1;
                if (r < end) xhi = x;
                r = next;
            }
            lanes_unit<K, true>(Q, c, n, xb, xlo, xhi, PX, RG, start, end, lane, best, best_rank);
        }
        if (end - RG <= size) break;
        RG += size;
        if (K < 3) break;
        int i = -1;  // the next G: the rightmost of c[0..K-3] that can still move (uniform)
#pragma unroll
        for (int t = 0; t < K - 2; ++t) if (c[t] != n - K + t) i = t;
        if (i < 0) break;
#pragma unroll
        for (int t = 0; t < K - 2; ++t) {
            if (t == i) c[t] += 1;
            else if (t > i) c[t] = c[t > 0 ? t - 1 : 0] + 1;
        }
#pragma unroll
        for (int b = 1; b < K - 2; ++b) {
            if (b >= i) {
                const int rb = c[b] * (c[b] - 1) / 2;
                double s = P[b - 1];
#pragma unroll
                for (int a = 0; a < b; ++a) s += Q[rb + c[a]];
                P[b] = s;
            }
        }
        xb = c[K >= 3 ? K - 3 : 0] + 1;
    }
}

// One warp per chunk of ranks (grid-stride over warps), Q in shared memory as it comes, the block's argmin.
extern "C" __global__ void subset_lanes(const double* __restrict__ Q, const u64* __restrict__ T, int n, int npairs,
                                        u64 base, u64 stop, u64 chunk, long long nchunks, double* out_val,
                                        u64* out_rank)
{
    extern __shared__ double smem[];  // [Q: npairs][values: B][ranks: B]
    stage_q(Q, smem, npairs);
    double best = INF_D;
    u64 best_rank = RANK_NONE;
    const int lane = threadIdx.x % 32, warps = blockDim.x / 32;
    const long long stride = (long long)gridDim.x * warps;
    for (long long t = blockIdx.x * (long long)warps + threadIdx.x / 32; t < nchunks; t += stride) {
        const u64 start = base + (u64)t * chunk;
        const u64 count = min(chunk, stop - start);
        scan_lanes<SUBSET_K>(smem, T, n, start, count, lane, best, best_rank);
    }
    block_argmin(smem + npairs, (u64*)(smem + npairs + blockDim.x), best, best_rank);
    if (threadIdx.x == 0) { out_val[blockIdx.x] = best; out_rank[blockIdx.x] = best_rank; }
}
// --8<-- [end:lanes]

// --8<-- [start:final]
extern "C" __global__ void final_argmin(const double* vals, const u64* ranks, int nblocks, double* out_val, u64* out_rank)
{
    extern __shared__ double smem[];
    double best = INF_D;
    u64 best_rank = RANK_NONE;
    for (int i = threadIdx.x; i < nblocks; i += blockDim.x)
        if (better(vals[i], ranks[i], best, best_rank)) { best = vals[i]; best_rank = ranks[i]; }
    block_argmin(smem, (u64*)(smem + blockDim.x), best, best_rank);
    if (threadIdx.x == 0) { out_val[0] = best; out_rank[0] = best_rank; }
}
// --8<-- [end:final]
