"""The finished chapters, in book order. A chapter is a package with the same shape:

``reference.py`` (CPU reference), ``kernels_numba.py``, ``kernels.cu`` (CUDA C),
``host.py`` (validation + launches), ``variants.py`` (the [`Registry`][gpulab.registry.Registry]),
``bench.py`` (its [`BenchSpec`][gpulab.benchmark.BenchSpec]) and ``tour.py`` (one small checked
run per variant for ``gpulab tour``).
"""

from __future__ import annotations

import importlib

CHAPTERS: dict[str, str] = {
    "matmul": "gpulab.matmul",
    "subset": "gpulab.subset",
    "gp": "gpulab.gp",
    "radix": "gpulab.radix",
    "euler": "gpulab.euler",
}


def module(chapter: str, part: str = ""):
    if chapter not in CHAPTERS:
        raise KeyError(f"unknown chapter {chapter!r}; known: {', '.join(CHAPTERS)}")
    return importlib.import_module(CHAPTERS[chapter] + (f".{part}" if part else ""))


def registry(chapter: str):
    return module(chapter, "variants").REGISTRY
