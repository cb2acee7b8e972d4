"""Host side of chapter 1: validation, device buffers, and one launch function per kernel.

Every launcher has the same shape: `prepare(dA, dB, dC, B_host, params, stream=0) -> launch`
takes device arrays (and the host copy of B, which numba's constant-memory variants bake into
the kernel; `None` when B lives on the device, which they then copy once) and returns a
zero-argument function that enqueues the kernel on `stream`. The public
[`matmul`][gpulab.matmul.matmul] and the benchmarks both go through these, so what is timed is
what is tested.
"""

from __future__ import annotations

import numpy as np

from gpulab import cudac, device
from gpulab.arrays import check_array, to_host
from gpulab.errors import DtypeError, LimitError, ShapeError
from gpulab.launch import ceil_div, check_block

PACKAGE = "gpulab.matmul"
SOURCE = "kernels.cu"
INT32_MAX = 2**31 - 1


# --8<-- [start:validate]
def validate(A, B) -> tuple[int, int, int]:
    """Check that `A @ B` is a problem these kernels solve; return `(M, K, N)`.

    Shapes and dtypes are read from the array interfaces, so a device array is checked
    without touching its data.
    """
    shapes = []
    for name, X in (("A", A), ("B", B)):
        shape, dtype = check_array(X, name, ndim=2)
        if dtype != np.float32:
            raise DtypeError(f"{name} has dtype {dtype}; the kernels are written for float32 "
                             f"(convert with {name}.astype(np.float32))")
        if 0 in shape:
            raise ShapeError(f"{name} is empty (shape {shape}); every dimension must be at least 1")
        if shape[0] * shape[1] > INT32_MAX:
            raise LimitError(f"{name} has {shape[0] * shape[1]} elements; the kernels index with int32 (limit {INT32_MAX})")
        shapes.append(shape)
    (M, K), (K2, N) = shapes
    if K != K2:
        raise ShapeError(f"inner dimensions differ: A is {M}x{K} but B is {K2}x{N} (A's columns must equal B's rows)")
    if M * N > INT32_MAX:
        raise LimitError(f"C would have {M * N} elements; the kernels index with int32 (limit {INT32_MAX})")
    return M, K, N
# --8<-- [end:validate]


def constant_capacity() -> int:
    """Bytes of constant memory on this device (64 KiB on every NVIDIA GPU so far)."""
    return device.info().constant_memory


def check_fits_constant(K: int, N: int) -> None:
    nbytes = K * N * 4
    limit = constant_capacity()
    if nbytes > limit:
        raise LimitError(f"B is {K}x{N} float32 = {nbytes} bytes, which does not fit constant memory "
                         f"({limit} bytes = {limit // 4} floats, e.g. K*N <= {limit // 4}); "
                         "use a variant that reads B from global or shared memory")


def _dims(M, N, K):
    return np.int32(M), np.int32(N), np.int32(K)


# ----------------------------------------------------------------------------- numba


def numba_naive(dA, dB, dC, B_host, params, stream=0):
    from gpulab.matmul.kernels_numba import matmul_naive

    M, K = dA.shape
    N = dB.shape[1]
    block = (16, 16)
    grid = (ceil_div(M, 16), ceil_div(N, 16))  # x over rows: the uncoalesced mapping
    args = (dA, dB, dC, *_dims(M, N, K))
    return lambda: matmul_naive[grid, block, stream](*args)


def numba_coalesced(dA, dB, dC, B_host, params, stream=0):
    from gpulab.matmul.kernels_numba import matmul_coalesced

    M, K = dA.shape
    N = dB.shape[1]
    block = (16, 16)
    grid = (ceil_div(N, 16), ceil_div(M, 16))  # x over columns
    args = (dA, dB, dC, *_dims(M, N, K))
    return lambda: matmul_coalesced[grid, block, stream](*args)


def numba_shared(dA, dB, dC, B_host, params, stream=0):
    from gpulab.matmul.kernels_numba import shared_kernel

    tile = params["tile"]
    check_block(tile * tile)
    M, K = dA.shape
    N = dB.shape[1]
    kern = shared_kernel(tile)
    grid = (ceil_div(N, tile), ceil_div(M, tile))
    args = (dA, dB, dC, *_dims(M, N, K))
    return lambda: kern[grid, (tile, tile), stream](*args)


def _numba_constant(lanes_on_rows):
    def prepare(dA, dB, dC, B_host, params, stream=0):
        from gpulab.matmul.kernels_numba import constant_kernel

        M, K = dA.shape
        N = dB.shape[1]
        check_fits_constant(K, N)
        # numba's constant arrays are compile-time data: B (at most 64 KiB) is baked into the
        # kernel, so a B that lives on the device is copied to the host once, here.
        kern = constant_kernel(B_host if B_host is not None else to_host(dB), lanes_on_rows)
        if lanes_on_rows:
            grid = (ceil_div(M, 32), ceil_div(N, 8))
        else:
            grid = (ceil_div(N, 32), ceil_div(M, 8))
        args = (dA, dC, *_dims(M, N, K))
        return lambda: kern[grid, (32, 8), stream](*args)

    return prepare


numba_constant = _numba_constant(True)
numba_constant_scattered = _numba_constant(False)


def _tiled_geometry(params, M, N):
    BM, BN, TM, TN = params["BM"], params["BN"], params["TM"], params["TN"]
    block = (BN // TN, BM // TM)
    check_block(block[0] * block[1])
    return (ceil_div(N, BN), ceil_div(M, BM)), block


def _numba_tiled(factory_name):
    def prepare(dA, dB, dC, B_host, params, stream=0):
        from gpulab.matmul import kernels_numba

        M, K = dA.shape
        N = dB.shape[1]
        kern = getattr(kernels_numba, factory_name)(**params)
        grid, block = _tiled_geometry(params, M, N)
        args = (dA, dB, dC, *_dims(M, N, K))
        return lambda: kern[grid, block, stream](*args)

    return prepare


numba_register = _numba_tiled("register_kernel")
numba_prefetch = _numba_tiled("prefetch_kernel")
numba_wide = _numba_tiled("wide_kernel")


# ----------------------------------------------------------------------------- CUDA C


def _cuda_kernel(name, params):
    return cudac.kernel(PACKAGE, SOURCE, name, params)


def _cuda_simple(name, rows_on_x):
    def prepare(dA, dB, dC, B_host, params, stream=0):
        M, K = dA.shape
        N = dB.shape[1]
        fn = _cuda_kernel(name, params)
        grid = (ceil_div(M, 16), ceil_div(N, 16)) if rows_on_x else (ceil_div(N, 16), ceil_div(M, 16))
        return lambda: cudac.launch(fn, grid, (16, 16), dA, dB, dC, M, N, K, stream=stream)

    return prepare


cuda_naive = _cuda_simple("matmul_naive", rows_on_x=True)
cuda_coalesced = _cuda_simple("matmul_coalesced", rows_on_x=False)


def cuda_shared(dA, dB, dC, B_host, params, stream=0):
    M, K = dA.shape
    N = dB.shape[1]
    tile = params["TILE"]
    check_block(tile * tile)
    fn = _cuda_kernel("matmul_shared", params)
    grid = (ceil_div(N, tile), ceil_div(M, tile))
    return lambda: cudac.launch(fn, grid, (tile, tile), dA, dB, dC, M, N, K, stream=stream)


def _cuda_constant(name, lanes_on_rows):
    def prepare(dA, dB, dC, B_host, params, stream=0):
        import pycuda.driver as drv

        M, K = dA.shape
        N = dB.shape[1]
        check_fits_constant(K, N)
        module = cudac.load(PACKAGE, SOURCE, params)
        fn = module.get_function(name)
        sym, size = module.get_global("B_const")
        drv.memcpy_dtod(sym, cudac.ptr(dB), K * N * 4)  # B -> __constant__ B_const, once, untimed
        grid = (ceil_div(M, 32), ceil_div(N, 8)) if lanes_on_rows else (ceil_div(N, 32), ceil_div(M, 8))
        return lambda: cudac.launch(fn, grid, (32, 8), dA, dC, M, N, K, stream=stream)

    return prepare


cuda_constant = _cuda_constant("matmul_constant", True)
cuda_constant_scattered = _cuda_constant("matmul_constant_scattered", False)


def _cuda_tiled(name):
    def prepare(dA, dB, dC, B_host, params, stream=0):
        M, K = dA.shape
        N = dB.shape[1]
        fn = _cuda_kernel(name, params)
        grid, block = _tiled_geometry(params, M, N)
        return lambda: cudac.launch(fn, grid, block, dA, dB, dC, M, N, K, stream=stream)

    return prepare


cuda_register = _cuda_tiled("matmul_register")
cuda_prefetch = _cuda_tiled("matmul_prefetch")
cuda_vec4 = _cuda_tiled("matmul_vec4")


def cuda_warptile(dA, dB, dC, B_host, params, stream=0):
    M, K = dA.shape
    N = dB.shape[1]
    fn = _cuda_kernel("matmul_warptile", params)
    threads = params["WT_THREADS"]
    check_block(threads)
    grid = (ceil_div(N, params["WT_BN"]), ceil_div(M, params["WT_BM"]))
    return lambda: cudac.launch(fn, grid, (threads,), dA, dB, dC, M, N, K, stream=stream)
