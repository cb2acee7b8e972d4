"""The variant registry: every chapter lists its variants here, once.

Tests, ``gpulab tour``, the benchmarks, the PTX/NVRTC compile checks and the book all iterate
a chapter's [`Registry`][gpulab.registry.Registry], so adding a variant is adding one [`Variant`][gpulab.registry.Variant] entry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from gpulab.errors import BackendUnavailable, GpulabError

BACKENDS = ("numba", "cuda-c", "cpu")


@dataclass(frozen=True)
class Variant:
    """One way of computing a chapter's function.

    Attributes:
        name: short identifier used on the command line and in ``variant=...``.
        backend: ``"numba"``, ``"cuda-c"`` (pycuda) or ``"cpu"``.
        memory: memory spaces the kernel uses, e.g. ``("global", "shared")``.
        lesson: one line on what this step teaches.
        run: host function computing the result (same signature for every variant of a chapter).
        params: compile-time parameters (tile sizes ...), passed to the kernel builders.
        needs_warp_intrinsics: uses shfl/ballot/match...: on the simulator it runs through
            [`gpulab.simwarp`][gpulab.simwarp] (skipped only where that is switched off).
        teaching_only: a deliberately slow step the benchmarks still measure, not a contender.
        sim_params: entries that replace `params` on numba's simulator (smaller blocks and
            tiles: the simulator pays per thread and per barrier); see
            [`launch_params`][gpulab.registry.Variant.launch_params].
        policy: the chapter's launch policy for this variant, as data (CUB's *policy*): a
            frozen dataclass of the chapter's own type naming the kernels, the grid rule, the
            layouts and limits its one dispatch path reads, so that the host code never
            branches on a variant's name.
    """

    name: str
    backend: str
    memory: tuple[str, ...]
    lesson: str
    run: Callable
    params: dict = field(default_factory=dict)
    needs_warp_intrinsics: bool = False
    teaching_only: bool = False
    sim_params: dict = field(default_factory=dict)
    policy: Any = None

    def launch_params(self, overrides: dict | None = None) -> dict:
        """The parameters a launch uses on this machine: `params`, then `sim_params` on the
        simulator, then the caller's `overrides`."""
        from gpulab import device

        p = dict(self.params)
        if device.on_simulator():
            p.update(self.sim_params)
        p.update(overrides or {})
        return p

    @property
    def key(self) -> str:
        return f"{self.name}[{self.backend}]"

    def unavailable_reason(self) -> str | None:
        """Why this variant cannot run on this machine, or ``None`` if it can."""
        from gpulab import cudac, device

        reason = cudac.unavailable_reason() if self.backend == "cuda-c" else None
        reason = reason or device.too_old_for(getattr(self.policy, "min_cc", None))
        if reason or self.backend == "cuda-c":
            return reason
        if self.needs_warp_intrinsics and device.on_simulator():
            from gpulab import simwarp

            if not simwarp.installed():
                return ("uses warp intrinsics (shfl/ballot), which numba's simulator lacks and "
                        "GPULAB_SIM_WARP=0 keeps gpulab.simwarp from providing")
        return None


class Registry:
    """The ordered variants of one chapter.

    `defaults` names each backend's default variant (its best), e.g.
    `{"numba": "incremental", "cuda-c": "incremental", "cpu": "cpu_parallel"}`: a public call
    that names a backend but no variant runs that one (see [`default`][gpulab.registry.Registry.default]).
    `fallbacks` names, per GPU backend, what such a call runs instead on numba's simulator or
    where the default cannot run: a variant quick enough for the simulator's CPU (the fastest
    kernels on a GPU use large tiles, which the simulator runs thread by thread).
    """

    def __init__(self, chapter: str, variants: list[Variant] | None = None, defaults: dict[str, str] | None = None,
                 fallbacks: dict[str, str] | None = None):
        self.chapter = chapter
        self.defaults: dict[str, str] = dict(defaults or {})
        self.fallbacks: dict[str, str] = dict(fallbacks or {})
        self._variants: dict[tuple[str, str], Variant] = {}
        for v in variants or []:
            self.add(v)

    def add(self, variant: Variant) -> Variant:
        if variant.backend not in BACKENDS:
            raise ValueError(f"unknown backend {variant.backend!r}; expected one of {BACKENDS}")
        key = (variant.name, variant.backend)
        if key in self._variants:
            raise ValueError(f"{self.chapter}: variant {variant.key} registered twice")
        self._variants[key] = variant
        return variant

    def __iter__(self) -> Iterator[Variant]:
        return iter(self._variants.values())

    def __len__(self) -> int:
        return len(self._variants)

    def names(self, backend: str | None = None) -> list[str]:
        return [v.name for v in self if backend is None or v.backend == backend]

    def get(self, name: str, backend: str = "numba") -> Variant:
        try:
            return self._variants[(name, backend)]
        except KeyError:
            known = ", ".join(v.key for v in self)
            raise GpulabError(f"{self.chapter}: no variant {name!r} for backend {backend!r}; known: {known}") from None

    def backends(self) -> list[str]:
        """The backends that have at least one variant, in registration order."""
        return list(dict.fromkeys(v.backend for v in self))

    def default(self, backend: str) -> str:
        """The name of `backend`'s default variant: the one `defaults` names, else the backend's
        only variant that is not `teaching_only`. A backend with no variant (or no default to
        pick) raises a [`GpulabError`][gpulab.errors.GpulabError] naming the backends there are."""
        if backend not in BACKENDS:
            raise GpulabError(f"{self.chapter}: unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}")
        name = self.defaults.get(backend)
        if name is None:
            mine = [v for v in self if v.backend == backend]
            if not mine:
                raise GpulabError(f"{self.chapter}: no variant for backend {backend!r}; "
                                  f"its backends: {', '.join(self.backends())}")
            contenders = [v for v in mine if not v.teaching_only]
            if len(contenders) != 1:
                raise GpulabError(f"{self.chapter}: no default variant for backend {backend!r}; "
                                  f"name one of: {', '.join(v.name for v in mine)}")
            return contenders[0].name
        if (name, backend) not in self._variants:
            raise GpulabError(f"{self.chapter}: the default variant {name!r} of backend {backend!r} is not registered")
        return name

    def cuda_builds(self, source: str, defines: Callable[[Variant], list[dict]]) -> list[tuple[str, dict]]:
        """Every distinct `(source, -D macros)` configuration that this registry's CUDA C variants
        compile (for the NVRTC check), in registration order: `defines(variant)` lists a
        variant's macro sets (a chapter's `cuda_builds`)."""
        seen, out = set(), []
        for v in self.select(backend="cuda-c"):
            for d in defines(v):
                key = tuple(sorted(d.items()))
                if key not in seen:
                    seen.add(key)
                    out.append((source, d))
        return out

    def select(self, backend: str | None = None, runnable: bool = False) -> list[Variant]:
        out = [v for v in self if backend is None or v.backend == backend]
        if runnable:
            out = [v for v in out if v.unavailable_reason() is None]
        return out

    def resolve(self, name: str | None, backend: str) -> Variant:
        """The variant to run (`name=None`: the backend's [`default`][gpulab.registry.Registry.default],
        or its entry in `fallbacks` on numba's simulator or where the default cannot run), or a
        [`BackendUnavailable`][gpulab.errors.BackendUnavailable] that says why it cannot run here."""
        if name is None:
            name = self.default(backend)
            if backend in self.fallbacks:
                from gpulab import device

                if device.on_simulator() or self.get(name, backend).unavailable_reason():
                    name = self.fallbacks[backend]
        v = self.get(name, backend)
        reason = v.unavailable_reason()
        if reason:
            raise BackendUnavailable(f"{self.chapter} variant {v.key} cannot run here: {reason}")
        return v
