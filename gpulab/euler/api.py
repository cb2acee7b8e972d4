"""The public entry points of chapter 5: `euler_circuit`, `euler_path`, the graph helpers
`from_csr`, `from_networkx`, and `variants`, `clear_cache` (the plan the last call kept,
`plan_for`)."""

from __future__ import annotations

import numpy as np

from gpulab import device
from gpulab.euler import host
from gpulab.errors import LimitError
from gpulab.launch import PlanCache
from gpulab.euler.reference import NotEulerian
from gpulab.euler.variants import REGISTRY

DEFAULT_VARIANT = REGISTRY.default("numba")  # the GPU backends' default
# The kept plan goes before a new one is built, its memory given back: two plans of a large
# graph need not fit together.
_CACHE = PlanCache(maxsize=1, after_evict=device.release_memory)


def _resolve(variant, backend):
    """`variant=None`: the backend's default (`REGISTRY.default(backend)`: ruling_set on the
    GPU backends, hierholzer on the CPU); a variant that only the CPU has runs on the CPU
    whatever the backend."""
    if variant is not None and variant not in REGISTRY.names(backend) and variant in REGISTRY.names("cpu"):
        backend = "cpu"
    return REGISTRY.resolve(variant, backend)


def plan_for(variant, capacity: int, params: dict | None = None):
    """A plan of ``variant`` for ``capacity`` edges, with ``params`` over the variant's launch
    parameters (`Variant.launch_params`). The last one is kept and reused (its buffers stay
    allocated until `clear_cache` or a plan for another variant, size or parameters), so
    repeated calls on graphs of one size allocate no plan buffers again (only the copies of
    host inputs and the results)."""
    p = variant.launch_params(params)
    key = (variant.key, int(capacity), tuple(sorted((k, str(v)) for k, v in p.items())))

    def build():
        try:
            return variant.run(capacity, p)
        except Exception as exc:
            if not device.is_out_of_memory(exc):
                raise
            device.release_memory()
            free = device.free_memory_text()
            have = f"; the device has {free}" if free else ""
            raise LimitError(f"{variant.key} for {capacity - 1} edges: its buffers do not fit in device "
                             f"memory{have} (the GPU variants hold 77 to 82 bytes per edge of a directed "
                             "graph, about 226 of an undirected one)") from None

    return _CACHE.get(key, build)


def clear_cache() -> None:
    """Drop the plan kept by the last call (its `gpulab.launch.PlanCache`): its device buffers
    are freed once nothing else holds it."""
    _CACHE.clear()


def _solve(src, dst, *, directed, source, path, variant, backend, vertices, params):
    from numba import cuda

    from gpulab.arrays import caller_of, describe, device_input, to_caller, to_host

    n = host.check_edges(src, dst)
    if not directed and 2 * (n + 1) > host.INT32_MAX:
        from gpulab.errors import LimitError

        raise LimitError(f"{n} undirected edges: their 2 * (n + 1) half-edges get int32 ids on the GPU, so at "
                         f"most {(host.INT32_MAX - 2) // 2} edges")
    if source is not None:
        if isinstance(source, bool) or not isinstance(source, (int, np.integer)):
            raise TypeError(f"source must be a vertex id (an int), got {type(source).__name__}")
        source = int(source)
    v = _resolve(variant, backend)
    if v.backend == "cpu":
        s, d = to_host(src), to_host(dst)
        if s.size and (min(s.min(), d.min()) < 0):
            from gpulab.errors import ShapeError

            raise ShapeError("vertex ids must be >= 0")
        plan = v.run(n, v.launch_params(params))
        edges, fw = plan.solve(s, d, directed=directed, source=source, path=path)
        edges = edges.astype(np.int32)
        verts = None
        if vertices:
            tail = s if directed else np.where(fw, s, d)
            head = d if directed else np.where(fw, d, s)
            verts = np.append(tail[edges], head[edges[-1]]) if n else np.zeros(0, np.int32)
            verts = verts.astype(np.int32)
        res = [edges] + ([] if directed else [fw]) + ([verts] if vertices else [])
        like = describe(src, dst)  # device in: the results go back in the caller's library
        if like.on_device:
            res = [to_caller(cuda.to_device(np.ascontiguousarray(r if r.dtype != bool else r.astype(np.int32))),
                             like) for r in res]
        return res[0] if len(res) == 1 else tuple(res)

    d_src = device_input(src, "src")
    d_dst = device_input(dst, "dst")
    cap = (n + 1) * (1 if directed else 2)
    plan = plan_for(v, cap, params)
    stages = 8 if directed and path else 7  # the stages plan.mark names (a directed path pairs twice)
    with host.progress(plan, f"Euler {'path' if path else 'circuit'}, {n} edges", stages):
        s, d = plan.load(d_src.array, d_dst.array, n, extra=1 if path else 0)
        if directed:
            out, m = plan.directed(s, d, n, source=source, path=path)
            fw, tail, head = None, s, d
        else:
            out, fw, m, tail, head = plan.undirected(s, d, n, source=source, path=path)
        results = [out[:m]] + ([] if directed else [fw[:m]])
        if vertices:
            vs = plan.buf("vertices", size=m + 1)
            if m:
                plan.launch("walk_vertices", m + 1, out, tail, head, np.int32(m), vs)
            results.append(vs[: m + 1] if m else vs[:0])
    like = caller_of(d_src, d_dst)
    final = []
    for i, r in enumerate(results):
        if like.on_device:  # the plan's buffer itself, which the plan replaces (its next call reuses the rest)
            final.append(to_caller(plan.hand_over(r), like))
        else:
            h = r.copy_to_host() if r.size else np.zeros(0, np.int32)
            final.append(h.astype(bool) if (not directed and i == 1) else h)
    return final[0] if len(final) == 1 else tuple(final)


# --8<-- [start:entry]
def euler_circuit(src, dst, *, directed: bool = True, source: int | None = None, variant: str | None = None,
                  backend: str = "numba", vertices: bool = False, params: dict | None = None):
    """An Euler circuit of the graph with edges ``(src[e], dst[e])``, as edge ids.

    Args:
        src: vertex id (int32 or int64, >= 0) where each edge starts; a numpy or device array
            (CuPy, PyTorch, numba ...). Edge ids are positions in it.
        dst: where each edge ends, the same way. Parallel edges and self-loops are fine;
            vertices without edges are ignored.
        directed: ``False``: every edge may be walked either way (once).
        source: the circuit starts with an out-edge of this vertex (its smallest id); by default
            it starts with edge 0.
        variant: a name from ``gpulab.euler.variants()``; ``None``: the backend's default
            (``"ruling_set"``, or ``"hierholzer"`` for ``backend="cpu"``); ``"hierholzer"`` and
            ``"networkx"`` run on the CPU.
        backend: ``"numba"``, ``"cuda-c"`` or ``"cpu"``.
        vertices: also return the vertex sequence (E + 1 vertices, first = last).
        params: overrides of the variant's parameters (block sizes, splitter spacing ...).

    Returns:
        Directed: the edge ids in circuit order (int32). Undirected: ``(edges, forward)``,
        ``forward[i]`` true where ``edges[i]`` was walked from its src to its dst. With
        ``vertices=True`` the vertex sequence comes last. numpy in → numpy out; device in →
        device out in the caller's library (``forward`` then holds int32 0/1).

    Raises:
        NotEulerian: in-degree ≠ out-degree (odd degree) at a vertex, more than one weakly
            connected component, or ``source`` has no edges — the message says which.
        ShapeError, DtypeError, LimitError: the input does not fit (negative ids, ids or edge
            counts beyond int32 ...).
        TypeError: ``source`` is not an int.
    """
    return _solve(src, dst, directed=directed, source=source, path=False, variant=variant, backend=backend,
                  vertices=vertices, params=params)


def euler_path(src, dst, *, directed: bool = True, source: int | None = None, variant: str | None = None,
               backend: str = "numba", vertices: bool = False, params: dict | None = None):
    """An Euler path: every edge once, from the vertex with out = in + 1 to the one with
    in = out + 1 (undirected: between the two odd-degree vertices; ``source`` picks which end).
    A graph with an Euler circuit gets a circuit. Same arguments and results as
    `euler_circuit` (with ``vertices=True``: E + 1 vertices from one end of the path to the
    other).
    """
    return _solve(src, dst, directed=directed, source=source, path=True, variant=variant, backend=backend,
                  vertices=vertices, params=params)
# --8<-- [end:entry]


def variants(backend: str | None = None) -> list[str]:
    """Names of the registered variants (of one backend, or all)."""
    return list(dict.fromkeys(REGISTRY.names(backend)))


# ----------------------------------------------------------------------------- graph helpers


def from_csr(indptr, indices):
    """Edges ``(src, dst)`` of a graph in compressed sparse row form (``indices[indptr[v]:
    indptr[v+1]]`` are v's out-neighbours); edge ids are positions in ``indices``. numpy only."""
    indptr, indices = np.asarray(indptr), np.asarray(indices)
    if indptr.ndim != 1 or indices.ndim != 1 or indptr.size == 0:
        from gpulab.errors import ShapeError

        raise ShapeError("from_csr takes 1-D indptr (V + 1 offsets) and indices arrays")
    counts = np.diff(indptr)
    if counts.min(initial=0) < 0 or indptr[-1] != indices.size:
        from gpulab.errors import ShapeError

        raise ShapeError(f"indptr must be non-decreasing and end at len(indices) = {indices.size}")
    src = np.repeat(np.arange(indptr.size - 1, dtype=np.int64), counts)
    dtype = np.int32 if max(indptr.size, int(indices.max(initial=0)) + 1) <= host.MAX_VERTEX else np.int64
    return src.astype(dtype), indices.astype(dtype)


def from_networkx(G):
    """``(src, dst, nodes, edges)`` of a networkx graph: vertex i is ``nodes[i]`` (G's node
    order), edge id j is ``edges[j]`` (G's edge order, with keys for multigraphs). Pass
    ``directed=G.is_directed()`` to `euler_circuit` and map results back with these."""
    nodes = list(G.nodes())
    index = {u: i for i, u in enumerate(nodes)}
    edges = list(G.edges(keys=True)) if G.is_multigraph() else list(G.edges())
    src = np.array([index[e[0]] for e in edges], np.int32)
    dst = np.array([index[e[1]] for e in edges], np.int32)
    return src, dst, nodes, edges


__all__ = ["euler_circuit", "euler_path", "variants", "from_csr", "from_networkx", "clear_cache", "NotEulerian",
           "plan_for", "DEFAULT_VARIANT", "device"]
