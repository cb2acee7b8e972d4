// Chapter 5 kernels in CUDA C: the Awerbuch-Israeli-Shiloach pipeline for Euler circuits.
// The same kernels as kernels_numba.py, line for line, launched by the same host code
// (gpulab/euler/host.py). Every array is int (int32); NONE = -1 marks "not set".
// Compile-time sizes come in as -D macros from the variant registry.

#ifndef BLOCK
#define BLOCK 256        // threads per block of the element-wise kernels (a multiple of 32)
#endif
#ifndef TILE
#define TILE 1024        // edges per block of the shared-memory contraction (a power of two)
#endif

#define NONE (-1)
#define INT32_MAX_ 2147483647
#define FULL 0xFFFFFFFFu

typedef unsigned int u32;
typedef unsigned char u8;
typedef long long i64;
typedef unsigned long long u64;

// grid-stride loop over [0, n): 64-bit index, so i + stride cannot overflow near n = 2^31
#define GRID_LOOP(i, n) for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < (i64)(n); \
                             i += (i64)gridDim.x * blockDim.x)

// ---------------------------------------------------------------------------- device helpers

// --8<-- [start:append]
__device__ __forceinline__ int warp_append(bool pred, int *counter, int idx) {
    u32 mask = __ballot_sync(FULL, pred);
    if (mask == 0) return NONE;
    int lane = threadIdx.x & 31;
    int leader = __popc(mask ^ (mask - 1u)) - 1;   // the lowest lane that appends
    int base = 0;
    if (lane == leader) base = atomicAdd(&counter[idx], __popc(mask));
    base = __shfl_sync(FULL, base, leader);
    if (!pred) return NONE;
    return base + __popc(mask & ((1u << lane) - 1u));
}
// --8<-- [end:append]

// --8<-- [start:mix32]
__device__ __forceinline__ u32 mix32(u32 x) {      // lowbias32, as generators.mix32
    x ^= x >> 16;
    x *= 0x7FEB352Du;
    x ^= x >> 15;
    x *= 0x846CA68Bu;
    return x ^ (x >> 16);
}
// --8<-- [end:mix32]

__device__ __forceinline__ int feistel(u32 x, u32 n, u32 half, u32 mask, u32 k0, u32 k1, u32 k2, u32 k3) {
    u32 y = x;
    while (true) {
        u32 left = y >> half, right = y & mask, t;
        t = left ^ (mix32(right ^ k0) & mask); left = right; right = t;
        t = left ^ (mix32(right ^ k1) & mask); left = right; right = t;
        t = left ^ (mix32(right ^ k2) & mask); left = right; right = t;
        t = left ^ (mix32(right ^ k3) & mask); left = right; right = t;
        y = (left << half) | right;
        if (y < n) return (int)y;
    }
}

__device__ __forceinline__ int lower_bound(const int *a, int n, int v) {
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (int)(((unsigned)lo + (unsigned)hi) / 2);
        if (a[(u32)mid] < v) lo = mid + 1; else hi = mid;
    }
    return lo;
}

// --8<-- [start:pack]
// Two int32 in one 8-byte word: a pointer-jumping element (value, next) read by one gather.
__device__ __forceinline__ u64 pack(int hi, int lo) { return ((u64)(u32)hi << 32) | (u64)(u32)lo; }
__device__ __forceinline__ int hi32(u64 w) { return (int)(u32)(w >> 32); }
__device__ __forceinline__ int lo32(u64 w) { return (int)(u32)w; }
// --8<-- [end:pack]

// --8<-- [start:preset]
// Counters reset on the device, in stream order (a copy from pageable host memory would first
// wait for every kernel queued before it).
extern "C" __global__ void preset_i32(int *a, int i0, int v0, int v1, int v2, int v3) {
    if (blockIdx.x * blockDim.x + threadIdx.x == 0) {
        a[i0] = v0; a[i0 + 1] = v1; a[i0 + 2] = v2; a[i0 + 3] = v3;
    }
}

extern "C" __global__ void preset_i64(i64 *a, i64 v0, i64 v1, i64 v2, i64 v3) {
    if (blockIdx.x * blockDim.x + threadIdx.x == 0) {
        a[0] = v0; a[1] = v1; a[2] = v2; a[3] = v3;
    }
}
// --8<-- [end:preset]

// ---------------------------------------------------------------------------- step 1: input and pairing

// --8<-- [start:to_i32]
template <typename T>
__device__ void to_i32_body(const T *a, int n, int *b, i64 *stats, int write, int slot) {
    __shared__ i64 s_min[BLOCK];
    __shared__ i64 s_max[BLOCK];
    int tid = threadIdx.x;
    i64 lo = 0x7FFFFFFFFFFFFFFFLL, hi = -0x7FFFFFFFFFFFFFFFLL;
    GRID_LOOP(i, n) {
        i64 v = (i64)a[i];
        lo = min(lo, v);
        hi = max(hi, v);
        if (write) b[i] = (int)v;
    }
    s_min[tid] = lo;
    s_max[tid] = hi;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half /= 2) {
        if (tid < half) {
            s_min[tid] = min(s_min[tid], s_min[tid + half]);
            s_max[tid] = max(s_max[tid], s_max[tid + half]);
        }
        __syncthreads();
    }
    if (tid == 0) {
        atomicMin(&stats[2 * slot], s_min[0]);
        atomicMax(&stats[2 * slot + 1], s_max[0]);
    }
}
extern "C" __global__ void to_i32_i32(const int *a, int n, int *b, i64 *stats, int write, int slot) {
    to_i32_body(a, n, b, stats, write, slot);
}
extern "C" __global__ void to_i32_i64(const i64 *a, int n, int *b, i64 *stats, int write, int slot) {
    to_i32_body(a, n, b, stats, write, slot);
}
// --8<-- [end:to_i32]

// --8<-- [start:small_sort]
extern "C" __global__ void small_sort(const int *keys, int n, int *out_keys, int *out_perm) {
    GRID_LOOP(i, n) {
        int k = keys[i], r = 0;
        for (int j = 0; j < n; j++) {
            int kj = keys[(u32)j];
            if (kj < k || (kj == k && j < i)) r++;
        }
        out_keys[r] = k;
        out_perm[r] = (int)i;
    }
}
// --8<-- [end:small_sort]

extern "C" __global__ void mismatch(const int *a, const int *b, int n, int *out) {
    GRID_LOOP(i, n) {
        if (a[i] != b[i]) {
            atomicAdd(&out[0], 1);
            atomicMin(&out[1], (int)i);
        }
    }
}

// --8<-- [start:pair]
// succ[in_order[i]] = out_order[i] if that successor lands in succ[lo, hi): the host launches
// the scatter once per slice of succ small enough to stay in L2 while the scattered writes fill
// it; the inputs stream past with ld.global.cs (evict first).
__device__ __forceinline__ void scatter_in_slice(const int *in_order, const int *out_order, int *succ, i64 i,
                                                 int lo, int hi) {
    int t = __ldcs(in_order + i);
    if (t >= lo && t < hi) succ[t] = __ldcs(out_order + i);
}

// Step 1's scatter, launched once per slice of succ; the slice at 0 also checks in = out. An
// empty slice (lo = hi = 0: succ comes from a sort, EulerPlan.permute_by_sort) only checks.
extern "C" __global__ void pair(const int *in_order, const int *out_order, const int *ssrc, const int *sdst, int n,
                                int *succ, int *out, int slot, int lo, int hi) {
    GRID_LOOP(i, n) {
        if (hi > lo) scatter_in_slice(in_order, out_order, succ, i, lo, hi);
        if (lo == 0 && __ldcs(ssrc + i) != __ldcs(sdst + i)) {
            atomicAdd(&out[slot], 1);
            atomicMin(&out[slot + 1], (int)i);
        }
    }
}
// --8<-- [end:pair]

extern "C" __global__ void imbalance(const int *ssrc, const int *sdst, int n, int *out) {
    GRID_LOOP(i, 2 * (i64)n) {
        bool first;
        int v;
        if (i < n) {
            v = ssrc[i];
            first = i == 0 || ssrc[i - 1] != v;
        } else {
            i64 j = i - n;
            v = sdst[j];
            first = j == 0 || sdst[j - 1] != v;
            if (first) {
                int k = lower_bound(ssrc, n, v);
                first = k >= n || ssrc[k] != v;
            }
        }
        if (first) {
            int out_deg = lower_bound(ssrc, n, v + 1) - lower_bound(ssrc, n, v);
            int in_deg = lower_bound(sdst, n, v + 1) - lower_bound(sdst, n, v);
            int d = out_deg - in_deg;
            if (d != 0) {
                atomicAdd(&out[0], 1);
                atomicMin(&out[5], v);
                if (d == 1) { atomicAdd(&out[1], 1); atomicMin(&out[2], v); }
                else if (d == -1) { atomicAdd(&out[3], 1); atomicMin(&out[4], v); }
            }
        }
    }
}

extern "C" __global__ void degrees_of(const int *ssrc, const int *sdst, int n, int v, int *out) {
    if (blockIdx.x * blockDim.x + threadIdx.x == 0) {
        out[0] = lower_bound(sdst, n, v + 1) - lower_bound(sdst, n, v);
        out[1] = lower_bound(ssrc, n, v + 1) - lower_bound(ssrc, n, v);
    }
}

extern "C" __global__ void find_first(const int *skeys, const int *order, int n, int v, int *out) {
    if (blockIdx.x * blockDim.x + threadIdx.x == 0) {
        int k = lower_bound(skeys, n, v);
        out[0] = (k < n && skeys[k] == v) ? order[k] : NONE;
    }
}

// ---------------------------------------------------------------------------- undirected graphs

extern "C" __global__ void half_keys(const int *src, const int *dst, int n, int *keys) {
    GRID_LOOP(i, n) {
        keys[2 * i] = src[i];
        keys[2 * i + 1] = dst[i];
    }
}

extern "C" __global__ void odd_vertices(const int *skeys, int m, int *out) {
    GRID_LOOP(i, m) {
        int v = skeys[i];
        if (i == 0 || skeys[i - 1] != v) {
            int deg = lower_bound(skeys, m, v + 1) - (int)i;
            if (deg % 2 == 1) {
                atomicAdd(&out[0], 1);
                atomicMin(&out[1], v);
                atomicMax(&out[2], v);
            }
        }
    }
}

// --8<-- [start:darts]
// Slot j of the sorted half-edges pairs order[2j] and order[2j+1] at one vertex: dart d leaves
// through half-edge d and arrives through d ^ 1, so the dart after h0 ^ 1 is h1 and after h1 ^ 1
// is h0. Only the successors in succ[lo, hi) are written (one launch per slice that stays in L2,
// as in `pair`); the slice at 0 also sets out[slot] = 1 if some slot's two half-edges are at
// different vertices: none is exactly when every vertex has even degree.
extern "C" __global__ void dart_succ(const int *order, const int *skeys, int n, int *succ, int *out, int slot,
                                     int lo, int hi) {
    GRID_LOOP(j, n) {
        int2 h = __ldcs((const int2 *)order + j);
        u32 a = (u32)(h.x ^ 1), b = (u32)(h.y ^ 1);
        if (a >= (u32)lo && a < (u32)hi) succ[a] = h.y;
        if (b >= (u32)lo && b < (u32)hi) succ[b] = h.x;
        if (lo == 0) {
            int2 k = __ldcs((const int2 *)skeys + j);
            if (k.x != k.y) out[slot] = 1;     // any straddling slot (one store, not a count)
        }
    }
}

extern "C" __global__ void orient(const int *label, const int *src, const int *dst, int n,
                                  int *osrc, int *odst, int *fwd, int *elabel) {
    GRID_LOOP(e, n) {
        int a = label[2 * e], b = label[2 * e + 1];
        if (a < b) {
            osrc[e] = src[e]; odst[e] = dst[e]; fwd[e] = 1;
        } else {
            osrc[e] = dst[e]; odst[e] = src[e]; fwd[e] = 0;
        }
        elabel[e] = (a < b ? a : b) >> 1;  // the kept trail's smallest dart, as an edge id
    }
}

// Slot j of the sorted half-edges pairs h0 and h1 at one vertex; of the two ways through it
// (arrive by h0's edge and leave by h1's, or the reverse) the kept trails use exactly one:
// the one whose leaving dart is kept (dart h is kept when fwd[h / 2] says h's direction:
// fwd = 1 for dart 2e, src -> dst). That is the orientation's pairing, slot by slot.
extern "C" __global__ void dart_pairs(const int *order, const int *skeys, const int *fwd, int n,
                                      int *ssrc, int *out_order, int *in_order) {
    GRID_LOOP(j, n) {
        int2 h = ((const int2 *)order)[j];
        bool h1_kept = (fwd[(u32)h.y >> 1] != 0) == ((h.y & 1) == 0);
        ssrc[j] = skeys[2 * j];
        out_order[j] = (h1_kept ? h.y : h.x) >> 1;
        in_order[j] = (h1_kept ? h.x : h.y) >> 1;
    }
}

// succ[in_order[i]] = out_order[i] for the successors in succ[lo, hi) (`pair` without its check).
extern "C" __global__ void scatter_slice(const int *in_order, const int *out_order, int n, int *succ, int lo, int hi) {
    GRID_LOOP(i, n) scatter_in_slice(in_order, out_order, succ, i, lo, hi);
}
// --8<-- [end:darts]

// ---------------------------------------------------------------------------- small element-wise kernels

extern "C" __global__ void fill_i32(int *a, int n, int v) { GRID_LOOP(i, n) a[i] = v; }
extern "C" __global__ void fill_u8(u8 *a, int n, int v) { GRID_LOOP(i, n) a[i] = (u8)v; }
extern "C" __global__ void iota(int *a, int n) { GRID_LOOP(i, n) a[i] = (int)i; }

// ---------------------------------------------------------------------------- step 2: labelling the cycles

// --8<-- [start:propagate]
extern "C" __global__ void propagate_round(const int *succ, int *label, int n, int *changed, int slot) {
    GRID_LOOP(e, n) {
        int lab = label[e];
        u32 s = (u32)succ[e];
        if (lab < label[s]) {
            atomicMin(&label[s], lab);
            changed[slot] = 1;
        }
    }
}
// --8<-- [end:propagate]

extern "C" __global__ void jump_init(const int *succ, int n, u64 *W) {
    GRID_LOOP(e, n) W[e] = pack((int)e, succ[e]);
}

// --8<-- [start:jump]
extern "C" __global__ void jump_round(const u64 *W, u64 *W2, int lo, int hi, int *changed, int slot) {
    for (i64 j = lo + blockIdx.x * (i64)blockDim.x + threadIdx.x; j < hi; j += (i64)gridDim.x * blockDim.x) {
        u64 w = W[j];
        u64 wx = W[(u32)lo32(w)];
        int a = hi32(w), b = hi32(wx);
        if (b < a) {
            a = b;
            changed[slot] = 1;
        }
        W2[j] = pack(a, lo32(wx));
    }
}

extern "C" __global__ void unpack_labels(const u64 *W, int lo, int hi, int *label) {
    for (i64 j = lo + blockIdx.x * (i64)blockDim.x + threadIdx.x; j < hi; j += (i64)gridDim.x * blockDim.x)
        label[j] = hi32(W[j]);
}
// --8<-- [end:jump]

// --8<-- [start:tile_contract]
extern "C" __global__ void tile_contract(const int *succ, int n, int *xit, int *mn, int *label) {
    __shared__ int s_nxt[TILE];
    __shared__ int s_min[TILE];
    __shared__ u8 s_exit[TILE];
    int tid = threadIdx.x;
    i64 base = (i64)blockIdx.x * TILE;
    i64 e = base + tid;
    if (e < n) {
        int s = succ[e];
        bool inside = s >= base && s < base + TILE;
        s_nxt[tid] = inside ? (int)(s - base) : tid;   // an exit points to itself
        s_exit[tid] = inside ? 0 : 1;
        s_min[tid] = (int)e;
    } else {
        s_nxt[tid] = tid;
        s_exit[tid] = 0;
        s_min[tid] = INT32_MAX_;
    }
    __syncthreads();
    for (int w = 1; w < TILE; w *= 2) {     // log2(TILE) rounds
        int x = s_nxt[tid];
        int m = min(s_min[tid], s_min[x]);
        int xx = s_nxt[x];
        __syncthreads();
        s_min[tid] = m;
        s_nxt[tid] = xx;
        __syncthreads();
    }
    if (e < n) {
        int x = s_nxt[tid];
        if (s_exit[x]) {
            xit[e] = (int)(base + x);
            mn[e] = s_min[tid];
        } else {                               // a cycle inside the tile
            xit[e] = NONE;
            label[e] = s_min[tid];
        }
    }
}
// --8<-- [end:tile_contract]

extern "C" __global__ void compact_exits(const int *xit, int n, int *cid, int *exits, int *count) {
    i64 n_round = ((i64)n + 31) / 32 * 32;
    GRID_LOOP(i, n_round) {
        bool pred = i < n && xit[i] == i;
        int slot = warp_append(pred, count, 0);
        if (pred) {
            exits[slot] = (int)i;
            cid[i] = slot;
        }
    }
}

extern "C" __global__ void build_contracted(const int *succ, const int *xit, const int *mn, const int *cid,
                                            const int *exits, int m, u64 *W) {
    GRID_LOOP(j, m) {
        u32 s = (u32)succ[(u32)exits[j]];
        W[j] = pack(mn[s], cid[(u32)xit[s]]);
    }
}

extern "C" __global__ void expand_labels(const int *xit, const int *cid, const u64 *W, int n, int *label) {
    GRID_LOOP(e, n) {
        int x = xit[e];
        if (x != NONE) label[e] = hi32(W[(u32)cid[(u32)x]]);
    }
}

// --8<-- [start:ruling_set]
// Each warp takes segments of 32 * PICK_ITEMS edges (item k of lane l: edge seg + 32k + l, so every
// load and store is coalesced) and appends a segment's splitters with one atomic: one edge in
// SPACING = 128 is a splitter, and an append per 32 edges put about 290,000 atomics on one counter
// at 42M edges. In the first round no edge is owned yet: own is written, never read.
#define PICK_ITEMS 16
#define PICK_W (BLOCK < 32 ? BLOCK : 32)             // lanes of a warp (the simulator's blocks have 8)
extern "C" __global__ void pick_splitters(int *own, int n, u32 thresh, u32 seed, int *splitters, int *count,
                                          int todo_slot, int scale, int first) {
    __shared__ int s_cnt[BLOCK];
    int tid = threadIdx.x, lane = tid % PICK_W;
    int todo = 0;
    const i64 SEG = PICK_W * PICK_ITEMS;
    i64 warps = (i64)gridDim.x * blockDim.x / PICK_W;
    for (i64 seg = ((i64)blockIdx.x * blockDim.x + tid) / PICK_W * SEG; seg < n; seg += warps * SEG) {
        u32 mask = 0;                                // bit k: item k is a new splitter
#pragma unroll
        for (int k = 0; k < PICK_ITEMS; k++) {
            i64 i = seg + PICK_W * k + lane;
            if (i < n && (first || own[i] == NONE)) {
                todo++;
                if (mix32((u32)i ^ seed) <= thresh) mask |= 1u << k;
            }
        }
        int c = __popc(mask), incl = c;              // the warp's inclusive scan of its lanes' counts
        for (int d = 1; d < PICK_W; d <<= 1) {
            int t = __shfl_up_sync(FULL, incl, d);
            if (lane >= d) incl += t;
        }
        int total = __shfl_sync(FULL, incl, PICK_W - 1), base = 0;
        if (lane == PICK_W - 1 && total > 0) base = atomicAdd(&count[0], total);
        int slot = __shfl_sync(FULL, base, PICK_W - 1) + incl - c;
#pragma unroll
        for (int k = 0; k < PICK_ITEMS; k++) {
            i64 i = seg + PICK_W * k + lane;
            if ((mask >> k) & 1u) {
                splitters[slot] = (int)i;
                own[i] = (int)((u32)slot * (u32)scale);  // scale 4: an undirected trail's walker 2·slot
                slot++;
            } else if (first && i < n) {
                own[i] = NONE;
            }
        }
    }
    s_cnt[tid] = todo;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half /= 2) {
        if (tid < half) s_cnt[tid] += s_cnt[tid + half];
        __syncthreads();
    }
    if (tid == 0 && s_cnt[0] > 0) atomicAdd(&count[todo_slot], s_cnt[0]);
}
// --8<-- [end:ruling_set]

// --8<-- [start:walk_label]
__device__ __forceinline__ bool is_splitter(int e, u32 thresh, u32 seed, int head) {
    return e == head || mix32((u32)e ^ seed) <= thresh;
}

extern "C" __global__ void walk_label(const int *succ, int *own, const int *splitters, int lo, int hi, u32 thresh,
                                      u32 seed, u64 *W, u64 *sublist, int *last, int record) {
    for (i64 j = lo + blockIdx.x * (i64)blockDim.x + threadIdx.x; j < hi; j += (i64)gridDim.x * blockDim.x) {
        int s = splitters[j];
        int m = s;
        int k = 1, x = s;                            // record: the sublist's length and last edge
        int e = succ[(u32)s];
        while (!is_splitter(e, thresh, seed, NONE)) {
            own[(u32)e] = (int)j;
            m = min(m, e);
            x = e;
            k++;
            e = succ[(u32)e];
        }
        int next = own[(u32)e];
        W[j] = pack(m, next);
        if (record) {                                // kept for the final ranking (rank_sublists)
            sublist[j] = pack(k, next);
            last[j] = x;
        }
    }
}

extern "C" __global__ void label_from_owner(const int *own, int n, const int *clab, int *label) {
    GRID_LOOP(e, n) label[e] = clab[(u32)own[e]];
}
// --8<-- [end:walk_label]

// --8<-- [start:trails]
// An undirected graph's closed trails, each walked once (not once per direction, as its darts
// would be). The pick (scale 4) makes edge e = splitters[k] a splitter owned by walker 2k, which
// walks from e in the direction of dart 2e while walker 2k + 1 walks from e the other way. A
// walker claims the edges it reaches (town[g] = walker·2 + the parity of the dart it walked g
// as), until it reaches a splitter or an edge claimed by the walker coming the other way: two
// walkers meet in the middle of every stretch between splitters. Walkers next(w) = met(w) ^ 1
// (the twin of the one w met) all walk their trail the same way round, so they form two
// cycles per trail, one per direction; W[w] = (the smallest dart w walked, next(w)) starts the
// pointer jumping that gives each walker its cycle's smallest dart.
extern "C" __global__ void walk_trail(const int *dsucc, int *town, const int *splitters, int lo, int hi,
                                      u32 thresh, u32 seed, u64 *W) {
    for (i64 w = 2 * (i64)lo + blockIdx.x * (i64)blockDim.x + threadIdx.x; w < 2 * (i64)hi;
         w += (i64)gridDim.x * blockDim.x) {
        int side = (int)(w & 1);
        int d = 2 * splitters[w >> 1] + side;
        int m = side ? INT32_MAX_ : d;           // walker 2k owns its splitter edge, as dart 2e
        u32 tag = (u32)w << 1;
        int met, nd = dsucc[(u32)d];
        while (true) {
            d = nd;
            int g = (int)((u32)d >> 1), p = d & 1;
            if (is_splitter(g, thresh, seed, NONE)) {  // the walker of g that comes this way
                met = (int)(((u32)town[(u32)g] >> 1) | (u32)(p ^ 1));
                break;
            }
            int old = atomicCAS(&town[(u32)g], NONE, (int)(tag | (u32)p));
            nd = dsucc[(u32)d];                    // loaded while the claim is in flight
            if (old != NONE) {                     // the walker coming the other way was here first
                met = (int)((u32)old >> 1);
                break;
            }
            m = min(m, d);
        }
        W[w] = pack(m, met ^ 1);
    }
}

// The orientation from the walkers' cycles (clab: each walker's cycle's smallest dart): of the
// two directions of a trail, keep the one that walks its smallest edge as that edge's even dart,
// as the darts' labelling would (its kept cycle has the smaller label).
extern "C" __global__ void orient_trails(const int *town, const int *clab, const int *src, const int *dst, int n,
                                         int *osrc, int *odst, int *fwd, int *elabel) {
    GRID_LOOP(e, n) {
        u32 t = (u32)town[e], w = t >> 1;
        int a = clab[w], b = clab[w ^ 1];        // this walker's direction, and the other
        bool kept = a < b ? (a & 1) == 0 : (b & 1) == 1;
        bool f = ((t & 1) == 0) == kept;         // e kept as dart 2e: src -> dst
        osrc[e] = f ? src[e] : dst[e];
        odst[e] = f ? dst[e] : src[e];
        fwd[e] = f;
        elabel[e] = min(a, b) >> 1;
    }
}
// --8<-- [end:trails]

// ---------------------------------------------------------------------------- step 3: the circuit graph

// --8<-- [start:links]
extern "C" __global__ void list_nodes(const int *label, int n, int *nodes, int *comp, int *best, int *count,
                                      int slot) {
    i64 n_round = ((i64)n + 31) / 32 * 32;
    GRID_LOOP(i, n_round) {
        bool pred = i < n && label[i] == i;
        int k = warp_append(pred, count, slot);
        if (pred) {
            nodes[k] = (int)i;
            comp[i] = (int)i;
            best[i] = INT32_MAX_;
        }
    }
}
// --8<-- [end:links]

// --8<-- [start:find_links]
// Each warp takes segments of 32 * LINK_ITEMS out-slots (item k of lane l: slot seg + 32k + l,
// coalesced). A slot's label is gathered once, by its own lane, and handed to the slot before it
// by a shuffle (one random gather an out-slot, not one for each of a link's two ends), and a
// segment's links are appended with one atomic (not one per 32 slots).
#define LINK_ITEMS 8
// Append a segment's links at count[slot] with one atomic: (x[k], y[k], w(k)) of every item k
// whose bit `lane` is set in masks[k] (total: how many bits the segment's masks hold), in order,
// so consecutive lanes write consecutive places. Every lane of the warp calls it. w is a
// function of k, so that find_links computes its weights (the slots) instead of keeping them.
template <class Weight>
__device__ __forceinline__ void append_links(const u32 (&masks)[LINK_ITEMS], int total, const int (&x)[LINK_ITEMS],
                                             const int (&y)[LINK_ITEMS], Weight w, int *ox, int *oy, int *ow,
                                             int *count, int slot, int lane) {
    int base = 0;
    if (lane == 0) base = atomicAdd(&count[slot], total);
    base = __shfl_sync(FULL, base, 0, PICK_W);
    u32 lt = (1u << lane) - 1u;
#pragma unroll
    for (int k = 0; k < LINK_ITEMS; k++) {
        if ((masks[k] >> lane) & 1u) {
            int q = base + __popc(masks[k] & lt);
            ox[q] = x[k];
            oy[q] = y[k];
            ow[q] = w(k);
        }
        base += __popc(masks[k]);
    }
}

extern "C" __global__ void find_links(const int *ssrc, const int *out_order, const int *label, int n,
                                      int *lu, int *lv, int *lp, int *best, int *count, int slot) {
    int lane = threadIdx.x % PICK_W;
    const i64 SEG = PICK_W * LINK_ITEMS;
    i64 warps = (i64)gridDim.x * blockDim.x / PICK_W;
    for (i64 seg = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / PICK_W * SEG; seg < n; seg += warps * SEG) {
        int s[LINK_ITEMS], a[LINK_ITEMS];
        bool eq[LINK_ITEMS];                         // slots p and p + 1 leave the same vertex
        i64 after = seg + SEG;                       // the slot after the segment (lane PICK_W - 1's)
#pragma unroll
        for (int k = 0; k < LINK_ITEMS; k++) {
            i64 p = seg + PICK_W * k + lane;
            s[k] = p < n ? ssrc[p] : -1;
        }
        int s_after = lane == PICK_W - 1 && after < n ? ssrc[after] : -1;
#pragma unroll
        for (int k = 0; k < LINK_ITEMS; k++) {
            i64 p = seg + PICK_W * k + lane;
            int down = __shfl_down_sync(FULL, s[k], 1, PICK_W);
            int first = __shfl_sync(FULL, s[k + 1 < LINK_ITEMS ? k + 1 : k], 0, PICK_W);
            int next = lane < PICK_W - 1 ? down : (k + 1 < LINK_ITEMS ? first : s_after);
            eq[k] = p + 1 < n && s[k] == next;
        }
#pragma unroll
        for (int k = 0; k < LINK_ITEMS; k++) {     // a slot's label is needed by its links, before and after
            i64 p = seg + PICK_W * k + lane;
            bool up = __shfl_up_sync(FULL, eq[k], 1, PICK_W);
            bool last = __shfl_sync(FULL, eq[k > 0 ? k - 1 : 0], PICK_W - 1, PICK_W);
            bool prev = lane > 0 ? up : k > 0 && last;  // (slot seg - 1 gathers seg's label itself)
            a[k] = eq[k] || prev ? label[(u32)out_order[p]] : -1;
        }
        u32 masks[LINK_ITEMS];
        int total = 0;
#pragma unroll
        for (int k = 0; k < LINK_ITEMS; k++) {
            i64 p = seg + PICK_W * k + lane;
            int down = __shfl_down_sync(FULL, a[k], 1, PICK_W);
            int first = __shfl_sync(FULL, a[k + 1 < LINK_ITEMS ? k + 1 : k], 0, PICK_W);
            int b = lane < PICK_W - 1 ? down
                    : (k + 1 < LINK_ITEMS ? first : (eq[k] ? label[(u32)out_order[after]] : -1));
            bool pred = eq[k] && a[k] != b;
            if (pred) {    // Boruvka's first round: every cycle is still its own component
                if ((int)p < best[(u32)a[k]]) atomicMin(&best[a[k]], (int)p);
                if ((int)p < best[(u32)b]) atomicMin(&best[b], (int)p);
            }
            masks[k] = __ballot_sync(FULL, pred);
            total += __popc(masks[k]);
            s[k] = b;                                // (s is free now: keep b)
        }
        auto weight = [&](int k) { return (int)(seg + PICK_W * k + lane); };  // a link's weight: its slot
        if (total > 0) append_links(masks, total, a, s, weight, lu, lv, lp, count, slot, lane);
    }
}
// --8<-- [end:find_links]

// ---------------------------------------------------------------------------- step 4: spanning forest (Boruvka)

// --8<-- [start:boruvka]
extern "C" __global__ void reset_best(const int *nodes, int c_count, int *best) {
    GRID_LOOP(i, c_count) best[(u32)nodes[i]] = INT32_MAX_;
}

// A later round's minima, and the links that still join two components, kept for the next round
// (lu2, lv2, lp2; count[slot] = how many). Segments of 32 * LINK_ITEMS links a warp, appended
// with one atomic, as find_links does: an append per 32 links put one atomic on one counter per
// warp step, about 14 million in the second round at 2^30 edges.
extern "C" __global__ void min_links(const int *lu, const int *lv, const int *lp, int m, const int *comp, int *best,
                                     int *lu2, int *lv2, int *lp2, int *count, int slot) {
    int lane = threadIdx.x % PICK_W;
    const i64 SEG = PICK_W * LINK_ITEMS;
    i64 warps = (i64)gridDim.x * blockDim.x / PICK_W;
    for (i64 seg = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / PICK_W * SEG; seg < m; seg += warps * SEG) {
        int cu[LINK_ITEMS], cv[LINK_ITEMS], w[LINK_ITEMS];
        u32 masks[LINK_ITEMS];
        int total = 0;
#pragma unroll
        for (int k = 0; k < LINK_ITEMS; k++) {
            i64 i = seg + PICK_W * k + lane;
            bool pred = false;
            cu[k] = cv[k] = w[k] = 0;
            if (i < m) {
                cu[k] = comp[(u32)lu[i]];
                cv[k] = comp[(u32)lv[i]];
                w[k] = lp[i];
                pred = cu[k] != cv[k];
            }
            if (pred) {    // read first: most links are heavier than the best one already found
                if (w[k] < best[(u32)cu[k]]) atomicMin(&best[cu[k]], w[k]);
                if (w[k] < best[(u32)cv[k]]) atomicMin(&best[cv[k]], w[k]);
            }
            masks[k] = __ballot_sync(FULL, pred);
            total += __popc(masks[k]);
        }
        auto weight = [&](int k) { return w[k]; };
        if (total > 0) append_links(masks, total, cu, cv, weight, lu2, lv2, lp2, count, slot, lane);
    }
}

extern "C" __global__ void hook(const int *lu, const int *lv, const int *lp, const int *count, int slot,
                                const int *best, int *comp, u8 *tree) {
    int m = count[slot];   // read on the device: the host does not wait for it
    GRID_LOOP(i, m) {
        int cu = lu[i], cv = lv[i], w = lp[i];
        bool bu = best[(u32)cu] == w, bv = best[(u32)cv] == w;
        if (bu && bv) comp[(u32)max(cu, cv)] = min(cu, cv);
        else if (bu) comp[(u32)cu] = cv;
        else if (bv) comp[(u32)cv] = cu;
        if (bu || bv) tree[(u32)w] = 1;
    }
}

extern "C" __global__ void shortcut(const int *nodes, int c_count, int *comp, int *changed, int slot) {
    GRID_LOOP(i, c_count) {
        u32 x = (u32)nodes[i];
        int c = comp[x];
        int cc = comp[(u32)c];
        if (c != cc) {
            comp[x] = cc;
            changed[slot] = 1;
        }
    }
}

extern "C" __global__ void count_roots(const int *nodes, int c_count, const int *comp, int *out, int slot) {
    GRID_LOOP(i, c_count) {
        int x = nodes[i];
        if (comp[(u32)x] == x) {
            atomicAdd(&out[slot], 1);
            atomicMin(&out[slot + 1], x);
            atomicMax(&out[slot + 2], x);
        }
    }
}
// --8<-- [end:boruvka]

// ---------------------------------------------------------------------------- step 5: splice

// --8<-- [start:splice]
extern "C" __global__ void splice(const u8 *tree, const int *in_order, const int *out_order, int n, int *succ) {
    GRID_LOOP(k, n) {
        if (tree[k]) {
            succ[(u32)in_order[k]] = out_order[k + 1];
        } else if (k > 0 && tree[k - 1]) {       // k ends a run: find where it starts
            i64 k0 = k - 1;
            while (k0 > 0 && tree[k0 - 1]) k0--;
            succ[(u32)in_order[k]] = out_order[k0];
        }
    }
}
// --8<-- [end:splice]

// ---------------------------------------------------------------------------- step 6: ranking

// --8<-- [start:wyllie]
extern "C" __global__ void wyllie_init(const int *succ, int n, int head, u64 *W) {
    GRID_LOOP(i, n) {
        int x = succ[i];
        W[i] = pack(1, x == head ? NONE : x);
    }
}

extern "C" __global__ void wyllie_round(const u64 *W, u64 *W2, int n) {
    GRID_LOOP(i, n) {
        u64 w = W[i];
        int x = lo32(w);
        if (x != NONE) {
            u64 wx = W[(u32)x];
            w = pack(hi32(w) + hi32(wx), lo32(wx));
        }
        W2[i] = w;
    }
}

extern "C" __global__ void scatter_rank(const u64 *W, int n, int *out) {
    GRID_LOOP(e, n) out[n - hi32(W[e])] = (int)e;
}
// --8<-- [end:wyllie]

// --8<-- [start:rank_ruling]
extern "C" __global__ void pick_rank_splitters(int n, u32 thresh, u32 seed, int head, int *sid, int *splitters,
                                               int *count) {
    i64 n_round = ((i64)n + 31) / 32 * 32;
    GRID_LOOP(i, n_round) {
        bool pred = i < n && i != head && mix32((u32)i ^ seed) <= thresh;
        int slot = warp_append(pred, count, 0);
        if (pred) {
            splitters[slot] = (int)i;
            sid[i] = slot;
        }
        if (i == head) {
            splitters[0] = (int)i;
            sid[i] = 0;
        }
    }
}

extern "C" __global__ void walk_rank(const int *succ, const int *sid, const int *splitters, int s_count, u32 thresh,
                                     u32 seed, int head, u64 *W) {
    GRID_LOOP(j, s_count) {
        int length = 1;
        int e = succ[(u32)splitters[j]];
        while (!is_splitter(e, thresh, seed, head)) {
            length++;
            e = succ[(u32)e];
        }
        W[j] = pack(length, e == head ? NONE : sid[(u32)e]);
    }
}

extern "C" __global__ void write_ranked(const int *succ, const int *splitters, int s_count, u32 thresh, u32 seed,
                                        int head, const u64 *W, int n, int *out) {
    GRID_LOOP(j, s_count) {
        int pos = n - hi32(W[j]);
        int e = splitters[j];
        out[pos] = e;
        e = succ[(u32)e];
        while (!is_splitter(e, thresh, seed, head)) {
            pos++;
            out[pos] = e;
            e = succ[(u32)e];
        }
    }
}
// --8<-- [end:rank_ruling]

// --8<-- [start:rank_sublists]
// Ranking from the labelling's sublists: the sublists the splice did not touch keep their
// length and successor, so only the touched ones are walked to measure them. The boundaries
// of the pieces are marked in succ itself (ENDS: "my successor starts a piece"), so a walk
// reads nothing it did not read before.
#define ENDS 0x80000000u
#define EDGE(w) ((int)((u32)(w) & ~ENDS))

extern "C" __global__ void mark_ends(const int *last, int s_count, int *succ) {
    GRID_LOOP(j, s_count) succ[(u32)last[j]] |= (int)ENDS;
}

// After the splice: every in-edge x whose successor changed ends a piece (its sublist is then
// "dirty": measured again), and x's old successor y starts one; a y that is no splitter of the
// labelling becomes boundary s_count + its slot (bidx). A y that is the head is noted.
extern "C" __global__ void list_cuts(const u8 *tree, const int *in_order, const int *out_order, int *succ,
                                     const int *own, const int *spl, int n, int s_count, int head, u8 *dirty,
                                     int *cut_y, int *bidx, int *count, int slot) {
    i64 n_round = ((i64)n + 31) / 32 * 32;
    GRID_LOOP(k, n_round) {
        bool changed = k < n && (tree[k] || (k > 0 && tree[k - 1]));   // as splice chose them
        bool cut = false;
        int y = NONE;
        if (changed) {
            int x = in_order[k];
            succ[(u32)x] |= (int)ENDS;
            dirty[(u32)own[(u32)x]] = 1;
            y = out_order[k];
            cut = spl[(u32)own[(u32)y]] != y;
        }
        int at = warp_append(cut, count, slot);
        if (cut) {
            cut_y[at] = y;
            bidx[(u32)y] = s_count + at;
            if (y == head) count[slot + 1] = s_count + at;
        }
    }
}

// The head starts the circuit: a boundary already (a splitter, or a cut), else boundary
// s_count + c, and the sublist that holds it is measured again.
extern "C" __global__ void head_boundary(int head, const int *own, const int *spl, int s_count, u8 *dirty,
                                         int *cut_y, int *count, int slot) {
    int c = count[slot];
    int hb = count[slot + 1];
    if (hb == NONE) {
        int o = own[(u32)head];
        if (spl[(u32)o] == head) hb = o;
        else {
            hb = s_count + c;
            dirty[(u32)o] = 1;
        }
    }
    count[slot + 1] = hb;
    cut_y[c] = head;                                 // boundary s_count + c: the head, or nothing
}

// One boundary: walk to the next one (or to the head); returns the length, *z = where it ends
__device__ __forceinline__ int measure_piece(const int *succ, int b, int head, int *z) {
    int length = 1;
    u32 w = (u32)succ[(u32)b];
    while (!(w & ENDS) && EDGE(w) != head) {
        length++;
        w = (u32)succ[w];
    }
    *z = EDGE(w);
    return length;
}

extern "C" __global__ void measure(const int *succ, const int *own, const int *spl, const u64 *sublist,
                                   const u8 *dirty, const int *cut_y, const int *bidx, int s_count, int total,
                                   int head, const int *count, int slot, u64 *W) {
    int hb = count[slot + 1];
    int c = count[slot];
    GRID_LOOP(j, total) {
        int length = 0, next = NONE;
        if (j < s_count && !dirty[j]) {              // an untouched sublist: as the labelling left it
            u64 sl = sublist[j];
            length = hi32(sl);
            next = lo32(sl);
        } else if (j < s_count || j < s_count + c || hb == j) {
            int b = j < s_count ? spl[j] : cut_y[j - s_count];
            int z;
            length = measure_piece(succ, b, head, &z);
            next = z == head ? hb : (spl[(u32)own[(u32)z]] == z ? own[(u32)z] : bidx[(u32)z]);
        }                                            // else: the head's slot, unused (length 0)
        W[j] = pack(length, next == hb ? NONE : next);
    }
}

// After Wyllie on the pieces: walk each again, writing it from its place n - d[j] on
extern "C" __global__ void write_pieces(const int *succ, const int *spl, const int *cut_y, int s_count, int total,
                                        int head, const u64 *W, int n, int *out) {
    GRID_LOOP(j, total) {
        u64 wj = W[j];
        if (hi32(wj) == 0) continue;                 // the head's unused slot
        int pos = n - hi32(wj);
        int e = j < s_count ? spl[j] : cut_y[j - s_count];
        out[pos] = e;
        u32 w = (u32)succ[(u32)e];
        while (!(w & ENDS) && EDGE(w) != head) {
            out[++pos] = EDGE(w);
            w = (u32)succ[w];
        }
    }
}
// --8<-- [end:rank_sublists]

extern "C" __global__ void walk_vertices(const int *out, const int *tail, const int *head, int m, int *vs) {
    GRID_LOOP(i, (i64)m + 1) {
        if (i < m) vs[i] = tail[(u32)out[i]];
        else vs[i] = head[(u32)out[m - 1]];
    }
}

extern "C" __global__ void gather_i32(const int *a, const int *idx, int n, int *out) {
    GRID_LOOP(i, n) out[i] = a[(u32)idx[i]];
}

extern "C" __global__ void reverse_walk(const int *out, const int *fwd, int n, int *out2, int *fwd2) {
    GRID_LOOP(i, n) {
        out2[i] = out[n - 1 - i];
        fwd2[i] = 1 - fwd[n - 1 - i];
    }
}

// ---------------------------------------------------------------------------- checking on the device

// --8<-- [start:verify]
extern "C" __global__ void mark_positions(const int *out, int n, int *pos, int *bad) {
    GRID_LOOP(i, n) {
        int e = out[i];
        if (e < 0 || e >= n) atomicAdd(&bad[0], 1);
        else pos[e] = (int)i;
    }
}

extern "C" __global__ void check_chain(const int *out, const int *tail, const int *head, const int *pos, int n,
                                       int closed, int *bad) {
    GRID_LOOP(i, n) {
        int e = out[i];
        if (e >= 0 && e < n) {
            if (pos[e] != i) {
                atomicAdd(&bad[1], 1);
                atomicMin(&bad[3], (int)i);
            }
            if (i + 1 < n || closed) {
                int f = i + 1 < n ? out[i + 1] : out[0];
                if (f >= 0 && f < n && head[e] != tail[f]) {
                    atomicAdd(&bad[2], 1);
                    atomicMin(&bad[3], (int)i);
                }
            }
        }
    }
}

extern "C" __global__ void cycle_sizes(const int *label, int n, int *size) {
    GRID_LOOP(i, n) atomicAdd(&size[label[i]], 1);
}
// --8<-- [end:verify]

// ---------------------------------------------------------------------------- generators and de Bruijn

// --8<-- [start:gen_deep]
extern "C" __global__ void gen_deep(int E, int V, u32 half_v, u32 mask_v, u32 half_e, u32 mask_e,
                                    u32 kv0, u32 kv1, u32 kv2, u32 kv3, u32 ke0, u32 ke1, u32 ke2, u32 ke3, u32 kr,
                                    int *src, int *dst) {
    GRID_LOOP(i, E) {
        i64 j = i + 1 < E ? i + 1 : 0;
        int a = i < V ? feistel((u32)i, V, half_v, mask_v, kv0, kv1, kv2, kv3) : (int)(mix32((u32)i ^ kr) % (u32)V);
        int b = j < V ? feistel((u32)j, V, half_v, mask_v, kv0, kv1, kv2, kv3) : (int)(mix32((u32)j ^ kr) % (u32)V);
        int e = feistel((u32)i, E, half_e, mask_e, ke0, ke1, ke2, ke3);
        src[e] = a;
        dst[e] = b;
    }
}
// --8<-- [end:gen_deep]

__device__ int shallow_vertex(i64 j, i64 t, int E, int L, int C, int M0, int M, int degree, int path,
                              u32 kr, u32 kp, u32 kq) {
    i64 length = j == C - 1 ? (i64)E - (i64)(C - 1) * L : L;
    u32 h = mix32((u32)(j * L + t) ^ kr);
    if (j == 0) return t < M0 ? (int)t : (int)(h % (u32)M0);
    if (t == 0) {
        i64 parent = path ? j - 1 : (i64)(mix32((u32)j ^ kp) % (u32)j);
        int pm = parent == 0 ? M0 : M;
        i64 pbase = parent == 0 ? 0 : M0 + (parent - 1) * M;
        return (int)(pbase + (i64)(mix32((u32)j ^ kq) % (u32)pm));
    }
    i64 m = M;
    if (j == C - 1) m = (length - 1 + degree - 1) / degree;
    i64 base = M0 + (j - 1) * M;
    if (t <= m) return (int)(base + t - 1);
    return (int)(base + (i64)(h % (u32)max(m, (i64)1)));
}

extern "C" __global__ void gen_shallow(int E, int L, int C, int M0, int M, int degree, int path, u32 half_e,
                                       u32 mask_e, u32 ke0, u32 ke1, u32 ke2, u32 ke3, u32 kr, u32 kp, u32 kq,
                                       int *src, int *dst) {
    GRID_LOOP(i, E) {
        i64 j = i / L, t = i - j * L;
        i64 length = j == C - 1 ? (i64)E - (i64)(C - 1) * L : L;
        i64 t2 = t + 1 < length ? t + 1 : 0;
        int e = feistel((u32)i, E, half_e, mask_e, ke0, ke1, ke2, ke3);
        src[e] = shallow_vertex(j, t, E, L, C, M0, M, degree, path, kr, kp, kq);
        dst[e] = shallow_vertex(j, t2, E, L, C, M0, M, degree, path, kr, kp, kq);
    }
}

// --8<-- [start:debruijn]
extern "C" __global__ void debruijn_graph(int N, int k, int kn1, int *ssrc, int *out_order, int *in_order, int *succ) {
    GRID_LOOP(i, N) {
        ssrc[i] = (int)(i / k);
        out_order[i] = (int)i;
        in_order[i] = (int)((i % k) * kn1 + i / k);
        succ[i] = (int)((i % kn1) * k + i / kn1);
    }
}

extern "C" __global__ void debruijn_ends(int N, int k, int kn1, int *tail, int *head) {
    GRID_LOOP(i, N) {
        tail[i] = (int)(i / k);
        head[i] = (int)(i % kn1);
    }
}

extern "C" __global__ void debruijn_symbols(const int *circuit, int N, int kn1, int n1, u8 *seq) {
    GRID_LOOP(i, N) {
        u8 s = (u8)(circuit[i] / kn1);
        seq[i] = s;
        if (i < n1) seq[N + i] = s;
    }
}
// --8<-- [end:debruijn]
