"""The pairing's permutation as a sort (`EulerPlan.permute_by_sort`): where the scatter
`succ[in_order[p]] = out_order[p]` would need more than SCATTER_SLICES slices of L2, the pairs
are sorted by their first instead (at 2^30 edges on an H200, 71.7 ms for the one-launch
scatter against 37.7 ms for an argsort of the same size). Large graphs take that path on their
own; here SCATTER_BYTES and SCATTER_SLICES are set so small that graphs of a few hundred edges
take it (the premise, checked: the sort path ran), directed and undirected, and the circuit
must be the reference's, exactly."""

import numpy as np
import pytest

import gpulab.euler as eu
from gpulab.euler import generators as gen
from gpulab.euler import host, reference as ref
from gpulab.euler.variants import REGISTRY
from tests.conftest import ON_SIMULATOR, skip_unless_runnable

S = 1 if ON_SIMULATOR else 100


@pytest.mark.parametrize("directed", [True, False])
@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_the_permutation_by_sort_gives_the_reference_circuit(backend, directed, rng, monkeypatch):
    v = REGISTRY.get("ruling_set", backend)
    skip_unless_runnable(v)
    calls = []
    real = host.EulerPlan.permute_by_sort

    def spy(self, in_order, out_order, n, succ):
        calls.append(n)
        succ[:n].copy_to_device(np.full(n, -7, np.int32))  # poisoned: the sort must write every place
        return real(self, in_order, out_order, n, succ)

    monkeypatch.setattr(host.EulerPlan, "permute_by_sort", spy)
    # 4-byte words in 64-byte slices, at most 2 slices: more than 32 edges take the sort
    params = dict(v.launch_params(), SCATTER_BYTES=64, SCATTER_SLICES=2, SMALL_SORT=0)
    src, dst = gen.deep_graph(int(rng.integers(200, 400)) * S, 4, int(rng.integers(1 << 30)))
    if directed:
        out = eu.euler_circuit(src, dst, variant=v.name, backend=backend, params=params)
        assert ref.check_circuit(src, dst, out)[0]
        assert np.array_equal(out, ref.ais_reference(src, dst)[0])
    else:
        edges, forward = eu.euler_circuit(src, dst, variant=v.name, backend=backend, params=params, directed=False)
        expected, keep, _ = ref.undirected_reference(src, dst)
        assert np.array_equal(edges, expected) and np.array_equal(forward, keep[edges])
    assert calls == [src.size]  # the premise: the pairing's permutation was the sort


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_the_sort_path_still_checks_balance_and_runs_paths(backend, rng, monkeypatch):
    """On the sort path the pair kernel runs on an empty slice, for its check only: an unbalanced
    graph is still refused with the vertex named; a directed Euler path (one virtual edge added,
    a plan of n + 1 edges) and an undirected one still come out right. The premise (the sort ran
    each time) is checked."""
    v = REGISTRY.get("ruling_set", backend)
    skip_unless_runnable(v)
    calls = []
    real = host.EulerPlan.permute_by_sort
    monkeypatch.setattr(host.EulerPlan, "permute_by_sort",
                        lambda self, *a: (calls.append(a[2]), real(self, *a))[1])
    params = dict(v.launch_params(), SCATTER_BYTES=64, SCATTER_SLICES=2, SMALL_SORT=0)
    how = dict(variant=v.name, backend=backend, params=params)
    # in != out: an extra edge a -> a + 1 between two new vertices; a is the smallest unbalanced one
    src, dst = gen.deep_graph(int(rng.integers(200, 400)) * S, 4, int(rng.integers(1 << 30)))
    a = int(max(src.max(), dst.max())) + 1
    with pytest.raises(eu.NotEulerian, match=f"vertex {a} has 0 in-edges and 1 out-edges"):
        eu.euler_circuit(np.append(src, a), np.append(dst, a + 1), **how)
    assert calls  # the premise: the sort path ran before the check was read
    # a directed path: drop one non-loop edge of the circuit's graph
    k = int(np.nonzero(src != dst)[0][0])
    ps, pd = np.delete(src, k), np.delete(dst, k)
    calls.clear()
    out = eu.euler_path(ps, pd, **how)
    assert ref.check_circuit(ps, pd, out, path=True, source=int(dst[k]))[0]
    assert ps.size + 1 in calls  # the virtual edge closes the path
    # an undirected path: an edge between two distinct vertices of the graph makes both odd
    calls.clear()
    u = int(src[0])
    w = int(dst[np.flatnonzero(dst != u)[0]])
    us, ud = np.append(src, u), np.append(dst, w)
    edges, forward = eu.euler_path(us, ud, directed=False, **how)
    ok, why = ref.check_circuit(us, ud, edges, directed=False, forward=forward, path=True)
    assert ok, why
    assert calls
