"""Chapter 2: the least-correlated subset, by exhaustive search over all C(n, k) subsets.

Examples:
    The 5 least-correlated of 20 synthetic stocks (250 days of returns, seeded):

    >>> import gpulab.subset as ss
    >>> C = ss.correlation(ss.synthetic_returns(250, 20, seed=1))
    >>> best = ss.least_correlated(C, 5, variant="incremental")
    >>> best.combination, round(best.distance, 4), best.rank
    ((1, 7, 14, 15, 17), 0.4154, 6422)

`C` may also be a device array (CuPy, PyTorch, numba): it is validated and packed on the
device, and the search reads it there.

A GPU search keeps its plan (kernels, tables, buffers) per (n, k, variant, backend, parameters):
the next call of that shape copies Q in, launches and reads the answer back; `clear_cache()`
frees the kept plans.
"""

from __future__ import annotations

import numpy as np

from gpulab.chapters import Chapter
from gpulab import device  # (selects GPU or simulator before numba loads)
from gpulab.subset.combinatorics import binomial_table, choose, gather, offset, pack, rank, unrank
from gpulab.arrays import is_device_array, to_host
from gpulab.subset import host
from gpulab.subset.host import clear_cache, correlation, squared_packed
from gpulab.subset.reference import (SubsetResult, frobenius_distance, least_correlated_cpu,
                                     least_correlated_reference, load_returns_csv, synthetic_returns)
from gpulab.subset.variants import REGISTRY, default_choice

__all__ = ["CHAPTER", "least_correlated", "check", "search_packed", "least_correlated_reference", "SubsetResult", "choose", "unrank", "rank",
           "offset", "pack", "gather", "binomial_table", "correlation", "synthetic_returns", "load_returns_csv",
           "frobenius_distance", "least_correlated_cpu", "squared_packed", "REGISTRY", "variants", "default_choice",
           "clear_cache"]


# --8<-- [start:entry]
def least_correlated(C, k: int, variant: str | None = None, backend: str | None = None,
                     params: dict | None = None, ranks: tuple[int, int] | None = None) -> SubsetResult:
    """The k strategies whose correlation submatrix is closest to the identity (Frobenius norm).

    Args:
        C: n×n correlation matrix (symmetric, unit diagonal, finite): a numpy array, or a
            device array (CuPy, PyTorch CUDA tensor, numba), which is validated and packed on
            the device — only three numbers of the checks and the answer come back.
        k: subset size, 1 <= k <= n (GPU variants: k <= 16).
        variant: a name from `gpulab.subset.variants()`; `None`: the backend's default
            (`"incremental"`, or `"cpu_parallel"` for `backend="cpu"`), or with no backend
            either, the variant measured fastest for the size (below).
        backend: `"numba"`, `"cuda-c"` (needs pycuda and a GPU) or `"cpu"` (which copies a
            device C's packed triangle to the host: the CPU baseline runs there). `None`:
            `"cuda-c"` on a GPU where it runs — twice numba's speed on the H200 (8.9 against
            19.2 ms at C(100,6)) — with the variant measured fastest for C(n, k) (`constant_local`
            up to 230,300 subsets where n <= 128, else `incremental`, or `incremental_lanes`
            where k >= 5, n(n-1)/(k(k-1)) >= 1,326 and n <= 256), and `"numba"` elsewhere (no
            pycuda: the same `incremental_lanes` rule; numba's simulator: `"incremental"`); where that variant's Q
            would not fit the device's shared memory per block (n > 237 on an H200),
            `"incremental_global"`: see [`default_choice`][gpulab.subset.variants.default_choice].
        params: override the variant's parameters (`BLOCK`, `PARTITION`, `CHUNK` ...: `host.PARAMS`).
        ranks: `(start, stop)`: search only the subsets of lexicographic ranks
            start <= rank < stop (a non-empty part of [0, C(n, k)), aligned to nothing);
            None: all of them. [`gpulab.distributed`][gpulab.distributed] splits a search so.

    Returns:
        [`SubsetResult`][gpulab.subset.reference.SubsetResult] (combination, distance
        `||C_S - I||_F`, lexicographic rank), a small host object for every kind of input;
        among equal distances, the lowest rank. The search ends with that answer on the host,
        so there is no `stream=`: the call returns when the search is done.

    The first GPU search of a shape (n, k, variant, backend, parameters, ranks) checks its
    limits and makes its plan — kernels, launch geometry, binomial table, device buffers for
    Q and the blocks' answers, pinned memory for the result — which is kept
    ([`clear_cache`][gpulab.subset.host.clear_cache] frees it); every later call of that shape
    validates C, copies Q in (none for a device C), launches, and reads the answer back
    (the incremental variants: one 16-byte pair, reduced on the device).

    Raises:
        ShapeError, DtypeError, LimitError: the input or a memory limit (the message names it).
        BackendUnavailable: the variant cannot run here (the message says why).
    """
    if is_device_array(C):
        Q, n, k = host.validated_packed_on_device(C, k)
    else:
        C, n, k = host.validate(C, k)
        Q = squared_packed(C)
    distance, r = search_packed(Q, n, k, *default_choice(n, k, variant, backend), params, ranks)
    return SubsetResult(unrank(n, k, r), float(distance), int(r))
# --8<-- [end:entry]


def check(C, k: int, variant: str | None = None, backend: str | None = None,
          params: dict | None = None) -> tuple[np.ndarray, int, int]:
    """The checks of [`least_correlated`][gpulab.subset.least_correlated], without searching and
    without the device: `(C as a host float64 matrix, n, k)`, or the error the search would raise.

    A device `C` is copied to the host once (n² values). The device's limits are checked where
    they are known without a CUDA context: always the kernels' own (n, k), and on the simulator
    (whose limits are the H200's) the shared memory of the variants that copy Q into it;
    on a GPU that one is left to the search itself. A default variant (none named) is chosen
    here for sm_90's shared memory per block (H100, H200), without asking the device:
    `default_choice(..., limit=host.SM90_SHARED_OPTIN)`. [`gpulab.distributed`][gpulab.distributed]
    checks a search here, on its client, before any task is submitted.
    """
    if is_device_array(C):
        C = to_host(C)  # n² values; its triangle is what every worker gets
    C, n, k = host.validate(C, k)
    variant, backend = default_choice(n, k, variant, backend,
                                      limit=None if device.on_simulator() else host.SM90_SHARED_OPTIN)
    v = REGISTRY.get(variant, backend)  # an unknown variant or backend, named with the known ones
    host.check_params(params)
    if v.policy.kernel is not None:
        host.check_gpu_limits(n, k)
        if device.on_simulator():
            # the simulator's limits are the H200's; on a GPU, reading the limits here would
            # make a CUDA context in a process (a Dask client) that never launches
            host.check_shared_layout(v.policy, n, k, v.launch_params(params))
    return C, n, k


def search_packed(Q, n: int, k: int, variant: str | None = None, backend: str | None = None,
                  params: dict | None = None, ranks: tuple[int, int] | None = None) -> tuple[float, int]:
    """The search itself, on an already validated packed `Q` (host or device):
    `(distance, rank)` of the best subset among the ranks `ranks` (default: all). `None`
    variant or backend: as in [`least_correlated`][gpulab.subset.least_correlated], by the
    size of the whole search, C(n, k), not of `ranks`."""
    variant, backend = default_choice(n, k, variant, backend)
    v = REGISTRY.resolve(variant, backend)
    host.check_params(params)
    if v.backend == "cpu":
        Q = to_host(Q)
    return v.run(Q, n, k, v.launch_params(params), ranks=ranks)()


def variants(backend: str | None = None) -> list[str]:
    """Names of the registered variants (of one backend, or all)."""
    return list(dict.fromkeys(REGISTRY.names(backend)))


# ----------------------------------------------------------------------------- the chapter


from gpulab.subset import bench as _bench, tour as _tour  # noqa: E402  (they use the API above)
from gpulab.subset.variants import cuda_builds as _cuda_builds, ptx_targets as _ptx_targets  # noqa: E402

CHAPTER = Chapter(name="subset", number=2, title="The least-correlated subset", registry=REGISTRY,
                  ptx_targets=_ptx_targets, cuda_builds=_cuda_builds, bench=_bench.SPEC,
                  tour_cases=_tour.tour_cases, exercises="subset")
