"""Chapter 2: the least-correlated subset, by exhaustive search over all C(n, k) subsets.

>>> import numpy as np, gpulab.subset as ss
>>> C = ss.correlation(ss.synthetic_returns(250, 20, seed=1))
>>> best = ss.least_correlated(C, 5, variant="incremental")   # doctest: +SKIP
>>> best.combination, best.distance, best.rank                # doctest: +SKIP
"""

from __future__ import annotations

import numpy as np

from gpulab import device  # noqa: F401  (selects GPU or simulator before numba loads)
from gpulab.subset.combinatorics import binomial_table, choose, gather, offset, pack, rank, unrank
from gpulab.subset.host import validate
from gpulab.subset.reference import (SubsetResult, correlation, frobenius_distance, least_correlated_cpu,
                                     least_correlated_reference, load_returns_csv, squared_packed,
                                     synthetic_returns)
from gpulab.subset.variants import REGISTRY

__all__ = ["least_correlated", "least_correlated_reference", "SubsetResult", "choose", "unrank", "rank",
           "offset", "pack", "gather", "binomial_table", "correlation", "synthetic_returns", "load_returns_csv",
           "frobenius_distance", "least_correlated_cpu", "squared_packed", "REGISTRY", "variants"]


# --8<-- [start:entry]
def least_correlated(C: np.ndarray, k: int, variant: str = "incremental", backend: str = "numba",
                     params: dict | None = None) -> SubsetResult:
    """The k strategies whose correlation submatrix is closest to the identity (Frobenius norm).

    Args:
        C: n×n correlation matrix (symmetric, unit diagonal, finite).
        k: subset size, 1 <= k <= n (GPU variants: k <= 16).
        variant: a name from ``gpulab.subset.variants()``.
        backend: ``"numba"``, ``"cuda-c"`` (needs pycuda and a GPU) or ``"cpu"``.
        params: override the variant's parameters (block, partition, chunk ...).

    Returns:
        :class:`SubsetResult` (combination, distance ``||C_S - I||_F``, lexicographic rank);
        among equal distances, the lowest rank.

    Raises:
        ShapeError, DtypeError, LimitError: the input or a memory limit (the message names it).
        BackendUnavailable: the variant cannot run here (the message says why).
    """
    C, n, k = validate(C, k)
    v = REGISTRY.resolve(variant, backend)
    p = dict(v.params, **(params or {}))
    distance, r = v.run(squared_packed(C), n, k, p)()
    return SubsetResult(unrank(n, k, r), float(distance), int(r))
# --8<-- [end:entry]


def variants(backend: str | None = None) -> list[str]:
    """Names of the registered variants (of one backend, or all)."""
    return list(dict.fromkeys(REGISTRY.names(backend)))
