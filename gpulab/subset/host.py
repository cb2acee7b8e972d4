"""Host side of chapter 2: validation (errors that name the limit), buffers and launches.

A variant's launch is data: its [`SubsetPolicy`][gpulab.subset.host.SubsetPolicy] names the
kernel, where Q lives (global, shared or constant memory), the shared memory a block needs, and
which of the two launch sequences runs it — the seed's host partition loop
([`SeedPlan`][gpulab.subset.host.SeedPlan]) or the incremental scan's one launch
([`IncrementalPlan`][gpulab.subset.host.IncrementalPlan]). Both are written once, for both
backends, against the chapter's [`KernelSource`][gpulab.launch.KernelSource].

Every variant's `run` has the shape `run(Q, n, k, params, ranks=None) -> launch` where `Q` is
the packed squared correlation matrix — a host numpy array, or a device array when the caller's
matrix lives on the device — and `launch()` runs the whole search end to end: upload Q (a host
Q), run the kernels (and the host partition loop of the seed variants), and return
`(distance, rank)`. What does not depend on Q — the limit checks, the kernels, the launch
geometry, the binomial table, the device buffers and the pinned memory the answer comes back
into — is a plan ([`SearchPlan`][gpulab.subset.host.SearchPlan]) made on the first search of a
shape and kept (`PLANS`, emptied by [`clear_cache`][gpulab.subset.host.clear_cache]), so `run`
itself costs a cache look-up. [`least_correlated`][gpulab.subset.least_correlated] and the
benchmarks both go through these, so what is timed is what is tested. (The CPU variants' `run`
is in [`gpulab.subset.reference`][gpulab.subset.reference].)
"""

from __future__ import annotations

import math
import threading

import numpy as np

from gpulab import device
from gpulab.arrays import check_array, is_device_array, to_host
from gpulab.errors import DtypeError, GpulabError, LimitError, ShapeError
from gpulab.launch import KernelSource, PlanCache, ceil_div, check_block
from gpulab.subset import reference
from gpulab.subset.policy import SubsetPolicy
from gpulab.subset.combinatorics import binomial_table, choose, rank_range

PACKAGE = "gpulab.subset"
SOURCE = "kernels.cu"
MAX_K = 16  # thread-local selection arrays have this compile-time size (kernels_numba.MAX_K, kernels.cu MAX_K)
MAX_N = 4096  # packed offsets i(i-1)/2 + j are computed in 32-bit integers
INT64_MAX = 2**63 - 1  # the incremental kernels count their chunks in a signed 64-bit int
SYMMETRY_TOL = 1e-12
CONST_PAIRS = 8192  # __constant__ double Q_const[8192]: 64 KiB
LANE_SLOTS = 8  # the partial sums a lane of subset_lanes keeps (kernels.cu and kernels_numba.LANE_SLOTS)


# --8<-- [start:validate]
def validate(C, k) -> tuple[np.ndarray, int, int]:
    """Check that C is a correlation matrix and 1 <= k <= n; return `(C as float64, n, k)`."""
    n, k = check_form(C, k)
    C = np.ascontiguousarray(C, dtype=np.float64)
    nonfinite = C.size - np.count_nonzero(np.isfinite(C))
    if nonfinite:  # reported first: the other two checks are not made then
        check_values(nonfinite=nonfinite, asymmetry=0.0, diagonal=0.0)
    check_values(nonfinite=0, asymmetry=float(np.abs(C - C.T).max()),
                 diagonal=float(np.abs(C.diagonal() - 1.0).max()))
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
class DeviceChecks:
    """What a device C's checks and packing use, made once per (n, calling thread) and kept
    in `DEVICE_INPUTS` like the plans, so a repeated search allocates nothing: Q, which the
    search then reads where it lies; two buffers of the three numbers, used in turns (each
    launch zeroes the one the next launch adds into, so no upload resets them); and the pinned
    memory they come back into."""

    def __init__(self, n: int):
        from numba import cuda

        self.n = n
        self.Q = cuda.device_array(max(npairs(n), 1), np.float64)
        self.stats, self.stale = cuda.to_device(np.zeros(3)), cuda.to_device(np.zeros(3))
        self.back = device.Readback(3, np.float64)

    def run(self, dC) -> tuple[int, float, float]:
        """Check and pack dC into `Q`; returns the three numbers. A launch that fails (or is
        interrupted) leaves both buffers zeroed again, so the next call starts clean."""
        stats, stale = self.stats, self.stale
        try:
            _check_and_pack(dC, self.n, stats, stale, self.Q)
        except BaseException:
            self.stats.copy_to_device(np.zeros(3))
            self.stale.copy_to_device(np.zeros(3))
            raise
        self.stats, self.stale = stale, stats  # the next launch adds into the buffer this one zeroed
        nonfinite, asymmetry, diagonal = self.back.fetch(stats)
        return int(nonfinite), float(asymmetry), float(diagonal)


DEVICE_INPUTS = PlanCache(maxsize=8)


def _check_and_pack(dC, n: int, stats, stale, dQ) -> None:
    """One launch of `check_and_pack`: Q from dC, the three numbers added into `stats`
    (zeroed before), `stale` zeroed."""
    from gpulab.launch import launch_numba
    from gpulab.subset.kernels_numba import check_and_pack

    sim = device.on_simulator()
    threads, blocks = (256, min(ceil_div(n * n, 256), device.info().sm_count * 8)) if not sim else (32, 2)
    launch_numba(check_and_pack, blocks, threads, dC, np.int32(n), stats, stale, dQ)


def validated_packed_on_device(C, k) -> tuple[object, int, int]:
    """[`validate`][gpulab.subset.host.validate] and `squared_packed` for a matrix on the
    device, in one launch where it lies: the kernel writes Q and three numbers (24 bytes) come
    back. Returns `(Q, n, k)`; Q is a numba device array of n(n-1)/2 float64 (at least one
    element), bit-identical to the host's, and a buffer kept for this thread and n: the next
    such call here overwrites it (`least_correlated` searches it at once)."""
    from gpulab.arrays import device_input_on

    n, k = check_form(C, k)
    dC = device_input_on(C, "C").array
    checks = DEVICE_INPUTS.get((n, threading.get_ident()), lambda: DeviceChecks(n))
    check_values(*checks.run(dC))
    return checks.Q, n, k


def squared_packed_on_device(dC, n: int):
    """`Q = pack(C)**2` computed on the device from a device C (no checks): a new device array
    of n(n-1)/2 float64 (at least one element), bit-identical to the host's."""
    from numba import cuda

    dQ = cuda.device_array(max(npairs(n), 1), np.float64)
    unread = cuda.device_array(3, np.float64)
    _check_and_pack(dC, n, unread, unread, dQ)
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
        if c.shape[0] != c.shape[1]:
            raise ShapeError(f"C must be a square n×n matrix, got shape {c.shape}")
        return to_caller(squared_packed_on_device(c.array, c.shape[0])[:c.shape[0] * (c.shape[0] - 1) // 2], caller_of(c))
    return reference.squared_packed(C)


def check_gpu_limits(n: int, k: int) -> None:
    """The limits of every GPU kernel, whatever the memory Q is read from: k <= MAX_K, and
    n <= MAX_N (the packed offsets i(i-1)/2 + j are 32-bit ints). The others are checked where
    they arise: C(n, k) must fit the 64-bit unsigned ranks (`check_form`), the incremental
    scan's chunk count a 64-bit signed int (`IncrementalPlan`), and the device's shared or
    constant memory must hold Q where a variant copies it there."""
    if k > MAX_K:
        raise LimitError(f"k = {k} exceeds the GPU kernels' limit of MAX_K = {MAX_K} (the size of the thread-local selection)")
    if n > MAX_N:
        raise LimitError(f"n = {n} exceeds the GPU kernels' limit of MAX_N = {MAX_N} strategies (32-bit packed offsets)")


def npairs(n: int) -> int:
    return n * (n - 1) // 2


def shared_limit() -> int:
    """Dynamic shared memory a block may use on this device (with the opt-in above 48 KiB)."""
    return device.info().shared_memory_per_block_optin


# ----------------------------------------------------------------------------- launch policies


def shared_bytes(policy: SubsetPolicy, n: int, k: int, block: int) -> int:
    """Dynamic shared memory of `policy`'s launch: Q (8·n(n-1)/2 bytes, where it is copied into
    shared memory) + `thread_bytes` per thread."""
    a, b = policy.thread_bytes
    return (8 * npairs(n) if policy.q_in == "shared" else 0) + (a + b * k) * block


def check_shared_layout(policy: SubsetPolicy, n: int, k: int, params: dict) -> int:
    """The shared-memory check of a launch, made without launching; returns its bytes. Only a
    layout that holds Q grows with n, so only that one is checked against the device."""
    block = geometry(params)[0]
    nbytes = shared_bytes(policy, n, k, block)
    if policy.q_in == "shared":
        check_shared(nbytes, f"a search with Q in shared memory (n = {n}, k = {k}, block = {block})")
    return nbytes


def check_shared(nbytes: int, what: str) -> None:
    limit = shared_limit()
    if nbytes > limit:
        raise LimitError(f"{what} needs {nbytes} bytes of shared memory per block, over the device limit of "
                         f"{limit} bytes; use fewer strategies (n), a smaller block, or the variant "
                         "incremental_global (Q read from global memory: no shared-memory cap)")


# Every CUDA GPU gives a block 48 KiB of shared memory without the opt-in: a layout within it
# fits any device, known without asking one (no CUDA context).
SHARED_EVERYWHERE = 48 * 1024


# The opt-in shared memory per block of sm_90 (H100, H200), for a choice made in a process that
# must not ask the device: a Dask client, which never launches (asking would open a CUDA context
# there, on the GPU of a worker).
SM90_SHARED_OPTIN = 232_448


def fits_shared(policy: SubsetPolicy, n: int, k: int, params: dict, limit: int | None = None) -> bool:
    """Whether `policy`'s shared-memory layout at n fits a block's shared memory (always where
    Q is not copied into shared memory). `limit`: the bytes per block to assume (a process that
    must not ask the device passes `SM90_SHARED_OPTIN`, a Dask client its workers' smallest);
    `None`: this device's, asked only above `SHARED_EVERYWHERE`."""
    if policy.q_in != "shared":
        return True
    nbytes = shared_bytes(policy, n, k, geometry(params)[0])
    return nbytes <= SHARED_EVERYWHERE or nbytes <= (shared_limit() if limit is None else limit)


def max_n_shared(policy: SubsetPolicy, k: int, block: int) -> int:
    """The largest n whose `policy` layout fits this device's shared memory."""
    n = 1
    while shared_bytes(policy, n + 1, k, block) <= shared_limit():
        n += 1
    return n


def check_constant(n: int) -> None:
    nbytes = 8 * npairs(n)
    limit = min(device.info().constant_memory, 8 * CONST_PAIRS)
    if nbytes > limit:
        raise LimitError(f"Q for n = {n} is {npairs(n)} float64 = {nbytes} bytes, which does not fit constant "
                         f"memory ({limit} bytes: n(n-1)/2 <= {limit // 8}, i.e. n <= {max_n_constant()}); "
                         "use the shared or incremental variant")


def fits_by_kernel(policy: SubsetPolicy, n: int) -> bool:
    """Whether `policy`'s kernel takes n strategies by its own sizes, known without a CUDA
    context: the constant-memory kernel's `Q_const` holds CONST_PAIRS values (64 KiB, every
    CUDA GPU's constant memory), n <= 128. (The shared-memory cap of Q in shared memory needs
    the device, and is the search's own check.)"""
    return policy.q_in != "constant" or npairs(n) <= CONST_PAIRS


def max_n_constant() -> int:
    limit = min(device.info().constant_memory, 8 * CONST_PAIRS)
    n = 1
    while 8 * npairs(n + 1) <= limit:
        n += 1
    return n


PARAMS = ("BLOCK", "MAX_BLOCKS", "PARTITION", "CHUNK", "CHUNK_MIN", "FINAL_BLOCK", "WAVES")


def check_params(params: dict | None) -> None:
    """A caller's `params` override: names this chapter knows (`PARAMS`, upper-case; the same
    dict may serve every variant, each reading its own), whole numbers; the blocks that reduce
    by halving must be powers of two within the block limit (another size would leave part of
    the argmin unread: a wrong answer). Anything else is refused, naming the parameter."""
    if params is not None and not isinstance(params, dict):
        raise DtypeError(f"params must be a dict, got {type(params).__name__}")
    for key, value in (params or {}).items():
        if key not in PARAMS:
            hint = (f" (parameter names are upper-case: {str(key).upper()!r})" if str(key).upper() in PARAMS
                    else f"; known: {', '.join(PARAMS)}")
            raise GpulabError(f"params: unknown parameter {key!r}{hint}")
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise GpulabError(f"params: {key} = {value!r} must be a whole number >= 1")
        if key in ("BLOCK", "FINAL_BLOCK"):
            check_reduction_block(f"params: {key}", int(value))


def check_reduction_block(name: str, threads: int) -> None:
    """A block that reduces its (value, rank) pairs by halving: within the block limit and a
    power of two (another size would leave part of the argmin unread: a wrong answer)."""
    check_block(threads)
    if threads & (threads - 1):
        raise LimitError(f"{name} = {threads} must be a power of two (the argmin halves the block)")


def geometry(params: dict) -> tuple[int, int, int]:
    """(block, max_blocks, partition) of these parameters (the simulator's smaller ones come
    from the variant's `sim_params`, through `Variant.launch_params`)."""
    block = params.get("BLOCK", 256)
    max_blocks = params.get("MAX_BLOCKS", 132 * 16)
    partition = params.get("PARTITION", 1 << 24)
    check_reduction_block("BLOCK", block)
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


def _block_results(grid: int):
    """Per-block (value, rank) outputs in one device buffer of 2·grid uint64 — the values
    (float64 bits) first, then the ranks — poisoned (NaN, 0xDEADBEEF...) so a slot that no
    block wrote shows (in a plan's first search: a kept plan reuses them, and every block of
    its fixed grid writes its slot in every launch), so that one copy brings every pair down. Returns `(vals, ranks, buffer)`:
    `vals` (float64) and `ranks` (uint64) are views of `buffer`."""
    from numba import cuda

    from gpulab.checking import poisoned

    buf = cuda.to_device(np.concatenate([poisoned(grid, np.float64).view(np.uint64), poisoned(grid, np.uint64)]))
    return buf[:grid].view(np.float64), buf[grid:], buf


def _pairs(host, grid: int):
    """The (values, ranks) of a `_block_results` buffer copied to the host."""
    return host[:grid].view(np.float64), host[grid:]


# ----------------------------------------------------------------------------- the kernels


def numba_kernel(name: str, p: dict):
    """The numba kernel `name` built with the parameters `p` (`SUBSET_K`; `Q_CONST`: the Q the
    constant-memory kernel is compiled with)."""
    from gpulab.subset import kernels_numba as kn

    factories = {
        "subset_global": lambda: kn.subset_global, "subset_shared": lambda: kn.subset_shared,
        "subset_constant_local": lambda: kn.constant_local_kernel(p["Q_CONST"]),
        "subset_incremental": lambda: kn.incremental_kernel(p["SUBSET_K"], False),
        "subset_incremental_warp": lambda: kn.incremental_kernel(p["SUBSET_K"], True),
        "subset_incremental_global": lambda: kn.incremental_kernel(p["SUBSET_K"], False, "global"),
        "subset_lanes": lambda: kn.lanes_kernel(p["SUBSET_K"]),
        "final_argmin": lambda: kn.final_argmin,
    }
    return factories[name]()


KERNELS = KernelSource(PACKAGE, numba_kernel, source=SOURCE, defines=("SUBSET_K",), constant="Q_const")


# ----------------------------------------------------------------------------- plans kept between calls


# A plan holds a few small device buffers (Q: at most 64 MiB at MAX_N, the per-block pairs:
# kilobytes), so several shapes are kept; the least recently used goes first. A search split
# into equal rank ranges (the CLI's chunks, gpulab.distributed's tasks) needs at most two: the
# ranges' width is the shape, not their start.
PLANS = PlanCache(maxsize=8)


def clear_cache() -> None:
    """Drop the kept search plans (kernels, binomial tables, device and pinned buffers) and the
    buffers of a device C's checks: their memory is freed once nothing else holds them. The next search of each shape makes its plan
    again."""
    PLANS.clear()
    DEVICE_INPUTS.clear()


def launcher(policy: SubsetPolicy, backend: str):
    """The `run` of a GPU variant: `run(Q, n, k, params, ranks=None) -> launch`."""

    def run(Q, n, k, params, ranks=None):
        return prepare(policy, backend, Q, n, k, params, ranks)

    return run


def prepare(policy: SubsetPolicy, backend: str, Q, n: int, k: int, params: dict, ranks=None):
    """`launch()` of `policy`'s search of `Q` on `backend`: the plan kept for its shape
    ([`plan_for`][gpulab.subset.host.plan_for]) bound to this `Q` (a host Q: n(n-1)/2 values)."""
    if not is_device_array(Q):
        Q = np.ascontiguousarray(Q, np.float64)
        size = Q.size
    else:  # read from its interface, the data untouched: the kernels read n(n-1)/2 doubles
        shape, dtype = check_array(Q, "Q", ndim=1)
        if dtype != np.float64:
            raise DtypeError(f"Q on the device has dtype {dtype}; the kernels read float64 (squared_packed's output)")
        size = shape[0]
    if size != npairs(n) and not (npairs(n) == 0 and size <= 1):  # (n = 1: an empty Q, or its 1-slot stand-in)
        raise ShapeError(f"Q has {size} values; n = {n} packs n(n-1)/2 = {npairs(n)}")
    plan, start, stop = plan_for(policy, backend, n, k, params, ranks)
    return plan.bind(Q, start, stop)


def plan_for(policy: SubsetPolicy, backend: str, n: int, k: int, params: dict, ranks=None):
    """`(plan, start, stop)`: the plan kept for (policy, backend, n, k, params, the number of
    ranks searched, the calling thread) — made the first time that shape is searched, its limits checked then (a
    plan that fails them is not kept) — and the ranks [start, stop) `ranks` names."""
    start, stop = rank_range(n, k, ranks)
    # A plan's buffers (Q, the blocks' answers, the pinned result) serve one search at a time:
    # each thread gets its own plans (a Dask worker may run several searches at once).
    key = (policy, backend, n, k, tuple(sorted(params.items())), stop - start, threading.get_ident())
    kind = IncrementalPlan if policy.chunked else SeedPlan
    return PLANS.get(key, lambda: kind(policy, backend, n, k, params, stop - start)), start, stop


class SearchPlan:
    """Everything a search needs besides Q, made once per (policy, backend, n, k, params,
    number of ranks) and kept in `PLANS`: the limit checks, the kernels (built and looked up;
    numba's opt-in to more than 48 KiB of shared memory), the launch geometry, the binomial
    table on the device, a device buffer for Q, the per-block result buffers and the pinned
    host memory the answer comes down into.

    Per call, [`bind`][gpulab.subset.host.SearchPlan.bind]`(Q, start, stop)()` is left with: a
    host Q copied into the kept buffer (the one upload; a device Q is read where it lies), the
    launches, and the download of the reduced answer. Its buffers are reused by every call, so
    plans are kept per thread: two threads searching the same shape at once never share one. numba's `constant_local` kernel has Q baked in (numba's
    constant arrays are compile-time data): it alone is looked up per Q, in `bind` (compiled
    once per Q, then found in `kernels_numba`'s cache of the last 8).
    """

    def __init__(self, policy: SubsetPolicy, backend: str, n: int, k: int, params: dict, width: int):
        from numba import cuda

        check_gpu_limits(n, k)
        if policy.q_in == "constant":
            check_constant(n)
        self.nbytes = check_shared_layout(policy, n, k, params)
        self.policy, self.backend, self.n, self.k = policy, backend, n, k
        self.block, self.max_blocks, self.partition = geometry(params)
        self.baked = policy.q_in == "constant" and backend == "numba"
        self.K = None if self.baked else self.provider({"SUBSET_K": k} if policy.chunked else {})
        self.T = cuda.to_device(binomial_table(n, k))
        self.dQ = cuda.to_device(np.zeros(max(npairs(n), 1), np.float64)) if policy.q_in != "constant" else None

    def provider(self, kparams: dict):
        """The kernel provider for `kparams`, the search kernel built now (not in the first
        timed search)."""
        K = KERNELS.provider(self.backend, kparams)
        kern = K.kernel(self.policy.kernel)
        if self.backend == "numba" and self.policy.signature:
            from gpulab.subset import kernels_numba

            _numba_optin(kern, getattr(kernels_numba, self.policy.signature), self.nbytes)
        return K

    def bind(self, Q, start: int, stop: int):
        """`launch()`: this plan's search of `Q` over the ranks [start, stop) (as many as the
        plan was made for; a host Q: float64, contiguous, n(n-1)/2 values, as `prepare` checks)."""
        K = self.provider({"Q_CONST": to_host(Q)}) if self.baked else self.K
        return lambda: self.launch(Q, K, start, stop)

    def q_on_device(self, Q):
        """Q where the kernels read it: a device Q as it is, a host Q copied into the kept
        buffer (the call's one upload)."""
        if is_device_array(Q):
            return Q
        if Q.size:
            self.dQ.copy_to_device(Q)
        return self.dQ

    def launch(self, Q, K, start: int, stop: int) -> tuple[float, int]:
        raise NotImplementedError


# ----------------------------------------------------------------------------- the seed variants' host loop


# --8<-- [start:seed_host]
class SeedPlan(SearchPlan):
    """The host side of the three seed variants (`global`, `shared`, `constant_local`), written
    once for both backends: partitions of `params["PARTITION"]` ranks, one launch each.

    Every seed kernel takes `([Q,] T, n, k, [npairs,] base, count, *outputs)` (Q unless it is
    in constant memory, npairs where every block copies Q into shared memory). With
    `per_subset` (`global`) the outputs are the per-thread temporaries and one distance per
    subset, and the argmin happens on the host; otherwise one (value, rank) pair per block
    comes back. `K(name, grid, block, *args, shared_bytes=...)` launches the numba or CUDA C
    kernel; a CUDA C search first copies Q into constant memory where the kernel reads it there.
    The buffers are made once, with the plan; `launch` only fills and reads them.
    """

    def __init__(self, policy, backend, n, k, params, width):
        from numba import cuda

        from gpulab.checking import poisoned

        super().__init__(policy, backend, n, k, params, width)
        self.part = min(self.partition, width)
        self.grid = min(ceil_div(self.part, self.block), self.max_blocks)
        self.extra = (np.int32(npairs(n)),) if policy.q_in == "shared" else ()
        if policy.per_subset:
            threads = self.grid * self.block
            sel = cuda.device_array(threads * k, np.int32)
            sub = cuda.device_array(max(threads * k * (k - 1) // 2, 1), np.float64)
            self.dist = cuda.to_device(poisoned(self.part, np.float64))
            self.outputs = (sel, sub, self.dist)
        else:
            vals, ranks, self.pairs = _block_results(self.grid)
            self.pairs_back = device.Readback(self.pairs.shape, self.pairs.dtype)  # pinned memory for them
            self.outputs = (vals, ranks)

    def partition_best(self, base, count):
        if self.policy.per_subset:
            d = self.dist[:count].copy_to_host()  # every distance crosses PCIe ...
            i = int(np.argmin(d))  # ... for an argmin on the host (first minimum = lowest rank)
            return float(d[i]), base + i
        pairs = self.pairs_back.fetch(self.pairs)  # one pair per block, in one copy
        return _host_best(*_pairs(pairs, self.grid))

    def launch(self, Q, K, start, stop):
        if self.policy.q_in == "constant":
            if K.backend == "cuda-c":
                K.copy_to_constant(Q, 8 * npairs(self.n))  # -> Q_const
            inputs = (self.T,)
        else:
            inputs = (self.q_on_device(Q), self.T)
        best = None
        for base, count in _partitions(start, stop, self.part):  # the host partition loop
            K(self.policy.kernel, (self.grid,), (self.block,), *inputs, np.int32(self.n), np.int32(self.k),
              *self.extra, np.uint64(base), np.int64(count), *self.outputs, shared_bytes=self.nbytes)
            best = _merge(best, self.partition_best(base, count))
        return best
# --8<-- [end:seed_host]


# ----------------------------------------------------------------------------- the incremental scan


class IncrementalPlan(SearchPlan):
    """The incremental variants' search, for both backends: chunks of `params["CHUNK"]`
    consecutive ranks per thread, or per warp where `policy.per_warp` (shorter for small
    problems, so that every SM gets threads),
    the whole search in one launch, then `policy.final` reduces the blocks' answers in one
    block of `params["FINAL_BLOCK"]` threads, on the device: one (value, rank) pair comes back
    (16 bytes, into pinned memory), however many blocks searched. A block larger than the
    kernel's registers allow on this GPU (`device.registers_fit`) is halved until it fits:
    `incremental_lanes` needs more than 128 registers a thread at large k, where a 512-thread
    launch would fail."""

    def __init__(self, policy, backend, n, k, params, width):
        block = geometry(params)[0]
        if block < 32:
            raise LimitError(f"block = {block}: the incremental kernels need at least one full warp (32 threads)")
        check_reduction_block("FINAL_BLOCK", params["FINAL_BLOCK"])
        if policy.per_warp and n > 32 * LANE_SLOTS:  # (shared memory caps n lower on today's GPUs)
            raise LimitError(f"n = {n} exceeds {policy.kernel}'s limit of {32 * LANE_SLOTS} strategies (each of a "
                             f"warp's 32 lanes keeps {LANE_SLOTS} partial sums); use incremental_global")
        super().__init__(policy, backend, n, k, params, width)
        self.regs = self.registers()
        while self.regs and self.block > 32 and not device.registers_fit(self.block, self.regs):
            self.block //= 2  # a block the kernel's registers allow (incremental_lanes at large k needs > 128)
        self.nbytes = shared_bytes(policy, n, k, self.block)
        chunk = params.get("CHUNK", 256)
        lanes = 32 if policy.per_warp else 1  # the threads that share a chunk
        target = device.info().sm_count * 2048 // lanes  # chunks that fill every SM
        self.chunk = max(min(chunk, params.get("CHUNK_MIN", 32)), min(chunk, ceil_div(width, target)))
        self.nchunks = ceil_div(width, self.chunk)
        if self.nchunks > INT64_MAX:
            raise LimitError(f"{width} ranks in chunks of {self.chunk} make {self.nchunks} chunks, over the kernels' "
                             f"64-bit signed chunk count ({INT64_MAX}); use a larger CHUNK")
        per_block = self.block // lanes
        self.grid = max(1, min(ceil_div(self.nchunks, per_block), self.max_blocks, self.waves_cap(params)))
        self.final_block = params["FINAL_BLOCK"]
        self.vals, self.ranks, _ = _block_results(self.grid)  # one pair per block: they stay on the device
        self.out_v, self.out_r, self.out = _block_results(1)  # the one pair that comes back
        self.out_back = device.Readback(self.out.shape, self.out.dtype)  # pinned memory for it

    def waves_cap(self, params: dict) -> int:
        """The most blocks a launch gets: `params["WAVES"]` times what the GPU runs at once
        (`gpulab.device.resident_blocks` per SM, times the SMs). A block ends with its slowest
        warp, and with Q in shared memory an SM may hold one block only; many short waves of
        blocks then leave SMs idle at the end of each block, while few long ones even out (on
        an H100 at C(200,5): 16.4 ms with the former grid, 13.0 with two waves,
        docs/benchmarks/subset-grid-h100.json). The registry's parameters always carry WAVES; a
        large one lifts the cap. No cap on the simulator, nor where the kernel's registers or the
        device's limits cannot be read (then `MAX_BLOCKS` alone, as before)."""
        waves = params.get("WAVES")
        if not waves or not self.regs:
            return self.max_blocks
        try:
            per_sm = device.resident_blocks(self.block, self.nbytes, self.regs)
        except Exception:  # noqa: BLE001  (a cap is an optimization: without its inputs, launch as before)
            return self.max_blocks
        return waves * device.info().sm_count * per_sm

    def registers(self) -> int | None:
        """The search kernel's registers per thread; `None` on the simulator or where they
        cannot be read."""
        if device.on_simulator():
            return None
        from gpulab.subset import kernels_numba

        sig = getattr(kernels_numba, self.policy.signature) if self.backend == "numba" else None
        try:
            return self.K.registers(self.policy.kernel, sig)
        except Exception:  # noqa: BLE001  (used to size launches: without it, launch as asked)
            return None

    # --8<-- [start:incremental_host]
    def launch(self, Q, K, start, stop):
        self.search(self.q_on_device(Q), K, start, stop)  # the one upload (none for a device Q)
        s, r = _pairs(self.out_back.fetch(self.out), 1)  # the one download (16 bytes) and the one host sync
        return math.sqrt(2.0 * float(s[0])), int(r[0])

    def search(self, dQ, K, start, stop):
        """The two launches: the scan (one (value, rank) pair per block), then the argmin of
        the blocks' pairs in one block, into `self.out`."""
        K(self.policy.kernel, (self.grid,), (self.block,), dQ, self.T, np.int32(self.n), np.int32(npairs(self.n)),
          np.uint64(start), np.uint64(stop), np.uint64(self.chunk), np.int64(self.nchunks),
          self.vals, self.ranks, shared_bytes=self.nbytes)
        K(self.policy.final, (1,), (self.final_block,), self.vals, self.ranks, np.int32(self.grid),
          self.out_v, self.out_r, shared_bytes=16 * self.final_block)
    # --8<-- [end:incremental_host]
