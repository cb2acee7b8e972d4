"""Host side of chapter 2: validation (errors that name the limit), buffers and launches.

Every launcher has the shape ``prepare(Q, n, k, params) -> launch`` where ``Q`` is the packed
squared correlation matrix (host numpy) and ``launch()`` runs the whole search end to end:
upload Q and the binomial table, run the kernels (and the host partition loop of the seed
variants), and return ``(distance, rank)``. :func:`gpulab.subset.least_correlated` and the
benchmarks both go through these, so what is timed is what is tested.
"""

from __future__ import annotations

import math

import numpy as np

from gpulab import cudac, device
from gpulab.errors import DtypeError, LimitError, ShapeError
from gpulab.launch import ceil_div, check_block
from gpulab.subset.combinatorics import binomial_table, choose

PACKAGE = "gpulab.subset"
SOURCE = "kernels.cu"
MAX_K = 16  # thread-local selection arrays have this compile-time size (kernels_numba.MAX_K, kernels.cu MAX_K)
MAX_N = 4096  # packed offsets i(i-1)/2 + j are computed in 32-bit integers
SYMMETRY_TOL = 1e-12
CONST_PAIRS = 8192  # __constant__ double Q_const[8192]: 64 KiB


# --8<-- [start:validate]
def validate(C, k) -> tuple[np.ndarray, int, int]:
    """Check that C is a correlation matrix and 1 <= k <= n; return ``(C as float64, n, k)``."""
    if not hasattr(C, "shape") or not hasattr(C, "dtype"):
        raise ShapeError(f"C must be a 2-D numpy array, got {type(C).__name__}")
    if C.ndim != 2 or C.shape[0] != C.shape[1]:
        raise ShapeError(f"C must be a square n×n matrix, got shape {C.shape}")
    if C.dtype.kind not in "fiu":
        raise DtypeError(f"C has dtype {C.dtype}; expected real numbers (float64)")
    n = C.shape[0]
    if n == 0:
        raise ShapeError("C is empty (0×0); there is nothing to choose from")
    C = np.ascontiguousarray(C, dtype=np.float64)
    if not np.all(np.isfinite(C)):
        raise ShapeError("C contains NaN or inf; every correlation must be finite")
    asym = float(np.max(np.abs(C - C.T)))
    if asym > SYMMETRY_TOL:
        raise ShapeError(f"C is not symmetric: max |C - C.T| = {asym:.3g} (tolerance {SYMMETRY_TOL})")
    diag = float(np.max(np.abs(np.diag(C) - 1.0)))
    if diag > SYMMETRY_TOL:
        raise ShapeError(f"C does not have a unit diagonal: max |C[i,i] - 1| = {diag:.3g} (tolerance {SYMMETRY_TOL})")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise DtypeError(f"k must be an integer, got {type(k).__name__}")
    k = int(k)
    if not 1 <= k <= n:
        raise LimitError(f"k = {k} is outside 1 <= k <= n = {n}")
    choose(n, k)  # raises LimitError when C(n, k) does not fit in 64 bits
    return C, n, k
# --8<-- [end:validate]


def check_gpu_limits(n: int, k: int) -> None:
    if k > MAX_K:
        raise LimitError(f"k = {k} exceeds the GPU kernels' limit of MAX_K = {MAX_K} (the size of the thread-local selection)")
    if n > MAX_N:
        raise LimitError(f"n = {n} exceeds the GPU kernels' limit of MAX_N = {MAX_N} strategies (32-bit packed offsets)")


def npairs(n: int) -> int:
    return n * (n - 1) // 2


def shared_limit() -> int:
    """Dynamic shared memory a block may use on this device (with the opt-in above 48 KiB)."""
    return device.info().shared_memory_per_block_optin


def shared_bytes_shared(n: int, k: int, block: int) -> int:
    """``shared`` layout: Q (8·n(n-1)/2) + block values and ranks (16·block) + selections (4·k·block)."""
    return 8 * npairs(n) + 16 * block + 4 * k * block


def shared_bytes_incremental(n: int, block: int) -> int:
    """``incremental`` layout: Q (8·n(n-1)/2) + block values and ranks (16·block)."""
    return 8 * npairs(n) + 16 * block


def check_shared(nbytes: int, what: str) -> None:
    limit = shared_limit()
    if nbytes > limit:
        raise LimitError(f"{what} needs {nbytes} bytes of shared memory per block, over the device limit of "
                         f"{limit} bytes; use fewer strategies (n) or a smaller block")


def max_n_shared(k: int, block: int, incremental: bool = False) -> int:
    """The largest n whose ``shared`` (or ``incremental``) layout fits this device's shared memory."""
    n = 1
    f = (lambda n: shared_bytes_incremental(n, block)) if incremental else (lambda n: shared_bytes_shared(n, k, block))
    while f(n + 1) <= shared_limit():
        n += 1
    return n


def check_constant(n: int) -> None:
    nbytes = 8 * npairs(n)
    limit = min(device.info().constant_memory, 8 * CONST_PAIRS)
    if nbytes > limit:
        raise LimitError(f"Q for n = {n} is {npairs(n)} float64 = {nbytes} bytes, which does not fit constant "
                         f"memory ({limit} bytes: n(n-1)/2 <= {limit // 8}, i.e. n <= {max_n_constant()}); "
                         "use the shared or incremental variant")


def max_n_constant() -> int:
    limit = min(device.info().constant_memory, 8 * CONST_PAIRS)
    n = 1
    while 8 * npairs(n + 1) <= limit:
        n += 1
    return n


def geometry(params: dict) -> tuple[int, int, int]:
    """(block, max_blocks, partition) for this machine; the simulator gets tiny blocks and grids."""
    block = params.get("block", 256)
    max_blocks = params.get("max_blocks", 132 * 16)
    partition = params.get("partition", 1 << 24)
    if device.on_simulator():
        block = min(block, params.get("sim_block", 32))
        max_blocks = min(max_blocks, params.get("sim_max_blocks", 3))
    check_block(block)
    if block & (block - 1):
        raise LimitError(f"block = {block} must be a power of two (tree reduction)")
    return block, max_blocks, partition


def _numba_optin(disp, sig: str, nbytes: int) -> None:
    """numba does not opt kernels into more than 48 KiB of dynamic shared memory: do it here."""
    if device.on_simulator() or nbytes <= 48 * 1024:
        return
    from numba.cuda.cudadrv.driver import binding, driver

    kern = disp.compile(sig)
    cufunc = kern._codelibrary.get_cufunc()
    attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    if hasattr(cufunc, "kernel"):  # numba-cuda >= 0.2x loads modules as libraries: a CUkernel handle
        driver.cuKernelSetAttribute(attr, nbytes, cufunc.handle, cufunc.device.id)
    else:
        driver.cuFuncSetAttribute(cufunc.handle, attr, nbytes)


def _upload(Q, n, k):
    from numba import cuda

    Qd = Q if Q.size else np.zeros(1, np.float64)
    return cuda.to_device(Qd), cuda.to_device(binomial_table(n, k))


def _partitions(total: int, partition: int):
    base = 0
    while base < total:
        count = min(partition, total - base)
        yield base, count
        base += count


def _host_best(vals, ranks):
    """(value, rank) minimum of per-block results; ties go to the lowest rank."""
    if np.isnan(vals).any():
        raise RuntimeError(f"{int(np.isnan(vals).sum())} block result(s) were never written (still NaN)")
    v = vals.min()
    return float(v), int(ranks[vals == v].min())


def _merge(best, cand):
    if best is None or cand[0] < best[0] or (cand[0] == best[0] and cand[1] < best[1]):
        return cand
    return best


# ----------------------------------------------------------------------------- numba


def numba_global(Q, n, k, params):
    from numba import cuda

    from gpulab.subset.kernels_numba import subset_global

    check_gpu_limits(n, k)
    block, max_blocks, partition = geometry(params)
    total = choose(n, k)
    part = min(partition, total)
    grid = min(ceil_div(part, block), max_blocks)
    threads = grid * block
    sel = cuda.device_array(threads * k, np.int32)
    sub = cuda.device_array(max(threads * k * (k - 1) // 2, 1), np.float64)
    dist = _poisoned_dist(part)

    # --8<-- [start:global_host]
    def launch():
        dQ, dT = _upload(Q, n, k)
        best = None
        for base, count in _partitions(total, part):  # the host partition loop
            subset_global[grid, block](dQ, dT, np.int32(n), np.int32(k), np.uint64(base), np.int64(count), sel, sub, dist)
            d = dist[:count].copy_to_host()  # every distance crosses PCIe ...
            i = int(np.argmin(d))  # ... for an argmin on the host (first minimum = lowest rank)
            best = _merge(best, (float(d[i]), base + i))
        return best
    # --8<-- [end:global_host]

    return launch


def _block_results(grid):
    """Per-block (value, rank) outputs, poisoned (NaN, 0xDEADBEEF...) so an unwritten slot shows."""
    from numba import cuda

    from gpulab.checking import poisoned

    return cuda.to_device(poisoned(grid, np.float64)), cuda.to_device(poisoned(grid, np.uint64))


def _poisoned_dist(count):
    from numba import cuda

    from gpulab.checking import poisoned

    return cuda.to_device(poisoned(count, np.float64))


def numba_shared(Q, n, k, params):
    from gpulab.subset.kernels_numba import SIG_SHARED, subset_shared

    check_gpu_limits(n, k)
    block, max_blocks, partition = geometry(params)
    nbytes = shared_bytes_shared(n, k, block)
    check_shared(nbytes, f"the shared variant (n = {n}, k = {k}, block = {block})")
    _numba_optin(subset_shared, SIG_SHARED, nbytes)
    total = choose(n, k)
    part = min(partition, total)
    grid = min(ceil_div(part, block), max_blocks)
    vals, ranks = _block_results(grid)

    def launch():
        dQ, dT = _upload(Q, n, k)
        best = None
        for base, count in _partitions(total, part):
            subset_shared[grid, block, 0, nbytes](dQ, dT, np.int32(n), np.int32(k), np.int32(npairs(n)),
                                                  np.uint64(base), np.int64(count), vals, ranks)
            best = _merge(best, _host_best(vals.copy_to_host(), ranks.copy_to_host()))
        return best

    return launch


def numba_constant_local(Q, n, k, params):
    from gpulab.subset.kernels_numba import constant_local_kernel

    check_gpu_limits(n, k)
    check_constant(n)
    block, max_blocks, partition = geometry(params)
    kern = constant_local_kernel(Q)
    total = choose(n, k)
    part = min(partition, total)
    grid = min(ceil_div(part, block), max_blocks)
    vals, ranks = _block_results(grid)
    nbytes = 16 * block

    def launch():
        from numba import cuda

        dT = cuda.to_device(binomial_table(n, k))  # Q itself is part of the compiled module
        best = None
        for base, count in _partitions(total, part):
            kern[grid, block, 0, nbytes](dT, np.int32(n), np.int32(k), np.uint64(base), np.int64(count), vals, ranks)
            best = _merge(best, _host_best(vals.copy_to_host(), ranks.copy_to_host()))
        return best

    return launch


def _incremental_geometry(n, k, params):
    block, max_blocks, _ = geometry(params)
    if block < 32:
        raise LimitError(f"block = {block}: the incremental kernels need at least one full warp (32 threads)")
    total = choose(n, k)
    chunk = params.get("chunk", 256)
    if device.on_simulator():
        chunk = min(chunk, params.get("sim_chunk", 7))
    else:
        # small problems: shorter chunks, so that every SM gets threads (2048 per SM when full)
        target = device.info().sm_count * 2048
        chunk = max(min(chunk, params.get("chunk_min", 32)), min(chunk, ceil_div(total, target)))
    nchunks = ceil_div(total, chunk)
    grid = max(1, min(ceil_div(nchunks, block), max_blocks))
    return block, grid, total, chunk, nchunks


def _numba_incremental(warp):
    def prepare(Q, n, k, params):
        from numba import cuda

        from gpulab.subset.kernels_numba import SIG_FINAL, SIG_INCREMENTAL, final_argmin, incremental_kernel

        check_gpu_limits(n, k)
        block, grid, total, chunk, nchunks = _incremental_geometry(n, k, params)
        nbytes = shared_bytes_incremental(n, block)
        check_shared(nbytes, f"the incremental variant (n = {n}, block = {block})")
        kern = incremental_kernel(k, warp)
        _numba_optin(kern, SIG_INCREMENTAL, nbytes)
        vals, ranks = _block_results(grid)
        out_v, out_r = _block_results(1)
        fb = 256 if not device.on_simulator() else 32

        # --8<-- [start:incremental_host]
        def launch():
            dQ, dT = _upload(Q, n, k)
            kern[grid, block, 0, nbytes](dQ, dT, np.int32(n), np.int32(npairs(n)), np.uint64(total),
                                         np.uint64(chunk), np.int64(nchunks), vals, ranks)
            final_argmin[1, fb, 0, 16 * fb](vals, ranks, np.int32(grid), out_v, out_r)
            s, r = out_v.copy_to_host()[0], out_r.copy_to_host()[0]  # the one host sync
            return math.sqrt(2.0 * float(s)), int(r)
        # --8<-- [end:incremental_host]

        return launch

    return prepare


numba_incremental = _numba_incremental(False)
numba_incremental_warp = _numba_incremental(True)


# ----------------------------------------------------------------------------- CUDA C


def _cu(name, defines=None):
    return cudac.kernel(PACKAGE, SOURCE, name, defines or {})


def _dims(n, k):
    return np.int32(n), np.int32(k)


def cuda_global(Q, n, k, params):
    from numba import cuda

    check_gpu_limits(n, k)
    block, max_blocks, partition = geometry(params)
    fn = _cu("subset_global")
    total = choose(n, k)
    part = min(partition, total)
    grid = min(ceil_div(part, block), max_blocks)
    threads = grid * block
    sel = cuda.device_array(threads * k, np.int32)
    sub = cuda.device_array(max(threads * k * (k - 1) // 2, 1), np.float64)
    dist = _poisoned_dist(part)

    def launch():
        dQ, dT = _upload(Q, n, k)
        best = None
        for base, count in _partitions(total, part):
            cudac.launch(fn, (grid,), (block,), dQ, dT, *_dims(n, k), np.uint64(base), np.int64(count), sel, sub, dist)
            d = dist[:count].copy_to_host()
            i = int(np.argmin(d))
            best = _merge(best, (float(d[i]), base + i))
        return best

    return launch


def cuda_shared(Q, n, k, params):
    check_gpu_limits(n, k)
    block, max_blocks, partition = geometry(params)
    nbytes = shared_bytes_shared(n, k, block)
    check_shared(nbytes, f"the shared variant (n = {n}, k = {k}, block = {block})")
    fn = _cu("subset_shared")
    total = choose(n, k)
    part = min(partition, total)
    grid = min(ceil_div(part, block), max_blocks)
    vals, ranks = _block_results(grid)

    def launch():
        dQ, dT = _upload(Q, n, k)
        best = None
        for base, count in _partitions(total, part):
            cudac.launch(fn, (grid,), (block,), dQ, dT, *_dims(n, k), np.int32(npairs(n)), np.uint64(base),
                         np.int64(count), vals, ranks, shared_bytes=nbytes)
            best = _merge(best, _host_best(vals.copy_to_host(), ranks.copy_to_host()))
        return best

    return launch


def cuda_constant_local(Q, n, k, params):
    import pycuda.driver as drv

    check_gpu_limits(n, k)
    check_constant(n)
    block, max_blocks, partition = geometry(params)
    module = cudac.load(PACKAGE, SOURCE, {})
    fn = module.get_function("subset_constant_local")
    sym, _size = module.get_global("Q_const")
    total = choose(n, k)
    part = min(partition, total)
    grid = min(ceil_div(part, block), max_blocks)
    vals, ranks = _block_results(grid)
    Qc = np.ascontiguousarray(Q, dtype=np.float64)

    def launch():
        from numba import cuda

        if Qc.size:
            drv.memcpy_htod(sym, Qc)  # Q -> __constant__ Q_const
        dT = cuda.to_device(binomial_table(n, k))
        best = None
        for base, count in _partitions(total, part):
            cudac.launch(fn, (grid,), (block,), dT, *_dims(n, k), np.uint64(base), np.int64(count), vals, ranks,
                         shared_bytes=16 * block)
            best = _merge(best, _host_best(vals.copy_to_host(), ranks.copy_to_host()))
        return best

    return launch


def _cuda_incremental(name):
    def prepare(Q, n, k, params):
        check_gpu_limits(n, k)
        block, grid, total, chunk, nchunks = _incremental_geometry(n, k, params)
        nbytes = shared_bytes_incremental(n, block)
        check_shared(nbytes, f"the incremental variant (n = {n}, block = {block})")
        fn = _cu(name, {"SUBSET_K": k})
        fin = _cu("final_argmin", {"SUBSET_K": k})
        vals, ranks = _block_results(grid)
        out_v, out_r = _block_results(1)

        def launch():
            dQ, dT = _upload(Q, n, k)
            cudac.launch(fn, (grid,), (block,), dQ, dT, np.int32(n), np.int32(npairs(n)), np.uint64(total),
                         np.uint64(chunk), np.int64(nchunks), vals, ranks, shared_bytes=nbytes)
            cudac.launch(fin, (1,), (256,), vals, ranks, np.int32(grid), out_v, out_r, shared_bytes=16 * 256)
            s, r = out_v.copy_to_host()[0], out_r.copy_to_host()[0]
            return math.sqrt(2.0 * float(s)), int(r)

        return launch

    return prepare


cuda_incremental = _cuda_incremental("subset_incremental")
cuda_incremental_warp = _cuda_incremental("subset_incremental_warp")


# ----------------------------------------------------------------------------- CPU


def cpu_parallel(Q, n, k, params):
    from gpulab.subset.reference import least_correlated_cpu

    chunk = params.get("chunk", 1 << 16)

    def launch():
        s, r = least_correlated_cpu(Q, n, k, chunk=chunk)
        return math.sqrt(2.0 * s), r

    return launch


REFERENCE_LIMIT = 3_000_000


def cpu_reference(Q, n, k, params):
    from gpulab.subset.reference import distance_from_sum, subset_sum

    total = choose(n, k)
    if total > REFERENCE_LIMIT:
        raise LimitError(f"C({n}, {k}) = {total} subsets is over the itertools reference's limit of "
                         f"{REFERENCE_LIMIT} (pure Python: seconds per million subsets)")

    def launch():
        import itertools

        q = Q.tolist()
        best, best_rank = math.inf, -1
        for m, c in enumerate(itertools.combinations(range(n), k)):
            d = distance_from_sum(subset_sum(q, c))
            if d < best:
                best, best_rank = d, m
        return best, best_rank

    return launch
