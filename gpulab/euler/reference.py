"""CPU references for chapter 5: a circuit checker, Hierholzer, the AIS pipeline step by step,
and the de Bruijn (FKM) and k-mer references.

* [`check_circuit`][gpulab.euler.reference.check_circuit] decides whether a sequence of edge ids is an Euler circuit (or path) of
  a graph: every edge exactly once, consecutive edges chained, closed. Tests, the tour and the
  benchmark use it on every result.
* [`hierholzer`][gpulab.euler.reference.hierholzer] (numba, one CPU thread, O(E), no recursion) is the oracle and the CPU peer;
  [`hierholzer_python`][gpulab.euler.reference.hierholzer_python] is the same walk in plain Python, for reading and for tiny graphs.
* [`ais_reference`][gpulab.euler.reference.ais_reference] runs the GPU pipeline's six steps sequentially in numpy and returns the
  intermediate results too. Every GPU variant computes *exactly* its output (the pairing is
  ordered by edge id, cycles are labelled by their smallest edge id, and the spanning forest is
  the unique minimum one), so tests compare edge for edge, and the book's figures draw its steps.
  [`undirected_reference`][gpulab.euler.reference.undirected_reference] does the same for an
  undirected graph (the orientation's pairing read off the darts': `dart_labels`).
* [`de_bruijn_fkm`][gpulab.euler.reference.de_bruijn_fkm] is the Fredricksen–Kessler–Maiorana construction (Lyndon words in
  lexicographic order), the reference for [`gpulab.euler.de_bruijn`][gpulab.euler.de_bruijn].
* The CPU variants of the registry (``hierholzer``, ``networkx``) run here: ``cpu_factory``
  makes their plans, and the benchmark times ``hierholzer_timer`` and ``networkx_timer``.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from numba import njit

from gpulab import device  # noqa: F401  (selects GPU or simulator before numba.cuda loads)
from gpulab.errors import GpulabError


class NotEulerian(GpulabError, ValueError):
    """The edges have no Euler circuit (or path): the message says which vertex or which components."""


# ----------------------------------------------------------------------------- checking


# --8<-- [start:check]
def check_circuit(src, dst, edges, *, directed: bool = True, forward=None, path: bool = False,
                  source=None) -> tuple[bool, str]:
    """Is ``edges`` an Euler circuit (``path=False``) or Euler path of the graph ``(src, dst)``?

    Checks that every edge id occurs exactly once, that each edge starts where the previous one
    ended, that a circuit closes, and that it starts at ``source`` (if given). For undirected
    graphs ``forward[i]`` says whether ``edges[i]`` was walked from ``src`` to ``dst``.
    Returns ``(ok, reason)``.
    """
    src, dst, edges = (np.asarray(a).astype(np.int64) for a in (src, dst, edges))
    n = src.size
    if edges.shape != (n,):
        return False, f"{edges.size} edges in the result, the graph has {n}"
    if n == 0:
        return True, "empty graph, empty circuit"
    if edges.min() < 0 or edges.max() >= n:
        return False, f"edge id out of range: min {edges.min()}, max {edges.max()} (graph has {n} edges)"
    counts = np.bincount(edges, minlength=n)
    if counts.max() != 1:
        e = int(np.argmax(counts != 1))
        return False, f"edge {e} occurs {counts[e]} times"
    if directed:
        tail, head = src[edges], dst[edges]
    else:
        if forward is None:
            return False, "an undirected result needs the direction of each edge"
        fw = np.asarray(forward).astype(bool)
        tail = np.where(fw, src[edges], dst[edges])
        head = np.where(fw, dst[edges], src[edges])
    broken = np.nonzero(head[:-1] != tail[1:])[0]
    if broken.size:
        i = int(broken[0])
        return False, (f"edge {edges[i]} ends at vertex {head[i]} but the next edge {edges[i + 1]} "
                       f"starts at vertex {tail[i + 1]} (position {i})")
    if not path and head[-1] != tail[0]:
        return False, f"the circuit does not close: it ends at {head[-1]} and starts at {tail[0]}"
    if source is not None and tail[0] != source:
        return False, f"it starts at vertex {tail[0]}, not at source {source}"
    return True, "every edge once, chained" + ("" if path else ", closed")
# --8<-- [end:check]


# ----------------------------------------------------------------------------- Euler's theorem


def degree_problem(src, dst, *, directed: bool = True) -> tuple[str, int] | None:
    """The first reason (by vertex id) the degrees rule out an Euler circuit, or ``None``."""
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    if src.size == 0:
        return None
    V = int(max(src.max(), dst.max())) + 1
    if directed:
        out_deg, in_deg = np.bincount(src, minlength=V), np.bincount(dst, minlength=V)
        bad = np.nonzero(out_deg != in_deg)[0]
        if bad.size:
            v = int(bad[0])
            return f"vertex {v} has {in_deg[v]} in-edges and {out_deg[v]} out-edges", v
        return None
    deg = np.bincount(src, minlength=V) + np.bincount(dst, minlength=V)
    odd = np.nonzero(deg % 2)[0]
    if odd.size:
        v = int(odd[0])
        return f"vertex {v} has odd degree {deg[v]}", v
    return None


def weak_components(src, dst) -> np.ndarray:
    """Component id (smallest vertex id in it) of every vertex that has an edge; -1 elsewhere."""
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    V = int(max(src.max(), dst.max())) + 1 if src.size else 0
    parent = np.arange(V)

    def find(x):
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    for a, b in zip(src.tolist(), dst.tolist()):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    comp = np.array([find(v) for v in range(V)]) if V else np.zeros(0, np.int64)
    used = np.zeros(V, bool)
    used[src] = True
    used[dst] = True
    comp[~used] = -1
    return comp


# ----------------------------------------------------------------------------- Hierholzer


# --8<-- [start:hierholzer_python]
def hierholzer_python(src, dst, source=None) -> list[int]:
    """Hierholzer's algorithm in plain Python (directed; edge ids in, edge ids out).

    Walk from ``source`` along unused edges until stuck (which can only happen back at a vertex
    whose edges are all used); then back up along the walk, emitting edges, and continue from
    the first vertex that still has unused edges. The emitted edges, reversed, are the circuit.
    """
    out_edges: dict[int, list[int]] = {}
    for e, u in enumerate(src):
        out_edges.setdefault(int(u), []).append(e)
    for lst in out_edges.values():
        lst.reverse()  # pop() from the end takes the smallest edge id first
    v = int(src[0]) if source is None else int(source)
    stack, circuit = [], []
    while True:
        if out_edges.get(v):
            e = out_edges[v].pop()
            stack.append(e)
            v = int(dst[e])
        elif stack:
            e = stack.pop()
            circuit.append(e)
            v = int(src[e])
        else:
            break
    return circuit[::-1]
# --8<-- [end:hierholzer_python]


@njit(cache=True)
def _incidence(src, dst, n_vertices, undirected):
    """The edges at every vertex in CSR form, by a counting sort (stable: ids ascending within
    a vertex): directed, edge e at src[e]; undirected, half-edge 2e at src[e] and 2e + 1 at
    dst[e]. Returns (ptr, ids)."""
    E = src.size
    ptr = np.zeros(n_vertices + 1, np.int64)
    for e in range(E):
        ptr[src[e] + 1] += 1
        if undirected:
            ptr[dst[e] + 1] += 1
    for v in range(n_vertices):
        ptr[v + 1] += ptr[v]
    fill = ptr[:-1].copy()
    ids = np.empty(ptr[n_vertices], np.int32)
    for e in range(E):
        u = src[e]
        ids[fill[u]] = 2 * e if undirected else e
        fill[u] += 1
        if undirected:
            w = dst[e]
            ids[fill[w]] = 2 * e + 1
            fill[w] += 1
    return ptr, ids


@njit(cache=True)
def _hierholzer_directed(src, dst, n_vertices, start):
    E = src.size
    ptr, out = _incidence(src, dst, n_vertices, False)  # the out-edges of every vertex
    nxt = ptr[:-1].copy()  # next unused out-edge of each vertex
    stack = np.empty(E, np.int32)
    circuit = np.empty(E, np.int32)
    sp = 0
    cp = E  # the circuit is emitted backwards, from the end of the array
    v = start
    while True:
        if nxt[v] < ptr[v + 1]:
            e = out[nxt[v]]
            nxt[v] += 1
            stack[sp] = e
            sp += 1
            v = dst[e]
        elif sp > 0:
            sp -= 1
            e = stack[sp]
            cp -= 1
            circuit[cp] = e
            v = src[e]
        else:
            break
    return circuit, E - cp


@njit(cache=True)
def _hierholzer_undirected(src, dst, n_vertices, start):
    E = src.size
    ptr, inc = _incidence(src, dst, n_vertices, True)  # half-edges: 2e = e at its src end, 2e+1 at its dst end
    used = np.zeros(E, np.bool_)
    nxt = ptr[:-1].copy()
    stack = np.empty(E, np.int32)  # darts: 2e walks src->dst, 2e+1 walks dst->src
    circuit = np.empty(E, np.int32)
    sp = 0
    cp = E
    v = start
    while True:
        while nxt[v] < ptr[v + 1] and used[inc[nxt[v]] >> 1]:
            nxt[v] += 1
        if nxt[v] < ptr[v + 1]:
            h = inc[nxt[v]]
            nxt[v] += 1
            used[h >> 1] = True
            stack[sp] = h  # leaving v through half-edge h: dart h
            sp += 1
            e = h >> 1
            v = dst[e] if (h & 1) == 0 else src[e]
        elif sp > 0:
            sp -= 1
            d = stack[sp]
            cp -= 1
            circuit[cp] = d
            e = d >> 1
            v = src[e] if (d & 1) == 0 else dst[e]
        else:
            break
    return circuit, E - cp


def _as_int32(a, name):
    a = np.asarray(a)
    if a.size and (a.min() < 0 or a.max() > 2**31 - 2):
        raise GpulabError(f"{name}: vertex ids must lie in [0, 2**31 - 2]")
    return np.ascontiguousarray(a, dtype=np.int32)


# --8<-- [start:hierholzer]
def hierholzer(src, dst, *, directed: bool = True, source=None, path: bool = False):
    """Euler circuit (or path) by Hierholzer's algorithm, compiled with numba, one CPU thread.

    O(V + E): a counting sort builds the out-edge lists (edge ids ascending), then the walk of
    [`hierholzer_python`][gpulab.euler.reference.hierholzer_python] runs with two arrays as stacks. Raises [`NotEulerian`][gpulab.euler.reference.NotEulerian] with
    the reason when there is no circuit. Directed: returns edge ids; undirected: returns
    ``(edge ids, forward)``.
    """
    src, dst = _as_int32(src, "src"), _as_int32(dst, "dst")
    E = src.size
    if E == 0:
        return (np.zeros(0, np.int32), np.zeros(0, bool)) if not directed else np.zeros(0, np.int32)
    V = int(max(src.max(), dst.max())) + 1
    start = _start_vertex(src, dst, V, directed, source, path)
    if directed:
        circ, got = _hierholzer_directed(src, dst, V, start)
    else:
        circ, got = _hierholzer_undirected(src, dst, V, start)
    if got != E:
        comp = weak_components(src, dst)
        a = int(src[0])
        b = int(np.nonzero((comp >= 0) & (comp != comp[a]))[0][0])
        raise NotEulerian(f"the edges form more than one weakly connected component "
                          f"(vertices {a} and {b} are not connected)")
    if directed:
        return circ
    return (circ >> 1).astype(np.int32), (circ & 1) == 0
# --8<-- [end:hierholzer]


def _start_vertex(src, dst, V, directed, source, path):
    if directed:
        out_deg, in_deg = np.bincount(src, minlength=V), np.bincount(dst, minlength=V)
        diff = out_deg - in_deg
    else:
        deg = np.bincount(src, minlength=V) + np.bincount(dst, minlength=V)
        diff = deg % 2
    bad = np.nonzero(diff)[0]
    if bad.size == 0:
        if source is None:
            return int(src[0])
        if source < 0 or source >= V or (out_deg[source] if directed else deg[source]) == 0:
            raise NotEulerian(f"source vertex {source} has no edges")
        return int(source)
    if not path:
        problem = degree_problem(src, dst, directed=directed)
        raise NotEulerian(problem[0])
    if directed:
        starts, ends = np.nonzero(diff == 1)[0], np.nonzero(diff == -1)[0]
        if bad.size != 2 or starts.size != 1 or ends.size != 1:
            raise NotEulerian(f"an Euler path needs exactly one vertex with out = in + 1 and one with "
                              f"in = out + 1; {bad.size} vertices are unbalanced (first: vertex {bad[0]}, "
                              f"out - in = {diff[bad[0]]})")
        s = int(starts[0])
    else:
        if bad.size != 2:
            raise NotEulerian(f"an undirected Euler path needs exactly two odd vertices; there are {bad.size}")
        s = int(bad[0]) if source is None or source not in bad else int(source)
    if source is not None and source != s:
        raise NotEulerian(f"an Euler path of this graph must start at vertex {s}, not at source {source}")
    return s


# ----------------------------------------------------------------------------- the AIS pipeline, sequentially


# --8<-- [start:pairing]
def pairing(src, dst):
    """Step 1: at every vertex, the k-th in-edge (by edge id) is followed by the k-th out-edge.

    ``out_order`` lists the edge ids grouped by source vertex (stably: ascending ids within a
    vertex), ``in_order`` grouped by destination. If every vertex has in-degree = out-degree, the
    two sorted key sequences are *equal*, vertex segments line up position by position, and the
    pairing is ``succ[in_order[i]] = out_order[i]``.
    """
    src, dst = np.asarray(src), np.asarray(dst)
    out_order = np.argsort(src, kind="stable")
    in_order = np.argsort(dst, kind="stable")
    if not np.array_equal(src[out_order], dst[in_order]):
        raise NotEulerian(degree_problem(src, dst)[0])
    succ = np.empty(src.size, np.int64)
    succ[in_order] = out_order
    return succ, out_order, in_order
# --8<-- [end:pairing]


def cycle_labels(succ) -> np.ndarray:
    """Step 2: label every edge with the smallest edge id of its cycle (walk from each unvisited
    edge in increasing order: the first edge reached of a new cycle is its smallest)."""
    return _walk_labels(np.asarray(succ, np.int64))


@njit(cache=True)
def _walk_labels(succ):
    E = succ.size
    label = np.full(E, -1, np.int64)
    for s in range(E):
        if label[s] < 0:
            e = s
            while label[e] < 0:
                label[e] = s
                e = succ[e]
    return label


def ais_reference(src, dst, source=None) -> tuple[np.ndarray, dict]:
    """The directed pipeline, one step at a time: returns ``(circuit, steps)``.

    ``steps`` holds ``succ`` (after pairing), ``label`` (smallest edge id of each cycle),
    ``links`` (slot p linking the cycles of out-slots p and p+1 of one vertex), ``tree`` (the
    links of the minimum spanning forest, weight = slot), ``spliced`` (the successor after the
    rotations) and ``start``.
    """
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    E = src.size
    if E == 0:
        return np.zeros(0, np.int64), {}
    succ, out_order, in_order = pairing(src, dst)
    return _join_and_walk(src, succ, out_order, in_order, src[out_order], cycle_labels(succ), source)


def _join_and_walk(src, succ, out_order, in_order, ssrc, label, source):
    """Steps 3 to 6 of `ais_reference` from a pairing (``succ[in_order[i]] = out_order[i]``,
    ``ssrc[i]`` the vertex of slot i, grouped by vertex) and the cycles' labels."""
    E = succ.size
    # step 3: the circuit graph, one link per pair of neighbouring out-slots in different cycles
    p = np.nonzero((ssrc[:-1] == ssrc[1:]) & (label[out_order[:-1]] != label[out_order[1:]]))[0]
    lu, lv = label[out_order[p]], label[out_order[p + 1]]
    # step 4: the minimum spanning forest (Kruskal; links come in increasing weight already)
    parent = {}

    def find(x):
        root = x
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(x, x) != root:
            parent[x], x = root, parent.get(x, x)
        return root

    tree = np.zeros(E, bool)
    for slot, a, b in zip(p.tolist(), lu.tolist(), lv.tolist()):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
            tree[slot] = True
    roots = {find(int(x)) for x in np.unique(label)}
    if len(roots) > 1:
        r1, r2 = sorted(roots)[:2]
        raise NotEulerian(f"the edges form more than one weakly connected component "
                          f"(vertices {src[r1]} and {src[r2]} are not connected)")
    # step 5: splice; a run of tree links k0..k1-1 at one vertex rotates the successors of k0..k1
    spliced = succ.copy()
    k = 0
    while k < E:
        if tree[k]:
            k0 = k
            while tree[k]:
                spliced[in_order[k]] = out_order[k + 1]
                k += 1
            spliced[in_order[k]] = out_order[k0]
        k += 1
    # step 6: walk the single cycle from the start edge
    if source is None:
        start = 0
    else:
        i = np.searchsorted(ssrc, source)
        if i >= E or ssrc[i] != source:
            raise NotEulerian(f"source vertex {source} has no edges")
        start = int(out_order[i])
    circuit = np.empty(E, np.int64)
    e = start
    for i in range(E):
        circuit[i] = e
        e = spliced[e]
    steps = dict(succ=succ, label=label, out_order=out_order, in_order=in_order, links=p, link_u=lu,
                 link_v=lv, tree=np.nonzero(tree)[0], spliced=spliced, start=start)
    return circuit, steps


# --8<-- [start:orient]
def orient_reference(src, dst) -> np.ndarray:
    """Undirected → directed: ``True`` where edge e keeps the direction src → dst.

    Half-edge 2e is edge e at its ``src`` end, 2e+1 at its ``dst`` end; dart d walks edge d >> 1
    leaving through half-edge d. At every vertex pair the incident half-edges two by two (sorted
    by vertex, stably by id): arriving through one of a pair, leave through the other, so
    ``succ(d) = partner(d ^ 1)``. Every cycle of this permutation is a closed trail whose reverse
    is another cycle; keeping, for each edge, the dart whose cycle has the smaller label orients
    every trail one way: a balanced orientation.
    """
    _, _, label = dart_labels(src, dst)
    return label[0::2] < label[1::2]


def dart_labels(src, dst):
    """The half-edges sorted by vertex (``order``, stably by id; ``keys``: their vertices) and
    every dart's cycle label (`cycle_labels` of ``succ(d) = partner(d ^ 1)``)."""
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    E = src.size
    keys = np.empty(2 * E, np.int64)
    keys[0::2], keys[1::2] = src, dst
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    if np.any(sk[0::2] != sk[1::2]):
        raise NotEulerian(degree_problem(src, dst, directed=False)[0])
    partner = np.empty(2 * E, np.int64)
    partner[order[0::2]], partner[order[1::2]] = order[1::2], order[0::2]
    return order, sk, cycle_labels(partner[np.arange(2 * E) ^ 1])
# --8<-- [end:orient]


def undirected_reference(src, dst, source=None) -> tuple[np.ndarray, np.ndarray, dict]:
    """The undirected pipeline, one step at a time: returns ``(circuit, keep, steps)``.

    The orientation of `orient_reference` (``keep[e]``: e walked src → dst), whose pairing is
    read off the darts' and needs no sort: slot j of the half-edges sorted by vertex pairs h0
    and h1; the kept trails pass through it one way, arriving by h0's edge and leaving by h1's
    when dart h1 is kept, else the reverse. The oriented cycles are the kept trails, labelled by
    their smallest edge. Then steps 3 to 6 of `ais_reference`, from slot j."""
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    E = src.size
    if E == 0:
        return np.zeros(0, np.int64), np.zeros(0, bool), {}
    order, sk, dlabel = dart_labels(src, dst)
    keep = dlabel[0::2] < dlabel[1::2]
    h0, h1 = order[0::2], order[1::2]
    h1_kept = dlabel[h1] < dlabel[h1 ^ 1]
    out_order, in_order = np.where(h1_kept, h1, h0) >> 1, np.where(h1_kept, h0, h1) >> 1
    succ = np.empty(E, np.int64)
    succ[in_order] = out_order
    osrc = np.where(keep, src, dst)
    circuit, steps = _join_and_walk(osrc, succ, out_order, in_order, sk[0::2], cycle_labels(succ), source)
    return circuit, keep, steps


# ----------------------------------------------------------------------------- de Bruijn and k-mers


# --8<-- [start:fkm]
def de_bruijn_fkm(k: int, n: int) -> np.ndarray:
    """B(k, n) by Fredricksen–Kessler–Maiorana: the Lyndon words over {0..k-1} whose length
    divides n, in lexicographic order, concatenated (generated by Duval's successor rule)."""
    out = []
    w = [-1]
    while w:
        w[-1] += 1
        m = len(w)
        if n % m == 0:
            out.extend(w)
        while len(w) < n:
            w.append(w[len(w) - m])
        while w and w[-1] == k - 1:
            w.pop()
    return np.array(out, dtype=np.uint8)
# --8<-- [end:fkm]


def windows(seq, n: int, cyclic: bool = True) -> Counter:
    """The multiset of length-n windows of ``seq`` (cyclic or linear), as tuples."""
    s = list(np.asarray(seq).tolist())
    if cyclic:
        s = s + s[: n - 1]
    return Counter(tuple(s[i:i + n]) for i in range(len(s) - n + 1))


def kmer_multiset(seq: str, k: int) -> Counter:
    return Counter(seq[i:i + k] for i in range(len(seq) - k + 1))


# ----------------------------------------------------------------------------- the CPU peers


def hierholzer_walk(src, dst, *, directed=True, source=None, path=False):
    """[`hierholzer`][gpulab.euler.reference.hierholzer] as ``(edge ids, forward flags or None)``."""
    res = hierholzer(src, dst, directed=directed, source=source, path=path)
    return (res, None) if directed else res


def networkx_graph(src, dst, directed=True):
    """A networkx multigraph whose edge keys are our edge ids."""
    import networkx as nx

    G = nx.MultiDiGraph() if directed else nx.MultiGraph()
    G.add_edges_from((int(u), int(v), e) for e, (u, v) in enumerate(zip(np.asarray(src).tolist(),
                                                                           np.asarray(dst).tolist())))
    return G


def networkx_walk(G, src, directed=True, source=None, path=False):
    """``networkx.eulerian_circuit`` / ``eulerian_path`` with keys, as our (edge ids, forward)."""
    import networkx as nx

    try:
        if path:
            walk = list(nx.eulerian_path(G, source=source, keys=True))
        else:
            walk = list(nx.eulerian_circuit(G, source=source, keys=True))
    except nx.NetworkXError as exc:
        raise NotEulerian(f"networkx: {exc}") from None
    edges = np.array([k for _, _, k in walk], np.int32)
    if directed:
        return edges, None
    fw = np.array([int(src[k]) == int(u) for u, _, k in walk], bool)
    return edges, fw


def networkx_circuit(src, dst, *, directed=True, source=None, path=False):
    """``networkx.eulerian_circuit`` (or ``eulerian_path``) of the edges, as ``(edge ids,
    forward flags or None)``."""
    src, dst = np.asarray(src), np.asarray(dst)
    if src.size == 0:
        return np.zeros(0, np.int32), (None if directed else np.zeros(0, bool))
    G = networkx_graph(src, dst, directed)
    return networkx_walk(G, src, directed, source, path)


def hierholzer_timer(src, dst):
    """The benchmark's timed call of [`hierholzer`][gpulab.euler.reference.hierholzer] (directed)."""
    return lambda: hierholzer(src, dst)


def networkx_timer(src, dst):
    """The benchmark's timed call of networkx: the graph is built here, outside the timing."""
    G = networkx_graph(src, dst)
    return lambda: networkx_walk(G, src)[0]


class CpuPlan:
    """A CPU variant's walk (``solve``: [`hierholzer_walk`][gpulab.euler.reference.hierholzer_walk]
    or [`networkx_circuit`][gpulab.euler.reference.networkx_circuit]) with the plan interface."""

    backend = "cpu"

    def __init__(self, solve, capacity: int, params: dict):
        self.walk, self.capacity, self.params, self.stats, self.stage_ms = solve, capacity, dict(params), {}, {}

    def solve(self, src: np.ndarray, dst: np.ndarray, *, directed=True, source=None, path=False):
        """Returns (edge ids, forward flags or None) as numpy arrays."""
        return self.walk(src, dst, directed=directed, source=source, path=path)


def cpu_factory(solve):
    """The ``run`` callable of a CPU registry entry: ``(capacity, params) -> CpuPlan``."""

    def make(capacity: int, params: dict) -> CpuPlan:
        return CpuPlan(solve, capacity, params)

    make.solve, make.backend = solve, "cpu"
    return make
