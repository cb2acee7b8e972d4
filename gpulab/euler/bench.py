"""``gpulab bench euler``: every variant on deep and shallow graphs and de Bruijn graphs, against
numba Hierholzer (one CPU thread) and networkx, measured in the same run.

Cases (labels are what ``--sizes`` selects):

* ``deep-<E>`` / ``shallow-<E>``: `deep_graph` and
  `shallow_graph` (walks of 64 edges) with E edges over E / 4
  vertices, generated on the GPU, from 2^18 (where networkx still finishes in seconds) to 42M
  edges (the blog's V = 10.5M, E = 42M) and 2^30; ``blog-3M``: a shallow graph of the blog's second size (V = 1M, E = 3M, walks of 400
  edges: ~45,000 cycles after pairing, as the blog's 45,514).
* ``B(k,n)``: de Bruijn sequences; the graph is implicit on the GPU; the CPU peers run on the
  explicit graph (src = w // k, dst = w mod k^(n-1)).
* ``undirected-deep-<E>``: the deep graph's edges taken as **undirected** (every vertex has even
  degree: the walk enters and leaves it alike), solved by the public API's undirected pipeline
  (pair the half-edges, label the closed trails, orient, read the orientation's pairing off the
  darts, then the directed pipeline from its circuit graph); checked on
  the device (every edge once, chained, closed, on the orientation) and on the host
  (`gpulab.euler.reference.check_circuit` with ``directed=False``: the walked directions against
  the input's ends). The CPU peers are timed on directed graphs only: no peer here.

What is timed (``median_ms``): device-resident edges in, device-resident circuit out — the
plan's ``load`` (validate, narrow ids) and the whole pipeline, buffers allocated beforehand.
Extra fields per record: ``stages_ms`` (one separate run with events between the stages),
``stats`` (rounds, splitters, cycles, links), ``graph`` (cycles after pairing, longest cycle),
``public_device_ms`` (every GPU record on a GPU: the public call with numba device arrays,
which also allocates its result; `gpulab.euler.applications.de_bruijn` for de Bruijn graphs),
``host_to_host_ms`` (numpy in, numpy out; up to 42M edges), and for GPU records the
speed-ups over the CPU peers measured on the same case: ``ratio_to_peer`` (numba Hierholzer)
and ``speedup_vs_networkx``.

Bandwidth bounds: the run measures the device-to-device copy bandwidth once
(``extra.copy_bandwidth_GBps``, bytes read + written per second,
`gpulab.benchmark.copy_bandwidth_GBps`); every GPU record with stage times gets ``stage_bytes``
(what each stage must move, `gpulab.euler.model.stage_bytes`) and ``stage_bounds_ms`` (those
bytes at the copy bandwidth).
"""

from __future__ import annotations

import time

import numpy as np

from gpulab import device
from gpulab.benchmark import BenchSpec, Case, copy_bandwidth_GBps
from gpulab.errors import GpulabError, LimitError
from gpulab.euler.variants import M42, REGISTRY

# What each variant may take (edge caps, extra parameters, the CPU peers' timed calls) is in its
# policy (`gpulab.euler.policy.EulerPolicy`, set in `gpulab.euler.variants`): nothing here asks
# for a variant by name.
BIG = 2**28  # from here on: fewer repeats (each run takes up to seconds)
HOST_MAX_EDGES = M42  # host -> host timings up to here
SHALLOW_WALK, BLOG_WALK, BLOG_DEGREE = 64, 400, 3
# what the CPU peers' timings include, by variant (for the records)
PEERS_INCLUDE = {v.name: v.policy.peer_includes for v in REGISTRY.select(backend="cpu")}


def _case(kind: str, E: int, label: str, **extra) -> Case:
    return Case(label=label, size={"kind": kind, "E": E, **extra}, work=float(E), unit="Medges/s", unit_scale=1e6)


def _graph(kind, E):
    return _case(kind, E, f"{kind}-{_fmt(E)}")


def _undirected(kind, E):
    return _case(kind, E, f"undirected-{kind}-{_fmt(E)}", directed=False)


def _db(k, n):
    return _case("debruijn", k ** n, f"B({k},{n})", k=k, n=n)


def _fmt(E):
    if E == M42:
        return "42M"
    if E & (E - 1) == 0 and E >= 1024:
        return f"2^{E.bit_length() - 1}"
    return str(E) if E < 10**6 else f"{E / 1e6:.3g}M"


def cases(quick: bool) -> list[Case]:
    if device.on_simulator():
        return [_graph("deep", 96), _graph("shallow", 120), _db(2, 5), _undirected("deep", 64)]
    if quick:
        return [_graph("deep", 2**20), _graph("shallow", 2**20), _graph("deep", M42), _graph("shallow", M42),
                _undirected("deep", M42), _db(2, 20)]
    return full_cases()


def full_cases() -> list[Case]:
    """The GPU benchmark's cases."""
    return ([_graph(kind, E) for E in (2**18, 2**20, 2**22, 2**24, M42) for kind in ("deep", "shallow")]
            + [_case("blog", 3_145_728, "blog-3M")]
            + [_undirected("deep", E) for E in (2**20, M42)]
            + [_graph("deep", 2**30), _graph("shallow", 2**30)]
            + [_db(2, n) for n in (16, 20, 24, 28, 30)] + [_db(4, n) for n in (8, 10, 12, 14, 15)])


# ----------------------------------------------------------------------------- setup


def _directed(d: dict) -> bool:
    """Whether a case (its ``size``, or the state `setup` built from it) is a directed graph:
    yes unless it says ``"directed": False`` (the undirected cases)."""
    return bool(d.get("directed", True))


def setup(case: Case, rng: np.random.Generator):
    from gpulab.euler import generators as gen

    size = case.size
    E, kind = size["E"], size["kind"]
    sim = device.on_simulator()
    seed = int(rng.integers(1 << 30))
    directed = _directed(size)
    state = {"case": case, "E": E, "kind": kind, "seed": seed, "plans": {}, "expected": None, "cpu_ms": {},
             "graph": {"kind": kind, "edges": E}, "sim": sim, "host": None, "cpu_calls": {}, "directed": directed}
    if not directed:
        state["graph"]["directed"] = False
    if kind == "debruijn":
        k, n = size["k"], size["n"]
        state["graph"].update(k=k, n=n, vertices=k ** (n - 1))
        return state
    if kind == "deep":
        ds, dd = gen.deep_graph(E, 4, seed, device=True)
        state["graph"].update(generator="deep_graph", degree=4, vertices=max(1, E // 4))
    elif kind == "shallow":
        walk, degree = (6, 2) if sim else (SHALLOW_WALK, 4)  # simulated: short walks, still many cycles
        ds, dd = gen.shallow_graph(E, walk, degree, seed, device=True)
        state["graph"].update(generator="shallow_graph", walk=walk, degree=degree,
                              vertices=gen.shallow_params(E, walk, degree, seed, "random")["V"])
    else:  # the blog's shallow size
        ds, dd = gen.shallow_graph(E, BLOG_WALK, BLOG_DEGREE, seed, device=True)
        state["graph"].update(generator="shallow_graph", walk=BLOG_WALK, degree=BLOG_DEGREE)
    state["d_src"], state["d_dst"] = ds, dd
    return state


def _host_graph(state):
    """(src, dst) on the host, for the CPU peers and the host -> host timing."""
    if state["host"] is None:
        if state["kind"] == "debruijn":
            k, n = state["graph"]["k"], state["graph"]["n"]
            w = np.arange(k ** n, dtype=np.int64)
            state["host"] = ((w // k).astype(np.int32), (w % k ** (n - 1)).astype(np.int32))
        else:
            state["host"] = (state["d_src"].copy_to_host(), state["d_dst"].copy_to_host())
    return state["host"]


def _free_plans(state):
    """Drop every plan of this case, and free their buffers before the next variant allocates
    (at 2^30 edges one plan holds about 81 GiB: two would not fit)."""
    from gpulab.euler.api import clear_cache

    state["plans"].clear()
    clear_cache()
    device.release_memory()


def tuned_params(variant) -> dict:
    """Parameters that override the registry's in this run: ``GPULAB_EULER_PARAMS`` names a JSON
    file (or holds JSON) ``{variant: {backend: {param: value}}}``, as ``python -m gpulab.euler.tune``
    writes it; every record stores the parameters it ran with."""
    import json
    import os
    from pathlib import Path

    spec = os.environ.get("GPULAB_EULER_PARAMS", "").strip()
    if not spec:
        return {}
    data = json.loads(spec if spec.startswith("{") else Path(spec).read_text())
    return dict(data.get(variant.name, {}).get(variant.backend, {}))


def _plan(variant, state):
    """The variant's plan for this case: the one the public API keeps (``api.plan_for``), so
    that timing the public call afterwards reuses its buffers instead of allocating a second set."""
    from gpulab.euler.api import plan_for

    key = variant.key
    if key not in state["plans"]:
        _free_plans(state)
        params = tuned_params(variant)
        params.update(variant.policy.bench_params)
        # the public call's capacity, so that timing it reuses this plan: E + 1 edges, 2 (E + 1)
        # darts for an undirected graph, k^n edges for a de Bruijn sequence
        if state["kind"] == "debruijn":
            cap = state["E"]
        else:
            cap = (state["E"] + 1) * (1 if _directed(state) else 2)
        state["plans"][key] = plan_for(variant, cap, params or None)
    return state["plans"][key]


# ----------------------------------------------------------------------------- run, check


def runner(variant, state):
    E, kind = state["E"], state["kind"]
    policy = variant.policy
    cap = policy.bench_max_edges
    if cap is not None and E > cap:
        raise GpulabError(f"{variant.name} is timed up to {cap} edges")
    if variant.backend == "cpu" and not _directed(state):
        raise GpulabError("the CPU peers are timed on directed graphs only")
    if variant.backend == "cpu":  # the policy's call, prepared once per case (a networkx graph ...)
        calls = state["cpu_calls"]
        if variant.key not in calls:
            calls[variant.key] = policy.bench_timer(*_host_graph(state))
        return calls[variant.key]
    plan = _plan(variant, state)
    if kind == "debruijn":
        k, n = state["graph"]["k"], state["graph"]["n"]
        seq = plan.buf("seq", np.uint8, size=E + n - 1)

        def launch():
            out = plan.de_bruijn(k, n)
            plan.launch("debruijn_symbols", E, out, np.int32(E), np.int32(k ** (n - 1)), np.int32(n - 1), seq)
            return out

        return launch
    ds, dd = state["d_src"], state["d_dst"]
    if not _directed(state):
        def launch():  # the public call's undirected pipeline: (out, forward, m, tail, head)
            s, d = plan.load(ds, dd, E)
            return plan.undirected(s, d, E)

        return launch

    def launch():
        s, d = plan.load(ds, dd, E)
        out, _ = plan.directed(s, d, E)
        return out

    return launch


class NotTimed(GpulabError):
    """A variant that did not finish, with what was measured on the way (goes into its record)."""

    def __init__(self, message: str, record: dict):
        super().__init__(message)
        self.record = record


def check(variant, state):
    from numba import cuda

    E = state["E"]
    launch = runner(variant, state)
    if variant.backend == "cpu":
        from gpulab.euler.reference import check_circuit

        src, dst = _host_graph(state)
        return check_circuit(src, dst, launch())
    plan = state["plans"][variant.key]
    out = plan.buf("out")
    out.copy_to_device(np.full(out.size, -0x21524111, np.int32))  # poison
    if not _directed(state):
        fw = plan.buf("fwd_out")
        fw.copy_to_device(np.full(fw.size, 7, np.int32))
    t0 = time.perf_counter()
    try:
        res = launch()
    except LimitError as exc:
        cuda.synchronize()
        ms = (time.perf_counter() - t0) * 1e3
        rounds = plan.stats.get("label_rounds", 0)
        raise NotTimed(f"{exc} — {rounds} rounds took {ms:.4g} ms ({ms / max(rounds, 1):.4g} ms per round)",
                       {"rounds_run": rounds, "ms_for_rounds_run": ms, "ms_per_round": ms / max(rounds, 1),
                        "graph": state["graph"]}) from None
    cuda.synchronize()
    if not _directed(state):
        res, why_host = _check_undirected(plan, state, res)
        if res is None:
            return False, why_host
        tail, head = why_host
    elif state["kind"] == "debruijn":
        k, n = state["graph"]["k"], state["graph"]["n"]
        tail, head = plan.buf("vsrc"), plan.buf("vdst")
        plan.launch("debruijn_ends", E, np.int32(E), np.int32(k), np.int32(k ** (n - 1)), tail, head)
    else:
        tail, head = state["d_src"], state["d_dst"]
    ok, why = plan.verify(res, tail, head, E)
    if not ok:
        return ok, why
    if not _directed(state):
        why += "; every edge's walked direction matches its ends (checked on the host)"
    if state["expected"] is None:  # every variant must return the same circuit: keep the first
        state["expected"] = cuda.device_array(E, np.int32)
        state["expected"].copy_to_device(res[:E])
        return ok, why
    diff, first = plan.differences(res, state["expected"], E)
    if diff:
        return False, f"a valid circuit, but it differs from the first variant's at {diff} positions (first {first})"
    return True, why + "; identical to the other variants'"


def _check_undirected(plan, state, res):
    """The undirected result ``(out, forward, m, tail, head)`` checked on the host against the
    input's ends (every edge once, walked either way, consecutive edges sharing their vertex,
    closed: `gpulab.euler.reference.check_circuit` with ``directed=False``). Returns ``(out,
    (tail, head))`` for the device checks that follow (on the orientation), or ``(None, why)``."""
    from gpulab.euler.reference import check_circuit

    out, fw, m, tail, head = res
    E = state["E"]
    if m != E:
        return None, f"{m} edges in the result, the graph has {E}"
    src, dst = _host_graph(state)
    ok, why = check_circuit(src, dst, out[:E].copy_to_host(), directed=False, forward=fw[:E].copy_to_host())
    if not ok:
        return None, f"not an undirected Euler circuit: {why}"
    return out, (tail, head)


# ----------------------------------------------------------------------------- annotations


def repeats(variant, case):
    """(warmup, repeat) where a run takes seconds: the CPU peers above 4M edges (numba compiled
    at import), those whose policy says `bench_once` (networkx) always, the teaching steps above
    4M edges (the check already ran them once), every variant from 2^28 edges on."""
    E = case.size["E"]
    if variant.backend == "cpu":
        return (0, 1) if (E > 4_000_000 or variant.policy.bench_once) else None
    if variant.teaching_only and E > 4_000_000:
        return (0, 2)
    if E >= BIG:
        return (1, 3)
    return None


def annotate(variant, state, rec):
    from numba import cuda

    E = state["E"]
    rec["graph"] = state["graph"]
    if variant.backend == "cpu":
        state["cpu_ms"][variant.policy.bench_role] = rec["median_ms"]
        rec["peer_includes"] = variant.policy.peer_includes
        return
    plan = state["plans"][variant.key]
    plan.instrument = True
    try:
        runner(variant, state)()
    finally:
        plan.instrument = False
    rec["stages_ms"] = dict(plan.stage_ms)
    if plan.vmax is not None:
        state["graph"]["max_vertex"] = int(plan.vmax)
    rec["stats"] = {k: v for k, v in plan.stats.items()}
    rec["params"] = {k: v for k, v in plan.params.items() if k not in ("SORT_PARAMS",)}
    if "cycles_after_pairing" not in state["graph"]:
        cycles, longest = plan.cycle_stats(E)
        state["graph"].update(cycles_after_pairing=cycles, longest_cycle=longest, links=plan.stats.get("links"))
    hier, nx_ms = state["cpu_ms"].get("peer"), state["cpu_ms"].get("python")
    if hier:
        rec.update(peer="numba Hierholzer (1 CPU thread)", peer_median_ms=hier, ratio_to_peer=hier / rec["median_ms"],
                   peers_include=PEERS_INCLUDE)
    if nx_ms:
        rec["speedup_vs_networkx"] = nx_ms / rec["median_ms"]
        rec["networkx_ms"] = nx_ms
    if state["sim"]:
        return
    if state["kind"] != "debruijn":
        rec["plan_bytes"] = plan.nbytes()
    del plan
    # only the API's cache holds the plan now: the public call reuses it where its key is the
    # benchmark's, and frees it before building its own where not (de Bruijn: k^n edges, not
    # k^n + 1; a policy's bench_params), so two plans of a large graph are never held at once
    state["plans"].clear()
    _time_public(variant, state, rec)
    _free_plans(state)
    cuda.synchronize()


def _time_public(variant, state, rec):
    """``public_device_ms``: the public call on the case's device arrays (it allocates its result;
    its plan is the one timed above, kept by the API; `applications.de_bruijn` for a de Bruijn
    graph), and ``host_to_host_ms`` (numpy in and out) up to 42M edges. One timed run after one
    warm-up where a run takes seconds (2^28 edges and more, the teaching steps); a call that
    does not fit beside what the run holds is recorded as ``public_device_skipped``."""
    from gpulab import timing
    import gpulab.euler as eu

    E, directed = state["E"], _directed(state)
    tuned = tuned_params(variant) or None
    how = dict(variant=variant.name, backend=variant.backend, params=tuned)
    if state["kind"] == "debruijn":
        from gpulab.euler.applications import de_bruijn

        k, n = state["graph"]["k"], state["graph"]["n"]
        call = lambda: de_bruijn(k, n, device=True, **how)  # noqa: E731
    else:
        ds, dd = state["d_src"], state["d_dst"]
        call = lambda: eu.euler_circuit(ds, dd, directed=directed, **how)  # noqa: E731
    slow = E >= BIG or variant.teaching_only
    try:
        rec["public_device_ms"] = timing.measure(call, warmup=1, repeat=1 if slow else 3).median_ms
    except Exception as exc:  # recorded beside the kernel time, which stands
        if not (isinstance(exc, LimitError) or device.is_out_of_memory(exc)):
            raise
        _free_plans(state)
        rec["public_device_skipped"] = f"does not fit beside the benchmark's buffers: {exc}"
        return
    if E <= HOST_MAX_EDGES and state["kind"] != "debruijn" and not slow:
        hs, hd = _host_graph(state)
        eu.euler_circuit(hs, hd, directed=directed, **how)
        samples = []
        for _ in range(3):
            t0 = time.perf_counter()
            eu.euler_circuit(hs, hd, directed=directed, **how)
            samples.append((time.perf_counter() - t0) * 1e3)
        rec["host_to_host_ms"] = float(np.median(samples))


def teardown(state):
    _free_plans(state)


def _warm_numba():
    """Compile the CPU peers once, outside any timing."""
    from gpulab.euler.reference import hierholzer

    hierholzer(np.array([0, 1]), np.array([1, 0]))


def finalize(result: dict) -> None:
    """Every GPU record with stage times gets ``stage_bytes`` (`gpulab.euler.model.record_bytes`)
    and, where the run measured the copy bandwidth, ``stage_bounds_ms``."""
    from gpulab.euler import model

    bw = (result.get("extra") or {}).get("copy_bandwidth_GBps")
    for rec in result["records"]:
        if rec["backend"] == "cpu" or not rec.get("stages_ms"):
            continue
        sb = model.record_bytes(rec)
        if sb is None:
            continue
        rec["stage_bytes"] = sb
        if bw:
            rec["stage_bounds_ms"] = model.bounds_ms(sb, bw)


SPEC = BenchSpec(chapter="euler", cases=cases, setup=setup, runner=runner, check=check,
                 peer_name="numba Hierholzer (1 CPU thread)", peer=None, teardown=teardown, repeats=repeats,
                 annotate=annotate, extra={"copy_bandwidth_GBps": copy_bandwidth_GBps}, finalize=finalize)

_warm_numba()


# ----------------------------------------------------------------------------- the book's tables


def stage_rows(result: dict) -> list[dict]:
    """Per-stage times of every GPU record (for the book's ``gpulab:rows`` tables)."""
    rows = []
    for r in result["records"]:
        if r.get("stages_ms"):
            row = {"size": r["label"], "variant": r["variant"], "backend": r["backend"], "total ms": r["median_ms"]}
            row.update({k: v for k, v in r["stages_ms"].items()})
            row["cycles"] = r.get("graph", {}).get("cycles_after_pairing")
            rows.append(row)
    return rows


def write_stages(result_path, out_dir) -> "Path":
    """Write ``euler-stages-<device>.json`` (rows for the book's ``gpulab:rows`` marker): the
    per-stage times of every GPU record of a committed benchmark run."""
    import json
    from pathlib import Path

    result = json.loads(Path(result_path).read_text())
    dev = Path(result_path).stem.split("-", 1)[1]
    path = Path(out_dir) / f"euler-stages-{dev}.json"
    path.write_text(json.dumps({"rows": stage_rows(result), "measured": result["date"],
                                "device": result["device"]["name"], "versions": result.get("versions", {}),
                                "note": "one instrumented run per record, CUDA events between the stages"},
                               indent=1) + "\n")
    return path


# ----------------------------------------------------------------------------- graph statistics (CPU)


def graph_stats(cases_: list[Case] | None = None) -> list[dict]:
    """Cycles after pairing and the longest cycle of the benchmark's graphs, computed on the CPU
    with the reference (numpy sorts and a numba walk): the rounds ``propagate`` needs, the
    number of nodes of the circuit graph. Deterministic: the graphs are seeded (seed 1 here)."""
    from gpulab.euler import generators as gen
    from gpulab.euler import reference as ref

    rows = []
    for case in cases_ or [c for c in full_cases() if c.size["kind"] != "debruijn" and c.size["E"] <= M42]:
        E, kind = case.size["E"], case.size["kind"]
        if kind == "deep":
            s, d = gen.deep_graph(E, 4, 1)
            desc = "deep_graph(degree=4)"
        elif kind == "shallow":
            s, d = gen.shallow_graph(E, SHALLOW_WALK, 4, 1)
            desc = f"shallow_graph(walk={SHALLOW_WALK}, degree=4)"
        else:
            s, d = gen.shallow_graph(E, BLOG_WALK, BLOG_DEGREE, 1)
            desc = f"shallow_graph(walk={BLOG_WALK}, degree={BLOG_DEGREE})"
        succ, _, _ = ref.pairing(s, d)
        lab = ref.cycle_labels(succ)
        sizes = np.bincount(lab)
        rows.append({"graph": case.label, "generator": desc, "edges": E,
                     "vertices": int(np.unique(np.concatenate([s, d])).size),
                     "cycles after pairing": int(np.count_nonzero(sizes)), "longest cycle": int(sizes.max()),
                     "longest / edges": float(sizes.max() / E)})
    for k, n in ((2, 16), (2, 20), (4, 8), (4, 10)):
        w = np.arange(k ** n, dtype=np.int64)
        kn1 = k ** (n - 1)
        succ = (w % kn1) * k + w // kn1
        sizes = np.bincount(ref.cycle_labels(succ))
        rows.append({"graph": f"B({k},{n})", "generator": "de Bruijn graph", "edges": k ** n, "vertices": kn1,
                     "cycles after pairing": int(np.count_nonzero(sizes)), "longest cycle": int(sizes.max()),
                     "longest / edges": float(sizes.max() / k ** n)})
    return rows


if __name__ == "__main__":  # python -m gpulab.euler.bench docs/benchmarks  (graph statistics, CPU only)
    import json
    import sys
    from pathlib import Path

    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".") / "euler-graphs.json"
    out.write_text(json.dumps({"rows": graph_stats(), "seed": 1,
                               "computed": "on the CPU by gpulab.euler.bench.graph_stats"}, indent=1) + "\n")
    print(f"wrote {out}")
