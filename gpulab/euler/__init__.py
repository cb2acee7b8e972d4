"""Chapter 5: Euler circuits and de Bruijn sequences — from Hierholzer on the CPU to cycle
splicing on the GPU (the Awerbuch–Israeli–Shiloach pipeline).

Examples:
    A triangle and a 2-cycle through vertex 0; the circuit comes back as edge ids:

    >>> import numpy as np, gpulab.euler as eu
    >>> src, dst = np.array([0, 1, 2, 0, 3]), np.array([1, 2, 0, 3, 0])
    >>> eu.euler_circuit(src, dst)
    array([0, 1, 2, 3, 4], dtype=int32)

Edges are two integer arrays (numpy or any device array); the result is edge ids (exact for
parallel edges and self-loops). Every GPU variant returns the same circuit as
[`gpulab.euler.reference.ais_reference`][gpulab.euler.reference.ais_reference] (undirected:
[`undirected_reference`][gpulab.euler.reference.undirected_reference]).
"""

from __future__ import annotations

from gpulab.chapters import Chapter
from gpulab import device  # noqa: F401  (selects GPU or simulator before numba loads)
from gpulab.euler.api import (DEFAULT_VARIANT, clear_cache, euler_circuit, euler_path, from_csr, from_networkx,
                              variants)
from gpulab.euler.applications import assemble, de_bruijn, kmer_spectrum, pin_sequence
from gpulab.euler.generators import deep_graph, shallow_graph
from gpulab.euler.reference import NotEulerian, check_circuit, de_bruijn_fkm, hierholzer
from gpulab.euler.variants import REGISTRY

__all__ = ["CHAPTER", "euler_circuit", "euler_path", "from_csr", "from_networkx", "de_bruijn", "pin_sequence", "assemble",
           "kmer_spectrum", "deep_graph", "shallow_graph", "check_circuit", "hierholzer", "de_bruijn_fkm",
           "NotEulerian", "variants", "clear_cache", "REGISTRY", "DEFAULT_VARIANT"]


# ----------------------------------------------------------------------------- the chapter


from gpulab.euler import bench as _bench, tour as _tour  # noqa: E402  (they use the API above)
from gpulab.euler.variants import cuda_builds as _cuda_builds, ptx_targets as _ptx_targets  # noqa: E402

CHAPTER = Chapter(name="euler", number=5, title="Euler circuits and de Bruijn sequences", registry=REGISTRY,
                  ptx_targets=_ptx_targets, cuda_builds=_cuda_builds, bench=_bench.SPEC,
                  tour_cases=_tour.tour_cases, exercises="euler")
