"""How one variant of chapter 5 runs, as data: its [`EulerPolicy`][gpulab.euler.policy.EulerPolicy].

Each registry entry carries one (`Variant.policy`); the host's one launch sequence
([`EulerPlan`][gpulab.euler.host.EulerPlan]) and the benchmark read it and never branch on a
variant's name, so adding a variant is adding one [`Variant`][gpulab.registry.Variant] with its
policy (CUB's *policy → agent → dispatch*).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping


@dataclass(frozen=True)
class EulerPolicy:
    """The steps, kernels and benchmark limits of one chapter-5 variant.

    Attributes:
        labelling: step 2, ``(plan, succ, n, label)``: a function of
            [`gpulab.euler.labelling`][gpulab.euler.labelling] (``None``: a CPU variant).
        ranking: step 6, ``(plan, succ, n, head, out)``:
            [`EulerPlan.rank_wyllie`][gpulab.euler.host.EulerPlan.rank_wyllie],
            [`EulerPlan.rank_ruling_set`][gpulab.euler.host.EulerPlan.rank_ruling_set] or
            [`EulerPlan.rank_sublists`][gpulab.euler.host.EulerPlan.rank_sublists].
        trails: undirected graphs, ``(plan, dsucc, n) -> (town, clab)``: each closed trail walked
            once ([`label_trails`][gpulab.euler.labelling.label_trails]), run where the variant's
            ``TRAILS`` parameter is 1 (``None``, or ``TRAILS`` 0: the 2n darts are labelled with
            ``labelling``, every trail once per direction).
        kernels: the kernels built per compile-time parameter (``kernels_numba.TEMPLATED``)
            that its steps launch besides the ones every GPU variant launches; the PTX check
            builds them with the variant's parameters.
        bench_max_edges: the benchmark times it up to this many edges (``None``: every size).
        bench_params: parameters the benchmark adds to its runs (a cap on rounds ...).
        bench_timer: CPU variants: ``(src, dst) -> call``, whatever must exist before the timed
            region built (a networkx graph), ``call()`` returning the circuit's edge ids.
        bench_role: CPU variants: ``"peer"`` (the GPU records' ``ratio_to_peer``) or
            ``"python"`` (what a Python user has at hand: their ``speedup_vs_networkx``).
        peer_includes: CPU variants: what their timing includes (for the records).
        bench_once: timed once per size, whatever the size (seconds per run at any size).
    """

    labelling: Callable | None = None
    ranking: Callable | None = None
    trails: Callable | None = None
    kernels: tuple[str, ...] = ()
    bench_max_edges: int | None = None
    bench_params: Mapping = field(default_factory=dict)
    bench_timer: Callable | None = None
    bench_role: str | None = None
    peer_includes: str = ""
    bench_once: bool = False
