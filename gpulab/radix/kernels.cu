// Chapter 4 kernels in CUDA C: scan, split, and LSD radix sort of uint32 keys.
// The same kernels as kernels_numba.py, launched by the same host code (gpulab/radix/host.py).
// Compile-time sizes come in as -D macros from the variant registry.

#ifndef SCAN_BLOCK
#define SCAN_BLOCK 512   // threads of a block scan (Blelloch: 2*SCAN_BLOCK values per block)
#endif
#ifndef BLOCK
#define BLOCK 256        // threads of a sorting block
#endif
#ifndef BITS
#define BITS 4           // digit width
#endif
#ifndef ITEMS
#define ITEMS 16         // keys per thread (register-resident variants)
#endif

#ifndef BALLOT
#define BALLOT 0         // 1: find a lane's digit peers with BITS ballots instead of match_any
#endif

// Blocks per SM the register-resident kernels ask ptxas to fit (__launch_bounds__: caps their
// registers); one macro per kernel, since one module holds both and a variant runs only one.
#ifndef DOWNSWEEP_MIN_BLOCKS
#define DOWNSWEEP_MIN_BLOCKS 1
#endif
#ifndef ONESWEEP_MIN_BLOCKS
#define ONESWEEP_MIN_BLOCKS 1
#endif
#ifndef FULL_TILES
#define FULL_TILES 1     // 0: every tile takes the bounds-checked path (to measure what the full-tile path saves)
#endif
#ifndef PAIRS
#define PAIRS 1          // 0: a keys-only build, whose tile needs no shared buffer for values
#endif
#ifndef LOOKBACK
#define LOOKBACK 1       // onesweep: status words a digit's look-back loads at once (their latencies overlap)
#endif
#ifndef PREFETCH_VALUES
#define PREFETCH_VALUES 0  // onesweep key-value tiles: 1 prefetch the tile's values into L2 as it starts, 2 into L1
#endif
#ifndef VALUE_DIGITS
#define VALUE_DIGITS 0     // key-value tiles: 1 keep each place's digit in shared memory (a byte) for the values'
#endif                     // destinations, 0 keep each value's destination in a register
#ifndef EARLY_COUNTS
#define EARLY_COUNTS 0     // onesweep: 1 count the tile's digits before ranking (one shared atomic a key), so
#endif                     // the tile publishes its counts and ranks keys straight to their places
#if LOOKBACK < 1
#error "LOOKBACK: the look-back loads at least one status word at a time"
#endif

#define RADIX (1 << BITS)
#define DIGIT_MASK (RADIX - 1)
#define MAX_PASSES ((32 + BITS - 1) / BITS)  // onesweep: hist holds MAX_PASSES rows of RADIX, then a flag per pass
#define TILE (BLOCK * ITEMS)
#define NWARPS (BLOCK / 32)

typedef unsigned int u32;

extern "C" __global__ void iota(u32 *vals, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) vals[i] = i;
}

extern "C" __global__ void zero_i32(int *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = 0;
}

// --8<-- [start:max]
extern "C" __global__ void max_reduce(const u32 *keys, int n, u32 *out) {
    __shared__ u32 s[SCAN_BLOCK];
    int tid = threadIdx.x;
    u32 m = 0;
    for (int i = blockIdx.x * SCAN_BLOCK + tid; i < n; i += gridDim.x * SCAN_BLOCK)
        m = max(m, keys[i]);
    s[tid] = m;
    __syncthreads();
    for (int half = SCAN_BLOCK / 2; half > 0; half /= 2) {
        if (tid < half) s[tid] = max(s[tid], s[tid + half]);
        __syncthreads();
    }
    if (tid == 0) atomicMax(out, s[0]);
}
// --8<-- [end:max]

// ---------------------------------------------------------------------------- scan

// --8<-- [start:scan_hs]
extern "C" __global__ void scan_hs(const int *in, int *out, int *sums, int n, int inclusive) {
    __shared__ int s[2][SCAN_BLOCK];
    int tid = threadIdx.x;
    int i = blockIdx.x * SCAN_BLOCK + tid;
    int x = i < n ? in[i] : 0;
    s[0][tid] = x;
    int src = 0;
    for (int offset = 1; offset < SCAN_BLOCK; offset *= 2) {
        __syncthreads();
        int v = s[src][tid];
        if (tid >= offset) v += s[src][tid - offset];
        s[1 - src][tid] = v;
        src = 1 - src;
    }
    __syncthreads();
    int incl = s[src][tid];
    if (i < n) out[i] = inclusive ? incl : incl - x;
    if (tid == SCAN_BLOCK - 1) sums[blockIdx.x] = incl;
}
// --8<-- [end:scan_hs]

// --8<-- [start:scan_blelloch]
extern "C" __global__ void scan_blelloch(const int *in, int *out, int *sums, int n, int inclusive) {
    __shared__ int s[2 * SCAN_BLOCK];
    int tid = threadIdx.x;
    int a = blockIdx.x * 2 * SCAN_BLOCK + tid, b = a + SCAN_BLOCK;
    int xa = a < n ? in[a] : 0, xb = b < n ? in[b] : 0;
    s[tid] = xa;
    s[tid + SCAN_BLOCK] = xb;
    int offset = 1;
    for (int d = SCAN_BLOCK; d > 0; d /= 2) {          // up-sweep
        __syncthreads();
        if (tid < d) s[offset * (2 * tid + 2) - 1] += s[offset * (2 * tid + 1) - 1];
        offset *= 2;
    }
    if (tid == 0) {
        sums[blockIdx.x] = s[2 * SCAN_BLOCK - 1];
        s[2 * SCAN_BLOCK - 1] = 0;
    }
    for (int d = 1; d < 2 * SCAN_BLOCK; d *= 2) {      // down-sweep
        offset /= 2;
        __syncthreads();
        if (tid < d) {
            int ai = offset * (2 * tid + 1) - 1, bi = offset * (2 * tid + 2) - 1;
            int t = s[ai];
            s[ai] = s[bi];
            s[bi] += t;
        }
    }
    __syncthreads();
    if (a < n) out[a] = inclusive ? s[tid] + xa : s[tid];
    if (b < n) out[b] = inclusive ? s[tid + SCAN_BLOCK] + xb : s[tid + SCAN_BLOCK];
}
// --8<-- [end:scan_blelloch]

// --8<-- [start:add_offsets]
extern "C" __global__ void add_offsets(int *out, const int *sums, int n, int per_block) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] += sums[i / per_block];
}
// --8<-- [end:add_offsets]

// ---------------------------------------------------------------------------- split (one bit)

// --8<-- [start:split]
extern "C" __global__ void split_flags(const u32 *keys, int n, int shift, int *flags) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) flags[i] = 1 - (int)((keys[i] >> shift) & 1u);
}

extern "C" __global__ void split_scatter(const u32 *keys_in, const u32 *vals_in, u32 *keys_out, u32 *vals_out,
                                         const int *pos, const int *flags, int n, int shift, int has_vals) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int total_falses = pos[n - 1] + flags[n - 1];
        int dest = flags[i] ? pos[i] : total_falses + i - pos[i];
        keys_out[dest] = keys_in[i];
        if (has_vals) vals_out[dest] = vals_in[i];
    }
}
// --8<-- [end:split]

// ---------------------------------------------------------------------------- per-block sort in shared memory

__device__ void block_inclusive_scan(int *s, int tid) {
    for (int offset = 1; offset < BLOCK; offset *= 2) {
        int v = tid >= offset ? s[tid - offset] : 0;
        __syncthreads();
        s[tid] += v;
        __syncthreads();
    }
}

// --8<-- [start:tile_sort]
extern "C" __global__ void tile_sort(const u32 *keys_in, const u32 *vals_in, u32 *tkeys, u32 *tvals,
                                     int *counts, int *starts, int n, int shift, int nblocks, int has_vals) {
    __shared__ u32 sk[BLOCK], sv[BLOCK];
    __shared__ int sf[BLOCK], first[RADIX], cnt[RADIX];
    int tid = threadIdx.x, blk = blockIdx.x;
    int i = blk * BLOCK + tid;
    int m = min(BLOCK, n - blk * BLOCK);
    u32 key = i < n ? keys_in[i] : 0xFFFFFFFFu;
    u32 val = (i < n && has_vals) ? vals_in[i] : 0u;
    for (int bit = 0; bit < BITS; ++bit) {
        int b = (key >> (shift + bit)) & 1u;
        sf[tid] = 1 - b;
        __syncthreads();
        block_inclusive_scan(sf, tid);
        int before = sf[tid] - (1 - b);
        int total_falses = sf[BLOCK - 1];
        int dest = b == 0 ? before : total_falses + tid - before;
        sk[dest] = key;
        sv[dest] = val;
        __syncthreads();
        key = sk[tid];
        val = sv[tid];
    }
    for (int dd = tid; dd < RADIX; dd += BLOCK) { first[dd] = 0; cnt[dd] = 0; }
    __syncthreads();
    int d = (key >> shift) & DIGIT_MASK;
    if (tid < m) {
        tkeys[i] = key;
        if (has_vals) tvals[i] = val;
        if (tid == 0 || (int)((sk[tid - 1] >> shift) & DIGIT_MASK) != d) first[d] = tid;
    }
    __syncthreads();
    if (tid < m && (tid == m - 1 || (int)((sk[tid + 1] >> shift) & DIGIT_MASK) != d)) cnt[d] = tid - first[d] + 1;
    __syncthreads();
    for (int dd = tid; dd < RADIX; dd += BLOCK) {
        counts[dd * nblocks + blk] = cnt[dd];
        starts[blk * RADIX + dd] = first[dd];
    }
}
// --8<-- [end:tile_sort]

// --8<-- [start:tile_scatter]
extern "C" __global__ void tile_scatter(const u32 *tkeys, const u32 *tvals, u32 *keys_out, u32 *vals_out,
                                        const int *offsets, const int *starts, int n, int shift, int nblocks,
                                        int has_vals) {
    int blk = blockIdx.x, tid = threadIdx.x;
    int i = blk * BLOCK + tid;
    if (i < n) {
        u32 key = tkeys[i];
        int d = (key >> shift) & DIGIT_MASK;
        int dest = offsets[d * nblocks + blk] + tid - starts[blk * RADIX + d];
        keys_out[dest] = key;
        if (has_vals) vals_out[dest] = tvals[i];
    }
}
// --8<-- [end:tile_scatter]

// ---------------------------------------------------------------------------- reduce-then-scan, keys in registers

// --8<-- [start:upsweep]
extern "C" __global__ void __launch_bounds__(BLOCK) upsweep(const u32 *keys, int *counts, int n, int shift, int nblocks) {
    __shared__ int hist[RADIX];
    int tid = threadIdx.x, blk = blockIdx.x;
    for (int d = tid; d < RADIX; d += BLOCK) hist[d] = 0;
    __syncthreads();
    long base = (long)blk * TILE;
    if (base + TILE <= n) {
        // A full tile: issue every load before the first atomic, so ITEMS loads are in flight.
        u32 k[ITEMS];
#pragma unroll
        for (int it = 0; it < ITEMS; ++it) k[it] = keys[base + it * BLOCK + tid];
#pragma unroll
        for (int it = 0; it < ITEMS; ++it) atomicAdd(&hist[(k[it] >> shift) & DIGIT_MASK], 1);
    } else {
        for (int it = 0; it < ITEMS; ++it) {
            long i = base + it * BLOCK + tid;
            if (i < n) atomicAdd(&hist[(keys[i] >> shift) & DIGIT_MASK], 1);
        }
    }
    __syncthreads();
    for (int d = tid; d < RADIX; d += BLOCK) counts[d * nblocks + blk] = hist[d];
}
// --8<-- [end:upsweep]

// --8<-- [start:tile_steps]
// The steps a register-resident tile shares between downsweep and onesweep. Each warp owns
// 32*ITEMS consecutive keys, read warp-striped (item it of lane l is the warp's key 32*it + l),
// so every load instruction of a warp reads 128 consecutive bytes. Bounds are checked against wn,
// how many of the warp's keys exist: a 32-bit count, cheap to compare again, where 64-bit
// indices compared with n cost registers to keep. FULL: a tile of TILE keys, whose steps need no
// bounds checks (every tile but the last: the steps are compiled twice, chosen per tile).
#define DIGIT_WARPS ((RADIX + 31) / 32)   // warps whose threads own a digit (thread d: digit d)

// Every load of the warp's keys (wkeys: the warp's first) issued before the first ranking step:
// ITEMS loads in flight per thread, instead of one load's latency per ranked key.
template <bool FULL>
__device__ __forceinline__ void load_warp_keys(const u32 *wkeys, int lane, int wn, u32 (&ks)[ITEMS]) {
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) ks[it] = (FULL || it * 32 + lane < wn) ? wkeys[it * 32 + lane] : 0u;
}

// rk[it]: how many keys of the same digit come before key it among the warp's keys; whist_w
// (this warp's RADIX counters, zeroed) ends holding the warp's count of each digit.
// STAGE (early counts): whist_w holds where the warp's keys of each digit start in the tile, so
// rk[it] is key it's place in the tile, and the key is written there at once (stile).
template <bool FULL, bool STAGE = false>
__device__ __forceinline__ void rank_warp_keys(const u32 (&ks)[ITEMS], int (&rk)[ITEMS], int *whist_w, int lane,
                                               int wn, int shift, u32 *stile = nullptr) {
    u32 lt = (1u << lane) - 1u;
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {
        bool valid = FULL || it * 32 + lane < wn;
        int d = valid ? (int)((ks[it] >> shift) & DIGIT_MASK) : RADIX;  // RADIX: the "no key" group
#if BALLOT
        u32 peers = 0xFFFFFFFFu;
        if (!FULL) {                                                    // same validity ...
            peers = __ballot_sync(0xFFFFFFFFu, valid);
            if (!valid) peers = ~peers;
        }
#pragma unroll
        for (int b = 0; b < BITS; ++b) {                                // ... and the same bits
            u32 bal = __ballot_sync(0xFFFFFFFFu, (d >> b) & 1);
            peers &= ((d >> b) & 1) ? bal : ~bal;
        }
#else
        u32 peers = __match_any_sync(0xFFFFFFFFu, d);                  // lanes holding the same digit
#endif
        int below = __popc(peers & lt);
        int cnt = 0;
        // The lowest lane of each group reserves the group's places; the others get the base
        // by a shuffle from it (shfl_sync also orders the warp: no syncwarp needed).
        if (valid && below == 0) cnt = atomicAdd(&whist_w[d], __popc(peers));
        cnt = __shfl_sync(0xFFFFFFFFu, cnt, __ffs(peers) - 1);
        rk[it] = cnt + below;
        if (STAGE && valid) stile[rk[it]] = ks[it];
    }
}

// Early counts: each warp's count of each digit (whist_w, zeroed), one shared atomic a key.
template <bool FULL>
__device__ __forceinline__ void count_warp_keys(const u32 (&ks)[ITEMS], int *whist_w, int lane, int wn, int shift) {
#pragma unroll
    for (int it = 0; it < ITEMS; ++it)
        if (FULL || it * 32 + lane < wn) atomicAdd(&whist_w[(ks[it] >> shift) & DIGIT_MASK], 1);
}

// Per digit (thread tid < RADIX): exclusive scan of the warps' counts in place (whist[w][d]:
// where warp w's keys of digit d start among the tile's keys of digit d); returns the digit's
// count in the tile.
__device__ __forceinline__ int warp_offsets(int *whist, int tid) {
    int total = 0;
    if (tid < RADIX) {
#pragma unroll
        for (int ww = 0; ww < NWARPS; ++ww) {
            int c = whist[ww * RADIX + tid];
            whist[ww * RADIX + tid] = total;
            total += c;
        }
    }
    return total;
}

// Where each digit starts in the tile: an exclusive scan of the digits' totals (thread d holds
// digit d's), by shuffles within each warp and one pass over the warps' sums -- one barrier,
// where a block-wide Hillis-Steele scan in shared memory takes two per step.
__device__ __forceinline__ int digit_start(int total, int *wsum, int tid) {
    int lane = tid & 31, w = tid >> 5, x = total;
#pragma unroll
    for (int o = 1; o < 32; o *= 2) {
        int y = __shfl_up_sync(0xFFFFFFFFu, x, o);
        if (lane >= o) x += y;
    }
    if (lane == 31 && w < DIGIT_WARPS) wsum[w] = x;
    __syncthreads();
    if (tid >= RADIX) return 0;
    for (int ww = 0; ww < w; ++ww) x += wsum[ww];
    return x - total;
}

// Exchange the ranked tile into digit order in shared memory. Thread d < RADIX holds `total`, the
// tile's keys of digit d, and gets back where digit d starts in the tile. whist[w][d] becomes
// where warp w's keys of digit d start in the tile, so key it goes to place whist[w][d] + rk[it]
// (kept in rk: the values follow the same permutation). Needs only the tile's own counts: it
// runs before the look-back, and the keys leave the registers while the look-back waits.
// tile_starts: its first half (whist[w][d] += where digit d starts in the tile), which the early
// counts run before ranking.
__device__ __forceinline__ int tile_starts(int total, int *whist, int *wsum, int tid) {
    int start = digit_start(total, wsum, tid);
    if (tid < RADIX) {
#pragma unroll
        for (int ww = 0; ww < NWARPS; ++ww) whist[ww * RADIX + tid] += start;
    }
    __syncthreads();
    return start;
}

template <bool FULL>
__device__ __forceinline__ int stage_tile(const u32 (&ks)[ITEMS], int (&rk)[ITEMS], int total, u32 *stile,
                                          int *whist, int *wsum, int wn, int tid, int shift) {
    int lane = tid & 31, w = tid >> 5;
    int start = tile_starts(total, whist, wsum, tid);
    const int *wpos = whist + w * RADIX;
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {
        if (FULL || it * 32 + lane < wn) {
            rk[it] += wpos[(ks[it] >> shift) & DIGIT_MASK];
            stile[rk[it]] = ks[it];
        }
    }
    return start;
}

// Write the staged tile: thread d < RADIX holds `base`, where the tile's first key of digit d
// goes in the output, and its `start` in the tile; place j of the tile goes to
// dbase[d] + j, so consecutive threads write consecutive places of a digit's run (m: the tile's
// number of keys). A key-value tile then sends its values the same way through the same buffer:
// loaded while the keys are written, placed by rk, written where the keys went (kept in dst).
// VALUE_DIGITS: place j's digit is kept in sdig[j] (a byte of shared memory) and the value's
// destination found again from it, instead of ITEMS destinations held in registers from the
// key writes to the value writes.
template <bool FULL, bool IOTA = false>
__device__ __forceinline__ void scatter_tile(const int (&rk)[ITEMS], int start, int base, const u32 *wvals,
                                             u32 wpos, u32 *keys_out, u32 *vals_out, u32 *stile, int *dbase,
                                             unsigned char *sdig, int wn, int m, int tid, int shift, int has_vals) {
    int lane = tid & 31;
    if (tid < RADIX) dbase[tid] = base - start;
    __syncthreads();
    u32 vs[ITEMS];  // keys-only builds (PAIRS=0): unused, no registers
#if !VALUE_DIGITS
    int dst[ITEMS];
#endif
    if (PAIRS && has_vals && !IOTA) load_warp_keys<FULL>(wvals, lane, wn, vs);  // in flight during the key writes
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {
        int j = it * BLOCK + tid;
        if (FULL || j < m) {
            u32 k = stile[j];
            int d = (k >> shift) & DIGIT_MASK;
            int dest = dbase[d] + j;
            keys_out[dest] = k;
#if VALUE_DIGITS
            if (PAIRS && has_vals) sdig[j] = (unsigned char)d;
#else
            if (PAIRS) dst[it] = dest;
#endif
        }
    }
    if (PAIRS && has_vals) {
        __syncthreads();  // every key read out of the buffer
#pragma unroll
        for (int it = 0; it < ITEMS; ++it)
            if (FULL || it * 32 + lane < wn) stile[rk[it]] = IOTA ? wpos + (u32)(it * 32 + lane) : vs[it];
        __syncthreads();
#pragma unroll
        for (int it = 0; it < ITEMS; ++it) {
            int j = it * BLOCK + tid;
#if VALUE_DIGITS
            if (FULL || j < m) vals_out[dbase[sdig[j]] + j] = stile[j];
#else
            if (FULL || j < m) vals_out[dst[it]] = stile[j];
#endif
        }
    }
}
// --8<-- [end:tile_steps]

// How many of a tile's keys exist (m), and of its warp w's (wn).
__device__ __forceinline__ void tile_counts(long tbase, long n, int w, int &m, int &wn) {
    m = (int)min((long)TILE, n - tbase);
    wn = min(max(m - w * 32 * ITEMS, 0), 32 * ITEMS);
}

// --8<-- [start:downsweep]
template <bool FULL>
__device__ __forceinline__ void downsweep_tile(const u32 *keys_in, const u32 *vals_in, u32 *keys_out, u32 *vals_out,
                                               const int *offsets, int n, int shift, int nblocks, int has_vals,
                                               u32 *stile, int *whist, int *dbase, int *wsum,
                                               unsigned char *sdig) {
    u32 ks[ITEMS];                         // this thread's keys, in registers
    int rk[ITEMS];                         // ... and their ranks within the warp's digit
    int tid = threadIdx.x, lane = tid & 31, w = tid >> 5, blk = blockIdx.x, m, wn;
    long wbase = (long)blk * TILE + w * 32 * ITEMS;  // this warp's first key
    tile_counts((long)blk * TILE, n, w, m, wn);
    load_warp_keys<FULL>(keys_in + wbase, lane, wn, ks);
    for (int j = tid; j < NWARPS * RADIX; j += BLOCK) whist[j] = 0;
    __syncthreads();
    rank_warp_keys<FULL>(ks, rk, whist + w * RADIX, lane, wn, shift);
    __syncthreads();
    int total = warp_offsets(whist, tid);
    int start = stage_tile<FULL>(ks, rk, total, stile, whist, wsum, wn, tid, shift);
    int base = tid < RADIX ? offsets[tid * nblocks + blk] : 0;  // from the scan of the count table
    scatter_tile<FULL>(rk, start, base, vals_in + wbase, (u32)wbase, keys_out, vals_out, stile, dbase, sdig, wn, m, tid, shift,
                       has_vals);
}

extern "C" __global__ void __launch_bounds__(BLOCK, DOWNSWEEP_MIN_BLOCKS) downsweep(const u32 *keys_in, const u32 *vals_in, u32 *keys_out,
                                                              u32 *vals_out, const int *offsets, int n, int shift,
                                                              int nblocks, int has_vals) {
    __shared__ u32 stile[TILE];            // the tile in digit order: keys, then values
    __shared__ int whist[NWARPS * RADIX];  // per-warp digit counters, then where they start
    __shared__ int dbase[RADIX];           // global offset of digit d minus its start in the tile
    __shared__ int wsum[DIGIT_WARPS];      // the digit scan's warp sums
    __shared__ unsigned char sdig[PAIRS && VALUE_DIGITS ? TILE : 1];  // each place's digit (VALUE_DIGITS)
    if (FULL_TILES && (long)(blockIdx.x + 1) * TILE <= n)
        downsweep_tile<true>(keys_in, vals_in, keys_out, vals_out, offsets, n, shift, nblocks, has_vals, stile, whist,
                             dbase, wsum, sdig);
    else
        downsweep_tile<false>(keys_in, vals_in, keys_out, vals_out, offsets, n, shift, nblocks, has_vals, stile, whist,
                              dbase, wsum, sdig);
}
// --8<-- [end:downsweep]

// ---------------------------------------------------------------------------- one-sweep: one read per pass, decoupled look-back

#define PASSES ((32 + BITS - 1) / BITS)   // digit passes of a 32-bit key
#define FLAG_AGG 0x40000000u                // status word: this tile's count of the digit is published
#define FLAG_PREFIX 0x80000000u             // ... and so is the inclusive prefix over tiles 0..this one
#define FLAG_MASK 0xC0000000u
#define VALUE_MASK 0x3FFFFFFFu              // counts and prefixes < 2**30: a tile reads only earlier tiles'
                                            // words, whose counts are < n <= 2**30 (the plan checks n); only
                                            // the last tile's prefix can reach 2**30, and no tile reads it

// --8<-- [start:onesweep_hist]
// The digit histograms of every pass in one read of the keys: each block walks tiles with a
// stride of the grid, counts into PASSES x RADIX shared counters, then adds them to hist.
// A full tile loads its keys with no bounds checks, all before the first atomic, then counts
// one pass's digits at a time (scripts/radix_hist_variants.py: 0.468 against 0.542 ms for
// 2^28 keys on an H200 with checked loads and the passes inside the loop over keys).
extern "C" __global__ void __launch_bounds__(BLOCK) onesweep_hist(const u32 *keys, int *hist, int n, int passes) {
    __shared__ int h[PASSES * RADIX];
    int tid = threadIdx.x;
    for (int j = tid; j < PASSES * RADIX; j += BLOCK) h[j] = 0;
    __syncthreads();
    for (long base = (long)blockIdx.x * TILE; base < n; base += (long)gridDim.x * TILE) {
        if (base + TILE <= n) {
            u32 k[ITEMS];
            const u32 *kb = keys + base + tid;
#pragma unroll
            for (int it = 0; it < ITEMS; ++it) k[it] = kb[it * BLOCK];
#pragma unroll
            for (int p = 0; p < PASSES; ++p)
#pragma unroll
                for (int it = 0; it < ITEMS; ++it)
                    if (p < passes) atomicAdd(&h[p * RADIX + ((k[it] >> (p * BITS)) & DIGIT_MASK)], 1);
        } else {  // the last, partial tile: each key checked against n
            for (int it = 0; it < ITEMS; ++it) {
                long i = base + it * BLOCK + tid;
                if (i < n) {
                    u32 x = keys[i];
                    for (int p = 0; p < passes && p < PASSES; ++p)
                        atomicAdd(&h[p * RADIX + ((x >> (p * BITS)) & DIGIT_MASK)], 1);
                }
            }
        }
    }
    __syncthreads();
    for (int j = tid; j < min(passes, PASSES) * RADIX; j += BLOCK)  // never past the counters
        if (h[j]) atomicAdd(&hist[j], h[j]);
}

// Exclusive scan of each pass's RADIX counts (block p scans pass p): where each digit starts.
extern "C" __global__ void __launch_bounds__(BLOCK) onesweep_scan(int *hist) {
    __shared__ int s[BLOCK];
    int tid = threadIdx.x, p = blockIdx.x;
    int x = tid < RADIX ? hist[p * RADIX + tid] : 0;
    int digits = __syncthreads_count(x > 0);  // one digit holding every key: the pass moves nothing
    s[tid] = x;
    __syncthreads();
    block_inclusive_scan(s, tid);
    if (tid < RADIX) hist[p * RADIX + tid] = s[tid] - x;
    if (tid == 0) hist[MAX_PASSES * RADIX + p] = digits > 1;  // read by onesweep_first
}
// --8<-- [end:onesweep_hist]

// --8<-- [start:onesweep]
// One digit pass. A block takes the next tile id from an atomic counter, ranks the tile's keys
// in registers (as downsweep does), publishes its per-digit counts, finds how many keys of each
// digit all earlier tiles hold by decoupled look-back, and scatters its tile.
//
// status[t * RADIX + d] is one 32-bit word: a 2-bit flag and a 30-bit count. 0: tile t has not
// published; FLAG_AGG | c: tile t holds c keys of digit d; FLAG_PREFIX | c: tiles 0..t hold c.
// Flag and count travel in ONE word, written by one store and read by one load, so a reader
// that sees a flag sees the count stored with it: no fence is needed between them (with the
// flag and the count in two words the writer would need count; __threadfence(); flag, and the
// reader the reverse). No other data crosses blocks inside the kernel (the global digit offsets
// in hist come from the previous launch), so the kernel needs no __threadfence() at all.
// What it needs is `volatile`: a spinning load must be issued again every time and must not be
// served from the SM's L1 (not coherent between SMs); a volatile access compiles to
// ld.volatile / st.volatile, which go to L2, the point where all SMs see the same word.
//
// Forward progress: tile ids come from the atomic counter, not from blockIdx, so a block only
// ever waits on tiles taken by blocks that started before it — resident blocks, which publish
// their counts before they look back themselves. With blockIdx, a block could wait on a tile
// whose block has not been scheduled yet while occupying the slot that block needs.
//
// status_next is the status table of the next pass: the tile zeroes its words there (the
// previous pass, which used that table, has finished), so no pass needs a memset.
//
// onesweep_first is the same pass for the first digit, which the host queues before it has seen
// the digit offsets. When all keys share that digit the pass would be a stable copy: every block
// reads the flag onesweep_scan left for the pass, zeroes its words of the next status table and
// returns, writing nothing; the host, reading the same flag, has the next pass read the input.
// (A separate entry point, and one word to read: checking the offsets themselves here, with a
// block-wide vote, made ptxas spill 56 bytes more a thread.)
template <bool FULL, bool IOTA>
__device__ __forceinline__ void onesweep_tile(const u32 *keys_in, const u32 *vals_in, u32 *keys_out, u32 *vals_out,
                                              const int *hist, u32 *status, u32 *status_next, int n, int shift,
                                              int pass, int has_vals, int tile, u32 *stile, int *whist, int *dbase,
                                              int *wsum, unsigned char *sdig) {
    u32 ks[ITEMS];
    int rk[ITEMS];
    int tid = threadIdx.x, lane = tid & 31, w = tid >> 5, m, wn;
    long wbase = (long)tile * TILE + w * 32 * ITEMS;
    tile_counts((long)tile * TILE, n, w, m, wn);
    load_warp_keys<FULL>(keys_in + wbase, lane, wn, ks);
#if PREFETCH_VALUES
    // The values are loaded only after the look-back: ask for their lines now (lane l < ITEMS
    // the warp's l-th line of 32 values), so that those loads find them in a cache.
    if (PAIRS && has_vals && !IOTA && lane < ITEMS && lane * 32 < wn) {
        const u32 *line = vals_in + wbase + lane * 32;
#if PREFETCH_VALUES == 1
        asm volatile("prefetch.global.L2 [%0];" ::"l"(line));
#else
        asm volatile("prefetch.global.L1 [%0];" ::"l"(line));
#endif
    }
#endif
    volatile u32 *st = status;
    // --8<-- [start:early_counts]
    int *wh = whist + w * RADIX;
#if EARLY_COUNTS
    // Count first (one shared atomic a key): the counts are out before
    // any key is ranked ...
    count_warp_keys<FULL>(ks, wh, lane, wn, shift);
#else
    rank_warp_keys<FULL>(ks, rk, wh, lane, wn, shift);  // count while ranking
#endif
    __syncthreads();
    int total = warp_offsets(whist, tid);
    // Publish this tile's count of each digit at once, so later tiles can
    // use it ...
    u32 flag = tile == 0 ? FLAG_PREFIX : FLAG_AGG;
    if (tid < RADIX) st[tile * RADIX + tid] = flag | (u32)total;
#if EARLY_COUNTS
    // ... then rank each key straight to its place in the tile.
    int start = tile_starts(total, whist, wsum, tid);
    rank_warp_keys<FULL, true>(ks, rk, wh, lane, wn, shift, stile);
#else
    // ... then place the ranked keys.
    int start = stage_tile<FULL>(ks, rk, total, stile, whist, wsum, wn, tid,
                                 shift);
#endif
    // --8<-- [end:early_counts]
    u32 excl = 0;
    if (tid < RADIX) {
        // ... then (the tile staged meanwhile) look back: add the counts of earlier tiles until
        // one has published its prefix.
#if LOOKBACK == 1
        for (int j = tile - 1; j >= 0;) {
            u32 s = st[j * RADIX + tid];
            if ((s & FLAG_MASK) == 0) continue;  // not yet published: spin (tile j has started)
            excl += s & VALUE_MASK;
            if (s & FLAG_PREFIX) break;
            --j;
        }
#else
        // LOOKBACK words are loaded at once (tiles j, j-1, ...; before tile 0, a prefix of 0) and
        // then read in order: each word is a consistent snapshot, so reading an older tile's word
        // early changes nothing but the latency. (Measured slower on an H100: the book's
        // "A wider look-back, measured".)
        for (int j = tile - 1; j >= 0;) {
            u32 s[LOOKBACK];
#pragma unroll
            for (int k = 0; k < LOOKBACK; ++k) s[k] = j - k >= 0 ? st[(j - k) * RADIX + tid] : FLAG_PREFIX;
            int k = 0;
            bool found = false;
#pragma unroll
            for (int q = 0; q < LOOKBACK; ++q) {
                if (found || (s[q] & FLAG_MASK) == 0) break;  // not yet published: spin from tile j - q
                excl += s[q] & VALUE_MASK;
                found = (s[q] & FLAG_PREFIX) != 0;
                ++k;
            }
            if (found) break;
            j -= k;
        }
#endif
        if (tile > 0) st[tile * RADIX + tid] = FLAG_PREFIX | (excl + (u32)total);
        status_next[tile * RADIX + tid] = 0u;
    }
    int base = tid < RADIX ? hist[pass * RADIX + tid] + (int)excl : 0;  // digit's offset + earlier tiles' keys
    scatter_tile<FULL, IOTA>(rk, start, base, vals_in + wbase, (u32)wbase, keys_out, vals_out, stile, dbase, sdig, wn,
                             m, tid, shift, has_vals);
}

template <bool FIRST, bool IOTA = false>
__device__ __forceinline__ void onesweep_pass(const u32 *keys_in, const u32 *vals_in, u32 *keys_out, u32 *vals_out,
                                              const int *hist, int *tile_counter, u32 *status, u32 *status_next,
                                              int n, int shift, int pass, int has_vals) {
    __shared__ u32 stile[TILE];
    __shared__ int whist[NWARPS * RADIX];
    __shared__ int dbase[RADIX];
    __shared__ int wsum[DIGIT_WARPS];
    __shared__ unsigned char sdig[PAIRS && VALUE_DIGITS ? TILE : 1];
    __shared__ int tile_sh;
    int tid = threadIdx.x;
    if (FIRST && !hist[MAX_PASSES * RADIX + pass]) {  // one digit holds every key: nothing moves
        if (tid < RADIX) status_next[blockIdx.x * RADIX + tid] = 0u;
        return;
    }
    if (tid == 0) tile_sh = atomicAdd(&tile_counter[pass], 1);  // the tile: in order of start
    for (int j = tid; j < NWARPS * RADIX; j += BLOCK) whist[j] = 0;
    __syncthreads();
    int tile = tile_sh;
    if (FULL_TILES && (long)(tile + 1) * TILE <= n)
        onesweep_tile<true, IOTA>(keys_in, vals_in, keys_out, vals_out, hist, status, status_next, n, shift, pass, has_vals,
                            tile, stile, whist, dbase, wsum, sdig);
    else
        onesweep_tile<false, IOTA>(keys_in, vals_in, keys_out, vals_out, hist, status, status_next, n, shift, pass, has_vals,
                             tile, stile, whist, dbase, wsum, sdig);
}

extern "C" __global__ void __launch_bounds__(BLOCK, ONESWEEP_MIN_BLOCKS) onesweep(const u32 *keys_in, const u32 *vals_in, u32 *keys_out,
                                                             u32 *vals_out, const int *hist, int *tile_counter,
                                                             u32 *status, u32 *status_next, int n, int shift,
                                                             int pass, int has_vals) {
    onesweep_pass<false>(keys_in, vals_in, keys_out, vals_out, hist, tile_counter, status, status_next, n, shift, pass,
                         has_vals);
}

extern "C" __global__ void __launch_bounds__(BLOCK, ONESWEEP_MIN_BLOCKS) onesweep_first(const u32 *keys_in, const u32 *vals_in,
                                                             u32 *keys_out, u32 *vals_out, const int *hist,
                                                             int *tile_counter, u32 *status, u32 *status_next, int n,
                                                             int shift, int pass, int has_vals) {
    onesweep_pass<true>(keys_in, vals_in, keys_out, vals_out, hist, tile_counter, status, status_next, n, shift, pass,
                        has_vals);
}

// --8<-- [start:onesweep_iota]
#if PAIRS
// An argsort's passes that read the input (up to the first that moves keys): each value is its
// key's position, made up from the warp's first position rather than read, so the host writes no
// positions (an `iota` launch) before the sort and the pass reads 4 bytes a key fewer. vals_in
// is not read: scatter_tile<FULL, true> loads no values and stages wpos + 32·it + lane, the
// place key it of the lane was loaded from.
extern "C" __global__ void __launch_bounds__(BLOCK, ONESWEEP_MIN_BLOCKS) onesweep_iota(const u32 *keys_in, const u32 *vals_in,
                                                             u32 *keys_out, u32 *vals_out, const int *hist,
                                                             int *tile_counter, u32 *status, u32 *status_next, int n,
                                                             int shift, int pass, int has_vals) {
    onesweep_pass<false, true>(keys_in, vals_in, keys_out, vals_out, hist, tile_counter, status, status_next, n, shift,
                               pass, has_vals);
}

extern "C" __global__ void __launch_bounds__(BLOCK, ONESWEEP_MIN_BLOCKS) onesweep_first_iota(const u32 *keys_in,
                                                             const u32 *vals_in, u32 *keys_out, u32 *vals_out,
                                                             const int *hist, int *tile_counter, u32 *status,
                                                             u32 *status_next, int n, int shift, int pass,
                                                             int has_vals) {
    onesweep_pass<true, true>(keys_in, vals_in, keys_out, vals_out, hist, tile_counter, status, status_next, n, shift,
                              pass, has_vals);
}
#endif
// --8<-- [end:onesweep_iota]
// --8<-- [end:onesweep]

// ---------------------------------------------------------------------------- distinct

// --8<-- [start:distinct]
extern "C" __global__ void head_flags(const u32 *keys, int n, int *flags) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) flags[i] = (i == 0 || keys[i] != keys[i - 1]) ? 1 : 0;
}

extern "C" __global__ void compact(const u32 *keys, const int *flags, const int *pos, u32 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && flags[i]) out[pos[i]] = keys[i];
}
// --8<-- [end:distinct]
