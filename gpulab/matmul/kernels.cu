// Chapter 1 kernels in CUDA C: C = A @ B for row-major float32 A (M×K), B (K×N), C (M×N).
//
// The same ladder as kernels_numba.py (same names, same thread→element mappings), then two
// steps numba cannot express well: float4 vector loads (vec4) and warp tiling (warptile).
// Every kernel handles any M, N, K ≥ 1: threads outside C do nothing, tile loads past the edge
// of A or B load zeros (which add nothing to the dot products), nothing is read out of bounds.
//
// Compile-time sizes are macros with defaults below; the host passes -DNAME=value, so Python's
// launch arithmetic and the kernels agree by construction. One compilation of this file gets one
// set of defines, so the warptile kernel has its own WT_-prefixed macros: changing the register
// kernel's BM does not reshape (or break) the warptile kernel.

#ifndef TILE
#define TILE 16  // matmul_shared: TILE×TILE threads, TILE×TILE tiles of A and B
#endif

// matmul_register, matmul_prefetch and matmul_vec4: a block computes a BM×BN tile of C with
// (BM/TM)*(BN/TN) threads, each a TM×TN sub-tile; BK columns of A / rows of B per stage.
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif
#ifndef PAD
#define PAD 4  // floats added to each row of the transposed A tile (keeps rows 16-byte aligned)
#endif

#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

__device__ __forceinline__ bool aligned16(const void* p) {
    return (reinterpret_cast<unsigned long long>(p) & 15ull) == 0;
}

// --8<-- [start:naive]
extern "C" __global__ void matmul_naive(const float* __restrict__ A, const float* __restrict__ B,
                                        float* __restrict__ C, int M, int N, int K) {
    // x (the fastest-varying thread index, the one that differs between lanes of a warp) runs
    // over ROWS: neighbouring lanes read A[row][k] a whole row apart, and write C a whole row
    // apart. Correct, but every warp-wide load touches 32 different cache lines.
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
        C[(size_t)row * N + col] = acc;
    }
}
// --8<-- [end:naive]

// --8<-- [start:coalesced]
extern "C" __global__ void matmul_coalesced(const float* __restrict__ A, const float* __restrict__ B,
                                            float* __restrict__ C, int M, int N, int K) {
    // Swap the mapping: x runs over COLUMNS. Now the 32 lanes of a warp read 32 consecutive
    // floats of B (one 128-byte line) and all read the same A[row][k] (one broadcast).
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
        C[(size_t)row * N + col] = acc;
    }
}
// --8<-- [end:coalesced]

// --8<-- [start:shared]
extern "C" __global__ void matmul_shared(const float* __restrict__ A, const float* __restrict__ B,
                                         float* __restrict__ C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int col = blockIdx.x * TILE + tx;
    int row = blockIdx.y * TILE + ty;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        // Each thread loads one element of each tile (zero past the edges) ...
        As[ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();  // ... the whole tile is in shared memory before anyone reads it,
#pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];  // each global value is now read TILE times from shared
        __syncthreads();  // ... and nobody overwrites it while others still read it.
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = acc;
}
// --8<-- [end:shared]

// --8<-- [start:constant]
// 64 KiB, all of constant memory: B (K×N, K*N <= 16384) is copied here by the host.
__constant__ float B_const[16384];

extern "C" __global__ void matmul_constant(const float* __restrict__ A, float* __restrict__ C,
                                           int M, int N, int K) {
    // x runs over rows: all 32 lanes of a warp share one column, so at every k they read the
    // SAME constant address, which the constant cache broadcasts in one go.
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += A[(size_t)row * K + k] * B_const[k * N + col];
        C[(size_t)row * N + col] = acc;
    }
}
// --8<-- [end:constant]

// --8<-- [start:constant_scattered]
extern "C" __global__ void matmul_constant_scattered(const float* __restrict__ A, float* __restrict__ C,
                                                     int M, int N, int K) {
    // x runs over columns: the lanes of a warp read 32 DIFFERENT constant addresses at every k,
    // and the constant cache serves one address per cycle: 32 serialized reads.
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += A[(size_t)row * K + k] * B_const[k * N + col];
        C[(size_t)row * N + col] = acc;
    }
}
// --8<-- [end:constant_scattered]

// --8<-- [start:register]
// Register tiling: block (BN/TN, BM/TM) computes a BM×BN tile of C, each thread a TM×TN
// sub-tile held in registers (arrays indexed only by unrolled loop counters). Thread (tx, ty)
// owns rows ty + i*RS and columns tx + j*CS: strided, so neighbouring lanes read neighbouring
// shared-memory words (no bank conflicts) and write neighbouring C elements.
#define RG_CS (BN / TN)         // threads along x (columns)
#define RG_RS (BM / TM)         // threads along y (rows)
#define RG_THREADS (RG_CS * RG_RS)
#define RG_A_LOADS ((BM * BK) / RG_THREADS)  // elements of the A tile each thread loads
#define RG_B_LOADS ((BK * BN) / RG_THREADS)
static_assert(BM % TM == 0 && BN % TN == 0, "BM, BN must be multiples of TM, TN");
static_assert((BM * BK) % RG_THREADS == 0 && (BK * BN) % RG_THREADS == 0,
              "each thread loads the same number of tile elements");

extern "C" __global__ void matmul_register(const float* __restrict__ A, const float* __restrict__ B,
                                           float* __restrict__ C, int M, int N, int K) {
    // A tile stored transposed (k-major) and padded: the inner loop reads As[k][:] along rows,
    // and the transposing stores of BK consecutive k land in different banks.
    __shared__ float As[BK][BM + PAD];
    __shared__ float Bs[BK][BN];
    float acc[TM][TN];
    float a_frag[TM], b_frag[TN];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * RG_CS + tx;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int l = 0; l < RG_A_LOADS; ++l) {  // consecutive threads: consecutive k of one row of A
            int e = tid + l * RG_THREADS;
            int r = e / BK, kk = e % BK;
            As[kk][r] = (m0 + r < M && k0 + kk < K) ? A[(size_t)(m0 + r) * K + k0 + kk] : 0.0f;
        }
#pragma unroll
        for (int l = 0; l < RG_B_LOADS; ++l) {  // consecutive threads: consecutive columns of B
            int e = tid + l * RG_THREADS;
            int kk = e / BN, c = e % BN;
            Bs[kk][c] = (k0 + kk < K && n0 + c < N) ? B[(size_t)(k0 + kk) * N + n0 + c] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; ++i)
                a_frag[i] = As[k][ty + i * RG_RS];
#pragma unroll
            for (int j = 0; j < TN; ++j)
                b_frag[j] = Bs[k][tx + j * RG_CS];
#pragma unroll
            for (int i = 0; i < TM; ++i)  // TM*TN FMAs for TM+TN shared loads
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] += a_frag[i] * b_frag[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        int row = m0 + ty + i * RG_RS;
        if (row < M) {
#pragma unroll
            for (int j = 0; j < TN; ++j) {
                int col = n0 + tx + j * RG_CS;
                if (col < N)
                    C[(size_t)row * N + col] = acc[i][j];
            }
        }
    }
}
// --8<-- [end:register]

// --8<-- [start:prefetch]
// Register tiling plus double buffering: two shared-memory stages and register prefetch. While
// the block multiplies stage s, each thread already holds the next tile's values (loaded from
// global memory into registers at the top of the iteration) and stores them into stage 1 - s
// afterwards: global latency hides behind the FMAs, and one barrier per tile suffices.
extern "C" __global__ void matmul_prefetch(const float* __restrict__ A, const float* __restrict__ B,
                                           float* __restrict__ C, int M, int N, int K) {
    __shared__ float As[2][BK][BM + PAD];
    __shared__ float Bs[2][BK][BN];
    float acc[TM][TN];
    float a_frag[TM], b_frag[TN];
    float a_next[RG_A_LOADS], b_next[RG_B_LOADS];  // the next tile, in flight in registers
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * RG_CS + tx;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            acc[i][j] = 0.0f;
    // Stage 0 gets the first tile.
#pragma unroll
    for (int l = 0; l < RG_A_LOADS; ++l) {
        int e = tid + l * RG_THREADS;
        int r = e / BK, kk = e % BK;
        As[0][kk][r] = (m0 + r < M && kk < K) ? A[(size_t)(m0 + r) * K + kk] : 0.0f;
    }
#pragma unroll
    for (int l = 0; l < RG_B_LOADS; ++l) {
        int e = tid + l * RG_THREADS;
        int kk = e / BN, c = e % BN;
        Bs[0][kk][c] = (kk < K && n0 + c < N) ? B[(size_t)kk * N + n0 + c] : 0.0f;
    }
    __syncthreads();
    int stage = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        const int k1 = k0 + BK;
        if (k1 < K) {  // issue the next tile's global loads before computing on this one
#pragma unroll
            for (int l = 0; l < RG_A_LOADS; ++l) {
                int e = tid + l * RG_THREADS;
                int r = e / BK, kk = e % BK;
                a_next[l] = (m0 + r < M && k1 + kk < K) ? A[(size_t)(m0 + r) * K + k1 + kk] : 0.0f;
            }
#pragma unroll
            for (int l = 0; l < RG_B_LOADS; ++l) {
                int e = tid + l * RG_THREADS;
                int kk = e / BN, c = e % BN;
                b_next[l] = (k1 + kk < K && n0 + c < N) ? B[(size_t)(k1 + kk) * N + n0 + c] : 0.0f;
            }
        }
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; ++i)
                a_frag[i] = As[stage][k][ty + i * RG_RS];
#pragma unroll
            for (int j = 0; j < TN; ++j)
                b_frag[j] = Bs[stage][k][tx + j * RG_CS];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] += a_frag[i] * b_frag[j];
        }
        if (k1 < K) {  // the other stage was last read before the previous barrier: safe to fill
#pragma unroll
            for (int l = 0; l < RG_A_LOADS; ++l) {
                int e = tid + l * RG_THREADS;
                As[1 - stage][e % BK][e / BK] = a_next[l];
            }
#pragma unroll
            for (int l = 0; l < RG_B_LOADS; ++l) {
                int e = tid + l * RG_THREADS;
                Bs[1 - stage][e / BN][e % BN] = b_next[l];
            }
        }
        __syncthreads();
        stage = 1 - stage;
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        int row = m0 + ty + i * RG_RS;
        if (row < M) {
#pragma unroll
            for (int j = 0; j < TN; ++j) {
                int col = n0 + tx + j * RG_CS;
                if (col < N)
                    C[(size_t)row * N + col] = acc[i][j];
            }
        }
    }
}
// --8<-- [end:prefetch]

// --8<-- [start:vec4]
// Register tiling with 16-byte accesses. Block (BN/TN, BM/TM); thread (tx, ty) owns the
// CONTIGUOUS rows ty*TM .. ty*TM+TM-1 and columns tx*TN .. tx*TN+TN-1, so its fragments are
// float4 reads from shared memory: TM/4 + TN/4 load instructions per k instead of TM + TN.
// Global loads are float4 too when every row of A and B starts 16-byte aligned (K % 4 == 0 and
// N % 4 == 0); otherwise the same loop loads four guarded scalars. The branch is uniform.
#define V4_THREADS (RG_THREADS)
#define V4_A_VECS (BM * BK / 4)                 // float4s in the A tile
#define V4_B_VECS (BK * BN / 4)
#define V4_A_LOADS CEIL_DIV(V4_A_VECS, V4_THREADS)  // float4s of the A tile per thread (at most)
#define V4_B_LOADS CEIL_DIV(V4_B_VECS, V4_THREADS)
#define V4_NG (TN / 4)                          // float4 groups of columns per thread
static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "vec4 reads float4 fragments");
static_assert((BM + PAD) % 4 == 0, "vec4: rows of the A tile must stay 16-byte aligned");

// Four consecutive floats of one row, zero past the edges (vec: 16-byte aligned and lim % 4 == 0).
__device__ __forceinline__ float4 load4_guarded(const float* __restrict__ row_ptr, bool row_ok,
                                                int c, int lim, bool vec) {
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (row_ok) {
        if (vec) {
            if (c < lim) v = *reinterpret_cast<const float4*>(row_ptr + c);
        } else {
            if (c + 0 < lim) v.x = row_ptr[c + 0];
            if (c + 1 < lim) v.y = row_ptr[c + 1];
            if (c + 2 < lim) v.z = row_ptr[c + 2];
            if (c + 3 < lim) v.w = row_ptr[c + 3];
        }
    }
    return v;
}

extern "C" __global__ void matmul_vec4(const float* __restrict__ A, const float* __restrict__ B,
                                       float* __restrict__ C, int M, int N, int K) {
    // A transposed and padded as before. B's columns are permuted in shared memory: the g-th
    // float4 of thread tx's TN columns is stored at g*(4*CS) + 4*tx, so at each read the lanes
    // of a warp take consecutive float4s (conflict-free) instead of float4s TN floats apart.
    __shared__ __align__(16) float As[BK][BM + PAD];
    __shared__ __align__(16) float Bs[BK][BN];
    float acc[TM][TN];
    float a_frag[TM], b_frag[TN];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * RG_CS + tx;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;
    const bool vec = (K % 4 == 0) && (N % 4 == 0) && aligned16(A) && aligned16(B) && aligned16(C);
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int l = 0; l < V4_A_LOADS; ++l) {  // consecutive threads: consecutive float4s of a row of A
            int e = tid + l * V4_THREADS;
            if (V4_A_VECS % V4_THREADS != 0 && e >= V4_A_VECS) break;  // small tiles: fewer float4s than threads
            int r = e / (BK / 4), kq = (e % (BK / 4)) * 4;
            float4 v = load4_guarded(A + (size_t)(m0 + r) * K, m0 + r < M, k0 + kq, K, vec);
            As[kq + 0][r] = v.x;  // transposing scalar stores; with PAD = 4 and BK = 8 the
            As[kq + 1][r] = v.y;  // 32 lanes hit 32 different banks
            As[kq + 2][r] = v.z;
            As[kq + 3][r] = v.w;
        }
#pragma unroll
        for (int l = 0; l < V4_B_LOADS; ++l) {  // consecutive threads: consecutive float4s of a row of B
            int e = tid + l * V4_THREADS;
            if (V4_B_VECS % V4_THREADS != 0 && e >= V4_B_VECS) break;
            int kk = e / (BN / 4), c = (e % (BN / 4)) * 4;
            float4 v = load4_guarded(B + (size_t)(k0 + kk) * N, k0 + kk < K, n0 + c, N, vec);
            int owner = c / TN, g = (c % TN) / 4;
            *reinterpret_cast<float4*>(&Bs[kk][g * 4 * RG_CS + owner * 4]) = v;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; i += 4) {
                float4 v = *reinterpret_cast<const float4*>(&As[k][ty * TM + i]);
                a_frag[i] = v.x; a_frag[i + 1] = v.y; a_frag[i + 2] = v.z; a_frag[i + 3] = v.w;
            }
#pragma unroll
            for (int g = 0; g < V4_NG; ++g) {
                float4 v = *reinterpret_cast<const float4*>(&Bs[k][g * 4 * RG_CS + tx * 4]);
                b_frag[4 * g] = v.x; b_frag[4 * g + 1] = v.y; b_frag[4 * g + 2] = v.z; b_frag[4 * g + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] += a_frag[i] * b_frag[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        int row = m0 + ty * TM + i;
        if (row >= M) break;
        float* c_row = C + (size_t)row * N;
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
            int col = n0 + tx * TN + j;
            if (vec && col < N) {  // N % 4 == 0: the whole float4 is inside
                *reinterpret_cast<float4*>(c_row + col) =
                    make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q)
                    if (col + q < N) c_row[col + q] = acc[i][j + q];
            }
        }
    }
}
// --8<-- [end:vec4]

// --8<-- [start:warptile]
// Warp tiling. A block of WT_THREADS threads (a 1-D block) computes a WT_BM×WT_BN tile of C;
// its warps tile that as (WT_BM/WT_WM)×(WT_BN/WT_WN) warp tiles of WT_WM×WT_WN; a warp covers
// its tile in WMITER×WT_WNITER steps of a (WT_WM/WMITER)×(WT_WN/WT_WNITER) sub-tile, in which
// each lane owns a contiguous WT_TM×WT_TN block. So each thread holds
// (WMITER*WT_TM)×(WT_WNITER*WT_TN) accumulators, and WMITER is derived:
//   WMITER = WT_WM*WT_WN / (32 * WT_TM*WT_TN * WT_WNITER).
// Why: the shared-memory reads of a warp stay inside its own warp tile, and within one sub-tile
// the lanes read neighbouring float4s (one 128-byte wavefront per load, no bank conflicts);
// every fragment value read from shared memory feeds WNITER*TN (or WMITER*TM) FMAs.
// Pipeline: two shared stages; the next tile's float4 global loads are issued into registers
// before the FMAs on the current stage and stored into the other stage after them: one barrier
// per WT_BK-deep tile. A is stored transposed (k-major, rows padded by WT_APAD floats) so the
// A fragments are float4 reads too.
// Static shared memory: 2*WT_BK*((WT_BM+WT_APAD) + WT_BN)*4 bytes (16,640 at the defaults).
// Defaults, tuned on an H200 (scripts/tune_matmul_cuda.md): 4 warps of 64×64, 8×8 outputs per
// lane as 2×2 blocks of 4×4, BK = 8: ~222 registers, so two 128-thread blocks fit per SM.
// Fast path (uniform): M % WT_BM == 0, N % WT_BN == 0, K % WT_BK == 0 and 16-byte aligned
// pointers: no bounds checks at all. Otherwise the same kernel with guarded loads (float4 where
// K % 4 == 0 resp. N % 4 == 0, scalar otherwise) and guarded stores.
#ifndef WT_BM
#define WT_BM 128       // rows of C per block
#endif
#ifndef WT_BN
#define WT_BN 128       // columns of C per block
#endif
#ifndef WT_BK
#define WT_BK 8         // depth of one shared-memory tile (multiple of 4)
#endif
#ifndef WT_WM
#define WT_WM 64        // rows of C per warp
#endif
#ifndef WT_WN
#define WT_WN 64        // columns of C per warp
#endif
#ifndef WT_WNITER
#define WT_WNITER 2     // sub-tiles of a warp tile along N
#endif
#ifndef WT_TM
#define WT_TM 4         // contiguous rows per lane in a sub-tile (multiple of 4)
#endif
#ifndef WT_TN
#define WT_TN 4         // contiguous columns per lane in a sub-tile (multiple of 4)
#endif
#ifndef WT_THREADS
#define WT_THREADS 128  // = 32 * (WT_BM/WT_WM) * (WT_BN/WT_WN)
#endif
#ifndef WT_MINBLOCKS
#define WT_MINBLOCKS 1  // __launch_bounds__ minimum resident blocks per SM (2 caps registers at 128)
#endif
#ifndef WT_APAD
#define WT_APAD 4       // floats of padding per row of the transposed A tile (multiple of 4)
#endif
#ifndef WT_SK_FIRST
#define WT_SK_FIRST 0   // streamk: 1 runs the stream-K blocks before the whole tiles
#endif

// The warp tiling as a type: its derived sizes, its shape checks, the FMAs on one shared stage
// and the epilogue, shared by warptile and cpasync (each instantiates it from its own macros).
template <int BM_, int BN_, int BK_, int WM_, int WN_, int WNITER_, int TM_, int TN_, int THREADS_, int APAD_>
struct WarpTiling {
    static constexpr int kBM = BM_, kBN = BN_, kBK = BK_, kWM = WM_, kWN = WN_, kWNITER = WNITER_, kTM = TM_, kTN = TN_;
    static constexpr int kTHREADS = THREADS_, kAPAD = APAD_;
    static constexpr int kWMITER = (kWM * kWN) / (32 * kTM * kTN * kWNITER);
    static constexpr int kSUBM = kWM / kWMITER;    // rows of a warp sub-tile
    static constexpr int kSUBN = kWN / kWNITER;    // columns of a warp sub-tile
    static constexpr int kLCOLS = kSUBN / kTN;     // lanes along N in a sub-tile
    static constexpr int kAS = kBM + kAPAD;        // row stride of the transposed A tile
    static constexpr int kACC_M = kWMITER * kTM, kACC_N = kWNITER * kTN;  // accumulators per lane
    static_assert(kTHREADS == 32 * (kBM / kWM) * (kBN / kWN), "one warp per warp tile");
    static_assert(kBM % kWM == 0 && kBN % kWN == 0, "warp tiles divide the block tile");
    static_assert(kWMITER >= 1 && kWM % kWMITER == 0 && kWN % kWNITER == 0, "sub-tiles divide the warp tile");
    static_assert(kWMITER * kWNITER * kTM * kTN * 32 == kWM * kWN, "lanes cover the warp tile");
    static_assert((kSUBM / kTM) * (kSUBN / kTN) == 32, "32 lanes per sub-tile");
    static_assert(kTM % 4 == 0 && kTN % 4 == 0 && kBK % 4 == 0 && kAPAD % 4 == 0, "float4 granularity");
    typedef float AStage[kBK][kAS];  // one shared stage of A, transposed (k-major), rows padded
    typedef float BStage[kBK][kBN];  // one shared stage of B
    typedef float Acc[kACC_M][kACC_N];

    // Where thread `tid` works: its warp's tile inside the block tile, its block inside a sub-tile.
    int wm0, wn0, lr, lc;
    __device__ __forceinline__ explicit WarpTiling(int tid) {
        const int warp = tid / 32, lane = tid % 32;
        wm0 = (warp / (kBN / kWN)) * kWM;
        wn0 = (warp % (kBN / kWN)) * kWN;
        lr = (lane / kLCOLS) * kTM;
        lc = (lane % kLCOLS) * kTN;
    }

    static __device__ __forceinline__ void zero(Acc& acc) {
#pragma unroll
        for (int i = 0; i < kACC_M; ++i)
#pragma unroll
            for (int j = 0; j < kACC_N; ++j)
                acc[i][j] = 0.0f;
    }

    // ITER groups of PER consecutive floats of one shared row, SUB apart from `off`: float4 reads.
    template <int ITER, int PER, int SUB>
    static __device__ __forceinline__ void fragment(const float* row, int off, float (&f)[ITER * PER]) {
#pragma unroll
        for (int it = 0; it < ITER; ++it)
#pragma unroll
            for (int i = 0; i < PER; i += 4) {
                float4 v = *reinterpret_cast<const float4*>(row + off + it * SUB + i);
                float* d = &f[it * PER + i];
                d[0] = v.x; d[1] = v.y; d[2] = v.z; d[3] = v.w;
            }
    }

    // The FMAs of one stage: per k, this lane's fragments (float4 reads inside its warp tile),
    // then their outer product into the accumulators.
    __device__ __forceinline__ void mma(const AStage& as, const BStage& bs, Acc& acc) const {
#pragma unroll
        for (int k = 0; k < kBK; ++k) {
            float a_frag[kACC_M], b_frag[kACC_N];
            fragment<kWMITER, kTM, kSUBM>(as[k], wm0 + lr, a_frag);
            fragment<kWNITER, kTN, kSUBN>(bs[k], wn0 + lc, b_frag);
#pragma unroll
            for (int i = 0; i < kACC_M; ++i)
#pragma unroll
                for (int j = 0; j < kACC_N; ++j)
                    acc[i][j] += a_frag[i] * b_frag[j];
        }
    }

    // Epilogue: float4 stores of each lane's contiguous kTN columns of the block tile at (m0, n0)
    // (`vec`: N % 4 == 0 and C 16-byte aligned); with GUARD, rows and columns past C are skipped.
    template <bool GUARD>
    __device__ __forceinline__ void store(float* __restrict__ C, int M, int N, int m0, int n0, bool vec,
                                          const Acc& acc) const {
#pragma unroll
        for (int mi = 0; mi < kWMITER; ++mi)
#pragma unroll
            for (int i = 0; i < kTM; ++i) {
                const int row = m0 + wm0 + mi * kSUBM + lr + i;
                if (GUARD && row >= M) continue;
                float* c_row = C + (size_t)row * N;
#pragma unroll
                for (int ni = 0; ni < kWNITER; ++ni)
#pragma unroll
                    for (int j = 0; j < kTN; j += 4) {
                        const int col = n0 + wn0 + ni * kSUBN + lc + j;
                        const float* a = &acc[mi * kTM + i][ni * kTN + j];
                        if (!GUARD || (vec && col < N)) {
                            *reinterpret_cast<float4*>(c_row + col) = make_float4(a[0], a[1], a[2], a[3]);
                        } else {
#pragma unroll
                            for (int q = 0; q < 4; ++q)
                                if (col + q < N) c_row[col + q] = a[q];
                        }
                    }
            }
    }
};

typedef WarpTiling<WT_BM, WT_BN, WT_BK, WT_WM, WT_WN, WT_WNITER, WT_TM, WT_TN, WT_THREADS, WT_APAD> WtTiling;
#define WT_A_LOADS ((WT_BM * WT_BK / 4) / WT_THREADS)  // float4s of A per thread per tile
#define WT_B_LOADS ((WT_BK * WT_BN / 4) / WT_THREADS)
static_assert((WT_BM * WT_BK / 4) % WT_THREADS == 0 && (WT_BK * WT_BN / 4) % WT_THREADS == 0,
              "each thread loads the same number of float4s");

typedef WtTiling::AStage WtAStage;
typedef WtTiling::BStage WtBStage;

// Global -> registers: this thread's float4s of the tile at depth k0 (zeros past the edges when GUARD).
template <bool GUARD>
__device__ __forceinline__ void wt_load(const float* __restrict__ A, const float* __restrict__ B,
                                        int M, int N, int K, int m0, int n0, int k0, int tid,
                                        bool vecA, bool vecB, float4 (&ra)[WT_A_LOADS], float4 (&rb)[WT_B_LOADS]) {
#pragma unroll
    for (int l = 0; l < WT_A_LOADS; ++l) {  // consecutive threads: consecutive float4s along a row of A
        int e = tid + l * WT_THREADS;
        int r = e / (WT_BK / 4), kq = (e % (WT_BK / 4)) * 4;
        // 32-bit offsets on the fast path (every row in range, M*K < 2^31): 64-bit address
        // arithmetic costs the registers that decide between 1 and 2 blocks per SM.
        const float* p = GUARD ? A + (size_t)(m0 + r) * K : A + (m0 + r) * K;
        ra[l] = GUARD ? load4_guarded(p, m0 + r < M, k0 + kq, K, vecA)
                      : *reinterpret_cast<const float4*>(p + k0 + kq);
    }
#pragma unroll
    for (int l = 0; l < WT_B_LOADS; ++l) {  // consecutive threads: consecutive float4s along a row of B
        int e = tid + l * WT_THREADS;
        int kk = e / (WT_BN / 4), c = (e % (WT_BN / 4)) * 4;
        const float* p = GUARD ? B + (size_t)(k0 + kk) * N : B + (k0 + kk) * N;
        rb[l] = GUARD ? load4_guarded(p, k0 + kk < K, n0 + c, N, vecB)
                      : *reinterpret_cast<const float4*>(p + n0 + c);
    }
}

// Registers -> one shared stage (A transposed with scalar stores, B with float4 stores).
__device__ __forceinline__ void wt_store(WtAStage& As, WtBStage& Bs, int tid,
                                         const float4 (&ra)[WT_A_LOADS], const float4 (&rb)[WT_B_LOADS]) {
#pragma unroll
    for (int l = 0; l < WT_A_LOADS; ++l) {
        int e = tid + l * WT_THREADS;
        int r = e / (WT_BK / 4), kq = (e % (WT_BK / 4)) * 4;
        As[kq + 0][r] = ra[l].x;
        As[kq + 1][r] = ra[l].y;
        As[kq + 2][r] = ra[l].z;
        As[kq + 3][r] = ra[l].w;
    }
#pragma unroll
    for (int l = 0; l < WT_B_LOADS; ++l) {
        int e = tid + l * WT_THREADS;
        int kk = e / (WT_BN / 4), c = (e % (WT_BN / 4)) * 4;
        *reinterpret_cast<float4*>(&Bs[kk][c]) = rb[l];
    }
}

// acc += the product of the block tile at (m0, n0) over k-tiles [kt_lo, kt_hi) of depth WT_BK:
// two shared stages, the next tile in flight in registers while the FMAs run on this one. It
// ends with a barrier, so the stages are free again when it returns.
template <bool GUARD>
__device__ __forceinline__ void wt_tiles(const float* __restrict__ A, const float* __restrict__ B,
                                         int M, int N, int K, int m0, int n0, int kt_lo, int kt_hi,
                                         const WtTiling& w, WtAStage* As, WtBStage* Bs, WtTiling::Acc& acc) {
    const int tid = threadIdx.x;
    const bool vecA = (K % 4 == 0) && aligned16(A);
    const bool vecB = (N % 4 == 0) && aligned16(B);

    float4 ra[WT_A_LOADS], rb[WT_B_LOADS];
    wt_load<GUARD>(A, B, M, N, K, m0, n0, kt_lo * WT_BK, tid, vecA, vecB, ra, rb);
    wt_store(As[0], Bs[0], tid, ra, rb);
    __syncthreads();

    int stage = 0;
    for (int t = kt_lo; t < kt_hi; ++t) {
        const bool more = t + 1 < kt_hi;
        if (more)  // the next tile's loads are in flight while we compute on this one
            wt_load<GUARD>(A, B, M, N, K, m0, n0, (t + 1) * WT_BK, tid, vecA, vecB, ra, rb);
        w.mma(As[stage], Bs[stage], acc);
        if (more)  // the other stage was last read before the previous barrier: safe to fill
            wt_store(As[stage ^ 1], Bs[stage ^ 1], tid, ra, rb);
        __syncthreads();
        stage ^= 1;
    }
}

template <bool GUARD>
__device__ __forceinline__ void wt_body(const float* __restrict__ A, const float* __restrict__ B,
                                        float* __restrict__ C, int M, int N, int K,
                                        WtAStage* As, WtBStage* Bs, int m0, int n0) {
    const WtTiling w(threadIdx.x);
    WtTiling::Acc acc;
    WtTiling::zero(acc);
    wt_tiles<GUARD>(A, B, M, N, K, m0, n0, 0, CEIL_DIV(K, WT_BK), w, As, Bs, acc);
    w.store<GUARD>(C, M, N, m0, n0, (N % 4 == 0) && aligned16(B) && aligned16(C), acc);
}

extern "C" __global__ void __launch_bounds__(WT_THREADS, WT_MINBLOCKS)
matmul_warptile(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                int M, int N, int K) {
    __shared__ __align__(16) float As[2][WT_BK][WtTiling::kAS];
    __shared__ __align__(16) float Bs[2][WT_BK][WT_BN];
    const bool fast = (M % WT_BM == 0) && (N % WT_BN == 0) && (K % WT_BK == 0) &&
                      aligned16(A) && aligned16(B) && aligned16(C);
    const int m0 = blockIdx.y * WT_BM, n0 = blockIdx.x * WT_BN;
    if (fast)
        wt_body<false>(A, B, C, M, N, K, As, Bs, m0, n0);
    else
        wt_body<true>(A, B, C, M, N, K, As, Bs, m0, n0);
}
// --8<-- [end:warptile]

// --8<-- [start:streamk]
// warptile + stream-K (Osama et al., PPoPP 2023) for the last, part-empty wave. With S block
// slots on the GPU (SMs × resident blocks), T tiles of C take ceil(T/S) waves of one tile's time
// each: at N = 8192, 4096 tiles on 264 slots are 15.5 waves of work in 16 waves of time. Here the
// first `dp_tiles` blocks of warptile's grid each compute one whole tile with warptile's code
// (the full waves), and the next `sk_blocks` blocks share the remaining tiles' k-tiles evenly: block b
// takes the units [U*b/S', U*(b+1)/S') of the U = (T - dp_tiles)*KT units (one unit: one tile
// of C over one WT_BK-deep k-tile), so the last wave costs U/S' units, not one whole tile.
// A tile that one block computes whole is stored as warptile stores it. A part of a tile (a
// segment) is saved to the block's slot of `partials` (slot 0 for the block's first segment,
// 1 for its last: the segments between are whole tiles), then the block counts itself in
// `arrivals[tile]`; the block that arrives last sums the tile's segments in k order (so the
// result does not depend on which block finished last), stores C and sets the count back to 0
// for the next launch. Nothing waits on another block: no assumption about which blocks are
// resident together.
#define WT_ACC_VEC4 (WtTiling::kACC_M * WtTiling::kACC_N / 4)  // float4s of accumulators per thread

// The first unit of stream-K block b: floor(units * b / blocks).
__device__ __forceinline__ long long sk_start(long long units, int b, int blocks) {
    return units * b / blocks;
}

// The stream-K block whose units contain unit v: the largest b with sk_start(b) <= v.
__device__ __forceinline__ int sk_block_of(long long units, long long v, int blocks) {
    return (int)(((v + 1) * blocks - 1) / units);
}

// A segment's accumulators to / from a slot of `partials`: float4 i of thread tid at
// i*THREADS + tid, so each warp's accesses are 512 contiguous bytes.
__device__ __forceinline__ void sk_save(float* __restrict__ slot, const WtTiling::Acc& acc) {
    const float* a = &acc[0][0];
    float4* s = reinterpret_cast<float4*>(slot);
#pragma unroll
    for (int i = 0; i < WT_ACC_VEC4; ++i)
        s[i * WT_THREADS + threadIdx.x] = make_float4(a[4 * i], a[4 * i + 1], a[4 * i + 2], a[4 * i + 3]);
}

template <bool ADD>
__device__ __forceinline__ void sk_load(const float* __restrict__ slot, WtTiling::Acc& acc) {
    float* a = &acc[0][0];
    const float4* s = reinterpret_cast<const float4*>(slot);
#pragma unroll
    for (int i = 0; i < WT_ACC_VEC4; ++i) {
        const float4 v = __ldcg(s + i * WT_THREADS + threadIdx.x);  // from L2: other blocks wrote it
        a[4 * i] = ADD ? a[4 * i] + v.x : v.x;
        a[4 * i + 1] = ADD ? a[4 * i + 1] + v.y : v.y;
        a[4 * i + 2] = ADD ? a[4 * i + 2] + v.z : v.z;
        a[4 * i + 3] = ADD ? a[4 * i + 3] + v.w : v.w;
    }
}

// The stream-K blocks' work: block b's equal run of units, segment by segment. A function of its
// own (not inlined), so that its bookkeeping and its sums of segments do not change the
// registers and the schedule of the whole-tile blocks, which run warptile's code.
template <bool GUARD>
__device__ __noinline__ void sk_blocks_work(const float* __restrict__ A, const float* __restrict__ B,
                                            float* __restrict__ C, int M, int N, int K,
                                            float* __restrict__ partials, int* __restrict__ arrivals,
                                            int dp_tiles, int sk_blocks, int b, WtAStage* As, WtBStage* Bs,
                                            int* arrived) {
    __builtin_assume(__isShared(As) && __isShared(Bs) && __isShared(arrived));
    const WtTiling w(threadIdx.x);
    const bool vecC = (N % 4 == 0) && aligned16(B) && aligned16(C);
    const int tiles_n = CEIL_DIV(N, WT_BN), kt = CEIL_DIV(K, WT_BK);
    const long long units = (long long)(CEIL_DIV(M, WT_BM) * tiles_n - dp_tiles) * kt;
    const long long first = sk_start(units, b, sk_blocks), end = sk_start(units, b + 1, sk_blocks);
    WtTiling::Acc acc;
    for (long long u = first; u < end;) {
        const int t = (int)(u / kt);  // the stream-K tile (tile dp_tiles + t of C)
        const int lo = (int)(u - (long long)t * kt);
        const int hi = (int)min((long long)kt, end - (long long)t * kt);
        const int m0 = ((dp_tiles + t) / tiles_n) * WT_BM, n0 = ((dp_tiles + t) % tiles_n) * WT_BN;
        WtTiling::zero(acc);
        wt_tiles<GUARD>(A, B, M, N, K, m0, n0, lo, hi, w, As, Bs, acc);
        const int b_first = sk_block_of(units, (long long)t * kt, sk_blocks);
        const int b_last = sk_block_of(units, (long long)t * kt + kt - 1, sk_blocks);
        if (b_first == b_last) {  // the whole tile is this block's
            w.store<GUARD>(C, M, N, m0, n0, vecC, acc);
        } else {
            const size_t tile_floats = (size_t)WT_BM * WT_BN;
            sk_save(partials + (2 * (size_t)b + (u == first ? 0 : 1)) * tile_floats, acc);
            __threadfence();  // the segment is visible to every block before it is counted
            __syncthreads();
            if (threadIdx.x == 0) *arrived = atomicAdd(&arrivals[t], 1);
            __syncthreads();
            if (*arrived == b_last - b_first) {  // the others are in: sum the segments in k order
                __threadfence();
                for (int bb = b_first; bb <= b_last; ++bb) {
                    const int slot = 2 * bb + (sk_start(units, bb, sk_blocks) / kt == t ? 0 : 1);
                    if (bb == b_first)
                        sk_load<false>(partials + slot * tile_floats, acc);
                    else
                        sk_load<true>(partials + slot * tile_floats, acc);
                }
                w.store<GUARD>(C, M, N, m0, n0, vecC, acc);
                if (threadIdx.x == 0) arrivals[t] = 0;  // ready for the next launch
            }
        }
        u = (long long)t * kt + hi;
    }
}

extern "C" __global__ void __launch_bounds__(WT_THREADS, WT_MINBLOCKS)
matmul_streamk(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
               int M, int N, int K, float* __restrict__ partials, int* __restrict__ arrivals,
               int dp_tiles, int sk_blocks) {
    __shared__ __align__(16) float As[2][WT_BK][WtTiling::kAS];
    __shared__ __align__(16) float Bs[2][WT_BK][WT_BN];
    __shared__ int arrived;  // a stream-K block's: what its atomicAdd on arrivals[] returned
    const bool fast = (M % WT_BM == 0) && (N % WT_BN == 0) && (K % WT_BK == 0) &&
                      aligned16(A) && aligned16(B) && aligned16(C);
    const int id = blockIdx.y * gridDim.x + blockIdx.x;
#if WT_SK_FIRST
    // the stream-K blocks first, in the grid's first ceil(sk_blocks / tiles_n) rows; then the
    // whole tiles, each at its place in warptile's grid shifted down by those rows
    const int sk_rows = CEIL_DIV(sk_blocks, (int)gridDim.x);
    const int sk = (int)blockIdx.y < sk_rows ? id : -1;
    const int m0 = ((int)blockIdx.y - sk_rows) * WT_BM, n0 = blockIdx.x * WT_BN;
    if (sk >= sk_blocks || (sk < 0 && ((int)blockIdx.y - sk_rows) * (int)gridDim.x + (int)blockIdx.x >= dp_tiles))
        return;  // a block past the stream-K blocks' or the whole tiles' last
#else
    // the whole tiles first, at their places in warptile's grid, then the stream-K blocks
    if (id >= dp_tiles + sk_blocks) return;  // past the last stream-K block (the grid's last row)
    const int sk = id >= dp_tiles ? id - dp_tiles : -1;
    const int m0 = blockIdx.y * WT_BM, n0 = blockIdx.x * WT_BN;
#endif
    if (sk >= 0) {
        if (fast)
            sk_blocks_work<false>(A, B, C, M, N, K, partials, arrivals, dp_tiles, sk_blocks, sk, As, Bs, &arrived);
        else
            sk_blocks_work<true>(A, B, C, M, N, K, partials, arrivals, dp_tiles, sk_blocks, sk, As, Bs, &arrived);
    } else if (fast) {  // a whole tile, with warptile's code
        wt_body<false>(A, B, C, M, N, K, As, Bs, m0, n0);
    } else {
        wt_body<true>(A, B, C, M, N, K, As, Bs, m0, n0);
    }
}
// --8<-- [end:streamk]

// --8<-- [start:cpasync]
// warptile + an asynchronous shared-memory pipeline + block rasterization. The compute (warp
// tiles, lane blocks, float4 fragment reads: WarpTiling) is warptile's; what changes is how tiles reach
// shared memory, and in which order the blocks walk C:
// * cp.async (sm_80+): global -> shared copies that bypass registers. warptile stages the next
//   tile in registers (16 of them per thread) and stores it after the FMAs; here the copies are
//   issued CA_STAGES-1 tiles ahead into a ring of CA_STAGES shared stages, and the thread only
//   waits (cp.async.wait_group) for the tile it is about to read. B is copied 16 bytes at a time
//   (cp.async.cg, L2 only); A, stored transposed (k-major) like warptile's, 4 bytes at a time
//   (cp.async.ca): a 16-byte copy cannot transpose. Edges need no branches around the copies:
//   the src-size operand zero-fills what lies outside A or B (src-size 0 reads nothing; the
//   address passed is then the matrix's first element, always valid).
// * Rasterization: consecutive block ids walk C in groups of CA_GROUP block rows, column by
//   column inside a group, so the blocks resident at one time share rows of A and columns of B
//   in L2 (CA_GROUP 0: blockIdx order, one whole row of blocks after another).
// Pipeline, per tile t (one barrier per tile):
//   wait_group(STAGES-2)  -> this thread's copies of tile t have landed
//   __syncthreads()       -> everyone's copies of t are visible, AND everyone has finished
//                            reading stage (t-1) % STAGES, the stage the next line refills
//   issue tile t+STAGES-1 into stage (t+STAGES-1) % STAGES = (t-1) % STAGES; commit_group
//   FMAs on stage t % STAGES
// A group is committed every iteration, even an empty one past the last tile, so "at most
// STAGES-2 groups pending" always means "tiles 0..t have landed".
// cp.async exists from sm_80 on: for older GPUs this kernel is left out of the module (so the
// rest of the file still compiles there), and the host refuses it first (MatmulPolicy.min_cc).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#ifndef CA_BM
#define CA_BM 128       // rows of C per block
#endif
#ifndef CA_BN
#define CA_BN 128       // columns of C per block
#endif
#ifndef CA_BK
#define CA_BK 8         // depth of one shared-memory stage (multiple of 4)
#endif
#ifndef CA_WM
#define CA_WM 64        // rows of C per warp
#endif
#ifndef CA_WN
#define CA_WN 64        // columns of C per warp
#endif
#ifndef CA_WNITER
#define CA_WNITER 2     // sub-tiles of a warp tile along N
#endif
#ifndef CA_TM
#define CA_TM 4         // contiguous rows per lane in a sub-tile (multiple of 4)
#endif
#ifndef CA_TN
#define CA_TN 4         // contiguous columns per lane in a sub-tile (multiple of 4)
#endif
#ifndef CA_THREADS
#define CA_THREADS 128  // = 32 * (CA_BM/CA_WM) * (CA_BN/CA_WN)
#endif
#ifndef CA_MINBLOCKS
#define CA_MINBLOCKS 1  // __launch_bounds__ minimum resident blocks per SM
#endif
#ifndef CA_APAD
#define CA_APAD 4       // floats of padding per row of the transposed A tile (multiple of 4)
#endif
#ifndef CA_STAGES
#define CA_STAGES 3     // shared stages in the ring (2: double buffering)
#endif
#ifndef CA_GROUP
#define CA_GROUP 8      // block rows per rasterization group (0: no rasterization)
#endif

typedef WarpTiling<CA_BM, CA_BN, CA_BK, CA_WM, CA_WN, CA_WNITER, CA_TM, CA_TN, CA_THREADS, CA_APAD> CaTiling;
#define CA_A_COPIES ((CA_BM * CA_BK) / CA_THREADS)      // 4-byte copies of A per thread per tile
#define CA_B_COPIES ((CA_BK * CA_BN / 4) / CA_THREADS)  // 16-byte copies of B per thread per tile
static_assert((CA_BM * CA_BK) % CA_THREADS == 0 && (CA_BK * CA_BN / 4) % CA_THREADS == 0,
              "each thread copies the same number of elements");
static_assert(CA_STAGES >= 2, "a pipeline needs at least two stages");
static_assert(CA_GROUP >= 0, "CA_GROUP: block rows per group, or 0");
static_assert(CA_STAGES * (sizeof(CaTiling::AStage) + sizeof(CaTiling::BStage)) <= 48 * 1024,
              "static shared memory is limited to 48 KiB: fewer stages, a smaller CA_BK or tile");
typedef CaTiling::AStage CaAStage;
typedef CaTiling::BStage CaBStage;

// The cp.async instructions (PTX ISA 7.0, sm_80+). `src_bytes` < size zero-fills the rest.
__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async4(void* dst, const float* src, unsigned src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n"
                 :: "r"(smem_addr(dst)), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async16(void* dst, const float* src, unsigned src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(smem_addr(dst)), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {  // at most N of this thread's groups pending
    asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
}

// Issue this thread's copies of the tile at depth k0 into one stage (zeros past the edges when GUARD).
template <bool GUARD>
__device__ __forceinline__ void ca_issue(const float* __restrict__ A, const float* __restrict__ B,
                                         int M, int N, int K, int m0, int n0, int k0, int tid, bool vecB,
                                         CaAStage& As, CaBStage& Bs) {
#pragma unroll
    for (int l = 0; l < CA_A_COPIES; ++l) {  // consecutive threads: consecutive k of one row of A
        // Lanes cover 32/CA_BK rows × CA_BK k: with CaTiling::kAS % 32 == 4 and CA_BK = 8 the transposed
        // stores As[kk][r] of a warp land in 32 different banks.
        int e = tid + l * CA_THREADS;
        int r = e / CA_BK, kk = e % CA_BK;
        if (GUARD) {
            bool ok = m0 + r < M && k0 + kk < K;
            cp_async4(&As[kk][r], ok ? A + (size_t)(m0 + r) * K + k0 + kk : A, ok ? 4u : 0u);
        } else {  // 32-bit offsets on the fast path, as in warptile (M*K < 2^31)
            cp_async4(&As[kk][r], A + (m0 + r) * K + k0 + kk, 4u);
        }
    }
#pragma unroll
    for (int l = 0; l < CA_B_COPIES; ++l) {  // consecutive threads: consecutive 16 bytes of a row of B
        int e = tid + l * CA_THREADS;
        int kk = e / (CA_BN / 4), c = (e % (CA_BN / 4)) * 4;
        float* dst = &Bs[kk][c];
        if (!GUARD) {
            cp_async16(dst, B + (k0 + kk) * N + n0 + c, 16u);
        } else if (vecB) {  // N % 4 == 0 and B 16-byte aligned: the 4 columns are all in or all out
            bool ok = k0 + kk < K && n0 + c < N;
            cp_async16(dst, ok ? B + (size_t)(k0 + kk) * N + n0 + c : B, ok ? 16u : 0u);
        } else {  // rows of B not 16-byte aligned: four 4-byte copies, each guarded
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                bool ok = k0 + kk < K && n0 + c + q < N;
                cp_async4(dst + q, ok ? B + (size_t)(k0 + kk) * N + n0 + c + q : B, ok ? 4u : 0u);
            }
        }
    }
}

template <bool GUARD>
__device__ __forceinline__ void ca_body(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                        int M, int N, int K, CaAStage* As, CaBStage* Bs) {
    const int tid = threadIdx.x;
    const CaTiling w(tid);

    // Rasterization: block id -> (block row, block column) of C, CA_GROUP block rows at a time.
    int bm = blockIdx.y, bn = blockIdx.x;
    if (CA_GROUP > 0) {
        const int rows = gridDim.y, cols = gridDim.x;
        const int id = blockIdx.y * cols + blockIdx.x;
        const int per_group = CA_GROUP * cols;
        const int first = (id / per_group) * CA_GROUP;                     // first block row of the group
        const int height = rows - first < CA_GROUP ? rows - first : CA_GROUP;  // the last group may be short
        const int in_group = id % per_group;
        bm = first + in_group % height;
        bn = in_group / height;
    }
    const int m0 = bm * CA_BM;
    const int n0 = bn * CA_BN;
    const bool vecB = (N % 4 == 0) && aligned16(B);

    CaTiling::Acc acc;
    CaTiling::zero(acc);

    const int tiles = CEIL_DIV(K, CA_BK);
    // Prologue: tiles 0 .. STAGES-2 in flight, one group each (empty groups past the last tile).
#pragma unroll
    for (int s = 0; s < CA_STAGES - 1; ++s) {
        if (s < tiles)
            ca_issue<GUARD>(A, B, M, N, K, m0, n0, s * CA_BK, tid, vecB, As[s], Bs[s]);
        cp_async_commit();
    }

    int read = 0, write = CA_STAGES - 1;  // stage of tile t, stage of tile t + STAGES - 1
    for (int t = 0; t < tiles; ++t) {
        cp_async_wait<CA_STAGES - 2>();  // this thread's copies of tile t have landed ...
        __syncthreads();                 // ... everyone's have, and stage `write` is no longer read
        if (t + CA_STAGES - 1 < tiles)
            ca_issue<GUARD>(A, B, M, N, K, m0, n0, (t + CA_STAGES - 1) * CA_BK, tid, vecB, As[write], Bs[write]);
        cp_async_commit();
        w.mma(As[read], Bs[read], acc);
        read = read + 1 == CA_STAGES ? 0 : read + 1;
        write = write + 1 == CA_STAGES ? 0 : write + 1;
    }
    // Only empty groups can still be pending here: every issued tile was waited for above.

    w.store<GUARD>(C, M, N, m0, n0, vecB && aligned16(C), acc);
}

extern "C" __global__ void __launch_bounds__(CA_THREADS, CA_MINBLOCKS)
matmul_cpasync(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
               int M, int N, int K) {
    __shared__ __align__(16) float As[CA_STAGES][CA_BK][CaTiling::kAS];
    __shared__ __align__(16) float Bs[CA_STAGES][CA_BK][CA_BN];
    // A is copied 4 bytes at a time: only B and C need 16-byte alignment on the fast path.
    const bool fast = (M % CA_BM == 0) && (N % CA_BN == 0) && (K % CA_BK == 0) && aligned16(B) && aligned16(C);
    if (fast)
        ca_body<false>(A, B, C, M, N, K, As, Bs);
    else
        ca_body<true>(A, B, C, M, N, K, As, Bs);
}
#endif  // sm_80+
// --8<-- [end:cpasync]
