"""Host side of chapter 2: validation (errors that name the limit), buffers and launches.

Every launcher has the shape `prepare(Q, n, k, params) -> launch` where `Q` is the packed
squared correlation matrix — a host numpy array, or a device array when the caller's matrix
lives on the device — and `launch()` runs the whole search end to end: upload Q (a host Q) and
the binomial table, run the kernels (and the host partition loop of the seed variants), and
return `(distance, rank)`. [`least_correlated`][gpulab.subset.least_correlated] and the
benchmarks both go through these, so what is timed is what is tested.
"""

from __future__ import annotations

import math

import numpy as np

from gpulab import cudac, device
from gpulab.arrays import check_array, is_device_array, to_host
from gpulab.errors import DtypeError, LimitError, ShapeError
from gpulab.launch import ceil_div, check_block
from gpulab.subset import reference
from gpulab.subset.combinatorics import binomial_table, choose, rank_range  # noqa: F401  (rank_range: host.rank_range)

PACKAGE = "gpulab.subset"
SOURCE = "kernels.cu"
MAX_K = 16  # thread-local selection arrays have this compile-time size (kernels_numba.MAX_K, kernels.cu MAX_K)
MAX_N = 4096  # packed offsets i(i-1)/2 + j are computed in 32-bit integers
SYMMETRY_TOL = 1e-12
CONST_PAIRS = 8192  # __constant__ double Q_const[8192]: 64 KiB


# --8<-- [start:validate]
def validate(C, k) -> tuple[np.ndarray, int, int]:
    """Check that C is a correlation matrix and 1 <= k <= n; return `(C as float64, n, k)`."""
    n, k = check_form(C, k)
    C = np.ascontiguousarray(C, dtype=np.float64)
    finite = np.isfinite(C)
    check_values(nonfinite=int(C.size - finite.sum()),
                 asymmetry=float(np.max(np.abs(C - C.T), initial=0.0, where=finite & finite.T)),
                 diagonal=float(np.max(np.abs(np.diag(C) - 1.0), initial=0.0, where=np.diag(finite))))
    return C, n, k


def check_form(C, k) -> tuple[int, int]:
    """What needs no values, read from the array interface: a square real matrix, 1 <= k <= n,
    C(n, k) in 64 bits. Returns `(n, k)`."""
    shape, dtype = check_array(C, "C")
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ShapeError(f"C must be a square n×n matrix, got shape {shape}")
    if dtype.kind not in "fiu":
        raise DtypeError(f"C has dtype {dtype}; expected real numbers (float64)")
    n = shape[0]
    if n == 0:
        raise ShapeError("C is empty (0×0); there is nothing to choose from")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise DtypeError(f"k must be an integer, got {type(k).__name__}")
    k = int(k)
    if not 1 <= k <= n:
        raise LimitError(f"k = {k} is outside 1 <= k <= n = {n}")
    choose(n, k)  # raises LimitError when C(n, k) does not fit in 64 bits
    return n, k


def check_values(nonfinite: int, asymmetry: float, diagonal: float) -> None:
    """The value checks, from three numbers (computed on the host or on the device)."""
    if nonfinite:
        raise ShapeError(f"C contains NaN or inf ({nonfinite} entries); every correlation must be finite")
    if asymmetry > SYMMETRY_TOL:
        raise ShapeError(f"C is not symmetric: max |C - C.T| = {asymmetry:.3g} (tolerance {SYMMETRY_TOL})")
    if diagonal > SYMMETRY_TOL:
        raise ShapeError(f"C does not have a unit diagonal: max |C[i,i] - 1| = {diagonal:.3g} (tolerance {SYMMETRY_TOL})")
# --8<-- [end:validate]


# --8<-- [start:validate_device]
def validate_on_device(C, k) -> tuple[object, int, int]:
    """[`validate`][gpulab.subset.host.validate] for a matrix on the device: the same checks,
    the values examined by one kernel where they lie; three numbers come back.
    Returns `(C as a numba device array, n, k)`."""
    from numba import cuda

    from gpulab.arrays import device_input
    from gpulab.subset.kernels_numba import correlation_checks

    n, k = check_form(C, k)
    dC = device_input(C, "C").array
    stats = cuda.to_device(np.zeros(3, np.float64))
    threads, blocks = (256, min(ceil_div(n * n, 256), 132 * 8)) if not device.on_simulator() else (32, 2)
    correlation_checks[blocks, threads](dC, np.int32(n), stats)
    nonfinite, asymmetry, diagonal = stats.copy_to_host()
    check_values(int(nonfinite), float(asymmetry), float(diagonal))
    return dC, n, k


def squared_packed_on_device(dC, n: int):
    """`Q = pack(C)**2` computed on the device from a device C: a device array of n(n-1)/2
    float64 (at least one element), bit-identical to the host's."""
    from numba import cuda

    from gpulab.subset.kernels_numba import pack_squared

    dQ = cuda.device_array(max(npairs(n), 1), np.float64)
    block = (32, 8) if not device.on_simulator() else (8, 4)
    pack_squared[(ceil_div(n, block[0]), ceil_div(n, block[1])), block](dC, np.int32(n), dQ)
    return dQ


def correlation_on_device(dR):
    """The correlation matrix of T×n returns that live on the device, computed there (float64,
    exactly symmetric, unit diagonal) with the checks of
    [`correlation`][gpulab.subset.reference.correlation]; returns a numba device array."""
    from numba import cuda

    from gpulab.arrays import count_nonfinite
    from gpulab.subset.kernels_numba import column_moments, correlation_pairs

    T, n = dR.shape
    if T < 2:
        raise ShapeError(f"returns has {T} row(s); a correlation needs at least 2 days")
    bad = count_nonfinite(dR) if np.dtype(dR.dtype).kind == "f" else 0
    if bad:
        raise ShapeError(f"returns contain NaN or inf ({bad} values)")
    sim = device.on_simulator()
    mean, ss = cuda.device_array(n, np.float64), cuda.device_array(n, np.float64)
    zero = cuda.to_device(np.zeros(1, np.int32))
    t1 = 32 if sim else 128
    column_moments[ceil_div(n, t1), t1](dR, np.int32(T), np.int32(n), mean, ss, zero)
    if zero.copy_to_host()[0]:
        flat = np.flatnonzero(ss.copy_to_host() == 0)  # only on this error path: n numbers, to name them
        raise ShapeError(f"strategies {flat.tolist()[:10]} have zero variance; their correlation is undefined")
    C = cuda.device_array((n, n), np.float64)
    block = (8, 4) if sim else (32, 8)
    correlation_pairs[(ceil_div(n, block[0]), ceil_div(n, block[1])), block](dR, np.int32(T), np.int32(n), mean, ss, C)
    return C
# --8<-- [end:validate_device]


def correlation(returns):
    """Pearson correlation matrix (n×n, float64) of a T×n matrix of returns (one column per strategy).

    The result is made exactly symmetric with an exact unit diagonal, which the search checks.
    Returns that live on the device (CuPy, PyTorch, numba) are correlated there, and the
    matrix comes back on the device, in the caller's library; host returns go to
    [`reference.correlation`][gpulab.subset.reference.correlation].
    """
    from gpulab.arrays import caller_of, device_input, shape_dtype, to_caller

    if is_device_array(returns):
        shape, _ = shape_dtype(returns)
        if len(shape) != 2:
            raise ShapeError(f"returns must be a 2-D T×n matrix (days × strategies), got shape {shape}")
        r = device_input(returns, "returns")
        return to_caller(correlation_on_device(r.array), caller_of(r))
    return reference.correlation(returns)


def squared_packed(C):
    """`Q = pack(C)**2`: what every kernel reads. A device C gives a device Q (packed there,
    in the caller's library), bit-identical to the host's."""
    from gpulab.arrays import caller_of, device_input, to_caller

    if is_device_array(C):
        c = device_input(C, "C", ndim=2)
        return to_caller(squared_packed_on_device(c.array, c.shape[0])[:c.shape[0] * (c.shape[0] - 1) // 2], caller_of(c))
    return reference.squared_packed(C)


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


def check_shared_layout(variant: str, n: int, k: int, params: dict) -> None:
    """The shared-memory check of the `shared` and `incremental*` variants' launches, made
    without launching (other variants keep nothing in shared memory that grows with n)."""
    block = geometry(params)[0]
    if variant == "shared":
        check_shared(shared_bytes_shared(n, k, block), f"the shared variant (n = {n}, k = {k}, block = {block})")
    elif variant.startswith("incremental"):
        check_shared(shared_bytes_incremental(n, block), f"the incremental variant (n = {n}, block = {block})")


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
    """Q on the device (a host Q is copied now, a device Q used where it lies) and the binomial table."""
    from numba import cuda

    if is_device_array(Q):
        dQ = Q
    else:
        dQ = cuda.to_device(Q if Q.size else np.zeros(1, np.float64))
    return dQ, cuda.to_device(binomial_table(n, k))


def _partitions(start: int, stop: int, partition: int):
    """(base, count) pieces of at most ``partition`` ranks covering [start, stop) in order."""
    base = start
    while base < stop:
        count = min(partition, stop - base)
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


def _block_results(grid):
    """Per-block (value, rank) outputs, poisoned (NaN, 0xDEADBEEF...) so an unwritten slot shows."""
    from numba import cuda

    from gpulab.checking import poisoned

    return cuda.to_device(poisoned(grid, np.float64)), cuda.to_device(poisoned(grid, np.uint64))


def _poisoned_dist(count):
    from numba import cuda

    from gpulab.checking import poisoned

    return cuda.to_device(poisoned(count, np.float64))


# ----------------------------------------------------------------------------- the seed variants' host loop


def _numba_launcher(kern):
    """`launch(grid, block, shared_bytes, *args)` for a numba kernel."""
    return lambda grid, block, nbytes, *args: kern[grid, block, 0, nbytes](*args)


def _cuda_launcher(fn):
    """`launch(grid, block, shared_bytes, *args)` for a CUDA C kernel (pycuda)."""
    return lambda grid, block, nbytes, *args: cudac.launch(fn, (grid,), (block,), *args, shared_bytes=nbytes)


# --8<-- [start:seed_host]
def seed_search(Q, n, k, params, launch_kernel, *, per_subset=False, reads_q=True, extra=(), shared_bytes=0,
                before=None, ranks=None):
    """The host side of the three seed variants (`global`, `shared`, `constant_local`), written
    once for both backends: partitions of `params["partition"]` ranks, one launch each.

    Every seed kernel takes `([Q,] T, n, k, *extra, base, count, *outputs)`. With `per_subset`
    (`global`) the outputs are the per-thread temporaries and one distance per subset, and the
    argmin happens on the host; otherwise one (value, rank) pair per block comes back.
    `launch_kernel(grid, block, shared_bytes, *args)` launches the numba or CUDA C kernel;
    `before()` runs at the start of every search (CUDA C's copy of Q into constant memory).
    `ranks`: search only the ranks [start, stop) (see [`rank_range`][gpulab.subset.combinatorics.rank_range]).
    """
    from numba import cuda

    check_gpu_limits(n, k)
    block, max_blocks, partition = geometry(params)
    start, stop = rank_range(n, k, ranks)
    part = min(partition, stop - start)
    grid = min(ceil_div(part, block), max_blocks)
    if per_subset:
        threads = grid * block
        sel = cuda.device_array(threads * k, np.int32)
        sub = cuda.device_array(max(threads * k * (k - 1) // 2, 1), np.float64)
        dist = _poisoned_dist(part)
        outputs = (sel, sub, dist)
    else:
        vals, ranks = _block_results(grid)
        outputs = (vals, ranks)

    def partition_best(base, count):
        if per_subset:
            d = dist[:count].copy_to_host()  # every distance crosses PCIe ...
            i = int(np.argmin(d))  # ... for an argmin on the host (first minimum = lowest rank)
            return float(d[i]), base + i
        return _host_best(vals.copy_to_host(), ranks.copy_to_host())  # one pair per block

    def launch():
        if before is not None:
            before()
        if reads_q:
            inputs = _upload(Q, n, k)
        else:  # Q is in constant memory
            inputs = (cuda.to_device(binomial_table(n, k)),)
        best = None
        for base, count in _partitions(start, stop, part):  # the host partition loop
            launch_kernel(grid, block, shared_bytes, *inputs, np.int32(n), np.int32(k), *extra,
                          np.uint64(base), np.int64(count), *outputs)
            best = _merge(best, partition_best(base, count))
        return best

    return launch
# --8<-- [end:seed_host]


# ----------------------------------------------------------------------------- numba


def numba_global(Q, n, k, params, ranks=None):
    from gpulab.subset.kernels_numba import subset_global

    return seed_search(Q, n, k, params, _numba_launcher(subset_global), per_subset=True, ranks=ranks)


def _shared_layout_bytes(n, k, params) -> int:
    """Dynamic shared memory of the `shared` variant, checked against the device's limit."""
    check_gpu_limits(n, k)
    block = geometry(params)[0]
    nbytes = shared_bytes_shared(n, k, block)
    check_shared(nbytes, f"the shared variant (n = {n}, k = {k}, block = {block})")
    return nbytes


def numba_shared(Q, n, k, params, ranks=None):
    from gpulab.subset.kernels_numba import SIG_SHARED, subset_shared

    nbytes = _shared_layout_bytes(n, k, params)
    _numba_optin(subset_shared, SIG_SHARED, nbytes)
    return seed_search(Q, n, k, params, _numba_launcher(subset_shared), extra=(np.int32(npairs(n)),),
                       shared_bytes=nbytes, ranks=ranks)


def numba_constant_local(Q, n, k, params, ranks=None):
    from gpulab.subset.kernels_numba import constant_local_kernel

    check_gpu_limits(n, k)
    check_constant(n)
    block = geometry(params)[0]
    # numba's constant arrays are compile-time data: Q (at most 64 KiB) is baked into the
    # kernel, so a Q computed on the device is copied to the host once, here.
    kern = constant_local_kernel(to_host(Q))
    return seed_search(Q, n, k, params, _numba_launcher(kern), reads_q=False, shared_bytes=16 * block, ranks=ranks)


def _incremental_geometry(n, k, params, ranks=None):
    block, max_blocks, _ = geometry(params)
    if block < 32:
        raise LimitError(f"block = {block}: the incremental kernels need at least one full warp (32 threads)")
    start, stop = rank_range(n, k, ranks)
    total = stop - start
    chunk = params.get("chunk", 256)
    if device.on_simulator():
        chunk = min(chunk, params.get("sim_chunk", 7))
    else:
        # small problems: shorter chunks, so that every SM gets threads (2048 per SM when full)
        target = device.info().sm_count * 2048
        chunk = max(min(chunk, params.get("chunk_min", 32)), min(chunk, ceil_div(total, target)))
    nchunks = ceil_div(total, chunk)
    grid = max(1, min(ceil_div(nchunks, block), max_blocks))
    return block, grid, (start, stop), chunk, nchunks


def _numba_incremental(warp):
    def prepare(Q, n, k, params, ranks=None):
        from gpulab.subset.kernels_numba import SIG_INCREMENTAL, final_argmin, incremental_kernel

        check_gpu_limits(n, k)
        block, grid, (start, stop), chunk, nchunks = _incremental_geometry(n, k, params, ranks)
        nbytes = shared_bytes_incremental(n, block)
        check_shared(nbytes, f"the incremental variant (n = {n}, block = {block})")
        kern = incremental_kernel(k, warp)
        _numba_optin(kern, SIG_INCREMENTAL, nbytes)
        vals, block_ranks = _block_results(grid)
        out_v, out_r = _block_results(1)
        fb = 256 if not device.on_simulator() else 32

        # --8<-- [start:incremental_host]
        def launch():
            dQ, dT = _upload(Q, n, k)
            kern[grid, block, 0, nbytes](dQ, dT, np.int32(n), np.int32(npairs(n)), np.uint64(start), np.uint64(stop),
                                         np.uint64(chunk), np.int64(nchunks), vals, block_ranks)
            final_argmin[1, fb, 0, 16 * fb](vals, block_ranks, np.int32(grid), out_v, out_r)
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


def cuda_global(Q, n, k, params, ranks=None):
    check_gpu_limits(n, k)
    return seed_search(Q, n, k, params, _cuda_launcher(_cu("subset_global")), per_subset=True, ranks=ranks)


def cuda_shared(Q, n, k, params, ranks=None):
    nbytes = _shared_layout_bytes(n, k, params)
    return seed_search(Q, n, k, params, _cuda_launcher(_cu("subset_shared")), extra=(np.int32(npairs(n)),),
                       shared_bytes=nbytes, ranks=ranks)


def cuda_constant_local(Q, n, k, params, ranks=None):
    import pycuda.driver as drv

    check_gpu_limits(n, k)
    check_constant(n)
    block = geometry(params)[0]
    module = cudac.load(PACKAGE, SOURCE, {})
    sym, _size = module.get_global("Q_const")

    def copy_q():  # Q -> __constant__ Q_const, from wherever Q lies
        if npairs(n) == 0:
            return
        if is_device_array(Q):
            drv.memcpy_dtod(sym, cudac.ptr(Q), 8 * npairs(n))
        else:
            drv.memcpy_htod(sym, np.ascontiguousarray(Q, dtype=np.float64))

    return seed_search(Q, n, k, params, _cuda_launcher(module.get_function("subset_constant_local")),
                       reads_q=False, shared_bytes=16 * block, before=copy_q, ranks=ranks)


def _cuda_incremental(name):
    def prepare(Q, n, k, params, ranks=None):
        check_gpu_limits(n, k)
        block, grid, (start, stop), chunk, nchunks = _incremental_geometry(n, k, params, ranks)
        nbytes = shared_bytes_incremental(n, block)
        check_shared(nbytes, f"the incremental variant (n = {n}, block = {block})")
        fn = _cu(name, {"SUBSET_K": k})
        fin = _cu("final_argmin", {"SUBSET_K": k})
        vals, block_ranks = _block_results(grid)
        out_v, out_r = _block_results(1)

        def launch():
            dQ, dT = _upload(Q, n, k)
            cudac.launch(fn, (grid,), (block,), dQ, dT, np.int32(n), np.int32(npairs(n)), np.uint64(start),
                         np.uint64(stop), np.uint64(chunk), np.int64(nchunks), vals, block_ranks, shared_bytes=nbytes)
            cudac.launch(fin, (1,), (256,), vals, block_ranks, np.int32(grid), out_v, out_r, shared_bytes=16 * 256)
            s, r = out_v.copy_to_host()[0], out_r.copy_to_host()[0]
            return math.sqrt(2.0 * float(s)), int(r)

        return launch

    return prepare


cuda_incremental = _cuda_incremental("subset_incremental")
cuda_incremental_warp = _cuda_incremental("subset_incremental_warp")


# ----------------------------------------------------------------------------- CPU


def cpu_parallel(Q, n, k, params, ranks=None):
    from gpulab.subset.reference import least_correlated_cpu

    chunk = params.get("chunk", 1 << 16)
    ranks = rank_range(n, k, ranks)

    def launch():
        s, r = least_correlated_cpu(Q, n, k, chunk=chunk, ranks=ranks)
        return math.sqrt(2.0 * s), r

    return launch


REFERENCE_LIMIT = 3_000_000


def cpu_reference(Q, n, k, params, ranks=None):
    from gpulab.subset.reference import distance_from_sum, subset_sum

    total = choose(n, k)
    start, stop = rank_range(n, k, ranks)
    if stop - start > REFERENCE_LIMIT:
        what = f"C({n}, {k}) = {total} subsets" if ranks is None else f"the ranks [{start}, {stop})"
        raise LimitError(f"{what} is over the itertools reference's limit of "
                         f"{REFERENCE_LIMIT} (pure Python: seconds per million subsets)")

    def launch():
        import itertools

        q = Q.tolist()
        best, best_rank = math.inf, -1
        from gpulab.subset.combinatorics import unrank

        first = unrank(n, k, start)  # the first subset of the range, then itertools' lexicographic order on
        subsets = itertools.islice(_lexicographic_from(n, k, first), stop - start)
        for m, c in enumerate(subsets, start):
            d = distance_from_sum(subset_sum(q, c))
            if d < best:
                best, best_rank = d, m
        return best, best_rank

    return launch


def _lexicographic_from(n: int, k: int, c):
    """The k-subsets of range(n) in lexicographic order, from ``c`` on (what
    `itertools.combinations` yields after it, without walking the ones before)."""
    c = list(c)
    while True:
        yield tuple(c)
        i = k - 1
        while i >= 0 and c[i] == n - k + i:
            i -= 1
        if i < 0:
            return
        c[i] += 1
        for t in range(i + 1, k):
            c[t] = c[t - 1] + 1
