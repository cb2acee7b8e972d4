// Chapter 3: what keeps a GPU-bred population on the device, in CUDA C: the CUDA C twin of
// gpulab/gp/resident.py (the children's offsets as a prefix sum, and their validation, a typed
// scan). Each function is a line-for-line translation of the Python function of the same name;
// analyze_tree is gpulab/gp/programs.py's _analyze_tree. Opcodes come as -D macros from
// gpulab.gp.opcodes (the terminals end at OP_AND; the opcodes at OP_LT + 2).

#if !defined(NF) || !defined(OP_AND) || !defined(OP_NOT) || !defined(OP_LT) || !defined(SCAN_BLOCK)
#error "resident.cu needs -D NF, OP_AND, OP_NOT, OP_LT, SCAN_BLOCK (gpulab.gp.resident.CUDA_DEFINES)"
#endif
#define NT OP_AND
#define NOPS (OP_LT + 2)
// the summary (resident.py's BAD ... MAX_PROGRAM) and the kernel-only kinds of bad tree
enum { BAD, FIRST_BAD, MAX_STACK, MAX_BOOLS, MAX_TREE, MAX_PROGRAM, NSUMMARY };
enum { COPY_LENGTH = 16, OVER_NODES = 17, OVER_DEPTH = 18 };

typedef long long i64;
typedef unsigned char u8;

// inclusive scan of x within each block of SCAN_BLOCK into out; the block's total into sums
extern "C" __global__ void scan_blocks(const int *x, int *out, int *sums, i64 n) {
    __shared__ int sm[SCAN_BLOCK];
    int t = threadIdx.x;
    i64 i = (i64)blockIdx.x * SCAN_BLOCK + t;
    sm[t] = i < n ? x[i] : 0;
    __syncthreads();
    for (int d = 1; d < SCAN_BLOCK; d *= 2) {
        int v = t >= d ? sm[t - d] : 0;
        __syncthreads();
        sm[t] += v;
        __syncthreads();
    }
    if (i < n) out[i] = sm[t];
    if (t == SCAN_BLOCK - 1) sums[blockIdx.x] = sm[t];
}

// block b > 0 of out += the inclusive scan of the block totals at b - 1
extern "C" __global__ void add_block_totals(int *out, const int *scanned_sums, i64 n) {
    i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (blockIdx.x > 0 && i < n) out[i] += scanned_sums[blockIdx.x - 1];
}

__device__ __forceinline__ int imax(int a, int b) { return a > b ? a : b; }

// one tree's stats (nodes, height, stack depth, boolean stack depth, error kind, its position)
__device__ void analyze_tree(const u8 *code, i64 a, i64 b, u8 *types, int *heights, int *row) {
    int sp = 0, nbool = 0, max_sp = 0, max_bool = 0, max_h = 0, err = 0, pos = 0;
    for (i64 pc = a; pc < b; pc++) {
        int op = code[pc];
        if (op >= NOPS) { err = 1; pos = (int)(pc - a); break; }
        if (op < NT) {  // terminal: push its type
            types[sp] = op < NF ? 1 : 0;
            heights[sp] = 1;
            nbool += types[sp] == 0;
            sp += 1;
        } else if (op == OP_NOT) {  // NOT: boolean -> boolean
            if (sp < 1) { err = 2; pos = (int)(pc - a); break; }
            if (types[sp - 1] != 0) { err = 3; pos = (int)(pc - a); break; }
            heights[sp - 1] += 1;
        } else {  // binary: AND, OR (boolean) or <, > (float)
            if (sp < 2) { err = 2; pos = (int)(pc - a); break; }
            int want = op >= OP_LT ? 1 : 0;
            if (types[sp - 1] != want || types[sp - 2] != want) { err = 3; pos = (int)(pc - a); break; }
            int h = imax(heights[sp - 1], heights[sp - 2]) + 1;
            sp -= 1;
            nbool += want == 0 ? -1 : 1;  // two floats become one boolean
            types[sp - 1] = 0;
            heights[sp - 1] = h;
        }
        max_sp = imax(max_sp, sp);
        max_bool = imax(max_bool, nbool);
    }
    if (err == 0) {
        if (sp != 1) { err = 4; pos = (int)(b - a); }
        else if (types[0] != 0) { err = 5; pos = (int)(b - a); }
        else max_h = heights[0];
    }
    row[0] = (int)(b - a); row[1] = max_h; row[2] = max_sp; row[3] = max_bool; row[4] = err; row[5] = pos;
}

// thread c = child c: its two trees' stats into stats[k * 2P + 2c + u] (int32 [6, 2P]), copied
// from the parent tree src[t] or scanned with row c of heights / kinds as the stack; its size;
// the block's bad count, first bad tree and maxima into summary
extern "C" __global__ void check_children(const u8 *code, const int *offsets, const i64 *src, const int *parent_stats,
                                          i64 max_nodes, i64 max_depth, int *heights, i64 heights_stride, u8 *kinds,
                                          i64 kinds_stride, int *stats, int *sizes, int *summary, i64 P) {
    __shared__ int red[NSUMMARY];
    for (int k = threadIdx.x; k < NSUMMARY; k += blockDim.x) red[k] = k == FIRST_BAD ? 2147483647 : 0;
    __syncthreads();
    i64 c = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    i64 T = 2 * P;
    if (c < P) {
        int row[6];
        for (int u = 0; u < 2; u++) {
            i64 t = 2 * c + u;
            i64 a = offsets[t], b = offsets[t + 1], n = b - a, s = src[t];
            if (s >= 0) {
                for (int k = 0; k < 6; k++) row[k] = parent_stats[k * T + s];
                if (row[0] != n) row[4] = COPY_LENGTH;
            } else if (n > max_nodes || n < 1) {
                for (int k = 0; k < 6; k++) row[k] = 0;
                row[0] = (int)n;
                row[4] = OVER_NODES;
            } else {
                analyze_tree(code, a, b, kinds + c * kinds_stride, heights + c * heights_stride, row);
                if (row[4] == 0 && row[1] > max_depth) row[4] = OVER_DEPTH;
            }
            for (int k = 0; k < 6; k++) stats[k * T + t] = row[k];
            if (row[4] != 0) {
                atomicAdd(&red[BAD], 1);
                atomicMin(&red[FIRST_BAD], (int)t);
            }
            atomicMax(&red[MAX_STACK], row[2]);
            atomicMax(&red[MAX_BOOLS], row[3]);
            atomicMax(&red[MAX_TREE], row[0]);
        }
        sizes[c] = offsets[2 * c + 2] - offsets[2 * c];
        atomicMax(&red[MAX_PROGRAM], sizes[c]);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        atomicAdd(&summary[BAD], red[BAD]);
        atomicMin(&summary[FIRST_BAD], red[FIRST_BAD]);
        for (int k = MAX_STACK; k < NSUMMARY; k++) atomicMax(&summary[k], red[k]);
    }
}
