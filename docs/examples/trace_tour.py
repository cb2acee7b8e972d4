"""Chapter 0's tracer examples: four one-warp kernels and the counts `gpulab.trace` gives them.

Run it on the simulator (no GPU needed): `GPULAB_DEVICE=sim python docs/examples/trace_tour.py`.
It prints `docs/examples/trace_tour.txt` (tests/test_trace_book.py checks that it still does);
the book includes both by section.
"""

import numpy as np

import gpulab  # noqa: F401  (selects the simulator when there is no GPU, before numba loads)
from numba import cuda, float32, float64

from gpulab import trace

# --8<-- [start:coalescing]
@cuda.jit
def read_row(A, out):  # lane i reads A[0, i]: 32 neighbours
    i = cuda.threadIdx.x
    out[i] = A[0, i]


@cuda.jit
def read_column(A, out):  # lane i reads A[i, 0]: rows 128 bytes apart
    i = cuda.threadIdx.x
    out[i] = A[i, 0]


A, out = np.ones((32, 32), np.float32), np.zeros(32, np.float32)
for kernel in (read_row, read_column):
    report = trace.run(kernel, 1, 32, A, out)  # kernel[1, 32](A, out), traced
    sectors = report.per_request("load")
    print(f"{kernel.__name__}: load sectors per request = {sectors:g}")
# --8<-- [end:coalescing]


# --8<-- [start:banks]
def column_kernel(width):
    @cuda.jit
    def column(x, out):  # lane i writes, then reads, tile[i, 0]: a column
        tile = cuda.shared.array((32, width), float32)
        i = cuda.threadIdx.x
        tile[i, 0] = x[i]
        cuda.syncthreads()
        out[i] = tile[i, 0]
    return column


x = np.arange(32, dtype=np.float32)
for width in (32, 33):
    report = trace.run(column_kernel(width), 1, 32, x, out)
    wavefronts = report.per_request("shared")
    print(f"32x{width} tile: shared wavefronts per request = {wavefronts:g}")
# --8<-- [end:banks]


# --8<-- [start:constant]
COEF = np.arange(32, dtype=np.float32)


@cuda.jit
def same_address(out):  # every lane reads c[5]
    c = cuda.const.array_like(COEF)
    out[cuda.threadIdx.x] = c[5]


@cuda.jit
def own_address(out):  # lane i reads c[i]
    c = cuda.const.array_like(COEF)
    out[cuda.threadIdx.x] = c[cuda.threadIdx.x]


for kernel in (same_address, own_address):
    report = trace.run(kernel, 1, 32, out)
    wavefronts = report.per_request("constant")
    print(f"{kernel.__name__}: constant wavefronts per request = {wavefronts:g}")
# --8<-- [end:constant]


# --8<-- [start:wide]
@cuda.jit
def copy_f64(src, dst):  # 8-byte elements, through shared memory
    buf = cuda.shared.array(32, float64)
    i = cuda.threadIdx.x
    buf[i] = src[i]
    dst[i] = buf[i]


src, dst = np.ones(32), np.zeros(32)  # float64
report = trace.run(copy_f64, 1, 32, src, dst)
sectors, wavefronts = report.per_request("load"), report.per_request("shared")
print(f"copy_f64: load sectors per request = {sectors:g}, "
      f"shared wavefronts per request = {wavefronts:g}")
# --8<-- [end:wide]
