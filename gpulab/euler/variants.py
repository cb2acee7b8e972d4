"""Chapter 5's variant registry: Hierholzer on the CPU, then the GPU pipeline with each way of
labelling the cycles (step 2), in the order the book climbs them.

Every GPU variant runs the whole pipeline; only step 2 differs (and ``ruling_set`` also ranks
the final cycle with splitters, step 6, where the others use Wyllie's pointer jumping). All of
them compute the same circuit, edge for edge, as `gpulab.euler.reference.ais_reference`.
"""

from __future__ import annotations

from gpulab import device
from gpulab.euler import host
from gpulab.registry import Registry, Variant

# Compile-time and launch parameters, the same for numba and CUDA C.
#   BLOCK: threads per block of every element-wise kernel (a multiple of 32: warp appends).
#   TILE: edges per block (= threads) of the shared-memory contraction.
#   SMALL_SORT: up to this many keys the pairing sorts with one O(n^2) launch, above with
#     chapter 4's radix sort (SORT names its variant).
#   SPACING / GROWTH: ruling-set labelling: about one splitter per SPACING unlabelled edges,
#     SPACING / GROWTH in the next round. RANK_SPACING: splitters of the final ranking.
#   JUMP_CHECK: pointer-jumping (and propagation) rounds launched between two looks at their
#     "changed" flags (the host waits for the device at each look).
BASE = dict(BLOCK=256, SMALL_SORT=2048, SORT="local", JUMP_CHECK=8)
PARAMS = {
    "partition": dict(BASE),
    "propagate": dict(BASE),
    "jump": dict(BASE),
    "shared": dict(BASE, TILE=1024),
    "ruling_set": dict(BASE, SPACING=128, GROWTH=16, RANK_SPACING=64),
}
# Where the H200 preferred other values for one backend (scripts/tune_euler.py prints this).
BACKEND_PARAMS: dict = {("ruling_set", "cuda-c"): dict(BLOCK=128, JUMP_CHECK=4)}

# On the simulator every thread is a Python thread and every barrier (warp intrinsics included)
# costs milliseconds: one block of a partial warp of 8 lanes (the warp logic runs unchanged),
# small tiles, and dense splitters so that several rounds still happen on a few hundred edges.
SIM_PARAMS = dict(BLOCK=8, TILE=16, SMALL_SORT=4096, SPACING=4, GROWTH=2, RANK_SPACING=4, JUMP_CHECK=3)

_LADDER = [
    ("partition", ("global", "host"),
     "the blog's step 2: copy the successors to the CPU, walk the cycles there, copy the labels back"),
    ("propagate", ("global",),
     "min-label propagation in global memory: one edge per round, so rounds = the longest cycle"),
    ("jump", ("global",),
     "pointer jumping (Wyllie): log2 rounds, but every round touches all E edges: O(E log E) work"),
    ("shared", ("global", "shared"),
     "contract the chains inside each tile in shared memory, then jump on the contracted cycles"),
    ("ruling_set", ("global", "registers"),
     "random splitters walk their sublists in registers: O(E) work; also ranks the circuit that way"),
]

# Each backend's default (what a call naming a backend but no variant runs).
DEFAULTS = {"numba": "ruling_set", "cuda-c": "ruling_set", "cpu": "hierholzer"}

REGISTRY = Registry("euler", defaults=DEFAULTS)
REGISTRY.add(Variant("hierholzer", "cpu", ("host",), "Hierholzer's walk compiled with numba, one CPU thread: O(E)",
                     host.cpu_factory("hierholzer")))
REGISTRY.add(Variant("networkx", "cpu", ("host",), "networkx.eulerian_circuit: what a Python user has at hand",
                     host.cpu_factory("networkx")))
for name, memory, lesson in _LADDER:
    for backend in ("numba", "cuda-c"):
        REGISTRY.add(Variant(name, backend, memory, lesson,
                             host.plan_factory(name, backend, "ruling_set" if name == "ruling_set" else "wyllie"),
                             params={**PARAMS[name], **BACKEND_PARAMS.get((name, backend), {})},
                             needs_warp_intrinsics=True,
                             teaching_only=name in ("partition", "propagate")))


def effective_params(variant, overrides: dict | None = None) -> dict:
    """The variant's parameters, with the simulator's small sizes there, and ``overrides``."""
    p = dict(variant.params)
    if device.on_simulator():
        p.update({k: v for k, v in SIM_PARAMS.items() if k in p or k in ("BLOCK", "SMALL_SORT")})
    p.update(overrides or {})
    return p


def cuda_builds() -> list[tuple[str, dict]]:
    """Every (source, defines) configuration the CUDA C variants compile (for the NVRTC check)."""
    seen, out = set(), []
    for v in REGISTRY.select(backend="cuda-c"):
        d = host.cuda_defines(v.params)
        d.setdefault("TILE", 1024)
        key = tuple(sorted(d.items()))
        if key not in seen:
            seen.add(key)
            out.append((host.SOURCE, d))
    return out


def ptx_targets() -> list[tuple[str, object, str]]:
    """Every numba kernel of this chapter with the signatures the host launches it with (for the
    PTX check, `gpulab.compilecheck`)."""
    from gpulab.euler import kernels_numba as kn

    I32, I64, s, u = kn.I32, kn.I64, "int32", "uint32"
    targets = kn.fixed_targets()
    seen = set()
    for v in REGISTRY.select():
        p = v.params
        if "BLOCK" in p:
            b = p["BLOCK"]
            for dt in (I32, I64):
                name = f"to_i32[{b}]({dt[:5]})"
                if name not in seen:
                    seen.add(name)
                    targets.append((name, kn.to_i32_kernel(b), f"void({dt}, {s}, {I32}, {I64}, {s}, {s})"))
            if "SPACING" in p and f"pick_splitters[{b}]" not in seen:
                seen.add(f"pick_splitters[{b}]")
                targets.append((f"pick_splitters[{b}]", kn.pick_splitters_kernel(b),
                                f"void({I32}, {s}, {u}, {u}, {I32}, {I32}, {s})"))
        if "TILE" in p and f"tile_contract[{p['TILE']}]" not in seen:
            seen.add(f"tile_contract[{p['TILE']}]")
            targets.append((f"tile_contract[{p['TILE']}]", kn.tile_contract_kernel(p["TILE"]),
                            f"void({I32}, {s}, {I32}, {I32}, {I32})"))
    return targets
