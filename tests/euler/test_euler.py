"""Chapter 5: every variant of the Euler-circuit pipeline against the sequential reference.

Every GPU variant must return *exactly* the circuit of ``reference.ais_reference`` (the pairing
is ordered by edge id, cycles are labelled by their smallest edge id, the spanning forest is the
unique minimum one), and that circuit must pass ``check_circuit``. On the simulator the graphs
have a few hundred edges (every kernel loops over them in one block of 8 threads); on a GPU the
same tests run with up to a million edges, and a few GPU-only tests add the blog's sizes.
"""

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda

import gpulab.euler as eu
from gpulab.checking import INT_SENTINEL
from gpulab.errors import DtypeError, LimitError, ShapeError
from gpulab.euler import generators as gen
from gpulab.euler import host, reference as ref
from gpulab.euler.api import plan_for
from gpulab.euler.variants import REGISTRY
from tests.conftest import ON_SIMULATOR, from_gpu, gpu_library, on_gpu, skip_unless_runnable

GPU_VARIANTS = [v for v in REGISTRY if v.backend != "cpu"]
CPU_VARIANTS = [v for v in REGISTRY if v.backend == "cpu"]
FAST = [v for v in GPU_VARIANTS if v.name in ("jump", "ruling_set")]  # for the API-level tests
S = 1 if ON_SIMULATOR else 100  # size scale: a few hundred edges simulated, tens of thousands on a GPU


def ids(v):
    return v.key


def run(variant, src, dst, **kw):
    """The public call, on a plan whose output buffers were poisoned first."""
    skip_unless_runnable(variant)
    n = len(src)
    directed = kw.get("directed", True)
    plan = plan_for(variant, (n + 1) * (1 if directed else 2), kw.get("params"))  # the plan the call reuses
    for name in ("out", "out2", "fwd_out", "label", "elabel", "succ", "ssrc", "out_order", "in_order"):
        b = plan.buf(name)
        b.copy_to_device(np.full(b.size, INT_SENTINEL[np.dtype(np.int32)], np.int32))
    return eu.euler_circuit(src, dst, variant=variant.name, backend=variant.backend, **kw)


# ----------------------------------------------------------------------------- graphs


def random_closed_walks(rng, n_vertices, n_walks, max_len):
    """A random Eulerian multigraph: closed walks over a few vertices (parallel edges and
    self-loops likely), the first walk visiting every vertex so that it is connected."""
    walks = [list(rng.permutation(n_vertices))]
    for _ in range(n_walks):
        walk = list(rng.integers(0, n_vertices, rng.integers(1, max_len + 1)))
        walk[0] = int(rng.integers(0, n_vertices))
        walks.append(walk)
    return gen.from_cycles(walks, rng)


def graph_cases(rng):
    """(name, src, dst): the issue's list of shapes, ids shuffled unless the shape needs them."""
    g = {
        "self_loop": gen.from_cycles([[0]]),
        "parallel_loops": gen.from_cycles([[3], [3]]),
        "parallel_edges": gen.from_cycles([[0, 1], [0, 1]], rng),
        "single_cycle_37": gen.from_cycles([list(rng.permutation(37 * S))], rng),
        "flower_12x3": gen.flower(12 * S, 3, rng),
        "star_of_cycles": gen.star_of_cycles(6 * S, 4, rng),
        "path_of_cycles": gen.path_of_cycles(20 * S, 4, rng),
        "multigraph": random_closed_walks(rng, 5, 12 * S, 7),
        "deep": gen.deep_graph(300 * S, 4, int(rng.integers(1 << 30))),
        "shallow": gen.shallow_graph(400 * S, 6, 2, int(rng.integers(1 << 30))),
    }
    return g


CASE_NAMES = ["self_loop", "parallel_loops", "parallel_edges", "single_cycle_37", "flower_12x3", "star_of_cycles",
              "path_of_cycles", "multigraph", "deep", "shallow"]


@pytest.mark.parametrize("case", CASE_NAMES)
@pytest.mark.parametrize("variant", GPU_VARIANTS, ids=ids)
def test_variant_finds_the_reference_circuit(variant, case, rng):
    skip_unless_runnable(variant)
    src, dst = graph_cases(rng)[case]
    out = run(variant, src, dst)
    ok, why = ref.check_circuit(src, dst, out)
    assert ok, f"{variant.key} {case}: {why}"
    expected, steps = ref.ais_reference(src, dst)
    assert np.array_equal(out, expected), f"{variant.key} {case}: a valid circuit, but not the reference's"


def test_the_shallow_case_has_hundreds_of_cycles(rng):
    src, dst = graph_cases(rng)["shallow"]
    succ, _, _ = ref.pairing(src, dst)
    assert np.unique(ref.cycle_labels(succ)).size >= 50 * S


@pytest.mark.parametrize("variant", CPU_VARIANTS, ids=ids)
@pytest.mark.parametrize("case", ["parallel_edges", "flower_12x3", "path_of_cycles", "multigraph", "shallow"])
def test_cpu_variants_find_a_circuit(variant, case, rng):
    src, dst = graph_cases(rng)[case]
    out = eu.euler_circuit(src, dst, variant=variant.name)
    assert ref.check_circuit(src, dst, out)[0]


def test_hierholzer_python_and_numba_agree(rng):
    for _ in range(5):
        src, dst = random_closed_walks(rng, 6, 10, 6)
        a = ref.hierholzer_python(src, dst)
        b = ref.hierholzer(src, dst)
        assert ref.check_circuit(src, dst, a)[0] and np.array_equal(a, b)


# ----------------------------------------------------------------------------- undirected graphs


def undirected_cases(rng):
    s, d = random_closed_walks(rng, 6, 8 * S, 6)
    flip = rng.random(s.size) < 0.5  # the same graph, half the edges written the other way
    s, d = np.where(flip, d, s), np.where(flip, s, d)
    f_s, f_d = gen.flower(5 * S, 2, rng)  # 2-cycles: pairs of parallel undirected edges
    return {"walks": (s, d), "flower_of_digons": (f_s, f_d), "loop": (np.array([4]), np.array([4]))}


@pytest.mark.parametrize("case", ["walks", "flower_of_digons", "loop"])
@pytest.mark.parametrize("variant", GPU_VARIANTS, ids=ids)
def test_undirected(variant, case, rng):
    skip_unless_runnable(variant)
    src, dst = undirected_cases(rng)[case]
    edges, forward = run(variant, src, dst, directed=False)
    assert forward.dtype == bool
    ok, why = ref.check_circuit(src, dst, edges, directed=False, forward=forward)
    assert ok, why
    expected, keep, _ = ref.undirected_reference(src, dst)
    assert np.array_equal(keep, ref.orient_reference(src, dst))
    assert np.array_equal(edges, expected)
    assert np.array_equal(forward, keep[edges])


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_each_trail_walked_once_gives_the_darts_orientation(backend, rng):
    """TRAILS = 1 (`label_trails`: each closed trail walked once, two walkers per splitter edge
    that stop where they meet) gives exactly the reference's orientation and circuit, which is
    the darts' labelling's (TRAILS = 0), and the same as it bit for bit: on a single edge (a
    self-loop), a digon, one long cycle, and multigraphs of many short trails (self-loops,
    parallel edges, half the edges written the other way round); with every edge a splitter
    (SPACING 1: walkers meet at once), dense splitters, and splitters so sparse at first that
    trails wait for later rounds."""
    v = REGISTRY.get("ruling_set", backend)
    skip_unless_runnable(v)
    L = int(rng.integers(40, 80)) * S + 1
    cyc = rng.permutation(L)
    walks = random_closed_walks(rng, 7, 12 * S, 5)
    flip = rng.random(walks[0].size) < 0.5
    cases = {"loop": (np.array([3]), np.array([3])), "digon": (np.array([1, 2]), np.array([2, 1])),
             "cycle": (cyc, np.roll(cyc, -1)),
             "walks": (np.where(flip, walks[1], walks[0]), np.where(flip, walks[0], walks[1])),
             "flower": gen.flower(6 * S, 3, rng)}
    walked = 0
    for name, (src, dst) in cases.items():
        expected, keep, _ = ref.undirected_reference(src, dst)
        got = {}
        for spacing, growth in ((1, 2), (4, 2), (2**16, 16)):
            for trails in (1, 0) if spacing == 4 else (1,):
                params = dict(v.launch_params(), SPACING=spacing, GROWTH=growth, TRAILS=trails)
                edges, forward = run(v, src, dst, directed=False, params=params)
                assert np.array_equal(edges, expected) and np.array_equal(forward, keep[edges]), \
                    (name, spacing, trails)
                got[trails, spacing] = (edges, forward)
                if trails:
                    stats = plan_for(v, 2 * (src.size + 1), params).stats
                    walked += src.size - sum(stats["trail_splitters"])  # edges claimed by walkers
        assert all(np.array_equal(a, b) for a, b in zip(got[0, 4], got[1, 4]))
    # the premise, by construction: the cycle's edges are ids 0..L-1, and at SPACING 4 the first
    # round's hash picks between 1 and L - 1 of them for every L in [41, 8000] (checked offline),
    # so walkers claim the rest
    assert walked > 0


def test_orientation_is_balanced(rng):
    src, dst = undirected_cases(rng)["walks"]
    keep = ref.orient_reference(src, dst)
    assert ref.degree_problem(np.where(keep, src, dst), np.where(keep, dst, src)) is None


@pytest.mark.parametrize("variant", GPU_VARIANTS, ids=ids)
def test_undirected_source_and_self_loops(variant, rng):
    """An undirected circuit from a given vertex is the reference's, edge for edge, and starts with
    that vertex's smallest out-edge in the orientation; a self-loop at a vertex of degree 6 (its
    two half-edges may land in different slots) and parallel edges, each way round."""
    skip_unless_runnable(variant)
    src, dst = undirected_cases(rng)["walks"]
    loops = np.array([[0, 1], [1, 0], [0, 0], [2, 0], [0, 2]])  # vertex 0: degree 2 + 2 + 2
    cases = [(src, dst, int(s)) for s in rng.choice(np.unique(src), 2, replace=False)]
    cases += [(loops[:, 0], loops[:, 1], s) for s in (0, 2)]
    for s_, d_, source in cases:
        edges, forward = run(variant, s_, d_, directed=False, source=source)
        expected, keep, _ = ref.undirected_reference(s_, d_, source)
        assert np.array_equal(edges, expected) and np.array_equal(forward, keep[edges])
        osrc = np.where(keep, s_, d_)
        assert edges[0] == np.flatnonzero(osrc == source)[0], "the source's smallest out-edge first"


@pytest.mark.parametrize("variant", GPU_VARIANTS, ids=ids)
def test_undirected_disconnected(variant, rng):
    """Two undirected cycles that share no vertex: every degree is even, the orientation is
    balanced, and the spanning forest finds two components."""
    skip_unless_runnable(variant)
    k = int(rng.integers(2, 6))
    a = np.arange(k)
    src, dst = np.concatenate([a, a + 100]), np.concatenate([(a + 1) % k, (a + 1) % k + 100])
    with pytest.raises(eu.NotEulerian, match="weakly connected"):
        run(variant, src, dst, directed=False)


@pytest.mark.parametrize("case", ["walks", "flower_of_digons", "loop"])
def test_the_darts_pairing_is_a_pairing_of_the_orientation(case, rng):
    """What lets the undirected pipeline skip the directed pairing and labelling: the pairing read
    off the darts pairs, at every vertex, each arriving edge of the orientation with a leaving
    one (slot j's vertex is the head of in_order[j] and the tail of out_order[j]; each edge is
    in each order once), and the oriented cycles are the kept trails, so their labels are the
    trails' smallest darts halved."""
    src, dst = undirected_cases(rng)[case]
    _, keep, steps = ref.undirected_reference(src, dst)
    osrc, odst = np.where(keep, src, dst), np.where(keep, dst, src)
    E = src.size
    _, sorted_ends, dlabel = ref.dart_labels(src, dst)
    slot_vertex = sorted_ends[0::2]
    out_order, in_order, succ = steps["out_order"], steps["in_order"], steps["succ"]
    assert np.array_equal(np.sort(out_order), np.arange(E)) and np.array_equal(np.sort(in_order), np.arange(E))
    assert np.array_equal(osrc[out_order], slot_vertex) and np.array_equal(odst[in_order], slot_vertex)
    assert np.array_equal(succ[in_order], out_order)
    assert np.array_equal(steps["label"], np.minimum(dlabel[0::2], dlabel[1::2]) >> 1)


# ----------------------------------------------------------------------------- source, paths, empty graphs


@pytest.mark.parametrize("variant", GPU_VARIANTS, ids=ids)
def test_source_is_honoured(variant, rng):
    skip_unless_runnable(variant)
    src, dst = random_closed_walks(rng, 7, 6, 5)
    for source in rng.choice(np.unique(src), 3, replace=False):
        out, verts = run(variant, src, dst, source=int(source), vertices=True)
        assert ref.check_circuit(src, dst, out, source=int(source))[0]
        assert out[0] == np.nonzero(src == source)[0][0], "the circuit starts with the source's smallest out-edge"
        assert np.array_equal(verts, np.append(src[out], src[out[0]]))
        assert np.array_equal(out, ref.ais_reference(src, dst, int(source))[0])
    for bad in (int(src.max()) + 5, -1):
        with pytest.raises(eu.NotEulerian, match="no edges"):
            eu.euler_circuit(src, dst, source=bad, variant=variant.name, backend=variant.backend)


@pytest.mark.parametrize("variant", GPU_VARIANTS, ids=ids)
def test_euler_path_directed(variant, rng):
    skip_unless_runnable(variant)
    src, dst = random_closed_walks(rng, 6, 8, 6)
    k = int(np.nonzero(src != dst)[0][0])  # drop one non-loop edge: a path from dst[k] to src[k]
    ps, pd = np.delete(src, k), np.delete(dst, k)
    out, verts = eu.euler_path(ps, pd, variant=variant.name, backend=variant.backend, vertices=True)
    ok, why = ref.check_circuit(ps, pd, out, path=True, source=int(dst[k]))
    assert ok, why
    assert verts[0] == dst[k] and verts[-1] == src[k] and verts.size == ps.size + 1
    with pytest.raises(eu.NotEulerian, match="must start at vertex"):
        eu.euler_path(ps, pd, source=int(src[k]), variant=variant.name, backend=variant.backend)
    # a graph with a circuit gets a circuit
    out = eu.euler_path(src, dst, variant=variant.name, backend=variant.backend)
    assert ref.check_circuit(src, dst, out)[0]


@pytest.mark.parametrize("variant", GPU_VARIANTS, ids=ids)
def test_euler_path_undirected(variant, rng):
    skip_unless_runnable(variant)
    src, dst = undirected_cases(rng)["walks"]
    k = int(np.nonzero(src != dst)[0][0])
    ps, pd = np.delete(src, k), np.delete(dst, k)
    for source in (int(src[k]), int(dst[k])):
        out, fw = eu.euler_path(ps, pd, directed=False, source=source, variant=variant.name, backend=variant.backend)
        ok, why = ref.check_circuit(ps, pd, out, directed=False, forward=fw, path=True, source=source)
        assert ok, why
    others = np.setdiff1d(np.concatenate([ps, pd]), [src[k], dst[k]])
    if others.size:
        with pytest.raises(eu.NotEulerian, match="odd-degree"):
            eu.euler_path(ps, pd, directed=False, source=int(others[0]), variant=variant.name, backend=variant.backend)


@pytest.mark.parametrize("variant", FAST, ids=ids)
def test_empty_graph(variant):
    skip_unless_runnable(variant)
    empty = np.zeros(0, np.int32)
    assert eu.euler_circuit(empty, empty, variant=variant.name, backend=variant.backend).size == 0
    e, f = eu.euler_circuit(empty, empty, directed=False, variant=variant.name, backend=variant.backend)
    assert e.size == 0 and f.size == 0
    with pytest.raises(eu.NotEulerian, match="no edges"):
        eu.euler_circuit(empty, empty, source=0, variant=variant.name, backend=variant.backend)


# ----------------------------------------------------------------------------- not Eulerian


@pytest.mark.parametrize("variant", FAST + CPU_VARIANTS[:1], ids=ids)
def test_not_eulerian_says_why(variant, rng):
    skip_unless_runnable(variant)
    call = lambda s, d, **kw: eu.euler_circuit(s, d, variant=variant.name, backend=variant.backend, **kw)  # noqa: E731
    # in != out: the message names the smallest unbalanced vertex and its degrees
    src, dst = gen.from_cycles([[0, 1, 2], [2, 3, 4]], rng)
    bad_s, bad_d = np.append(src, 1), np.append(dst, 4)
    with pytest.raises(eu.NotEulerian, match=r"vertex 1 has 1 in-edges and 2 out-edges"):
        call(bad_s, bad_d)
    # two components: the message names one vertex of each
    src, dst = gen.from_cycles([[0, 1, 2], [5, 6]], rng)
    with pytest.raises(eu.NotEulerian, match="weakly connected") as err:
        call(src, dst)
    a, b = (int(x) for x in __import__("re").findall(r"vertices (\d+) and (\d+)", str(err.value))[0])
    comp = ref.weak_components(src, dst)
    assert comp[a] >= 0 and comp[b] >= 0 and comp[a] != comp[b]
    # undirected: odd degree
    with pytest.raises(eu.NotEulerian, match=r"vertex 0 has odd degree 1"):
        call(np.array([0, 1]), np.array([1, 2]), directed=False)
    # a path needs exactly one start and one end
    with pytest.raises(eu.NotEulerian, match="exactly one vertex with out = in \\+ 1"):
        eu.euler_path(np.array([0, 0, 1]), np.array([1, 2, 3]), variant=variant.name, backend=variant.backend)


def test_bad_inputs_raise_clear_errors():
    v = REGISTRY.get("ruling_set", "numba")
    skip_unless_runnable(v)
    with pytest.raises(ShapeError, match="negative vertex id -2"):
        eu.euler_circuit(np.array([0, -2]), np.array([-2, 0]))
    with pytest.raises(DtypeError, match="float64"):
        eu.euler_circuit(np.array([0.0, 1.0]), np.array([1.0, 0.0]))
    with pytest.raises(ShapeError, match="one \\(src, dst\\) pair per edge"):
        eu.euler_circuit(np.array([0, 1]), np.array([1]))
    with pytest.raises(ShapeError, match="1-D"):
        eu.euler_circuit(np.zeros((2, 2), np.int32), np.zeros((2, 2), np.int32))
    with pytest.raises(LimitError, match="2147483646"):
        eu.euler_circuit(np.array([0, 2**31 - 1]), np.array([2**31 - 1, 0]))

    class Huge:  # a device array that claims 2^31 edges (never read: the shape check comes first)
        __cuda_array_interface__ = {"shape": (2**31,), "typestr": "<i4", "data": (0, False), "version": 3}

    with pytest.raises(LimitError, match="edge ids are int32"):
        host.check_edges(Huge(), Huge())

    class Big(Huge):  # 2^30 undirected edges: 2^31 + 2 half-edges
        __cuda_array_interface__ = dict(Huge.__cuda_array_interface__, shape=(2**30,))

    with pytest.raises(LimitError, match="half-edges"):
        eu.euler_circuit(Big(), Big(), directed=False)
    with pytest.raises(LimitError, match="MAX_ROUNDS"):
        eu.euler_circuit(*gen.from_cycles([list(range(20))]), variant="propagate", params={"MAX_ROUNDS": 3})


# ----------------------------------------------------------------------------- device arrays, dtypes


@pytest.mark.parametrize("variant", FAST + CPU_VARIANTS, ids=ids)
def test_device_arrays_in_device_arrays_out(variant, rng):
    """Device in, device out on every kind of variant (the CPU ones copy to the host and back),
    the first device argument deciding when only one of src, dst is on the device."""
    skip_unless_runnable(variant)
    src, dst = random_closed_walks(rng, 6, 6, 5)
    expected = eu.euler_circuit(src, dst, variant=variant.name, backend=variant.backend)
    for s, d in ((cuda.to_device(src.astype(np.int64)), cuda.to_device(dst.astype(np.int64))),
                 (src, cuda.to_device(dst))):
        d_out = eu.euler_circuit(s, d, variant=variant.name, backend=variant.backend)
        assert not isinstance(d_out, np.ndarray) and hasattr(d_out, "copy_to_host")
        assert np.array_equal(d_out.copy_to_host(), expected)
    d_e, d_f = eu.euler_circuit(cuda.to_device(src), cuda.to_device(dst), directed=False, variant=variant.name,
                                backend=variant.backend)
    h_e, h_f = eu.euler_circuit(src, dst, directed=False, variant=variant.name, backend=variant.backend)
    assert np.array_equal(d_e.copy_to_host(), h_e) and np.array_equal(d_f.copy_to_host().astype(bool), h_f)


@pytest.mark.parametrize("variant", FAST, ids=ids)
def test_device_results_stay_the_callers_through_later_calls(variant, rng):
    """A device caller is handed the plan's own result buffer, not a copy, and the plan takes a new
    one (`EulerPlan.hand_over`): a directed circuit is the plan's "out" buffer of before the call,
    an undirected graph's vertices its "vertices" buffer; the undirected circuit and directions,
    half of buffers sized for the darts, are copied. Results kept across later calls of the same
    plan (the same edges in other orders: other circuits, one plan) keep their values and are no
    buffer of the plan's and none another result's. An array the plan does not own is copied."""
    skip_unless_runnable(variant)
    from gpulab.arrays import span
    from gpulab.euler import api

    kw = dict(variant=variant.name, backend=variant.backend)
    src, dst = random_closed_walks(rng, 8, 12 * S, 6)
    ptr = lambda a: span(a)[0]  # noqa: E731
    eu.euler_circuit(cuda.to_device(src), cuda.to_device(dst), **kw)  # the plans exist from here on
    for directed, cap in ((True, src.size + 1), (False, 2 * (src.size + 1))):
        call = dict(kw, directed=True) if directed else dict(kw, directed=False, vertices=True)
        kept = []
        for k in range(3):
            p = rng.permutation(src.size)
            s, d = src[p], dst[p]
            want = eu.euler_circuit(s, d, **call)
            plan = api.plan_for(variant, cap)  # the plan the device call below reuses (kept by the API)
            before = {name: ptr(b) for (name, _), b in plan._bufs.items()}
            got = eu.euler_circuit(cuda.to_device(s), cuda.to_device(d), **call)
            assert api.plan_for(variant, cap) is plan, "premise: one plan serves the calls"
            want, got = (want, got) if not directed else ((want,), (got,))
            handed = {"out": got[0]} if directed else {"vertices": got[2]}
            for name, g in handed.items():
                assert ptr(g) == before[name], f"{name}: not the plan's buffer of before the call (a copy?)"
            kept.append((got, want))
        for got, want in kept:
            for g, w in zip(got, want):
                assert np.array_equal(g.copy_to_host().astype(w.dtype), w), directed
        pointers = [ptr(g) for got, _ in kept for g in got]
        assert len(set(pointers)) == len(pointers), f"two results share memory (directed={directed})"
        assert plan._bufs and not {ptr(b) for b in plan._bufs.values()} & set(pointers), \
            "a result is still the plan's buffer"
    foreign = cuda.to_device(rng.integers(0, 100, 7).astype(np.int32))
    copy = plan.hand_over(foreign)
    assert ptr(copy) != ptr(foreign) and np.array_equal(copy.copy_to_host(), foreign.copy_to_host())


@pytest.mark.parametrize("lib_name", ["cupy", "torch"])
@pytest.mark.parametrize("variant", [v for v in REGISTRY if v.name == "ruling_set"] + CPU_VARIANTS, ids=ids)
def test_cupy_and_torch_arrays_in_the_same_kind_out(lib_name, variant, rng):
    """GPU only: CuPy in, CuPy out; PyTorch in, PyTorch out, on the GPU and the CPU variants."""
    lib = gpu_library(lib_name)
    skip_unless_runnable(variant)
    same_lib = lambda x: type(x).__module__.split(".")[0] == lib_name  # noqa: E731
    src, dst = random_closed_walks(rng, 50, 200, 20)
    kw = dict(variant=variant.name, backend=variant.backend)
    out = eu.euler_circuit(on_gpu(lib, src), on_gpu(lib, dst), **kw)
    assert same_lib(out) and np.array_equal(from_gpu(out), eu.euler_circuit(src, dst, **kw))
    e, f, vs = eu.euler_circuit(on_gpu(lib, src), on_gpu(lib, dst), directed=False, vertices=True, **kw)
    h_e, h_f, h_vs = eu.euler_circuit(src, dst, directed=False, vertices=True, **kw)
    assert all(same_lib(x) for x in (e, f, vs))
    assert np.array_equal(from_gpu(e), h_e) and np.array_equal(from_gpu(f).astype(bool), h_f)
    assert np.array_equal(from_gpu(vs), h_vs)


def test_from_csr_and_networkx(rng):
    import networkx as nx

    src, dst = random_closed_walks(rng, 6, 5, 5)
    order = np.argsort(src, kind="stable")
    indptr = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=6))])
    s2, d2 = eu.from_csr(indptr, dst[order])
    assert np.array_equal(s2, src[order]) and np.array_equal(d2, dst[order])
    G = nx.MultiDiGraph()
    G.add_edges_from([("a", "b"), ("b", "c"), ("c", "a"), ("a", "a")])
    s, d, nodes, edges = eu.from_networkx(G)
    out = eu.euler_circuit(s, d, source=nodes.index("a"))
    walk = [edges[e] for e in out]
    assert walk[0][0] == "a" and all(walk[i][1] == walk[i + 1][0] for i in range(len(walk) - 1))


# ----------------------------------------------------------------------------- properties (hypothesis)


@st.composite
def eulerian_graphs(draw):
    n_vertices = draw(st.integers(1, 6))
    walks = [draw(st.permutations(list(range(n_vertices))))]
    for _ in range(draw(st.integers(0, 5))):
        walks.append(draw(st.lists(st.integers(0, n_vertices - 1), min_size=1, max_size=6)))
    seed = draw(st.integers(0, 2**32 - 1))
    return gen.from_cycles(walks, np.random.default_rng(seed))


@settings(max_examples=12 if ON_SIMULATOR else 200, deadline=None)
@given(eulerian_graphs())
def test_hypothesis_eulerian_graphs(graph):
    src, dst = graph
    v = REGISTRY.get("ruling_set", "numba")
    skip_unless_runnable(v)
    out = eu.euler_circuit(src, dst)
    assert np.array_equal(out, ref.ais_reference(src, dst)[0])
    assert ref.check_circuit(src, dst, out)[0]


# ----------------------------------------------------------------------------- the checker can fail


def test_a_corrupted_circuit_is_caught(rng):
    src, dst = random_closed_walks(rng, 5, 6, 5)
    good = ref.hierholzer(src, dst)
    assert ref.check_circuit(src, dst, good)[0]
    swapped = good.copy()
    i = int(np.nonzero(src[good[1:]] != src[good[:-1]])[0][0])  # neighbours that start at different vertices
    swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]
    assert "starts at vertex" in ref.check_circuit(src, dst, swapped)[1]
    dup = good.copy()
    dup[-1] = dup[0]
    assert "occurs 2 times" in ref.check_circuit(src, dst, dup)[1]
    assert "edges in the result" in ref.check_circuit(src, dst, good[:-1])[1]
    wrong_start = int(np.setdiff1d(np.unique(src), [src[good[0]]])[0])
    assert "not at source" in ref.check_circuit(src, dst, good, source=wrong_start)[1]
    # undirected: walking one edge the wrong way breaks the chain
    edges, fw = ref.hierholzer(src, dst, directed=False)
    assert ref.check_circuit(src, dst, edges, directed=False, forward=fw)[0]
    j = int(np.nonzero(src[edges] != dst[edges])[0][0])
    fw[j] = not fw[j]
    assert not ref.check_circuit(src, dst, edges, directed=False, forward=fw)[0]


def test_the_device_check_catches_a_corrupted_circuit(rng):
    """plan.verify (the benchmark's check at 2^30 edges) must fail on a broken walk, too."""
    v = REGISTRY.get("ruling_set", "numba")
    skip_unless_runnable(v)
    src, dst = random_closed_walks(rng, 6, 6, 5)
    n = src.size
    plan = plan_for(v, n + 1)
    ds, dd = cuda.to_device(src), cuda.to_device(dst)
    good = ref.hierholzer(src, dst)
    assert plan.verify(cuda.to_device(good), ds, dd, n)[0]
    dup = good.copy()
    dup[-1] = dup[0]
    ok, why = plan.verify(cuda.to_device(dup), ds, dd, n)
    assert not ok and "repeat an edge" in why
    i = int(np.nonzero(src[good[1:]] != src[good[:-1]])[0][0])
    swapped = good.copy()
    swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]
    ok, why = plan.verify(cuda.to_device(swapped), ds, dd, n)
    assert not ok and "breaks in the chain" in why
    bad = good.copy()
    bad[0] = n + 3
    assert "out of range" in plan.verify(cuda.to_device(bad), ds, dd, n)[1]


# ----------------------------------------------------------------------------- de Bruijn and assembly


DB = [(2, 1), (2, 3), (2, 5), (3, 3), (4, 2)] if ON_SIMULATOR else [(2, k) for k in range(1, 21)] + [(4, 8), (10, 4)]


@pytest.mark.parametrize("k,n", DB)
def test_de_bruijn_has_every_window_once(k, n):
    v = REGISTRY.get("ruling_set", "numba")
    skip_unless_runnable(v)
    seq = eu.de_bruijn(k, n)
    assert seq.dtype == np.uint8 and seq.size == k ** n
    wins = ref.windows(seq, n)
    assert len(wins) == k ** n and max(wins.values()) == 1
    assert set(wins) == set(ref.windows(ref.de_bruijn_fkm(k, n), n))
    assert seq[:n].tolist() == [0] * n  # starts with 0...0, as FKM does
    w = np.arange(k ** n)
    circuit, _ = ref.ais_reference(w // k, w % k ** (n - 1))  # the explicit graph, sequentially
    assert np.array_equal(seq, circuit // k ** (n - 1)), "the implicit graph must give the reference's circuit"
    lin = eu.de_bruijn(k, n, linear=True)
    assert lin.size == k ** n + n - 1 and np.array_equal(lin[: k ** n], seq)
    assert len(ref.windows(lin, n, cyclic=False)) == k ** n


@pytest.mark.parametrize("variant", GPU_VARIANTS, ids=ids)
def test_de_bruijn_every_variant(variant):
    skip_unless_runnable(variant)
    for k, n in [(2, 4), (3, 3)]:
        seq = eu.de_bruijn(k, n, variant=variant.name, backend=variant.backend)
        wins = ref.windows(seq, n)
        assert len(wins) == k ** n and max(wins.values()) == 1


def test_fkm_reference():
    assert "".join(map(str, ref.de_bruijn_fkm(2, 3))) == "00010111"
    for k, n in [(2, 6), (3, 4), (5, 2)]:
        wins = ref.windows(ref.de_bruijn_fkm(k, n), n)
        assert len(wins) == k ** n and max(wins.values()) == 1


def test_pin_sequence():
    pins = eu.pin_sequence(variant="hierholzer") if ON_SIMULATOR else eu.pin_sequence()
    assert len(pins) == 10_003
    assert {pins[i:i + 4] for i in range(10_000)} == {f"{p:04d}" for p in range(10_000)}


def synthetic_genome(rng, length, repeat, copies):
    genome = list("".join(rng.choice(list("ACGT"), length)))
    motif = "".join(rng.choice(list("ACGT"), repeat))
    for pos in rng.choice(length - repeat, copies, replace=False):
        genome[pos:pos + repeat] = motif  # the same stretch in several places: a repeat
    return "".join(genome)


@pytest.mark.parametrize("variant", ["ruling_set", "hierholzer"])
def test_assembly_reproduces_the_kmer_multiset(variant, rng):
    if variant != "hierholzer":
        skip_unless_runnable(REGISTRY.get(variant, "numba"))
    for length, k in ([(120, 5), (90, 8)] if ON_SIMULATOR else [(20_000, 11), (5_000, 21)]):
        genome = synthetic_genome(rng, length, 12, 3)
        kmers = eu.kmer_spectrum(genome, k, rng)
        seq = eu.assemble(kmers, variant=variant)
        assert len(seq) == len(genome)
        assert ref.kmer_multiset(seq, k) == ref.kmer_multiset(genome, k)


def test_assembly_of_unrelated_reads_fails():
    with pytest.raises(eu.NotEulerian):
        eu.assemble(["ACGTA", "CGTAC", "TTTTG", "TTTGG"], variant="hierholzer")


# ----------------------------------------------------------------------------- generators and the radix path


@pytest.mark.parametrize("E", [1, 2, 7, 33, 100])
def test_generators_on_the_device_match_numpy(E):
    for f, kw in ((gen.deep_graph, {}), (gen.shallow_graph, {"walk": 5, "degree": 2}),
                  (gen.shallow_graph, {"walk": 4, "degree": 1, "tree": "path"})):
        s, d = f(E, seed=7, **kw)
        ds, dd = f(E, seed=7, device=True, **kw)
        assert np.array_equal(s, ds.copy_to_host()) and np.array_equal(d, dd.copy_to_host())
        assert ref.degree_problem(s, d) is None
        comp = ref.weak_components(s, d)
        assert np.unique(comp[comp >= 0]).size == 1


def test_feistel_is_a_permutation():
    for n in (1, 2, 3, 5, 64, 1000, 4099):
        p = gen.feistel(np.arange(n), n, gen.round_keys(3, 1))
        assert np.array_equal(np.sort(p), np.arange(n))


def test_deep_and_shallow_differ_in_cycles():
    E = 4000
    counts = {}
    for name, (s, d) in (("deep", gen.deep_graph(E, 4, 1)), ("shallow", gen.shallow_graph(E, 16, 4, 1))):
        succ, _, _ = ref.pairing(s, d)
        counts[name] = np.unique(ref.cycle_labels(succ)).size
    assert counts["deep"] < 20 and counts["shallow"] > E // 40


def test_pairing_through_chapter_4_radix_sort(rng):
    """Above SMALL_SORT edges the pairing sorts with gpulab.radix: force that path here."""
    v = REGISTRY.get("ruling_set", "numba")
    skip_unless_runnable(v)
    src, dst = random_closed_walks(rng, 12, 5, 6)
    params = {"SMALL_SORT": 0}
    if ON_SIMULATOR:
        params.update(SORT="radix4_shared", SORT_PARAMS={"SCAN_BLOCK": 8, "BLOCK": 32, "BITS": 4})
    out = eu.euler_circuit(src, dst, params=params)
    assert np.array_equal(out, ref.ais_reference(src, dst)[0])
    for s, d in (gen.from_cycles([[0], [0], [0]]), gen.from_cycles([[0, 1], [1, 0]], rng)):  # keys of 0 and 1 bit
        assert np.array_equal(eu.euler_circuit(s, d, params=params), ref.ais_reference(s, d)[0])


@pytest.mark.parametrize("size,slices,n", [(4, 10**9, 37), (64, 12, 37), (64, 12, 193), (64, 2, 37), (0, 12, 37)])
def test_the_pairing_scatter_in_slices_finds_the_reference_circuit(size, slices, n, rng):
    """The pairing writes succ in slices of SCATTER_BYTES (0: half the L2), one launch each, or in
    one launch beyond SCATTER_SLICES; the slices tile [0, n) and every slicing gives the same
    circuit. (Premise: a cycle of n edges plus a loop; the cases below cover 1 to n slices.)"""
    from gpulab.euler.host import EulerPlan

    v = REGISTRY.get("ruling_set", "numba")
    skip_unless_runnable(v)
    params = {"SCATTER_BYTES": size, "SCATTER_SLICES": slices}
    plan = v.run(n + 2, v.launch_params(params))
    assert isinstance(plan, EulerPlan)
    b = plan.scatter_slices(n)
    r = -(-4 * n // size) if size else 1  # (size 0: half the L2, one slice at these n)
    want = r if r <= slices else 1
    assert len(b) - 1 == want and b[0] == 0 and b[-1] == n and all(x < y for x, y in zip(b[:-1], b[1:]))
    assert all(4 * (y - x) <= size for x, y in zip(b[:-1], b[1:])) or want == 1
    cyc = [int(x) for x in rng.permutation(n)]
    src, dst = gen.from_cycles([cyc, [cyc[0]]], rng)
    out = eu.euler_circuit(src, dst, params=params)
    assert np.array_equal(out, ref.ais_reference(src, dst)[0])


@pytest.mark.parametrize("size", [1, 3, 4, 8, 64, 0])
def test_the_sliced_pairing_counts_each_unbalanced_position_once(size, rng):
    """The in = out check runs in the slice that starts at 0 only, whatever the slicing (slices of
    under one element included): the count and the first position are numpy's. Premise: a walk
    that is not closed plus random extra edges, so the sorted sources and targets differ."""
    v = REGISTRY.get("ruling_set", "numba")
    skip_unless_runnable(v)
    n = int(rng.integers(5, 40))
    src = rng.integers(0, 7, n).astype(np.int32)
    dst = np.roll(src, -1).astype(np.int32)
    dst[-1] = (src[0] + 1 + rng.integers(0, 6)) % 7  # the walk does not close: two vertices unbalanced
    want = np.sort(src) != np.sort(dst)
    assert want.any()
    plan = v.run(n + 2, v.launch_params({"SCATTER_BYTES": size, "SCATTER_SLICES": 10**9}))
    s, d = plan.load(cuda.to_device(src), cuda.to_device(dst), n)
    bad, first = plan.pairing(s, d, n)
    assert (bad, first) == (int(want.sum()), int(np.argmax(want)))


@pytest.mark.parametrize("variant", [v for v in GPU_VARIANTS if v.name != "partition"], ids=ids)
def test_every_labelling_gives_the_reference_labels(variant, rng):
    """Step 2 on its own: label[e] = the smallest edge id of e's cycle (the circuit tests would
    also pass with other, consistent labels: these pin the book's definition)."""
    skip_unless_runnable(variant)
    for case in ("shallow", "deep", "flower_12x3"):
        src, dst = graph_cases(rng)[case]
        plan = plan_for(variant, src.size + 1)
        plan.buf("label").copy_to_device(np.full(plan.buf("label").size, INT_SENTINEL[np.dtype(np.int32)], np.int32))
        s, d = plan.load(cuda.to_device(src), cuda.to_device(dst), src.size)
        plan.directed(s, d, src.size)
        succ, _, _ = ref.pairing(src, dst)
        assert np.array_equal(plan.buf("label")[:src.size].copy_to_host(), ref.cycle_labels(succ)), case


@pytest.mark.parametrize("check", [1, 2, 64])
def test_jump_checks_in_any_batch_size(check, rng):
    """Pointer jumping reads its flags once per JUMP_CHECK rounds: every batch size gives the same
    labels, and the rounds counted are never more than ceil(log2) of the longest cycle."""
    for name in ("jump", "ruling_set", "propagate"):
        v = REGISTRY.get(name, "numba")
        skip_unless_runnable(v)
        src, dst = graph_cases(rng)["deep"]
        plan = plan_for(v, src.size + 1, {"JUMP_CHECK": check})
        s, d = plan.load(cuda.to_device(src), cuda.to_device(dst), src.size)
        out, m = plan.directed(s, d, src.size)
        assert np.array_equal(out[:m].copy_to_host(), ref.ais_reference(src, dst)[0]), name
        succ, _, _ = ref.pairing(src, dst)
        longest = int(np.bincount(ref.cycle_labels(succ)).max())
        if name == "jump":
            assert plan.stats["label_rounds"] <= host.ceil_log2(longest) + check


def test_ranking_waits_once_whatever_its_rounds(rng):
    """The list ranking's rounds run without looking back at the device: as many waits with one
    ranking splitter per edge (ceil(log2 E) Wyllie rounds) as with a single one (none)."""
    v = REGISTRY.get("ruling_set", "numba")
    skip_unless_runnable(v)
    src, dst = gen.from_cycles([list(rng.permutation(60 * S))], rng)  # one cycle: one labelling round
    syncs, rounds = [], []
    for spacing in (1, 10**9):
        plan = plan_for(v, src.size + 1, {"RANK_SPACING": spacing, "SUBLISTS": 0})  # the splitters' ranking
        s, d = plan.load(cuda.to_device(src), cuda.to_device(dst), src.size)
        out, m = plan.directed(s, d, src.size)
        assert np.array_equal(out[:m].copy_to_host(), ref.ais_reference(src, dst)[0])
        syncs.append(plan.stats["host_syncs"])
        rounds.append(plan.stats["rank_rounds"])
    assert rounds[0] == host.ceil_log2(src.size) and rounds[1] == 0
    assert syncs[0] == syncs[1]


def _sublists_run(v, src, dst, params, source=None):
    plan = plan_for(v, src.size + 1, params)
    s, d = plan.load(cuda.to_device(src), cuda.to_device(dst), src.size)
    out, m = plan.directed(s, d, src.size, source=source)
    return plan, out[:m].copy_to_host()


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_ranking_from_the_labelling_sublists(backend, rng):
    """SUBLISTS: the ranking reuses the labelling's splitters and, where the splice did not touch
    a sublist, its measured length. Same circuit as the reference and as splitters of the
    ranking's own (SUBLISTS = 0), from edge 0 and from sources; the graphs and sources are drawn
    until every case the pieces handle apart occurred: a sublist cut twice or more, a cut that
    starts at a splitter, a head inside a sublist, a head that starts a cut's piece."""
    v = REGISTRY.get("ruling_set", backend)
    skip_unless_runnable(v)
    params = {"RANK_SPACING": 1}  # never the fallback for too many splitters: that is another test
    seen = {"cut twice": False, "cut at a splitter": False, "head inside": False, "head at a cut": False}
    for attempt in range(8):
        for case in ("shallow", "multigraph", "star_of_cycles"):
            src, dst = graph_cases(rng)[case]
            n = src.size
            p = dict(params, SEED=int(rng.integers(1 << 30)))
            plan, out = _sublists_run(v, src, dst, p)
            assert "rank_pieces" in plan.stats, "the directed pipeline ranked without the sublists"
            assert np.array_equal(out, ref.ais_reference(src, dst)[0]), case
            # the cuts as list_cuts sees them: the in-edges whose successor the splice changed
            succ0, _, _ = ref.pairing(src, dst)
            own = plan.buf("owner")[:n].copy_to_host()
            s = plan.walked[2]
            spl = plan.buf("lspl", size=s)[:s].copy_to_host()
            is_spl = np.zeros(n, bool)
            is_spl[spl] = True
            succ1 = plan.buf("succ")[:n].copy_to_host() & 0x7FFFFFFF
            changed = np.flatnonzero(succ1 != succ0)
            seen["cut twice"] |= changed.size > 0 and int(np.bincount(own[changed]).max()) >= 2
            seen["cut at a splitter"] |= bool(is_spl[succ0[changed]].any())
            firsts = {}
            for e in np.argsort(src, kind="stable")[::-1]:
                firsts[int(src[e])] = int(e)
            cut_heads = set(succ0[changed].tolist())
            dirty = set(own[changed].tolist())  # "inside": a sublist the splice did not touch, so only the head cuts it
            for kind, pick in (("head inside", lambda e: not is_spl[e] and e not in cut_heads and own[e] not in dirty),
                               ("head at a cut", lambda e: e in cut_heads and not is_spl[e])):
                sources = [u for u, e in firsts.items() if pick(e)]
                if not sources:
                    continue
                seen[kind] = True
                source = sources[int(rng.integers(len(sources)))]
                _, out = _sublists_run(v, src, dst, p, source=source)
                assert np.array_equal(out, ref.ais_reference(src, dst, source=source)[0]), (case, kind, source)
                _, walked = _sublists_run(v, src, dst, dict(p, SUBLISTS=0), source=source)
                assert np.array_equal(out, walked), (case, kind, source)
        if all(seen.values()):
            break
    assert all(seen.values()), f"the drawn graphs never had: {[k for k, x in seen.items() if not x]}"


def test_too_many_labelling_splitters_rank_with_their_own(rng):
    """Where the labelling needed more splitters than `sublists_room` (2·E / RANK_SPACING + 1;
    many short cycles), ranking them would cost more than splitters of the ranking's own: it
    falls back to those."""
    v = REGISTRY.get("ruling_set", "numba")
    skip_unless_runnable(v)
    src, dst = graph_cases(rng)["shallow"]
    plan, out = _sublists_run(v, src, dst, {"RANK_SPACING": 2 * src.size})
    assert sum(plan.stats["splitters"]) > plan.sublists_room(src.size)  # the premise: more than 2·E / RANK_SPACING + 1 = 2
    assert plan.walked is None, "the labelling kept sublists the ranking cannot use"
    assert "rank_splitters" in plan.stats and "rank_pieces" not in plan.stats
    assert np.array_equal(out, ref.ais_reference(src, dst)[0])


def test_undirected_graphs_rank_with_splitters(rng):
    """The labels of an undirected graph come from its darts, not from the orientation's pairing:
    its ranking walks the circuit with splitters (the sublists are of another permutation)."""
    v = REGISTRY.get("ruling_set", "numba")
    skip_unless_runnable(v)
    src, dst = graph_cases(rng)["shallow"]
    plan = plan_for(v, 2 * src.size + 2)
    s, d = plan.load(cuda.to_device(src), cuda.to_device(dst), src.size)
    plan.undirected(s, d, src.size)
    assert "rank_splitters" in plan.stats and "rank_pieces" not in plan.stats
    assert plan.walked is None and ("owner", "<i4") not in plan._bufs, "the darts' labelling kept sublists"


BOOK = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"


def test_the_defaults_are_what_the_book_measured():
    """The book's H200 numbers were measured with the tuning sweep's winners (passed to the bench
    as GPULAB_EULER_PARAMS); the registry's defaults must be exactly those values, and every GPU
    record of the committed benchmark must have run with its variant's defaults (the bench may
    add MAX_ROUNDS for propagate). Change a default and this fails until the book is re-measured
    (or, as for SORT below, until a committed A/B in one run justifies it and the book says so)."""
    best = json.loads((BOOK / "euler-runs" / "euler-best-params.json").read_text())
    # CUDA C's JUMP_CHECK went from the sweep's 4 to 8 once launches cost the host less, after
    # the A/B in turns on an H200 in which 8 was faster summed over deep-42M and shallow-42M and
    # on shallow-42M in every round (the book's "host's share" section)
    later = {("ruling_set", "cuda-c"): {"JUMP_CHECK": (4, 8)}}
    rows = json.loads((BOOK / "ab-runs" / "euler-params-ab-h200.json").read_text())["rows"]
    jc = {(r["size"], r["params"]): [float(x) for x in r["ms, each round"].split(" / ")] for r in rows
          if r["backend"] == "cuda-c"}
    four, eight = "BLOCK=128,JUMP_CHECK=4", "BLOCK=128,JUMP_CHECK=8"
    assert sum(np.median(jc[size, eight]) for size in ("deep-42M", "shallow-42M")) < \
        sum(np.median(jc[size, four]) for size in ("deep-42M", "shallow-42M"))
    assert all(a < b for a, b in zip(jc["shallow-42M", eight], jc["shallow-42M", four]))
    for backend, tuned in best["ruling_set"].items():
        params = REGISTRY.get("ruling_set", backend).params
        moved = later.get(("ruling_set", backend), {})
        assert {k: params[k] for k in tuned if k not in moved} == {k: v for k, v in tuned.items() if k not in moved}, backend
        for k, (then, now) in moved.items():
            assert tuned[k] == then and params[k] == now, (backend, k)
    result = json.loads((BOOK / "euler-h200.json").read_text())
    # One default changed after the H200 run, on a measurement the book cites instead: the pairing's
    # radix variant (SORT), `local` in the H200 records, `onesweep` now, after the A/B on an H100
    # in which `onesweep` was faster on every graph and backend.
    ab = json.loads((BOOK / "ab-runs" / "euler-sort-h100.json").read_text())["runs"]
    for label, backend in {(r["label"], r["backend"]) for r in ab}:
        med = {s: np.median([x for r in ab if (r["label"], r["backend"], r["sort"]) == (label, backend, s)
                             for x in r["samples_ms"]]) for s in ("local", "onesweep")}
        assert med["onesweep"] < med["local"], (label, backend, med)
    # And the ranking's reuse of the labelling's sublists (SUBLISTS, absent in the H200 records), after
    # the A/B on an H100 in which it was faster at deep-42M on both backends, where it runs.
    ab = json.loads((BOOK / "ab-runs" / "euler-sublists-h100.json").read_text())["runs"]
    for backend in ("numba", "cuda-c"):
        med = {r["SUBLISTS"]: np.median([x["median_ms"] for x in r["rounds"]]) for r in ab
               if (r["label"], r["backend"]) == ("deep-42M", backend)}
        assert med[1] < med[0], (backend, med)
    # And the pairing's scatter in slices of half the L2 (SCATTER_BYTES / SCATTER_SLICES, absent in the
    # H200 records), after the A/B on an H100 in which the pairing stage was faster in every round on
    # both graphs and backends, and the whole deep-42M pipeline faster by the median of the rounds.
    ab = json.loads((BOOK / "ab-runs" / "euler-scatter-ab-h100.json").read_text())["runs"]
    for label, backend in {(r["label"], r["backend"]) for r in ab}:
        by = {r["SCATTER_SLICES"]: r["rounds"] for r in ab if (r["label"], r["backend"]) == (label, backend)}
        assert max(x["stages_ms"]["pairing"] for x in by[12]) < min(x["stages_ms"]["pairing"] for x in by[1])
        if label == "deep-42M":
            assert np.median([x["median_ms"] for x in by[12]]) < np.median([x["median_ms"] for x in by[1]])
    # And up to 16 slices (SCATTER_SLICES, 12 before), so that an undirected graph's 84M dart
    # successors are sliced too, and each closed trail walked once (TRAILS), after the probe and
    # the A/B on an H100 in which the undirected 42M pipeline was faster with each, both backends.
    probe = {(r["backend"], r["what"]): r["ms"] for r in json.loads(
        (BOOK / "ab-runs" / "euler-undirected-probe-trails-h100.json").read_text())["rows"] if "what" in r}
    ab = json.loads((BOOK / "ab-runs" / "euler-undirected-ab-h100.json").read_text())["runs"]
    for backend in ("numba", "cuda-c"):
        assert probe[backend, "undirected, whole, defaults"] < probe[backend, "undirected, whole, SCATTER_SLICES=12"]
        by = {r["config"]: [x["median_ms"] for x in r["rounds"]] for r in ab
              if (r["label"], r["backend"]) == ("undirected-deep-42M", backend)}
        assert max(by["trails"]) < min(by["darts"]) and max(by["darts"]) < min(by["before"]), (backend, by)
    since = {"SORT": ("local", "onesweep"), "SUBLISTS": (None, 1), "SCATTER_BYTES": (None, 0),
             "SCATTER_SLICES": (None, 16), "TRAILS": (None, 1)}
    seen = set()
    for r in result["records"]:
        if r["backend"] == "cpu" or not r.get("params"):
            continue
        defaults = REGISTRY.get(r["variant"], r["backend"]).params
        changed = {k: v for k, v in since.items() if k in defaults}  # SUBLISTS: ruling_set's only
        changed.update(later.get((r["variant"], r["backend"]), {}))
        for k, (then, now) in changed.items():
            assert r["params"].get(k) == then and defaults[k] == now, (k, r["label"], r["variant"])
        defaults = {**defaults, **{k: then for k, (then, _) in changed.items()}}
        assert {k: r["params"].get(k) for k in defaults} == defaults, (r["label"], r["variant"], r["backend"])
        assert set(r["params"]) - set(defaults) <= {"MAX_ROUNDS"}
        seen.add((r["variant"], r["backend"]))
    assert {("ruling_set", "numba"), ("ruling_set", "cuda-c")} <= seen


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
@pytest.mark.parametrize("case", ["deep", "shallow", "multigraph", "star_of_cycles"])
def test_the_tuned_parameters_give_the_reference_circuit(backend, case, rng):
    """The simulator's tests run with dense splitters (their sim_params); here the H200's tuned values
    themselves (one splitter per 128 edges, 16x denser each round, ranking splitters every 64,
    the flags read every JUMP_CHECK rounds; on the simulator the block stays small)."""
    v = REGISTRY.get("ruling_set", backend)
    skip_unless_runnable(v)
    tuned = {k: x for k, x in v.params.items() if k in ("SPACING", "GROWTH", "RANK_SPACING", "JUMP_CHECK", "BLOCK")}
    if ON_SIMULATOR:
        tuned.pop("BLOCK")
    src, dst = graph_cases(rng)[case]
    out = run(v, src, dst, params=tuned)
    assert np.array_equal(out, ref.ais_reference(src, dst)[0]), case


def test_growth_below_two_is_refused():
    with pytest.raises(LimitError, match="GROWTH"):
        eu.euler_circuit(*gen.from_cycles([[0, 1]]), params={"GROWTH": 1})


def test_stage_times_are_recorded(rng):
    v = REGISTRY.get("ruling_set", "numba")
    skip_unless_runnable(v)
    src, dst = random_closed_walks(rng, 6, 4, 5)
    plan = plan_for(v, src.size + 1)
    plan.instrument = True
    s, d = plan.load(cuda.to_device(src), cuda.to_device(dst), src.size)
    out, m = plan.directed(s, d, src.size)
    assert set(plan.stage_ms) == set(host.STAGES) and all(t >= 0 for t in plan.stage_ms.values())
    assert plan.stats["cycles"] >= 1 and m == src.size


def test_every_step_has_both_backends():
    names = {v.name for v in GPU_VARIANTS}
    for name in names:
        assert {v.backend for v in GPU_VARIANTS if v.name == name} == {"numba", "cuda-c"}


@pytest.mark.skipif(not ON_SIMULATOR, reason="checks the simulator's skip reason")
def test_cuda_c_is_skipped_on_the_simulator_with_its_reason():
    assert "real GPU" in REGISTRY.get("jump", "cuda-c").unavailable_reason()


# ----------------------------------------------------------------------------- GPU sizes


@pytest.mark.skipif(ON_SIMULATOR, reason="a million edges: GPU only")
@pytest.mark.parametrize("kind", ["deep", "shallow"])
@pytest.mark.parametrize("variant", GPU_VARIANTS, ids=ids)
def test_a_million_edges(variant, kind):
    skip_unless_runnable(variant)
    if variant.name == "propagate" and kind == "deep":
        pytest.skip("propagate needs up to as many rounds as the longest cycle (~500,000 here): the benchmark measures it")
    src, dst = (gen.deep_graph if kind == "deep" else gen.shallow_graph)(1_000_003, seed=11)
    out = eu.euler_circuit(src, dst, variant=variant.name, backend=variant.backend)
    assert ref.check_circuit(src, dst, out)[0]
    expected = eu.euler_circuit(src, dst, variant="ruling_set", backend="numba")
    assert np.array_equal(out, expected)


@pytest.mark.skipif(ON_SIMULATOR, reason="the blog's sizes: GPU only")
@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_the_blogs_sizes(backend):
    """42M edges over 10.5M vertices, and a shallow graph with more than 100,000 cycles after
    pairing, generated on the device, each circuit checked."""
    v = REGISTRY.get("ruling_set", backend)
    skip_unless_runnable(v)
    for kind, E in (("deep", 41_943_040), ("shallow", 41_943_040)):
        ds, dd = (gen.deep_graph if kind == "deep" else gen.shallow_graph)(E, seed=5, device=True)
        plan = plan_for(v, E + 1)
        s, d = plan.load(ds, dd, E)
        out, m = plan.directed(s, d, E)
        if kind == "shallow":
            assert plan.stats["cycles"] > 100_000
        ok, why = ref.check_circuit(ds.copy_to_host(), dd.copy_to_host(), out[:m].copy_to_host())
        assert ok, f"{kind}: {why}"


def test_a_plan_that_does_not_fit_is_a_limit_error(monkeypatch):
    """Out of device memory while allocating a plan: a LimitError naming the variant and the
    edge count, and the kept plan is gone (its memory given back), not a driver traceback."""
    import dataclasses

    from gpulab.euler import api

    v = REGISTRY.get("ruling_set", "numba")

    def no_room(capacity, params):
        raise RuntimeError("Call to cuMemAlloc results in CUDA_ERROR_OUT_OF_MEMORY")

    api.clear_cache()
    with pytest.raises(LimitError, match=r"ruling_set.*1000 edges.*do not fit in device memory"):
        plan_for(dataclasses.replace(v, run=no_room), 1001)
    assert not api._CACHE

    def a_bug(capacity, params):
        raise KeyError("BLOCK")

    with pytest.raises(KeyError):  # anything else is not dressed up as a size limit
        plan_for(dataclasses.replace(v, run=a_bug), 1001)
