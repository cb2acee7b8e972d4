"""Host side of chapter 1: validation, and the one launch path of every variant.

A variant's launch is data: its [`MatmulPolicy`][gpulab.matmul.host.MatmulPolicy] names the
kernel, the tile of C each block computes and each thread's share of it, and whether B lives
in constant memory. [`launcher`][gpulab.matmul.host.launcher]`(policy)` is the `run` of every
variant, on both backends: `run(dA, dB, dC, B_host, params, stream=0) -> launch` takes device
arrays (and the host copy of B, which numba's constant-memory kernels bake into the kernel;
`None` when B lives on the device, which they then copy once) and returns a zero-argument
function that enqueues the kernel on `stream` through the chapter's one
[`KernelSource`][gpulab.launch.KernelSource]. The public [`matmul`][gpulab.matmul.matmul] and
the benchmarks both go through it, so what is timed is what is tested.
"""

from __future__ import annotations

import threading

import numpy as np

from gpulab import device
from gpulab.arrays import check_array, to_host
from gpulab.errors import BackendUnavailable, DtypeError, LimitError, ShapeError
from gpulab.launch import KernelSource, PlanCache, ceil_div, check_block
from gpulab.matmul.policy import Dim, MatmulPolicy

PACKAGE = "gpulab.matmul"
SOURCE = "kernels.cu"
INT32_MAX = 2**31 - 1


def fits(M: int, K: int, N: int) -> bool:
    """Whether an M×K by K×N float32 product passes `validate`'s limits (every dimension at
    least 1; A, B and C within int32 indexing): the one rule both the full path and the public
    call's short way (`gpulab.matmul._by_pointers`) apply."""
    return M >= 1 and K >= 1 and N >= 1 and max(M * K, K * N, M * N) <= INT32_MAX


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


def _size(d: Dim, params: dict) -> int:
    return params[d] if isinstance(d, str) else d


def geometry(policy: MatmulPolicy, params: dict, M: int, N: int) -> tuple[tuple, tuple]:
    """`(grid, block)` of `policy`'s launch for an M×N C with these parameters (the block
    checked against the 1024-thread limit)."""
    tr, tc = (_size(d, params) for d in policy.tile)
    if policy.threads is not None:
        block = (_size(policy.threads, params),)
    else:
        pr, pc = (_size(d, params) for d in policy.per_thread)
        block = (tr // pr, tc // pc) if policy.rows_on_x else (tc // pc, tr // pr)
    check_block(int(np.prod(block)))
    grid = (ceil_div(M, tr), ceil_div(N, tc)) if policy.rows_on_x else (ceil_div(N, tc), ceil_div(M, tr))
    return grid, block


# ----------------------------------------------------------------------------- the kernels

TILE_PARAMS = ("BM", "BN", "BK", "TM", "TN", "PAD")
WT_PARAMS = ("WT_BM", "WT_BN", "WT_BK", "WT_WM", "WT_WN", "WT_WNITER", "WT_TM", "WT_TN", "WT_THREADS",
             "WT_MINBLOCKS", "WT_APAD")  # the warp-tiled kernel's, WT_-prefixed in both backends
CONSTANT_DATA = "B_CONST"  # numba: the B its constant-memory kernels are compiled with (not a -D macro)


def numba_kernel(name: str, p: dict):
    """The numba kernel `name` built with the parameters `p`."""
    from gpulab.matmul import kernels_numba as kn

    tile = lambda: {k: p[k] for k in TILE_PARAMS}  # noqa: E731
    factories = {
        "matmul_naive": lambda: kn.matmul_naive, "matmul_coalesced": lambda: kn.matmul_coalesced,
        "matmul_shared": lambda: kn.shared_kernel(p["TILE"]),
        "matmul_constant": lambda: kn.constant_kernel(p[CONSTANT_DATA], True),
        "matmul_constant_scattered": lambda: kn.constant_kernel(p[CONSTANT_DATA], False),
        "matmul_register": lambda: kn.register_kernel(**tile()),
        "matmul_prefetch": lambda: kn.prefetch_kernel(**tile()),
        "matmul_wide": lambda: kn.wide_kernel(**tile()),
        "matmul_warptile": lambda: kn.warptile_kernel(**{k: p[k] for k in WT_PARAMS}),
        "matmul_streamk": lambda: kn.streamk_kernel(**{k: p[k] for k in WT_PARAMS}),
    }
    return factories[name]()


# matmul_cpasync's defines: warptile's shape under its own prefix, plus the pipeline depth and
# the rasterization group (kernels.cu says what each is).
CPASYNC_PARAMS = ("CA_BM", "CA_BN", "CA_BK", "CA_WM", "CA_WN", "CA_WNITER", "CA_TM", "CA_TN", "CA_THREADS",
                  "CA_MINBLOCKS", "CA_APAD", "CA_STAGES", "CA_GROUP")
# Launch-time parameters the host reads (stream-K's schedule: `stream_k_launch`), not -D macros
HOST_PARAMS = ("SK_PER_SM", "SK_MIN")
# matmul_streamk's own macro: WT_SK_FIRST 1 runs the stream-K blocks before the whole tiles (CUDA C)
SK_DEFINES = ("WT_SK_FIRST",)
KERNELS = KernelSource(PACKAGE, numba_kernel, source=SOURCE, constant="B_const",
                       defines=("TILE", *TILE_PARAMS, *WT_PARAMS, *SK_DEFINES, *CPASYNC_PARAMS))


# ----------------------------------------------------------------------------- the one launch path


def check_cc(policy: MatmulPolicy) -> None:
    """Refuse a kernel that needs a newer GPU than this one (`policy.min_cc`)."""
    reason = device.too_old_for(policy.min_cc)
    if reason:
        raise BackendUnavailable(f"{policy.kernel} {reason} (it uses cp.async)")


# --8<-- [start:stream_k_schedule]
def stream_k_schedule(tiles: int, k_tiles: int, slots: int, min_k_tiles: int) -> tuple[int, int]:
    """How a stream-K launch splits its work: `(dp_tiles, sk_blocks)`.

    `tiles` tiles of C, each `k_tiles` deep, on a GPU with `slots` resident blocks. The first
    `dp_tiles` blocks compute one whole tile each (the full waves); the remaining
    `tiles - dp_tiles` tiles (the last wave, part-empty) are shared along k by `sk_blocks`
    blocks, each taking an equal run of their `(tiles - dp_tiles) * k_tiles` k-tiles, at least
    `min_k_tiles` of them. `sk_blocks` is 0 (every tile whole, as warptile) when the last wave
    is full or nearly (90 % or more: splitting would save less than a tenth of one tile's
    time), or when splitting would not give more blocks than the tiles it splits.
    """
    sk_tiles = tiles % slots
    if sk_tiles == 0 or 10 * sk_tiles >= 9 * slots:
        return tiles, 0
    sk_blocks = min(slots, sk_tiles * k_tiles // max(1, min_k_tiles))
    if sk_blocks <= sk_tiles:
        return tiles, 0
    return tiles - sk_tiles, sk_blocks
# --8<-- [end:stream_k_schedule]


# Each stream's stream-K workspace: two tile-sized slots of partial sums per stream-K block and
# one arrival count per stream-K tile (all zero between launches: the last block to arrive at a
# tile sets its count back). Keyed by device, stream, host thread and size: launches that may
# run at once never share one (two threads' "default" streams are two streams where the
# per-thread default stream is on, and a per-thread stream handle is the same in every thread).
_SK_WORKSPACES = PlanCache(maxsize=8)


def clear_workspaces() -> None:
    """Forget the stream-K workspaces (after a device reset: a new context's key may repeat the
    old one's; kept launches hold their own until they are dropped)."""
    _SK_WORKSPACES.clear()


GRID_Y_MAX = 65535  # the hardware's limit on gridDim.y


def stream_k_workspace(slots: int, tile_floats: int, stream=0):
    """`(partials, arrivals)` for stream-K launches of up to `slots` blocks on `stream` from
    this host thread (the counts zeroed in `stream`'s order, before its first launch)."""
    from numba import cuda

    key = (getattr(cuda.get_current_device(), "id", 0), int(stream) if stream else 0, threading.get_ident(),
           slots, tile_floats)
    return _SK_WORKSPACES.get(key, lambda: (cuda.device_array(2 * slots * tile_floats, np.float32),
                                            cuda.to_device(np.zeros(slots, np.int32), stream=stream or 0)))


def stream_k_launch(policy: MatmulPolicy, params: dict, M: int, N: int, K: int, stream=0):
    """`(grid, extra arguments)` of a stream-K launch: the schedule and this stream's workspace."""
    for name in HOST_PARAMS:
        if not (isinstance(params.get(name), (int, np.integer)) and params[name] >= 1):
            raise LimitError(f"stream-K parameter {name} must be a whole number >= 1, got {params.get(name)!r}")
    tr, tc = (_size(d, params) for d in policy.tile)
    tiles_n = ceil_div(N, tc)
    tiles, k_tiles = ceil_div(M, tr) * tiles_n, ceil_div(K, params["WT_BK"])
    slots = device.info().sm_count * params["SK_PER_SM"]
    dp_tiles, sk_blocks = stream_k_schedule(tiles, k_tiles, slots, params["SK_MIN"])
    # warptile's grid (x over tile columns, y over tile rows): block (x, y) is tile y*tiles_n + x,
    # whole for the first dp_tiles, then the stream-K blocks in the rows that follow; with
    # WT_SK_FIRST the stream-K blocks' rows come first and the whole tiles' rows after them. (One
    # dimension of blocks, the tile found by a division, ran 2.0 to 2.3 % slower at full waves.)
    rows = ((ceil_div(sk_blocks, tiles_n) + ceil_div(dp_tiles, tiles_n)) if params.get("WT_SK_FIRST")
            else ceil_div(dp_tiles + sk_blocks, tiles_n))
    if rows > GRID_Y_MAX:  # more grid rows than warptile's: no split
        dp_tiles, sk_blocks, rows = tiles, 0, ceil_div(tiles, tiles_n)
    partials, arrivals = stream_k_workspace(slots, tr * tc, stream)
    return (tiles_n, rows), (partials, arrivals, np.int32(dp_tiles), np.int32(sk_blocks))


def plan(policy: MatmulPolicy, backend: str, M: int, K: int, N: int, params: dict, stream=0):
    """Everything about `policy`'s launch on `backend` that depends only on the shape, done once:
    its kernel built, grid and block, the stream-K schedule and workspace. Returns
    `launch(dA, dB, dC)`, which enqueues the kernel on `stream` for those arrays (M×K, K×N,
    M×N). Not for constant-memory policies, whose B is part of the kernel (`prepare`)."""
    if policy.constant_b:
        raise ValueError(f"{policy.kernel} reads B from constant memory: its launch is made per B (prepare)")
    grid, block, extra, kern = _launch_parts(policy, backend, M, K, N, params, stream)
    name, dims = policy.kernel, (np.int32(M), np.int32(N), np.int32(K))
    return lambda dA, dB, dC: kern(name, grid, block, dA, dB, dC, *dims, *extra)


# --8<-- [start:pointer_plan]
def pointer_plan(policy: MatmulPolicy, backend: str, M: int, K: int, N: int, params: dict, templates=None):
    """[`plan`][gpulab.matmul.host.plan]'s launch, the same kernel, grid, schedule and workspace,
    taking the three arrays' device addresses instead of the arrays: `go(pA, pB, pC)` enqueues it
    on the legacy default stream with one `struct` pack and the driver's launch (CUDA C:
    [`gpulab.cudac.pointer_launch`][gpulab.cudac.pointer_launch]; numba:
    [`gpulab.launch.numba_pointer_launch`][gpulab.launch.numba_pointer_launch], whose kernel
    arguments are typed from `templates`, numba arrays of A's, B's and C's shapes, read but not
    launched on). `None` for constant-memory policies (their B is part of the launch) and where
    the backend's launch cannot take this way."""
    if policy.constant_b or backend not in ("cuda-c", "numba") or (backend == "numba" and templates is None):
        return None
    grid, block, extra, kern = _launch_parts(policy, backend, M, K, N, params, 0)
    dims = (np.int32(M), np.int32(N), np.int32(K))
    if backend == "numba":
        from gpulab.launch import numba_pointer_launch

        return numba_pointer_launch(kern.kernel(policy.kernel), grid, block, (*templates, *dims, *extra), 3)
    from gpulab import cudac

    return cudac.pointer_launch(kern.kernel(policy.kernel), grid, block, 3, *dims, *extra)
# --8<-- [end:pointer_plan]


def _launch_parts(policy: MatmulPolicy, backend: str, M: int, K: int, N: int, params: dict, stream=0):
    """`(grid, block, extra arguments, kernel provider)` of a launch, its kernel built."""
    grid, block = geometry(policy, params, M, N)
    check_cc(policy)
    extra = ()
    first = params.get("WT_SK_FIRST", 0)
    if (not isinstance(first, (int, np.integer)) or isinstance(first, bool) or first not in (0, 1)
            or (first and backend != "cuda-c")):
        raise LimitError(f"WT_SK_FIRST must be 0 or 1, and 1 only in CUDA C (numba's streamk runs its whole "
                         f"tiles first), got {first!r} for {backend}")
    if policy.stream_k:
        grid, extra = stream_k_launch(policy, params, M, N, K, stream)
    kern = KERNELS.provider(backend, params, stream)
    kern.kernel(policy.kernel)  # built now, not in the first (timed) launch
    return grid, block, extra, kern


def prepare(policy: MatmulPolicy, backend: str, dA, dB, dC, B_host, params: dict, stream=0):
    """Build `policy`'s kernel for `backend` and return `launch()`, which enqueues it on `stream`."""
    M, K = dA.shape
    N = dB.shape[1]
    if not policy.constant_b:
        launch = plan(policy, backend, M, K, N, params, stream)
        return lambda: launch(dA, dB, dC)
    check_fits_constant(K, N)
    if backend == "numba":
        # numba's constant arrays are compile-time data: B (at most 64 KiB) is baked into the
        # kernel, so a B that lives on the device is copied to the host once, here.
        params = {**params, CONSTANT_DATA: B_host if B_host is not None else to_host(dB)}
    grid, block, extra, kern = _launch_parts(policy, backend, M, K, N, params, stream)
    if backend == "cuda-c":
        kern.copy_to_constant(dB, K * N * 4)  # B -> `__constant__ B_const`, once, untimed (device to device)
    args = (dA, dC, np.int32(M), np.int32(N), np.int32(K), *extra)
    return lambda: kern(policy.kernel, grid, block, *args)


def launcher(policy: MatmulPolicy, backend: str):
    """The `run` of a variant: `run(dA, dB, dC, B_host, params, stream=0) -> launch`."""

    def run(dA, dB, dC, B_host, params, stream=0):
        return prepare(policy, backend, dA, dB, dC, B_host, params, stream)

    return run
