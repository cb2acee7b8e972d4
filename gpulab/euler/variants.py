"""Chapter 5's variant registry: Hierholzer on the CPU, then the GPU pipeline with each way of
labelling the cycles (step 2), in the order the book climbs them.

Every GPU variant runs the whole pipeline; only step 2 differs (and ``ruling_set`` also ranks
the final cycle with splitters, step 6, where the others use Wyllie's pointer jumping). All of
them compute the same circuit, edge for edge, as `gpulab.euler.reference.ais_reference`.

What differs is data: each entry's `EulerPolicy` (`gpulab.euler.policy`) names its labelling,
its ranking, the kernels built for its parameters and its limits in the benchmark, and its
`sim_params` its sizes on numba's simulator; adding a variant is adding one entry.
"""

from __future__ import annotations

from gpulab.euler import host, labelling, reference
from gpulab.euler.policy import EulerPolicy
from gpulab.registry import Registry, Variant

# Compile-time and launch parameters, the same for numba and CUDA C.
#   BLOCK: threads per block of every element-wise kernel (a multiple of 32: warp appends).
#   TILE: edges per block (= threads) of the shared-memory contraction.
#   SMALL_SORT: up to this many keys the pairing sorts with one O(n^2) launch, above with
#     chapter 4's radix sort (SORT names its variant: `onesweep`, chapter 4's default, measured
#     0.4-0.6 ms faster per 42M-edge pipeline than `local` on an H100, both backends:
#     docs/benchmarks/ab-runs/euler-sort-h100.json).
#   SPACING / GROWTH: ruling-set labelling: about one splitter per SPACING unlabelled edges,
#     SPACING / GROWTH in the next round. RANK_SPACING: splitters of the final ranking.
#   SUBLISTS: ruling set: the labelling's splitters are also the final ranking's, and the
#     sublists the splice did not touch keep the length and successor their walk measured, so
#     the ranking walks the circuit once (`EulerPlan.rank_sublists`; 0: splitters of its own,
#     walked twice).
#   JUMP_CHECK: pointer-jumping (and propagation) rounds launched between two looks at their
#     "changed" flags (the host waits for the device at each look).
#   TRAILS (ruling set only: its policy's `trails`; other variants label the darts), undirected graphs: each closed trail walked once, from both ends of every
#     stretch between splitter edges (`gpulab.euler.labelling.label_trails`); 0: the variant's
#     labelling on the 2E darts, every trail twice (once per direction).
#   SCATTER_BYTES / SCATTER_SLICES: the scatters into succ (the pairing's succ[in_order[i]] =
#     out_order[i], an undirected graph's dart successors and its orientation's successors) run
#     once per slice of succ of at most SCATTER_BYTES (0: half the L2), so that the slice stays in
#     L2 while the scattered writes fill it — unless that takes more than SCATTER_SLICES launches
#     (each reads the inputs again): then the successor permutations (the pairing's, and the
#     orientation's read off the darts) are a key-value sort (`EulerPlan.permute_by_sort`; 2^30
#     edges on an H200: the pairing 147 -> 120 ms in CUDA C, docs/benchmarks/ab-runs/
#     euler-permute-ab-h200.json) and the dart successors one launch (`EulerPlan.scatter_slices`; 42M edges on an H100:
#     3.0 ms in one launch, 1.6 ms in 6, docs/benchmarks/ab-runs/euler-pairing-probe-h100.json; the
#     84M darts' successors: 6.1 ms in one, 3.0 in 14, 3.6 in 21,
#     docs/benchmarks/ab-runs/euler-undirected-probe-h100.json; the pipeline's A/Bs:
#     docs/benchmarks/ab-runs/euler-scatter-ab-h100.json, euler-undirected-ab-h100.json).
BASE = dict(BLOCK=256, SMALL_SORT=2048, SORT="onesweep", JUMP_CHECK=8, SCATTER_BYTES=0, SCATTER_SLICES=16)
PARAMS = {
    "partition": dict(BASE),
    "propagate": dict(BASE),
    "jump": dict(BASE),
    "shared": dict(BASE, TILE=1024),
    "ruling_set": dict(BASE, SPACING=128, GROWTH=16, RANK_SPACING=64, SUBLISTS=1, TRAILS=1),
}
# Where the H200 preferred other values for one backend (`python -m gpulab.euler.tune` prints this).
# JUMP_CHECK went from 4 back to 8 in CUDA C once launches cost the host less (session 21): in
# turns on one H200, shallow-42M 20.83 -> 20.42 ms, deep-42M 15.96 -> 15.74
# (docs/benchmarks/ab-runs/euler-params-ab-h200.json).
BACKEND_PARAMS: dict = {("ruling_set", "cuda-c"): dict(BLOCK=128)}

# On the simulator every thread is a Python thread and every barrier (warp intrinsics included)
# costs milliseconds: one block of a partial warp of 8 lanes (the warp logic runs unchanged),
# small tiles, and dense splitters so that several rounds still happen on a few hundred edges.
# A variant's `sim_params` are those of its parameters.
SIM = dict(BLOCK=8, TILE=16, SMALL_SORT=4096, SPACING=4, GROWTH=2, RANK_SPACING=4, JUMP_CHECK=3, SCATTER_BYTES=64)

# What the benchmark times, and up to which size (`gpulab.euler.bench`).
M42 = 41_943_040  # 10 x 2^22: V = 10,485,760 at degree 4, the blog's graph
CPU_MAX_EDGES = M42  # Hierholzer (numba, one thread) is timed up to here
NX_MAX_EDGES = 2**18  # networkx takes ~20 s per million edges (measured on the CPU of the development machine)
PARTITION_MAX_EDGES = M42  # the blog's CPU step 2: seconds per run at 42M
PROPAGATE_MAX_EDGES = M42
PROPAGATE_MAX_ROUNDS = 20_000  # propagate on deep graphs needs up to ~E / 2 rounds: stop it here and report

# Each GPU step: (name, memory, lesson, teaching only?, policy): the policy names its labelling
# (step 2), its ranking (step 6), the kernels built for its parameters, its limits in the benchmark.
_LADDER = [
    ("partition", ("global", "host"),
     "the blog's step 2: copy the successors to the CPU, walk the cycles there, copy the labels back", True,
     EulerPolicy(labelling=labelling.label_partition, ranking=host.EulerPlan.rank_wyllie,
                 bench_max_edges=PARTITION_MAX_EDGES)),
    ("propagate", ("global",),
     "min-label propagation in global memory: one edge per round, so rounds = the longest cycle", True,
     EulerPolicy(labelling=labelling.label_propagate, ranking=host.EulerPlan.rank_wyllie,
                 bench_max_edges=PROPAGATE_MAX_EDGES, bench_params={"MAX_ROUNDS": PROPAGATE_MAX_ROUNDS})),
    ("jump", ("global",),
     "pointer jumping (Wyllie): log2 rounds, but every round touches all E edges: O(E log E) work", False,
     EulerPolicy(labelling=labelling.label_jump, ranking=host.EulerPlan.rank_wyllie)),
    ("shared", ("global", "shared"),
     "contract the chains inside each tile in shared memory, then jump on the contracted cycles", False,
     EulerPolicy(labelling=labelling.label_shared, ranking=host.EulerPlan.rank_wyllie, kernels=("tile_contract",))),
    ("ruling_set", ("global", "registers"),
     "random splitters walk their sublists in registers: O(E) work; the ranking reuses the walk", False,
     EulerPolicy(labelling=labelling.label_ruling_set, ranking=host.EulerPlan.rank_sublists,
                 trails=labelling.label_trails, kernels=("pick_splitters",))),
]

# Each backend's default (what a call naming a backend but no variant runs).
DEFAULTS = {"numba": "ruling_set", "cuda-c": "ruling_set", "cpu": "hierholzer"}

REGISTRY = Registry("euler", defaults=DEFAULTS)
REGISTRY.add(Variant("hierholzer", "cpu", ("host",), "Hierholzer's walk compiled with numba, one CPU thread: O(E)",
                     reference.cpu_factory(reference.hierholzer_walk),
                     policy=EulerPolicy(bench_max_edges=CPU_MAX_EDGES, bench_timer=reference.hierholzer_timer,
                                        bench_role="peer",
                                        peer_includes="numba njit, one CPU thread: int32 host arrays in, edge ids "
                                                      "out; degree check, CSR build (counting sort) and the walk")))
REGISTRY.add(Variant("networkx", "cpu", ("host",), "networkx.eulerian_circuit: what a Python user has at hand",
                     reference.cpu_factory(reference.networkx_circuit),
                     policy=EulerPolicy(bench_max_edges=NX_MAX_EDGES, bench_timer=reference.networkx_timer,
                                        bench_role="python", bench_once=True,
                                        peer_includes="networkx.eulerian_circuit(G, keys=True) listed, on a "
                                                      "MultiDiGraph built beforehand (building it is not timed)")))
for name, memory, lesson, teaching, policy in _LADDER:
    for backend in ("numba", "cuda-c"):
        params = {**PARAMS.get(name, BASE), **BACKEND_PARAMS.get((name, backend), {})}
        REGISTRY.add(Variant(name, backend, memory, lesson, host.plan_factory(policy, backend), params=params,
                             needs_warp_intrinsics=True, teaching_only=teaching,
                             sim_params={k: v for k, v in SIM.items() if k in params}, policy=policy))


def cuda_builds() -> list[tuple[str, dict]]:
    """Every (source, defines) configuration the CUDA C variants compile (for the NVRTC check)."""
    return REGISTRY.cuda_builds(host.SOURCE, lambda v: [host.cuda_defines(v.params)])


def ptx_targets() -> list[tuple[str, object, str]]:
    """Every numba kernel of this chapter with the signatures the host launches it with (for the
    PTX check, `gpulab.compilecheck`): the fixed ones, and each templated one (`kernels_numba.TEMPLATED`)
    a GPU variant launches, built with that variant's parameters."""
    from gpulab.euler import kernels_numba as kn

    targets = kn.fixed_targets()
    seen = set()
    for v in REGISTRY.select():
        if v.policy.labelling is None:  # a CPU variant: no kernels
            continue
        for name in kn.COMMON_TEMPLATED + v.policy.kernels:
            build, param, sig = kn.TEMPLATED[name]
            label = f"{name}[{v.params[param]}]"
            if label not in seen:
                seen.add(label)
                targets.append((label, build(v.params[param]), sig))
    return targets
