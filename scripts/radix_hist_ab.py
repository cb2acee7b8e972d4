"""Experiment (H200 run 11, docs/benchmarks/radix-runs/run11-hist-ab.log): the one-sweep histogram
kernel as committed against private copies of its shared counters, 2^28 random keys, CUDA C.

LAYOUT 0 interleaves HC copies by lane (h[bin*HC + lane % HC]); LAYOUT 1 gives every group of
warps its copy (copy = warp % HC). Each build's counts are checked against the committed kernel's
before it is timed. Needs a GPU:  python3 scripts/radix_hist_ab.py
"""
import numpy as np, gpulab  # noqa
import pycuda.autoprimaryctx  # noqa
import pycuda.driver as drv
from numba import cuda
from gpulab import cudac
from gpulab.radix import host
from gpulab.radix.variants import REGISTRY
from gpulab.timing import measure

PRIV = r'''
extern "C" __global__ void __launch_bounds__(BLOCK) hist_priv(const u32 *keys, int *hist, int n, int passes) {
    __shared__ int h[PASSES * RADIX * HC];
    int tid = threadIdx.x;
#if LAYOUT == 0
    int copy = tid % HC;            // lane-interleaved: h[bin*HC + copy]
#define SLOT(bin) ((bin) * HC + copy)
#else
    int copy = (tid / 32) % HC;     // per-warp copies: h[copy*P*R + bin]
#define SLOT(bin) (copy * PASSES * RADIX + (bin))
#endif
    for (int j = tid; j < PASSES * RADIX * HC; j += BLOCK) h[j] = 0;
    __syncthreads();
    for (long base = (long)blockIdx.x * TILE; base < n; base += (long)gridDim.x * TILE) {
        u32 k[ITEMS];
#pragma unroll
        for (int it = 0; it < ITEMS; ++it) {
            long i = base + it * BLOCK + tid;
            k[it] = i < n ? keys[i] : 0u;
        }
#pragma unroll
        for (int it = 0; it < ITEMS; ++it) {
            if (base + it * BLOCK + tid < n) {
#pragma unroll
                for (int p = 0; p < PASSES; ++p)
                    if (p < passes) atomicAdd(&h[SLOT(p * RADIX + ((k[it] >> (p * BITS)) & DIGIT_MASK))], 1);
            }
        }
    }
    __syncthreads();
    for (int j = tid; j < passes * RADIX; j += BLOCK) {
        int s = 0;
#pragma unroll
        for (int c = 0; c < HC; ++c) {
#if LAYOUT == 0
            s += h[j * HC + c];
#else
            s += h[c * PASSES * RADIX + j];
#endif
        }
        if (s) atomicAdd(&hist[j], s);
    }
}
'''

n = 2**28
d = cuda.to_device(np.random.default_rng(3).integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32))
v = REGISTRY.get("onesweep", "cuda-c")
plan = host.SortPlan(v.policy, "cuda-c", n, False, v.params)
B = plan.params["BLOCK"]
G = min(plan.nb, host.HIST_GRID)
src = cudac.source_text("gpulab.radix", "kernels.cu") + PRIV
base = lambda: plan.K("onesweep_hist", (G,), (B,), d, plan.hist, np.int32(n), np.int32(4))
ref_counts = cuda.to_device(np.zeros(plan.hist.size, np.int32))
plan.K("onesweep_hist", (G,), (B,), d, ref_counts, np.int32(n), np.int32(4))
ref = ref_counts.copy_to_host()
t0 = measure(base, repeat=15).median_ms
print(f"committed          : {t0:.3f} ms ({4*n/t0/1e9:.2f} TB/s)", flush=True)
for layout in (0, 1):
    for hc in (2, 4, 8):
        if layout == 1 and hc > B // 32: continue
        defs = dict(host.cuda_defines(plan.params), HC=hc, LAYOUT=layout)
        rep = cudac.nvrtc_compile(src, "kernels.cu", defs, arch="sm_90", lineinfo=False)
        if not rep.ok: print("compile failed", layout, hc, rep.log[:2000]); continue
        fn = drv.module_from_buffer(rep.cubin).get_function("hist_priv")
        z = cuda.to_device(np.zeros(plan.hist.size, np.int32))
        cudac.launch(fn, (G,), (B,), d, z, np.int32(n), np.int32(4)); ok = np.array_equal(z.copy_to_host(), ref)
        for g in (G, 2 * G):
            t = measure(lambda: cudac.launch(fn, (g,), (B,), d, z, np.int32(n), np.int32(4)), repeat=15).median_ms
            print(f"layout {'lane' if layout == 0 else 'warp'} HC={hc} grid {g:5d}: {t:.3f} ms ({4*n/t/1e9:.2f} TB/s) {'ok' if ok else 'WRONG'}", flush=True)
