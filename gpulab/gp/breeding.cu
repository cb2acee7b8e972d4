// Chapter 3: GP breeding on the GPU in CUDA C, one thread per child: the CUDA C twin of
// gpulab/gp/breeding_gpu.py, which runs gpulab/gp/breeding.py's per-child functions
// (_plan_child, _write_child and the operators they call). Every function below is a line-for-
// line translation of the Python function of the same name (without the leading underscore),
// with the same integer widths and the same order of random draws, so the children are the CPU
// breeding's bit for bit. Opcodes come as -D macros from gpulab.gp.opcodes.
//
// plan: int64 [P, NPLAN] (columns A, KIND, TREE, LO, HI, SLO, SHI, ROOM, LEN0, LEN1).
// Scratch, one row per child: st (row stride st_stride), ops / left (mut_depth + 2),
// grown (max_nodes + 8).

#ifndef NF
#define NF 17
#endif
#ifndef NB
#define NB 14
#endif
#ifndef OP_AND
#define OP_AND 31
#endif
#ifndef OP_NOT
#define OP_NOT 33
#endif
#ifndef OP_LT
#define OP_LT 34
#endif
#ifndef ELITE_THREADS
#define ELITE_THREADS 256
#endif
#define NPLAN 10
enum { A_, KIND, TREE, LO, HI, SLO, SHI, ROOM, LEN0, LEN1 };

typedef unsigned long long u64;
typedef long long i64;
typedef unsigned char u8;

#define GOLDEN 0x9E3779B97F4A7C15ULL

__device__ __forceinline__ u64 mix(u64 z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

__device__ __forceinline__ void seed_stream(u64 &s, i64 seed, i64 k) {
    s = mix((u64)seed * GOLDEN + mix((u64)k + GOLDEN));
}

__device__ __forceinline__ u64 next(u64 &s) {
    s += GOLDEN;
    return mix(s);
}

__device__ __forceinline__ i64 below(u64 &s, i64 n) { return (i64)(((next(s) >> 32) * (u64)n) >> 32); }

__device__ __forceinline__ double uniform(u64 &s) {
    return (double)(next(s) >> 11) * (1.0 / 9007199254740992.0);
}

__device__ __forceinline__ i64 choose(u64 &s, i64 depth, bool full, double p_leaf) {
    if (depth <= 1) return 5;
    if (depth == 2) return full ? below(s, 5) : below(s, 6);
    if (!full && uniform(s) < p_leaf) return 5;
    if (full) return below(s, 3);
    return below(s, 5);
}

__device__ i64 grow(u64 &s, u8 *out, i64 n, i64 limit, bool is_float, i64 depth, bool full, double p_leaf, int *ops,
                    int *left) {
    if (is_float) {
        if (n + 1 > limit) return -1;
        out[n] = (u8)below(s, NF);
        return n + 1;
    }
    i64 sp = 0;
    i64 d = depth;
    while (true) {
        i64 c = choose(s, d, full, p_leaf);
        if (c < 3) {
            ops[sp] = OP_AND + (int)c;
            left[sp] = c == 2 ? 1 : 2;
            sp += 1;
            d -= 1;
            continue;
        }
        if (n + (c == 5 ? 1 : 3) + sp > limit) return -1;
        if (c == 5) {
            out[n] = (u8)(NF + below(s, NB));
            n += 1;
        } else {
            out[n] = (u8)below(s, NF);
            out[n + 1] = (u8)below(s, NF);
            out[n + 2] = (u8)(OP_LT + (c - 3));
            n += 3;
        }
        while (sp > 0) {
            left[sp - 1] -= 1;
            if (left[sp - 1] > 0) break;
            sp -= 1;
            out[n] = (u8)ops[sp];
            n += 1;
            d += 1;
        }
        if (sp == 0) return n;
    }
}

__device__ __forceinline__ bool better_values(double fc, int sc, double fb, int sb, bool parsimony) {
    if (fc != fb) return fc > fb;
    return parsimony && sc < sb;
}

__device__ __forceinline__ bool better(i64 c, i64 best, const double *fitness, const int *sizes, bool parsimony) {
    return better_values(fitness[c], sizes[c], fitness[best], sizes[best], parsimony);
}

__device__ __forceinline__ i64 tournament(u64 &s, const double *fitness, const int *sizes, i64 P, i64 k,
                                          bool parsimony) {
    i64 best = below(s, P);
    for (i64 i = 0; i < k - 1; i++) {
        i64 c = below(s, P);
        if (better(c, best, fitness, sizes, parsimony)) best = c;
    }
    return best;
}

__device__ __forceinline__ bool wanted(int op, i64 want, bool only_funcs) {
    return (want < 0 || (op < NF) == (want == 1)) && (!only_funcs || op >= OP_AND);
}

__device__ i64 pick(u64 &s, const u8 *code, i64 a, i64 b, i64 want, double p_func) {
    i64 L = b - a;
    bool only_funcs = want != 1 && L > 1 && uniform(s) < p_func;
    for (int i = 0; i < 64; i++) {
        i64 p = a + below(s, L);
        if (wanted(code[p], want, only_funcs)) return p;
    }
    i64 count = 0;
    for (i64 p = a; p < b; p++) count += wanted(code[p], want, only_funcs);
    if (count == 0) return -1;
    i64 k = below(s, count);
    for (i64 p = a; p < b; p++) {
        if (wanted(code[p], want, only_funcs)) {
            if (k == 0) return p;
            k -= 1;
        }
    }
    return -1;
}

__device__ __forceinline__ int push_children(int op, int d, int *st, int sp) {
    if (op == OP_NOT) {
        st[sp] = d + 1;
        return sp + 1;
    }
    if (op >= OP_AND) {
        st[sp] = d + 1;
        st[sp + 1] = d + 1;
        return sp + 2;
    }
    return sp;
}

// the subtree rooted at q: returns its first position, its height in *h
__device__ i64 subtree(const u8 *code, i64 q, int *st, i64 *h) {
    st[0] = 1;
    int sp = 1;
    i64 p = q;
    i64 height = 0;
    while (sp > 0) {
        sp -= 1;
        int d = st[sp];
        height = height > d ? height : d;
        sp = push_children(code[p], d, st, sp);
        p -= 1;
    }
    *h = height;
    return p + 1;
}

__device__ i64 depth_at(const u8 *code, i64 b, i64 p, int *st) {
    st[0] = 1;
    int sp = 1;
    i64 pos = b - 1;
    while (true) {
        sp -= 1;
        int d = st[sp];
        if (pos == p) return d;
        sp = push_children(code[pos], d, st, sp);
        pos -= 1;
    }
}

__device__ __forceinline__ void copy(u8 *dst, i64 d0, const u8 *src, i64 s0, i64 n) {
    for (i64 k = 0; k < n; k++) dst[d0 + k] = src[s0 + k];
}

extern "C" __global__ void breed_plan(const u8 *code, const int *offsets, const int *tree_depth, const double *fitness,
                                      const int *sizes, const i64 *elites, i64 n_elites, i64 P, i64 ntour,
                                      double p_cross, double p_mut, i64 max_depth, i64 max_nodes, i64 mut_depth,
                                      double p_leaf, double p_func, int parsimony_, i64 seed, int *st_all,
                                      i64 st_stride, int *ops_all, int *left_all, u8 *grown_all, i64 *plan,
                                      u64 *grown_at) {
    i64 c = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= P) return;
    bool parsimony = parsimony_ != 0;
    int *st = st_all + c * st_stride;
    int *ops = ops_all + c * (mut_depth + 2);
    int *left = left_all + c * (mut_depth + 2);
    u8 *grown = grown_all + c * (max_nodes + 8);
    u64 s;
    seed_stream(s, seed, c);
    i64 a, kind;
    if (c < n_elites) {
        a = elites[c];
        kind = 0;
    } else {
        a = tournament(s, fitness, sizes, P, ntour, parsimony);
        double r = uniform(s);
        kind = r < p_cross ? 1 : (r < p_cross + p_mut ? 2 : 0);
    }
    i64 b = kind == 1 ? tournament(s, fitness, sizes, P, ntour, parsimony) : a;
    i64 t = below(s, 2);
    i64 s0 = offsets[2 * a + t], s1 = offsets[2 * a + t + 1];
    i64 lo = 0, hi = 0, slo = 0, shi = 0, room = 0;
    i64 new_len = -1;
    if (kind != 0 && tree_depth[2 * a + t] <= max_depth) {
        i64 p = pick(s, code, s0, s1, -1, p_func);
        i64 unused;
        lo = subtree(code, p, st, &unused);
        hi = p + 1;
        i64 rest = (s1 - s0) - (hi - lo);
        if (kind == 1) {
            i64 b0 = offsets[2 * b + t], b1 = offsets[2 * b + t + 1];
            i64 q = pick(s, code, b0, b1, code[p] < NF ? 1 : 0, p_func);
            if (q >= 0) {
                i64 qh;
                i64 qlo = subtree(code, q, st, &qh);
                bool deep = tree_depth[2 * a + t] - 1 + qh > max_depth;
                if (rest + (q + 1 - qlo) <= max_nodes && (!deep || depth_at(code, s1, p, st) - 1 + qh <= max_depth)) {
                    slo = qlo;
                    shi = q + 1;
                    new_len = rest + (shi - slo);
                }
            }
        } else {
            room = code[p] < NF ? 1 : mut_depth;
            if (room > 1 && tree_depth[2 * a + t] - 1 + mut_depth > max_depth) {
                i64 r2 = max_depth - depth_at(code, s1, p, st) + 1;
                room = mut_depth < r2 ? mut_depth : r2;
            }
            if (room >= 1) {
                grown_at[c] = s;
                i64 g = grow(s, grown, 0, max_nodes - rest, code[p] < NF, room, false, p_leaf, ops, left);
                if (g >= 0) new_len = rest + g;
            }
        }
    }
    i64 *row = plan + c * NPLAN;
    row[A_] = a;
    row[KIND] = new_len >= 0 ? kind : 0;
    row[TREE] = t;
    row[LO] = lo;
    row[HI] = hi;
    row[SLO] = slo;
    row[SHI] = shi;
    row[ROOM] = room;
    for (int u = 0; u < 2; u++) {
        i64 full = offsets[2 * a + u + 1] - offsets[2 * a + u];
        row[LEN0 + u] = (u == t && new_len >= 0) ? new_len : full;
    }
}

extern "C" __global__ void breed_write(const u8 *code, const int *offsets, const i64 *plan, const u64 *grown_at,
                                       const int *out_off, u8 *out, i64 *src, i64 P, i64 max_nodes, double p_leaf,
                                       i64 mut_depth, int *ops_all, int *left_all) {
    i64 c = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= P) return;
    int *ops = ops_all + c * (mut_depth + 2);
    int *left = left_all + c * (mut_depth + 2);
    const i64 *row = plan + c * NPLAN;
    i64 a = row[A_], kind = row[KIND], t = row[TREE];
    for (int u = 0; u < 2; u++) {
        i64 s0 = offsets[2 * a + u], s1 = offsets[2 * a + u + 1];
        i64 n = out_off[2 * c + u];
        if (kind == 0 || u != t) {
            copy(out, n, code, s0, s1 - s0);
            src[2 * c + u] = 2 * a + u;
            continue;
        }
        src[2 * c + u] = -1;
        i64 lo = row[LO], hi = row[HI];
        copy(out, n, code, s0, lo - s0);
        n += lo - s0;
        if (kind == 1) {
            i64 slo = row[SLO], shi = row[SHI];
            copy(out, n, code, slo, shi - slo);
            n += shi - slo;
        } else {
            u64 s = grown_at[c];
            i64 rest = (s1 - s0) - (hi - lo);
            n = grow(s, out, n, n + max_nodes - rest, code[hi - 1] < NF, row[ROOM], false, p_leaf, ops, left);
        }
        copy(out, n, code, hi, s1 - hi);
    }
}

// --8<-- [start:init]
// tree t of the initial population (breeding.py's _init_tree): stream t of seed, its depth and
// method from the ramp (breeding.py's _ramp: individual i = t / 2 takes depth min_depth + i % D
// and is full in every other round of D individuals), redrawn while longer than max_nodes
__device__ i64 init_tree(i64 t, i64 min_depth, i64 max_depth, i64 max_nodes, double p_leaf, i64 seed, u8 *buf,
                         int *ops, int *left) {
    u64 s;
    seed_stream(s, seed, t);
    // --8<-- [start:ramp]
    i64 i = t / 2, D = max_depth - min_depth + 1;
    i64 depth = min_depth + i % D;
    bool full = (i / D) % 2 == 1;
    // --8<-- [end:ramp]
    i64 m = -1;
    while (m < 0) m = grow(s, buf, 0, max_nodes, false, depth, full, p_leaf, ops, left);
    return m;
}

// thread t = tree t: its code into grown row t, its length into lens[t], src[t] = -1 (a new tree)
extern "C" __global__ void init_trees(i64 min_depth, i64 max_depth, i64 max_nodes, double p_leaf, i64 seed,
                                      u8 *grown, i64 grown_stride, int *ops, int *left, i64 ops_stride, int *lens,
                                      i64 *src, i64 T) {
    i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T) return;
    lens[t] = (int)init_tree(t, min_depth, max_depth, max_nodes, p_leaf, seed, grown + t * grown_stride,
                             ops + t * ops_stride, left + t * ops_stride);
    src[t] = -1;
}

// thread t = tree t: grown row t copied to its place in code (offsets: the lengths' prefix sum)
extern "C" __global__ void init_write(const u8 *grown, i64 grown_stride, const int *offsets, u8 *code, i64 T) {
    i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T) return;
    copy(code, offsets[t], grown + t * grown_stride, 0, offsets[t + 1] - offsets[t]);
}
// --8<-- [end:init]

// the 2P tree lengths of the children, from their plan rows: what the offsets' prefix sum needs
extern "C" __global__ void plan_lengths(const i64 *plan, int *lens, i64 P) {
    i64 c = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= P) return;
    lens[2 * c] = (int)plan[c * NPLAN + LEN0];
    lens[2 * c + 1] = (int)plan[c * NPLAN + LEN1];
}

// --8<-- [start:elites]
// individual c (fitness fc, size sc) goes before b among the elites: better, or as good and
// earlier: the order in which the CPU's scan (_elites) keeps the first of equals. -1 goes last.
__device__ __forceinline__ bool ahead(double fc, int sc, i64 c, double fb, int sb, i64 b, bool parsimony) {
    if (c < 0 || b < 0) return b < 0 && c >= 0;
    if (better_values(fc, sc, fb, sb, parsimony)) return true;
    return !better_values(fb, sb, fc, sc, parsimony) && c < b;
}

// out[0..n) = the n best, in order, of individuals lo..hi-1 (cand null) or of cand[lo..hi) (-1
// entries skipped); -1 where there are fewer. Per elite, each thread keeps the best of its
// strided share that comes after the last elite chosen, and a tree reduction in shared memory,
// carrying fitness and size along, finds the best of those.
__device__ void best_in_order(const double *fitness, const int *sizes, bool parsimony, const i64 *cand, i64 lo,
                              i64 hi, i64 *out, i64 n) {
    __shared__ double bf[ELITE_THREADS];
    __shared__ int bs[ELITE_THREADS];
    __shared__ i64 bi[ELITE_THREADS];
    i64 t = threadIdx.x;
    double lf = 0;
    int ls = 0;
    i64 li = -1;
    for (i64 k = 0; k < n; k++) {
        double mf = lf;
        int ms = ls;
        i64 mi = -1;
        for (i64 j = lo + t; j < hi; j += blockDim.x) {
            i64 c = cand ? cand[j] : j;
            if (c < 0) continue;
            double fc = fitness[c];
            int sc = sizes[c];
            if ((li < 0 || ahead(lf, ls, li, fc, sc, c, parsimony)) && ahead(fc, sc, c, mf, ms, mi, parsimony)) {
                mf = fc;
                ms = sc;
                mi = c;
            }
        }
        bf[t] = mf;
        bs[t] = ms;
        bi[t] = mi;
        __syncthreads();
        for (i64 h = blockDim.x / 2; h > 0; h /= 2) {
            if (t < h && ahead(bf[t + h], bs[t + h], bi[t + h], bf[t], bs[t], bi[t], parsimony)) {
                bf[t] = bf[t + h];
                bs[t] = bs[t + h];
                bi[t] = bi[t + h];
            }
            __syncthreads();
        }
        lf = bf[0];
        ls = bs[0];
        li = bi[0];
        __syncthreads();  // (read by all before the next pass writes)
        if (t == 0) out[k] = li;
        if (li < 0) {  // (none left: the rest stay -1; the same in every thread)
            for (i64 m = k + 1 + t; m < n; m += blockDim.x) out[m] = -1;
            return;
        }
    }
}

// block b: the n best of individuals b*chunk .. (b+1)*chunk - 1 into cand[b*n .. b*n+n), in
// order: every elite is among its block's n best, so the elites are among these candidates
extern "C" __global__ void elite_candidates(const double *fitness, const int *sizes, i64 P, int parsimony, i64 chunk,
                                            i64 *cand, i64 n) {
    i64 lo = (i64)blockIdx.x * chunk;
    best_in_order(fitness, sizes, parsimony != 0, nullptr, lo, lo + chunk < P ? lo + chunk : P, cand + blockIdx.x * n,
                  n);
}

// one block: the n best of the m candidates, in order (the CPU's _elites for fitness without NaN:
// ahead is then a total order, so the individuals not yet taken are exactly those after the last)
extern "C" __global__ void select_elites(const double *fitness, const int *sizes, int parsimony, const i64 *cand,
                                         i64 m, i64 *elites, i64 n) {
    best_in_order(fitness, sizes, parsimony != 0, cand, 0, m, elites, n);
}
// --8<-- [end:elites]
