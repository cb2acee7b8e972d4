// Chapter 3 kernels in CUDA C: the RPN interpreter, from global-memory stacks to bit-slicing.
// The same kernels as kernels_numba.py, line by line; compile-time sizes come as -D macros from
// the variant registry (STACK, WPB, CODE, BSTACK, DAYS, TW). Every kernel writes money[i*S + s] (the money
// after the last day, positions sold), a trace byte per day when trace_on, and flags[0] = 1 when
// a buy would reach 2^29 shares. Indices are 64-bit unsigned, as in the numba kernels.

#ifndef STACK
#define STACK 32
#endif
#ifndef WPB
#define WPB 4
#endif
#ifndef CODE
#define CODE 512
#endif
#ifndef BSTACK
#define BSTACK 16
#endif
#ifndef DAYS
#define DAYS 4
#endif
#ifndef TW
#define TW 4
#endif
#ifndef TRADE
#define TRADE 1  // 0: a diagnostic build without the trading pass (the tuning script's breakdown)
#endif

// --8<-- [start:common]
typedef unsigned long long u64;
#define NF 17ULL     // float terminals
#define NB 14ULL     // boolean terminals
#define CP 15ULL     // the close price (a float terminal)
#define NMASK 303ULL // bit masks per stock and word: 17*17 comparisons + 14 booleans

// (global thread, individual, stock) when one warp evaluates one individual on 32 stocks
__device__ __forceinline__ void warp_task(int S, u64& t, u64& i, u64& s)
{
    t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 groups = ((u64)S + 31) / 32;
    u64 warp = t / 32;
    i = warp / groups;
    s = (warp % groups) * 32 + (t % 32);
}
// --8<-- [end:common]

// --8<-- [start:trade_day]
// One day of the decision matrix (gpulab/gp/trading.py): 0 nothing, 1 bought, 2 sold, 4 overflow.
// n * close is exact in double (n < 2^29, close has 24 significant bits), so a contraction of
// money - n * close into an FMA gives the same bits as the CPU.
__device__ __forceinline__ int trade_day(int buy, int sell, double close, double& money, long long& shares)
{
    if (buy && !sell) {
        if (shares == 0) {
            double avail = money - 1.0;  // the fee
            double q = avail / close;
            if (q >= 536870912.0) return 4;  // 2^29 shares or more
            if (q >= 1.0) {
                long long n = (long long)q;
                if ((double)n * close > avail) n -= 1;  // q was rounded up to an integer
                if (n >= 1) {
                    money = avail - (double)n * close;
                    shares = n;
                    return 1;
                }
            }
        }
    } else if (sell && !buy) {
        if (shares > 0) {
            money = money + (double)shares * close - 1.0;
            shares = 0;
            return 2;
        }
    }
    return 0;
}
// --8<-- [end:trade_day]

__device__ __forceinline__ unsigned char trace_byte(int buy, int sell, int act)
{
    return (unsigned char)(buy + 2 * sell + 4 * (act & 3));
}

// --8<-- [start:stack_eval]
// Algorithm 2 for one stock-day: float terminal k at F[fbase + k*fstride], boolean k at
// B[bbase + k*bstride], stack slot j at stack[sbase + j*sstride] (booleans as 0.0f / 1.0f).
__device__ __forceinline__ int stack_eval(const unsigned char* code, u64 a, u64 b,
                                          const float* __restrict__ F, u64 fbase, u64 fstride,
                                          const unsigned char* __restrict__ B, u64 bbase, u64 bstride,
                                          float* stack, u64 sbase, u64 sstride)
{
    u64 sp = 0;
    for (u64 pc = a; pc < b; ++pc) {
        unsigned op = code[pc];
        if (op < 17) {  // float terminal
            stack[sbase + sp * sstride] = F[fbase + op * fstride];
            sp += 1;
        } else if (op < 31) {  // boolean terminal
            stack[sbase + sp * sstride] = (float)B[bbase + (op - 17) * bstride];
            sp += 1;
        } else if (op == 33) {  // NOT
            u64 k = sbase + (sp - 1) * sstride;
            stack[k] = (float)(stack[k] == 0.0f);
        } else {  // AND, OR, <, >: the right argument is on top
            float r = stack[sbase + (sp - 1) * sstride];
            sp -= 1;
            u64 k = sbase + (sp - 1) * sstride;
            float l = stack[k];
            int v;
            if (op == 31) v = (l != 0.0f) && (r != 0.0f);
            else if (op == 32) v = (l != 0.0f) || (r != 0.0f);
            else if (op == 34) v = l < r;
            else v = l > r;
            stack[k] = (float)v;
        }
    }
    return stack[sbase] != 0.0f;
}
// --8<-- [end:stack_eval]

// --8<-- [start:thread_global]
extern "C" __global__ void gp_thread_global(const unsigned char* code, const int* offs, int P, int S, int D,
                                            const float* __restrict__ F, const unsigned char* __restrict__ B,
                                            float* stack, double* money, unsigned char* trace, int trace_on,
                                            int* flags)
{
    u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 uS = S, uD = D;
    if (t >= (u64)P * uS) return;
    u64 i = t / uS, s = t % uS;
    u64 a = offs[2 * i], mid = offs[2 * i + 1], b = offs[2 * i + 2];
    double m = 10000.0;
    long long sh = 0;
    for (u64 d = 0; d < uD; ++d) {
        u64 fbase = s * NF * uD + d;  // F[s, k, d] = F[(s*17 + k)*D + d]
        u64 bbase = s * NB * uD + d;
        int buy = stack_eval(code, a, mid, F, fbase, uD, B, bbase, uD, stack, t * STACK, 1);
        int sell = stack_eval(code, mid, b, F, fbase, uD, B, bbase, uD, stack, t * STACK, 1);
        int act = trade_day(buy, sell, (double)F[fbase + CP * uD], m, sh);
        if (act == 4) flags[0] = 1;
        if (trace_on) trace[t * uD + d] = trace_byte(buy, sell, act);
    }
    if (sh > 0) m = m + sh * (double)F[s * NF * uD + CP * uD + uD - 1] - 1.0;
    money[t] = m;
}
// --8<-- [end:thread_global]

// --8<-- [start:coalesced]
extern "C" __global__ void gp_coalesced(const unsigned char* code, const int* offs, int P, int S, int D,
                                        const float* __restrict__ F, const unsigned char* __restrict__ B,
                                        float* stack, double* money, unsigned char* trace, int trace_on,
                                        int* flags)
{
    u64 t, i, s;
    warp_task(S, t, i, s);
    u64 uS = S, uD = D;
    if (i >= (u64)P || s >= uS) return;  // idle lanes of the last group, and the grid's tail
    u64 T = (u64)gridDim.x * blockDim.x;
    u64 a = offs[2 * i], mid = offs[2 * i + 1], b = offs[2 * i + 2];
    double m = 10000.0;
    long long sh = 0;
    for (u64 d = 0; d < uD; ++d) {
        u64 fbase = d * NF * uS + s;  // F[d, k, s] = F[(d*17 + k)*S + s]
        u64 bbase = d * NB * uS + s;
        int buy = stack_eval(code, a, mid, F, fbase, uS, B, bbase, uS, stack, t, T);
        int sell = stack_eval(code, mid, b, F, fbase, uS, B, bbase, uS, stack, t, T);
        int act = trade_day(buy, sell, (double)F[fbase + CP * uS], m, sh);
        if (act == 4) flags[0] = 1;
        if (trace_on) trace[(i * uS + s) * uD + d] = trace_byte(buy, sell, act);
    }
    if (sh > 0) m = m + sh * (double)F[((uD - 1) * NF + CP) * uS + s] - 1.0;
    money[i * uS + s] = m;
}
// --8<-- [end:coalesced]

// --8<-- [start:constant]
// A batch of individuals: 2*nb + 1 uint16 tree offsets (relative to the code), then the code.
__constant__ unsigned char gp_programs[65536];

__device__ __forceinline__ u64 const_u16(u64 k)
{
    return (u64)gp_programs[k] | ((u64)gp_programs[k + 1] << 8);
}

__device__ __forceinline__ int const_eval(u64 a, u64 b, const float* __restrict__ F, u64 fbase, u64 fstride,
                                          const unsigned char* __restrict__ B, u64 bbase, u64 bstride,
                                          float* stack, u64 sbase, u64 sstride)
{
    u64 sp = 0;
    for (u64 pc = a; pc < b; ++pc) {
        unsigned op = gp_programs[pc];  // the same address in every lane: a broadcast
        if (op < 17) {
            stack[sbase + sp * sstride] = F[fbase + op * fstride];
            sp += 1;
        } else if (op < 31) {
            stack[sbase + sp * sstride] = (float)B[bbase + (op - 17) * bstride];
            sp += 1;
        } else if (op == 33) {
            u64 k = sbase + (sp - 1) * sstride;
            stack[k] = (float)(stack[k] == 0.0f);
        } else {
            float r = stack[sbase + (sp - 1) * sstride];
            sp -= 1;
            u64 k = sbase + (sp - 1) * sstride;
            float l = stack[k];
            int v;
            if (op == 31) v = (l != 0.0f) && (r != 0.0f);
            else if (op == 32) v = (l != 0.0f) || (r != 0.0f);
            else if (op == 34) v = l < r;
            else v = l > r;
            stack[k] = (float)v;
        }
    }
    return stack[sbase] != 0.0f;
}

extern "C" __global__ void gp_constant(int i0, int nb, int S, int D, const float* __restrict__ F,
                                       const unsigned char* __restrict__ B, float* stack, double* money,
                                       unsigned char* trace, int trace_on, int* flags)
{
    u64 t, j, s;  // j: the individual within the batch
    warp_task(S, t, j, s);
    u64 uS = S, uD = D;
    if (j >= (u64)nb || s >= uS) return;
    u64 T = (u64)gridDim.x * blockDim.x;
    u64 i = (u64)i0 + j;
    u64 code0 = 2 * (2 * (u64)nb + 1);  // the code starts after the offsets
    u64 a = code0 + const_u16(2 * (2 * j));
    u64 mid = code0 + const_u16(2 * (2 * j + 1));
    u64 b = code0 + const_u16(2 * (2 * j + 2));
    double m = 10000.0;
    long long sh = 0;
    for (u64 d = 0; d < uD; ++d) {
        u64 fbase = d * NF * uS + s;
        u64 bbase = d * NB * uS + s;
        int buy = const_eval(a, mid, F, fbase, uS, B, bbase, uS, stack, t, T);
        int sell = const_eval(mid, b, F, fbase, uS, B, bbase, uS, stack, t, T);
        int act = trade_day(buy, sell, (double)F[fbase + CP * uS], m, sh);
        if (act == 4) flags[0] = 1;
        if (trace_on) trace[(i * uS + s) * uD + d] = trace_byte(buy, sell, act);
    }
    if (sh > 0) m = m + sh * (double)F[((uD - 1) * NF + CP) * uS + s] - 1.0;
    money[i * uS + s] = m;
}
// --8<-- [end:constant]

// The warp's lanes copy individual i's two trees into scode; returns (start of sell, end).
template <typename T>
__device__ __forceinline__ void load_program(const T* code, const int* offs, int P, u64 i, T* scode, u64 lane,
                                             u64& mid, u64& end)
{
    mid = 0;
    end = 0;
    if (i >= (u64)P) return;
    u64 a = offs[2 * i], m = offs[2 * i + 1], b = offs[2 * i + 2];
    for (u64 k = lane; k < b - a; k += 32) scode[k] = code[a + k];
    mid = m - a;
    end = b - a;
}

// --8<-- [start:shared]
extern "C" __global__ void gp_shared(const unsigned char* code, const int* offs, int P, int S, int D,
                                     const float* __restrict__ F, const unsigned char* __restrict__ B,
                                     double* money, unsigned char* trace, int trace_on, int* flags)
{
    __shared__ unsigned char scode[WPB][CODE];
    __shared__ float sstack[STACK * WPB * 32];
    u64 t, i, s, mid, end;
    warp_task(S, t, i, s);
    u64 w = threadIdx.x / 32;
    load_program(code, offs, P, i, scode[w], t % 32, mid, end);
    __syncthreads();
    u64 uS = S, uD = D;
    if (i >= (u64)P || s >= uS) return;
    const unsigned char* prog = scode[w];
    u64 tb = threadIdx.x;
    double m = 10000.0;
    long long sh = 0;
    for (u64 d = 0; d < uD; ++d) {
        u64 fbase = d * NF * uS + s;
        u64 bbase = d * NB * uS + s;
        int buy = stack_eval(prog, 0, mid, F, fbase, uS, B, bbase, uS, sstack, tb, WPB * 32);
        int sell = stack_eval(prog, mid, end, F, fbase, uS, B, bbase, uS, sstack, tb, WPB * 32);
        int act = trade_day(buy, sell, (double)F[fbase + CP * uS], m, sh);
        if (act == 4) flags[0] = 1;
        if (trace_on) trace[(i * uS + s) * uD + d] = trace_byte(buy, sell, act);
    }
    if (sh > 0) m = m + sh * (double)F[((uD - 1) * NF + CP) * uS + s] - 1.0;
    money[i * uS + s] = m;
}
// --8<-- [end:shared]

// --8<-- [start:register_eval]
// No memory stack: floats only meet in < and >, right after their two terminals (two
// registers f0, f1); every other entry is a boolean, a bit of `bits` (the top is bit 0).
__device__ __forceinline__ int register_eval(const unsigned char* code, u64 a, u64 b,
                                             const float* __restrict__ F, u64 fbase, u64 fstride,
                                             const unsigned char* __restrict__ B, u64 bbase, u64 bstride)
{
    unsigned bits = 0;
    float f0 = 0.0f, f1 = 0.0f;
    for (u64 pc = a; pc < b; ++pc) {
        unsigned op = code[pc];
        if (op < 17) {
            f0 = f1;
            f1 = F[fbase + op * fstride];
        } else if (op < 31) {
            bits = (bits << 1) | (unsigned)B[bbase + (op - 17) * bstride];
        } else if (op == 31) {  // AND: pop the top, clear the new top unless the popped bit was 1
            unsigned top = bits & 1u;
            bits = (bits >> 1) & (0xFFFFFFFEu | top);
        } else if (op == 32) {  // OR
            unsigned top = bits & 1u;
            bits = (bits >> 1) | top;
        } else if (op == 33) {  // NOT
            bits ^= 1u;
        } else if (op == 34) {
            bits = (bits << 1) | (unsigned)(f0 < f1);
        } else {
            bits = (bits << 1) | (unsigned)(f0 > f1);
        }
    }
    return (bits & 1u) != 0;
}
// --8<-- [end:register_eval]

// --8<-- [start:register_days]
// register_eval on DAYS consecutive days at once: one opcode fetch and dispatch per node for all
// of them. Day j has its own bit-stack and float pair; the unrolled loops over j make the arrays
// 3*DAYS registers, and the DAYS loads of a float terminal are in flight together. Returns the
// tree's values as a word, bit j = day j.
__device__ __forceinline__ unsigned register_eval_days(const unsigned char* code, u64 a, u64 b,
                                                       const float* __restrict__ F, u64 fbase, u64 fday,
                                                       const unsigned char* __restrict__ B, u64 bbase, u64 bday,
                                                       u64 stride)
{
    unsigned bits[DAYS];
    float f0[DAYS], f1[DAYS];
#pragma unroll
    for (int j = 0; j < DAYS; ++j) {
        bits[j] = 0;
        f0[j] = 0.0f;
        f1[j] = 0.0f;
    }
    for (u64 pc = a; pc < b; ++pc) {
        unsigned op = code[pc];
        if (op < 17) {
            u64 fk = fbase + op * stride;
#pragma unroll
            for (int j = 0; j < DAYS; ++j) {
                f0[j] = f1[j];
                f1[j] = F[fk + (u64)j * fday];
            }
        } else if (op < 31) {
            u64 bk = bbase + (op - 17) * stride;
#pragma unroll
            for (int j = 0; j < DAYS; ++j) bits[j] = (bits[j] << 1) | (unsigned)B[bk + (u64)j * bday];
        } else if (op == 31) {
#pragma unroll
            for (int j = 0; j < DAYS; ++j) {
                unsigned top = bits[j] & 1u;
                bits[j] = (bits[j] >> 1) & (0xFFFFFFFEu | top);
            }
        } else if (op == 32) {
#pragma unroll
            for (int j = 0; j < DAYS; ++j) {
                unsigned top = bits[j] & 1u;
                bits[j] = (bits[j] >> 1) | top;
            }
        } else if (op == 33) {
#pragma unroll
            for (int j = 0; j < DAYS; ++j) bits[j] ^= 1u;
        } else if (op == 34) {
#pragma unroll
            for (int j = 0; j < DAYS; ++j) bits[j] = (bits[j] << 1) | (unsigned)(f0[j] < f1[j]);
        } else {
#pragma unroll
            for (int j = 0; j < DAYS; ++j) bits[j] = (bits[j] << 1) | (unsigned)(f0[j] > f1[j]);
        }
    }
    unsigned out = 0;
#pragma unroll
    for (int j = 0; j < DAYS; ++j) out |= (bits[j] & 1u) << j;
    return out;
}
// --8<-- [end:register_days]

// The decision matrix for one day, loading the close only when it can act.
__device__ __forceinline__ int trade_signal(int buy, int sell, u64 close_at, const float* __restrict__ F,
                                            double& m, long long& sh)
{
    if ((buy && !sell && sh == 0) || (sell && !buy && sh > 0)) return trade_day(buy, sell, (double)F[close_at], m, sh);
    return 0;
}

// --8<-- [start:register]
// F and B are padded with 32 days past the last one on the device: the last pass reads real
// memory, and its extra days are ignored.
extern "C" __global__ void gp_register(const unsigned char* code, const int* offs, int P, int S, int D,
                                       const float* __restrict__ F, const unsigned char* __restrict__ B,
                                       double* money, unsigned char* trace, int trace_on, int* flags)
{
    __shared__ unsigned char scode[WPB][CODE];
    u64 t, i, s, mid, end;
    warp_task(S, t, i, s);
    u64 w = threadIdx.x / 32;
    load_program(code, offs, P, i, scode[w], t % 32, mid, end);
    __syncthreads();
    u64 uS = S, uD = D;
    if (i >= (u64)P || s >= uS) return;
    const unsigned char* prog = scode[w];
    u64 fday = NF * uS, bday = NB * uS;  // one day further in F, in B
    double m = 10000.0;
    long long sh = 0;
    for (u64 d0 = 0; d0 < uD; d0 += DAYS) {
        u64 fbase = d0 * fday + s;
        u64 bbase = d0 * bday + s;
        unsigned bw = register_eval_days(prog, 0, mid, F, fbase, fday, B, bbase, bday, uS);
        unsigned sw = register_eval_days(prog, mid, end, F, fbase, fday, B, bbase, bday, uS);
        u64 nd = uD - d0 < DAYS ? uD - d0 : DAYS;
        for (u64 j = 0; j < nd; ++j) {
            int buy = (bw >> j) & 1u, sell = (sw >> j) & 1u;
            u64 d = d0 + j;
            int act = trade_signal(buy, sell, fbase + j * fday + CP * uS, F, m, sh);
            if (act == 4) flags[0] = 1;
            if (trace_on) trace[(i * uS + s) * uD + d] = trace_byte(buy, sell, act);
        }
    }
    if (sh > 0) m = m + sh * (double)F[((uD - 1) * NF + CP) * uS + s] - 1.0;
    money[i * uS + s] = m;
}
// --8<-- [end:register]

// --8<-- [start:decode]
// RPN code[a:b] -> mask-program entries at sdec[n:]: "x y <" -> mask x*17 + y ("x y >" -> y*17 + x),
// boolean terminal k -> mask 289 + k, AND/OR/NOT -> 303/304/305. Every lane reads the same
// opcodes (broadcast loads) and decodes in step; lane 0 writes.
__device__ __forceinline__ u64 decode_tree(const unsigned char* code, u64 a, u64 b, unsigned short* sdec, u64 n,
                                           u64 lane)
{
    u64 pc = a;
    while (pc < b) {
        u64 op = code[pc], e;
        if (op < NF) {  // the left operand of a comparison: the validator guarantees "x y <" or "x y >"
            u64 rhs = code[pc + 1];
            e = code[pc + 2] == 34 ? op * NF + rhs : rhs * NF + op;
            pc += 3;
        } else if (op < 31) {
            e = 289 + (op - NF);
            pc += 1;
        } else {
            e = op + 272;
            pc += 1;
        }
        if (lane == 0) sdec[n] = (unsigned short)e;
        n += 1;
    }
    return n;
}
// --8<-- [end:decode]

// --8<-- [start:bits_eval]
// A tree on one 64-day word from its decoded entries: an entry below 303 pushes mask e; AND, OR,
// NOT work on 64 days at once. The top of the stack is a register; the rest lives in shared memory.
__device__ __forceinline__ u64 bits_eval(const unsigned short* prog, u64 a, u64 b,
                                         const u64* __restrict__ M, u64 mbase, u64 mstride,
                                         u64* stack, u64 sbase, u64 sstride)
{
    u64 top = 0;
    u64 sp = 0;
    for (u64 pc = a; pc < b; ++pc) {
        u64 e = prog[pc];
        if (e < NMASK) {
            u64 next = M[mbase + e * mstride];  // the load first: in flight while the spill waits for the last one
            stack[sbase + sp * sstride] = top;  // spill the old top
            sp += 1;
            top = next;
        } else if (e == 303) {
            sp -= 1;
            top &= stack[sbase + sp * sstride];
        } else if (e == 304) {
            sp -= 1;
            top |= stack[sbase + sp * sstride];
        } else {  // NOT
            top = ~top;
        }
    }
    return top;
}
// --8<-- [end:bits_eval]

// --8<-- [start:bitsliced]
// M: masks u64 [W, 303, S]; C: the close, float [D, S].
// listed = 1: warp j evaluates individual idx[j] for j < count[0] (gp_changed's list), and no other.
// cache = 1: every tree's day masks go to Cnew [2P, W, S]; cache = 2 (with listed) also: a tree
// its parents had (src[t] >= 0) is not interpreted, its masks come from Cprev (the last Cnew).
extern "C" __global__ void gp_bitsliced(const unsigned char* code, const int* offs, int listed, const int* idx,
                                        const int* count, int cache, const long long* src,
                                        const u64* __restrict__ Cprev, u64* Cnew, int P, int S, int D,
                                        const u64* __restrict__ M, const float* __restrict__ C,
                                        double* money, unsigned char* trace, int trace_on, int* flags)
{
    __shared__ unsigned short sdec[WPB][CODE];
    __shared__ u64 sstack[BSTACK * WPB * 32];
    __shared__ u64 sbuy[TW * WPB * 32];   // per word of the chunk and lane: days a buy would execute
    __shared__ u64 ssell[TW * WPB * 32];  // ... and a sell
    const u64 THREADS = WPB * 32;
    u64 t, i, s;
    warp_task(S, t, i, s);
    if (listed) i = i < (u64)count[0] && i < (u64)P ? (u64)idx[i] : (u64)P;
    u64 w = threadIdx.x / 32, lane = t % 32;
    u64 nbuy = 0, nend = 0;
    long long cb = -1, cs = -1;  // the buy / sell tree's masks from Cprev (a parent's tree), or -1: interpret it
    if (i < (u64)P) {
        if (listed && cache == 2) {
            cb = src[2 * i];
            cs = src[2 * i + 1];
        }
        u64 a = offs[2 * i], mid = offs[2 * i + 1], b = offs[2 * i + 2];
        nbuy = cb >= 0 ? 0 : decode_tree(code, a, mid, sdec[w], 0, lane);
        nend = cs >= 0 ? nbuy : decode_tree(code, mid, b, sdec[w], nbuy, lane);
    }
    __syncthreads();
    u64 uS = S, uD = D;
    if (i >= (u64)P || s >= uS) return;
    const unsigned short* prog = sdec[w];
    u64 tb = threadIdx.x;
    double m = 10000.0;
    long long sh = 0;
    u64 chk = 0;  // TRADE = 0 only: a checksum of the signals keeps their evaluation from being optimized away
    u64 words = (uD + 63) / 64;
    for (u64 w0 = 0; w0 < words; w0 += TW) {
        u64 n = words - w0 < TW ? words - w0 : TW;
        for (u64 k = 0; k < n; ++k) {  // evaluate the chunk's words
            u64 wk = w0 + k;
            u64 mbase = wk * NMASK * uS + s;
            u64 bw = cb >= 0 ? Cprev[((u64)cb * words + wk) * uS + s]
                             : bits_eval(prog, 0, nbuy, M, mbase, uS, sstack, tb, THREADS);
            u64 sw = cs >= 0 ? Cprev[((u64)cs * words + wk) * uS + s]
                             : bits_eval(prog, nbuy, nend, M, mbase, uS, sstack, tb, THREADS);
            u64 left = uD - wk * 64;
            u64 valid = left >= 64 ? ~0ULL : (1ULL << left) - 1;
            bw &= valid;  // NOT set the bits past the last day
            sw &= valid;
            if (cache) {
                Cnew[(2 * i * words + wk) * uS + s] = bw;
                Cnew[((2 * i + 1) * words + wk) * uS + s] = sw;
            }
            if (trace_on) {
                for (u64 j = 0; j < (left < 64 ? left : 64); ++j)
                    trace[(i * uS + s) * uD + wk * 64 + j] = (unsigned char)(((bw >> j) & 1) + 2 * ((sw >> j) & 1));
            }
            sbuy[k * THREADS + tb] = bw & ~sw;
            ssell[k * THREADS + tb] = sw & ~bw;
        }
        if (!TRADE) {
            for (u64 k = 0; k < n; ++k) chk ^= sbuy[k * THREADS + tb] ^ (ssell[k * THREADS + tb] << 1);
            continue;
        }
        // trade across the chunk: each step finds the next executable signal, skipping words
        // with none left, and trades; a lane takes one step per trade it makes
        u64 k = 0;
        u64 eb = sbuy[tb], es = ssell[tb];
        while (true) {
            u64 pending = sh > 0 ? es : eb;
            while (pending == 0) {
                k += 1;
                if (k >= n) break;
                eb = sbuy[k * THREADS + tb];
                es = ssell[k * THREADS + tb];
                pending = sh > 0 ? es : eb;
            }
            if (pending == 0) break;
            u64 j = __ffsll(pending) - 1;
            u64 d = (w0 + k) * 64 + j;
            int act = trade_day(sh == 0, sh > 0, (double)C[d * uS + s], m, sh);
            if (act == 4) flags[0] = 1;
            if (trace_on) trace[(i * uS + s) * uD + d] |= (unsigned char)(4 * (act & 3));
            u64 later = ~(((1ULL << j) - 1) | (1ULL << j));  // the days after day j
            eb &= later;
            es &= later;
        }
    }
    if (sh > 0) m = m + sh * (double)C[(uD - 1) * uS + s] - 1.0;
    if (!TRADE) m = (double)(chk & 0xFFFFFFFFULL);
    money[i * uS + s] = m;
}
// --8<-- [end:bitsliced]

// --8<-- [start:fitness]
// Mean over stocks of (ROI - buy-and-hold ROI), summed in stock order: every backend's bits.
__device__ __forceinline__ double excess_roi(const double* money, const double* bh, int i, int S)
{
    double acc = 0.0;
    for (int s = 0; s < S; ++s) acc += (money[(long long)i * S + s] - 10000.0) / 10000.0 - bh[s];
    return acc / S;
}

// Thread 0 also hands the interpreter's overflow flag to the host (flags[1]) and clears flags[0].
extern "C" __global__ void gp_fitness(const double* money, const double* bh, int P, int S, double* out, int* flags)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) {
        flags[1] = flags[0];
        flags[0] = 0;
    }
    if (i < P) out[i] = excess_roi(money, bh, i, S);
}
// --8<-- [end:fitness]

// --8<-- [start:copies]
// Individual i is parent src[2i] / 2: both its trees are that parent's, in
// order (src[t]: the parent tree that child tree t copies byte for byte, or
// -1, from the breeding).
__device__ __forceinline__ bool is_copy(const long long* src, int i)
{
    long long a = src[2 * i];
    return a >= 0 && a % 2 == 0 && src[2 * i + 1] == a + 1;
}

// The individuals that are not copies, in idx[0:count[0]], in no fixed
// order (count[0] is 0 on entry: gp_fitness_copies resets it).
extern "C" __global__ void gp_changed(const long long* src, int P, int* idx,
                                      int* count)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < P && !is_copy(src, i)) {
        int k = atomicAdd(count, 1);
        if (k < P) idx[k] = i;
    }
}

// A copy's day masks, both trees, from Cprev to its own place in Cnew: a
// thread per (individual, word, stock). (gp_bitsliced writes the listed
// individuals' masks.)
extern "C" __global__ void gp_copy_masks(const long long* src, int P,
                                         int W, int S,
                                         const u64* __restrict__ Cprev,
                                         u64* Cnew)
{
    u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x, per = (u64)W * S;
    u64 i = t / per, r = t % per;
    if (i < (u64)P && is_copy(src, (int)i)) {
        for (u64 tree = 2 * i; tree < 2 * i + 2; ++tree)
            Cnew[tree * per + r] = Cprev[(u64)src[tree] * per + r];
    }
}

// gp_fitness for the individuals gp_changed listed; a copy takes its
// parent's fitness from prev. Thread 0 also hands the list's length to the
// host (flags[2]) and resets count[0].
extern "C" __global__ void gp_fitness_copies(
    const double* money, const double* bh, int P, int S, double* out,
    int* flags, const long long* src, const double* prev, int* count)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) {
        flags[1] = flags[0];
        flags[0] = 0;
        flags[2] = count[0];
        count[0] = 0;
    }
    if (i < P) {
        out[i] = is_copy(src, i) ? prev[src[2 * i] / 2]
                                 : excess_roi(money, bh, i, S);
    }
}
// --8<-- [end:copies]
