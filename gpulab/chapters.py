"""The book's chapters, each one [`Chapter`][gpulab.chapters.Chapter] object.

A chapter is a package with one shape: ``reference.py`` (CPU reference and CPU peers),
``kernels_numba.py``, ``kernels.cu`` (CUDA C), ``host.py`` (validation + the one dispatch path),
``variants.py`` (the [`Registry`][gpulab.registry.Registry], with each variant's launch policy as
data), ``bench.py`` (its [`BenchSpec`][gpulab.benchmark.BenchSpec]) and ``tour.py`` (one small
checked run per variant for ``gpulab tour``). Its ``__init__.py`` exports ``CHAPTER``: what the
CLI, the tour, the benchmarks and the compile checks read of it, so that none of them looks
inside a chapter by module name.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # (types only: the chapters sit above this module)
    from gpulab.benchmark import BenchSpec
    from gpulab.registry import Registry

# The chapters in book order: the only place that names their packages.
CHAPTERS: tuple[str, ...] = ("matmul", "subset", "gp", "radix", "euler")


@dataclass(frozen=True)
class Chapter:
    """What the machinery reads of one chapter.

    Attributes:
        name: the chapter's short name (`gpulab tour matmul`, `gpulab bench matmul`).
        number: its number in the book.
        title: its title in the book.
        registry: its variants.
        ptx_targets: `() -> [(name, numba kernel, signature)]`: every numba kernel with the
            parameters the registry uses, for the sm_90 PTX check.
        cuda_builds: `() -> [(file, defines) or (name, defines, source)]`: every CUDA C
            configuration the registry uses, for the NVRTC check.
        bench: the chapter's benchmark.
        tour_cases: `(on_simulator) -> [TourCase]`: one small checked run per variant.
        exercises: the folder of its exercises under `exercises/`.
    """

    name: str
    number: int
    title: str
    registry: Registry
    ptx_targets: Callable[[], list]
    cuda_builds: Callable[[], list]
    bench: BenchSpec
    tour_cases: Callable[[bool], list]
    exercises: str

    @property
    def package(self) -> str:
        return f"gpulab.{self.name}"


def get(name: str) -> Chapter:
    """The chapter `name` (its package's `CHAPTER`); an unknown name raises a `KeyError`
    that lists the chapters there are."""
    if name not in CHAPTERS:
        raise KeyError(f"unknown chapter {name!r}; known: {', '.join(CHAPTERS)}")
    chapter = importlib.import_module(f"gpulab.{name}").CHAPTER
    assert chapter.name == name, f"gpulab.{name}.CHAPTER is named {chapter.name!r}"
    return chapter


def all_chapters() -> list[Chapter]:
    """Every chapter, in book order."""
    return [get(n) for n in CHAPTERS]


def registry(name: str) -> Registry:
    """Chapter `name`'s variant registry."""
    return get(name).registry

